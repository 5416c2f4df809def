package hadoopipc

import (
	"slices"
	"sync"
	"time"
)

// workerPool runs calls on goroutines that outlive one call. A call's
// handler chain is deep (interceptors, the router's RM client, protobuf),
// so a fresh goroutine per call grew its stack and copied it on nearly
// every call (11% of the router's CPU at 16 clients); a worker keeps its
// grown stack for the next call.
//
// Idle workers form a LIFO stack, so under light load the same few stay
// warm and the rest reach idleTimeout and exit. At most max workers live;
// beyond that a call gets a plain goroutine, so the pool never queues or
// refuses a call: admission stays with each connection's in-flight slots.
// Workers exit once quit is closed (the server's shutdown), after their
// current call.
type workerPool struct {
	max         int
	idleTimeout time.Duration
	quit        <-chan struct{}
	exec        func(*inboundCall) // runs one call (tests replace it)

	mu   sync.Mutex
	idle []*worker // LIFO: the most recently idle is reused first
	live int       // workers alive, idle or busy
}

type worker struct {
	// in receives the next call; buffered so a dispatcher that popped the
	// worker off the idle stack never blocks.
	in chan *inboundCall
}

// Pool sizes: enough for many busy connections; an idle worker holds its
// stack (a few KiB to tens of KiB) for at most workerIdleTimeout.
const (
	maxWorkers        = 1024
	workerIdleTimeout = 5 * time.Second
)

func newWorkerPool(max int, idleTimeout time.Duration, quit <-chan struct{}) *workerPool {
	return &workerPool{max: max, idleTimeout: idleTimeout, quit: quit,
		exec: func(call *inboundCall) { call.conn.runCall(call) }}
}

// run starts call on an idle worker, a new worker, or (pool full) a new
// goroutine. It never blocks on other calls.
func (p *workerPool) run(call *inboundCall) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.in <- call
		return
	}
	spawn := p.live < p.max
	if spawn {
		p.live++
	}
	p.mu.Unlock()
	if !spawn {
		go p.exec(call)
		return
	}
	go p.work(&worker{in: make(chan *inboundCall, 1)}, call)
}

func (p *workerPool) work(w *worker, call *inboundCall) {
	// Counted out however the goroutine ends (a handler may call
	// runtime.Goexit; panics are recovered inside runCall).
	defer func() {
		p.mu.Lock()
		p.live--
		p.mu.Unlock()
	}()
	var idle *time.Timer
	for {
		p.exec(call)
		call = nil
		select {
		case <-p.quit:
			return
		default:
		}
		p.mu.Lock()
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		if idle == nil {
			idle = time.NewTimer(p.idleTimeout)
		} else {
			idle.Reset(p.idleTimeout)
		}
		select {
		case call = <-w.in:
			continue
		case <-idle.C:
		case <-p.quit:
		}
		// Leaving, unless a dispatcher has already taken us off the idle
		// stack: then its call is in (or about to be in) w.in and is
		// ours to run.
		p.mu.Lock()
		if i := slices.Index(p.idle, w); i >= 0 {
			p.idle = slices.Delete(p.idle, i, i+1)
			p.mu.Unlock()
			idle.Stop()
			return
		}
		p.mu.Unlock()
		call = <-w.in
	}
}
