package hadoopipc

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// testPool is a pool running exec; with a nil quit it gets one that the
// test's cleanup closes, waiting for the workers to exit (goleak).
func testPool(t *testing.T, max int, idle time.Duration, quit <-chan struct{}, exec func(*inboundCall)) *workerPool {
	var q chan struct{}
	if quit == nil {
		q = make(chan struct{})
		quit = q
	}
	p := newWorkerPool(max, idle, quit)
	p.exec = exec
	if q != nil {
		t.Cleanup(func() {
			close(q)
			testpoll.Poll(t, "workers to exit", func() bool { live, _ := p.stats(); return live == 0 })
		})
	}
	return p
}

// Sequential calls reuse one worker instead of starting a goroutine each.
func TestWorkerPoolReuses(t *testing.T) {
	done := make(chan int32)
	p := testPool(t, 8, time.Minute, nil, func(c *inboundCall) { done <- c.info.CallID })
	for i := range int32(100) {
		p.run(&inboundCall{info: CallInfo{CallID: i}})
		if got := <-done; got != i {
			t.Fatalf("call %d ran as %d", i, got)
		}
		// The worker puts itself back on the idle stack after the call.
		testpoll.Poll(t, "worker idle", func() bool { _, idle := p.stats(); return idle == 1 })
	}
	if live, idle := p.stats(); live != 1 || idle != 1 {
		t.Fatalf("live %d idle %d after 100 sequential calls, want 1 and 1", live, idle)
	}
}

// The pool never queues: with every worker busy, more calls still start at
// once (on plain goroutines), and no more than max workers live.
func TestWorkerPoolNeverQueuesBeyondMax(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(5)
	p := testPool(t, 3, time.Minute, nil, func(*inboundCall) { started.Done(); <-release })
	for range 5 {
		p.run(&inboundCall{})
	}
	started.Wait() // all 5 run at the same time
	if live, idle := p.stats(); live != 3 || idle != 0 {
		t.Fatalf("live %d idle %d with 5 busy calls, want 3 workers and 0 idle", live, idle)
	}
	close(release)
	testpoll.Poll(t, "3 idle workers", func() bool { live, idle := p.stats(); return live == 3 && idle == 3 })
}

// Idle workers exit after the idle timeout; the pool starts new ones later.
func TestWorkerPoolIdleTimeout(t *testing.T) {
	var ran atomic.Int32
	p := testPool(t, 8, 20*time.Millisecond, nil, func(*inboundCall) { ran.Add(1) })
	for range 4 {
		p.run(&inboundCall{})
	}
	testpoll.Poll(t, "workers to time out", func() bool { live, idle := p.stats(); return live == 0 && idle == 0 })
	p.run(&inboundCall{})
	testpoll.Poll(t, "a call after the timeout", func() bool { return ran.Load() == 5 })
}

// Closing quit (server shutdown) ends idle workers at once and busy ones
// after their call; calls dispatched afterwards still run.
func TestWorkerPoolQuit(t *testing.T) {
	quit := make(chan struct{})
	release := make(chan struct{})
	var ran atomic.Int32
	p := testPool(t, 8, time.Hour, quit, func(c *inboundCall) {
		if c.info.CallID == 1 {
			<-release
		}
		ran.Add(1)
	})
	p.run(&inboundCall{info: CallInfo{CallID: 1}}) // busy until released
	p.run(&inboundCall{info: CallInfo{CallID: 2}})
	testpoll.Poll(t, "one idle worker", func() bool { live, idle := p.stats(); return live == 2 && idle == 1 })
	close(quit)
	testpoll.Poll(t, "the idle worker to exit", func() bool { live, idle := p.stats(); return live == 1 && idle == 0 })
	close(release)
	testpoll.Poll(t, "the busy worker to exit", func() bool { live, _ := p.stats(); return live == 0 })
	p.run(&inboundCall{info: CallInfo{CallID: 3}})
	testpoll.Poll(t, "a call after quit", func() bool { return ran.Load() == 3 })
}

// A handler that ends its goroutine (runtime.Goexit) does not leak a slot.
func TestWorkerPoolGoexit(t *testing.T) {
	done := make(chan struct{})
	p := testPool(t, 1, time.Minute, nil, func(*inboundCall) { defer close(done); runtime.Goexit() })
	p.run(&inboundCall{})
	<-done
	testpoll.Poll(t, "the slot back", func() bool { live, _ := p.stats(); return live == 0 })
}

// Dispatches racing with idle timeouts: a worker that was taken off the
// idle stack while timing out must still run its call. Every call runs
// exactly once and the counts end consistent.
func TestWorkerPoolTimeoutRace(t *testing.T) {
	const calls = 20000
	seen := make([]atomic.Int32, calls)
	var wg sync.WaitGroup
	wg.Add(calls)
	p := testPool(t, 4, time.Microsecond, nil, func(c *inboundCall) { seen[c.info.CallID].Add(1); wg.Done() })
	for i := range int32(calls) {
		p.run(&inboundCall{info: CallInfo{CallID: i}})
		if i%7 == 0 {
			runtime.Gosched()
		}
	}
	wg.Wait()
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("call %d ran %d times", i, n)
		}
	}
	testpoll.Poll(t, "all workers to time out", func() bool { live, idle := p.stats(); return live == 0 && idle == 0 })
}

// Through a real server: calls run on pooled workers, per-connection
// in-flight slots still bound them, and Close ends the workers. Three
// calls against two slots: the reader must stop at the third until a reply
// frees a slot (it counts that wait), so seeing the wait with two handlers
// in, or a third handler, decides the limit without waiting on the clock.
func TestServerWorkersStopOnClose(t *testing.T) {
	var inFlight, maxSeen atomic.Int32
	release := make(chan struct{})
	cfg := DefaultServerConfig()
	cfg.MaxInFlightPerConn = 2
	ts := startServer(t, cfg, echoProtocol(func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) {
		n := inFlight.Add(1)
		for {
			m := maxSeen.Load()
			if n <= m || maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
	}))
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Pool: NewPool()})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := c.Call(context.Background(), "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("r")},
				&commonpb.GetDelegationTokenResponseProto{}); err != nil {
				t.Error(err)
			}
		})
	}
	testpoll.Poll(t, "2 calls in flight", func() bool { return inFlight.Load() >= 2 })
	// The third call is decoded only after the first two were dispatched;
	// with the limit broken it would run (no wait is ever counted).
	testpoll.Poll(t, "the reader to wait for a slot, or a third call", func() bool {
		return metricValue(t, ts.srv.metrics.backPressure) >= 1 || maxSeen.Load() > 2
	})
	if m := maxSeen.Load(); m != 2 {
		t.Fatalf("%d calls in flight on one connection, want MaxInFlightPerConn=2", m)
	}
	close(release)
	wg.Wait()
	if m := maxSeen.Load(); m != 2 {
		t.Fatalf("at most %d calls in flight on one connection, want MaxInFlightPerConn=2", m)
	}
	if live, _ := ts.srv.workers.stats(); live == 0 || live > 3 {
		t.Fatalf("%d workers after 3 calls with 2 slots, want 1 to 3", live)
	}
	ts.srv.Close()
	testpoll.Poll(t, "workers to exit on Close", func() bool { live, _ := ts.srv.workers.stats(); return live == 0 })
}
