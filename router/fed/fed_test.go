package fed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/testpoll"
)

func scs(n int) []SubClusterInfo {
	out := make([]SubClusterInfo, n)
	for i := range out {
		out[i].ID = SubClusterID(fmt.Sprintf("SC-%d", i+1))
	}
	return out
}

// TestFanOutBoundsConcurrency: at most Limit calls are in flight at once,
// and every sub-cluster is still asked, answers in sub-cluster order.
func TestFanOutBoundsConcurrency(t *testing.T) {
	const n, limit = 40, 4
	var inflight, most, started atomic.Int32
	gate := make(chan struct{})
	done := make(chan struct{})
	var ok []SubClusterID
	var failed []error
	go func() {
		defer close(done)
		ok, failed = FanOut(context.Background(), Fan{Limit: limit}, scs(n), func(_ context.Context, sc SubClusterInfo) (SubClusterID, error) {
			now := inflight.Add(1)
			started.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			<-gate
			inflight.Add(-1)
			return sc.ID, nil
		})
	}()
	for released := 0; released < n; released++ {
		// Wait until every call that may start has started, then let one end.
		want := int32(min(n, released+limit))
		testpoll.Poll(t, "calls started", func() bool { return started.Load() >= want })
		gate <- struct{}{}
	}
	<-done
	if m := most.Load(); m > limit {
		t.Fatalf("%d calls in flight at once, limit %d", m, limit)
	}
	if len(failed) != 0 || len(ok) != n {
		t.Fatalf("ok %d failed %v", len(ok), failed)
	}
	for i, id := range ok {
		if want := SubClusterID(fmt.Sprintf("SC-%d", i+1)); id != want {
			t.Fatalf("answer %d from %s, want %s (sub-cluster order)", i, id, want)
		}
	}
}

// TestFanOutDeadlineLeavesHungOut: a call that never returns (it even
// ignores its context) does not hold the fan-out past its deadline; it
// and the sub-clusters still waiting for a slot are failed with
// ErrLeftOut, each naming its sub-cluster, and the others' answers kept.
func TestFanOutDeadlineLeavesHungOut(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	for _, tc := range []struct {
		name     string
		limit    int
		wantOK   int
		wantLeft []SubClusterID
	}{
		// SC-1 hangs; with 5 slots the others answer.
		{"others answer", 5, 4, []SubClusterID{"SC-1"}},
		// One slot: SC-1 holds it, the rest never start.
		{"queued behind it", 1, 0, []SubClusterID{"SC-1", "SC-2", "SC-3", "SC-4", "SC-5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, failed := FanOut(context.Background(), Fan{Limit: tc.limit, Timeout: 50 * time.Millisecond}, scs(5),
				func(_ context.Context, sc SubClusterInfo) (SubClusterID, error) {
					if sc.ID == "SC-1" {
						<-hang // ignores the context: a stuck call
					}
					return sc.ID, nil
				})
			if len(ok) != tc.wantOK {
				t.Fatalf("ok %v, want %d answers", ok, tc.wantOK)
			}
			ids := FailedIDs(failed)
			if fmt.Sprint(ids) != fmt.Sprint(tc.wantLeft) {
				t.Fatalf("left out %v, want %v", ids, tc.wantLeft)
			}
			for _, err := range failed {
				if !errors.Is(err, ErrLeftOut) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("left-out error %v: want ErrLeftOut and the deadline", err)
				}
			}
		})
	}
}

// TestFanOutContextEndsAtDeadline: fn's context carries the fan-out's
// deadline, so a call that honours it (every RM call does) ends with it.
func TestFanOutContextEndsAtDeadline(t *testing.T) {
	var mu sync.Mutex
	var seen []error
	_, failed := FanOut(context.Background(), Fan{Timeout: 20 * time.Millisecond}, scs(3),
		func(ctx context.Context, sc SubClusterInfo) (int, error) {
			<-ctx.Done()
			mu.Lock()
			seen = append(seen, ctx.Err())
			mu.Unlock()
			return 0, &SubClusterError{SubCluster: sc.ID, Method: "m", Err: ctx.Err()}
		})
	if len(failed) != 3 {
		t.Fatalf("failed %v", failed)
	}
	testpoll.Poll(t, "every call saw its context end", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 3
	})
	for _, err := range seen {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("context ended with %v", err)
		}
	}
}
