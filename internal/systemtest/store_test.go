package systemtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// writer inserts application homes continuously through a client that
// knows every replica, and remembers which inserts were acknowledged.
type writer struct {
	c      *client.Client
	next   atomic.Int64
	acked  sync.Map // app id -> home
	nAcked atomic.Int64
	nErr   atomic.Int64
	mu     sync.Mutex
	errs   []error
}

func (w *writer) run(ctx context.Context, workers int) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := w.next.Add(1)
				id := fmt.Sprintf("application_1700000000000_%06d", n)
				home := fmt.Sprintf("SC-%d", n%3+1)
				// Not the run ctx: an insert in flight when the test stops
				// writing completes (or fails) on its own.
				cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				stored, _, err := w.c.AddApplicationHome(cctx, &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: home})
				cancel()
				if err != nil {
					// Unacknowledged: it may or may not be stored.
					w.nErr.Add(1)
					w.mu.Lock()
					if len(w.errs) < 5 {
						w.errs = append(w.errs, err)
					}
					w.mu.Unlock()
					continue
				}
				if stored.GetHomeSubClusterId() != home {
					w.mu.Lock()
					w.errs = append(w.errs, fmt.Errorf("insert of new app %s returned home %s, want %s", id, stored.GetHomeSubClusterId(), home))
					w.mu.Unlock()
				}
				w.acked.Store(id, home)
				w.nAcked.Add(1)
			}
		})
	}
	return &wg
}

// waitAcked waits until at least n more inserts were acknowledged.
func (w *writer) waitAcked(t *testing.T, n int64, what string) {
	t.Helper()
	target := w.nAcked.Load() + n
	waitFor(t, 30*time.Second, fmt.Sprintf("%d acknowledged inserts %s", n, what), func() (bool, string) {
		return w.nAcked.Load() >= target, fmt.Sprintf("%d acked, %d failed", w.nAcked.Load(), w.nErr.Load())
	})
}

// TestStoreClusterSurvivesLeaderKill: three `yarnfed statestore` replicas
// take continuous inserts; the leader is SIGKILLed, the survivors keep
// accepting writes, the killed replica restarts from its data dir and
// catches up. Every acknowledged insert is then on every replica, and all
// replicas hold the same set.
func TestStoreClusterSurvivesLeaderKill(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(3)
	w := &writer{c: st.client(t)}

	ctx, stop := context.WithCancel(context.Background())
	wg := w.run(ctx, 8)
	stopped := false
	stopWriters := func() {
		if !stopped {
			stopped = true
			stop()
			wg.Wait()
		}
	}
	t.Cleanup(stopWriters)

	w.waitAcked(t, 300, "before the kill")
	victim := st.leader(t)
	t.Logf("SIGKILL leader %s (pid %d) after %d acked inserts", victim.id, victim.p.cmd.Process.Pid, w.nAcked.Load())
	victim.p.kill()

	// The survivors elect a new leader and keep taking writes.
	newLeader := st.leader(t)
	if newLeader == victim {
		t.Fatalf("dead replica %s still reported as leader", victim.id)
	}
	w.waitAcked(t, 300, "after the leader was killed")

	// The operator restarts the killed replica with its data dir.
	h.restart(victim.p)
	waitFor(t, 30*time.Second, victim.id+" ready after restart", func() (bool, string) {
		if dead, err := victim.p.exited(); dead {
			t.Fatalf("%s exited after restart: %v", victim.id, err)
		}
		l, d := victim.readyz()
		return l != "", d
	})
	w.waitAcked(t, 200, "after the restart")
	stopWriters()
	acked := map[string]string{}
	w.acked.Range(func(k, v any) bool { acked[k.(string)] = v.(string); return true })
	w.mu.Lock()
	for _, err := range w.errs {
		if !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrUnknownOutcome) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("writer: %v", err)
		}
	}
	w.mu.Unlock()
	t.Logf("%d acknowledged, %d unacknowledged inserts", len(acked), w.nErr.Load())

	// The truth: a linearizable listing through any replica.
	all, err := allHomes(ctxT(t, 20*time.Second), st.client(t))
	if err != nil {
		t.Fatalf("linearizable listing: %v", err)
	}
	for id, home := range acked {
		if got, ok := all[id]; !ok {
			t.Errorf("acknowledged insert %s lost", id)
		} else if got != home {
			t.Errorf("%s: home %s, acknowledged %s", id, got, home)
		}
	}
	if extra := len(all) - len(acked); extra < 0 || int64(extra) > w.nErr.Load() {
		t.Errorf("store holds %d homes: %d acknowledged, only %d inserts unacknowledged", len(all), len(acked), w.nErr.Load())
	}

	// Every replica, read locally (stale reads), converges on exactly that
	// set, the restarted one included.
	for _, nd := range st.nodes {
		c := st.client(t, nd)
		var local map[string]string
		waitFor(t, 30*time.Second, nd.id+" holds every insert", func() (bool, string) {
			local, err = allHomes(ctxT(t, 10*time.Second), c, client.Stale())
			if err != nil {
				return false, err.Error()
			}
			return len(local) == len(all), fmt.Sprintf("%d of %d homes", len(local), len(all))
		})
		for id, home := range all {
			if local[id] != home {
				t.Errorf("%s: %s has home %q, the cluster %q", nd.id, id, local[id], home)
			}
		}
	}
	st0, err := st.client(t, victim).Status(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("status of %s: %v", victim.id, err)
	}
	if len(st0.GetNodes()) != 3 {
		t.Errorf("%s sees %d voters after restart, want 3: %v", victim.id, len(st0.GetNodes()), st0)
	}
}
