package systemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/lincheck"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// linkBreaker is a TCP proxy in front of one replica's gRPC port for the
// test's clients; breakAll closes every connection through it at once, so
// calls in flight lose their replies (perhaps after the replica applied
// them), as when a client's network link drops.
type linkBreaker struct {
	ln     net.Listener
	target func() string
	mu     sync.Mutex
	conns  map[net.Conn]net.Conn
}

func newLinkBreaker(t *testing.T, target func() string) *linkBreaker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &linkBreaker{ln: ln, target: target, conns: map[net.Conn]net.Conn{}}
	t.Cleanup(func() { ln.Close(); b.breakAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.handle(c)
		}
	}()
	return b
}

func (b *linkBreaker) handle(c net.Conn) {
	s, err := net.Dial("tcp", b.target())
	if err != nil {
		c.Close()
		return
	}
	b.mu.Lock()
	b.conns[c] = s
	b.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
	c.Close()
	s.Close()
}

func (b *linkBreaker) breakAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c, s := range b.conns {
		c.Close()
		s.Close()
		delete(b.conns, c)
	}
}

// doClient runs one operation through the client library and records it:
// a definite answer as such; ErrUnavailable (every attempt provably not
// applied) leaves the call out, so that claim is checked; ErrUnknownOutcome
// and timeouts leave a write pending.
func doClient(ctx context.Context, rec *lincheck.Recorder, id int, c *client.Client, in lincheck.Input) error {
	call := rec.Invoke(id, in)
	var out lincheck.Output
	var err error
	switch in.Kind {
	case lincheck.InsertHome:
		var h *pb.ApplicationHome
		h, _, err = c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: in.Key, HomeSubClusterId: in.Value})
		out.Value = h.GetHomeSubClusterId()
	case lincheck.GetHome:
		var h *pb.ApplicationHome
		h, err = c.GetApplicationHome(ctx, in.Key, false)
		out.Value = h.GetHomeSubClusterId()
	case lincheck.UpdateHome:
		err = c.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: in.Key, HomeSubClusterId: in.Value})
	case lincheck.DeleteHome:
		err = c.DeleteApplicationHome(ctx, in.Key)
	case lincheck.SetPolicy:
		err = c.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: in.Key, Type: linPolicyType, Params: []byte(in.Value)})
	case lincheck.GetPolicy:
		var p *pb.PolicyConfiguration
		p, err = c.GetPolicy(ctx, in.Key)
		out.Value = string(p.GetParams())
	}
	switch {
	case err == nil:
		call.Return(out)
	case errors.Is(err, client.ErrNotFound) && in.Kind != lincheck.InsertHome && in.Kind != lincheck.SetPolicy:
		call.Return(lincheck.Output{NotFound: true})
	case errors.Is(err, client.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		call.Unknown()
	case errors.Is(err, client.ErrUnavailable):
		call.Failed()
	default:
		call.Failed()
		return fmt.Errorf("%s: %w", in.Kind, err)
	}
	return nil
}

// TestClientLibraryLinearizableThroughBrokenLinks: the same check as
// TestStoreLinearizableUnderFaults, but the clients are the client library
// (its resends and its reading of outcomes) and their links to the
// replicas break every few tens of milliseconds, so replies to applied
// writes get lost. A client that resent such a delete or update would
// record NotFound for its own success or apply an update twice around a
// concurrent one. The leader is also partitioned and SIGSTOPped in turn.
func TestClientLibraryLinearizableThroughBrokenLinks(t *testing.T) {
	h := newHarness(t)
	duration := lincheckDuration(t)
	cs := startCutStore(t, h, 3)
	var links []*linkBreaker
	var addrs []string
	for _, nd := range cs.nodes {
		b := newLinkBreaker(t, func() string { return nd.grpc })
		links = append(links, b)
		addrs = append(addrs, b.ln.Addr().String())
	}
	rec := lincheck.NewRecorder()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var errs atomic.Int64
	start := time.Now()
	var seq atomic.Int64
	for id := range 6 {
		// Each client starts on a different replica.
		rot := append(append([]string(nil), addrs[id%len(addrs):]...), addrs[:id%len(addrs)]...)
		c, err := client.New(client.Config{Addrs: rot, DisableCache: true, CallTimeout: 1500 * time.Millisecond, RetryTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(id), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				in := randomOp(rng, start, seq.Add(1), opMix{30, 55, 72, 85, 93})
				octx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
				err := doClient(octx, rec, id, c, in)
				cancel()
				if err != nil {
					errs.Add(1)
					t.Errorf("client %d: %v", id, err)
					return
				}
			}
		})
	}
	stopClients := sync.OnceFunc(func() { stop(); wg.Wait() })
	t.Cleanup(stopClients)

	// Break client links all along.
	breaks := 0
	var bwg sync.WaitGroup
	bctx, bstop := context.WithCancel(context.Background())
	bwg.Go(func() {
		rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), 2))
		for bctx.Err() == nil {
			time.Sleep(time.Duration(10+rng.IntN(60)) * time.Millisecond)
			links[rng.IntN(len(links))].breakAll()
			breaks++
		}
	})
	faults := []struct {
		name string
		run  func()
	}{
		{"partition the leader from the followers", func() { cs.isolateLeader(t) }},
		{"SIGSTOP the leader", func() { cs.freezeLeader(t) }},
	}
	end := time.Now().Add(duration)
	n := 0
	for time.Now().Before(end) && errs.Load() == 0 {
		time.Sleep(2 * time.Second) // client link breaks alone
		f := faults[n%len(faults)]
		t.Logf("fault %d: %s", n+1, f.name)
		f.run()
		n++
		waitFor(t, 30*time.Second, "an agreed leader after "+f.name, cs.agreedLeader)
	}
	time.Sleep(time.Second)
	bstop()
	bwg.Wait()
	stopClients()
	ok, unknown, dropped := rec.Stats()
	t.Logf("%d faults, %d client link breaks; %d operations answered, %d writes with unknown outcome, %d left out",
		n, breaks, ok, unknown, dropped)
	if ok < 200 {
		t.Fatalf("only %d operations answered: the workload did not run", ok)
	}
	if err := lincheck.Check(rec.Operations(), 2*time.Minute+duration, artifactDir()); err != nil {
		t.Fatal(err)
	}
}
