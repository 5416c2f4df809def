package store

import (
	"context"
	"testing"
	"time"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestProposalAnsweredBeforeFSMCommit: the leader answers a write as soon as
// the FSM's batch transaction holds its result, while bbolt's commit is
// still to come (held here); a read that follows the answer still sees the
// write (it waits for that commit), and the applied index, which
// linearizable reads wait for, moves only after it. Without the early
// answer the insert waits for the commit and the test times out; without
// the read's wait the read answers NotFound.
func TestProposalAnsweredBeforeFSMCommit(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gate := make(chan struct{})
	held := make(chan struct{}, 1)
	hold := func() {
		select {
		case held <- struct{}{}:
		default:
		}
		<-gate
	}
	s.fsm.beforeCommit.Store(&hold)
	released := false
	release := func() {
		if !released {
			released = true
			s.fsm.beforeCommit.Store(nil)
			close(gate)
		}
	}
	defer release()

	type answer struct {
		resp *pb.AddApplicationHomeResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1"}})
		done <- answer{r, err}
	}()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the FSM never reached its commit")
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the insert was not answered while the FSM's commit was held")
	}
	if a.err != nil || !a.resp.GetInserted() || a.resp.GetStored().GetHomeSubClusterId() != "SC-1" {
		t.Fatalf("insert answered %v, %v", a.resp, a.err)
	}
	if applied, last := s.AppliedIndex(), s.raft.LastIndex(); applied >= last {
		t.Fatalf("applied index %d reached the write (%d) before the FSM's commit", applied, last)
	}
	type read struct {
		home *pb.ApplicationHome
		err  error
	}
	got := make(chan read, 1)
	waits := make(chan struct{}, 1)
	onWait := func() {
		select {
		case waits <- struct{}{}:
		default:
		}
	}
	s.fsm.onWait.Store(&onWait)
	go func() {
		h, err := s.GetApplicationHome("application_1_0001", false)
		got <- read{h, err}
	}()
	var r read
	select {
	case <-waits: // the read waits for the commit: let it happen
		release()
		r = <-got
	case r = <-got: // the read did not wait
	}
	if r.err != nil || r.home.GetHomeSubClusterId() != "SC-1" {
		t.Fatalf("read after the answer: %v, %v", r.home, r.err)
	}
}
