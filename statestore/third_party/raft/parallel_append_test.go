// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// Tests of the yarnfed fork's Config.ParallelLeaderAppend (see FORK.md).

package raft

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatedLogStore is a fake log store for these tests: an InmemStore whose
// StoreLogs can be held (blocks until released) or made to fail once.
type gatedLogStore struct {
	*InmemStore
	mu       sync.Mutex
	held     chan struct{} // non-nil: StoreLogs waits for it to close
	failNext bool
}

var errFakeDisk = errors.New("fake disk error")

func (g *gatedLogStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	held, fail := g.held, g.failNext
	g.failNext = false
	g.mu.Unlock()
	if held != nil {
		<-held
	}
	if fail {
		return errFakeDisk
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedLogStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

func (g *gatedLogStore) hold() {
	g.mu.Lock()
	g.held = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedLogStore) release() {
	g.mu.Lock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.mu.Unlock()
}

func (g *gatedLogStore) failOnce() {
	g.mu.Lock()
	g.failNext = true
	g.mu.Unlock()
}

type paNode struct {
	id    ServerID
	raft  *Raft
	logs  *gatedLogStore
	trans *InmemTransport
	fsm   *MockFSM
}

// parallelCluster starts three voters on in-memory transports, every one
// with a gated log store, and returns them with the leader first.
func parallelCluster(t *testing.T, parallel bool) []*paNode {
	t.Helper()
	var nodes []*paNode
	var servers []Server
	for i := 0; i < 3; i++ {
		addr, trans := NewInmemTransport(ServerAddress(fmt.Sprintf("pa%d", i)))
		n := &paNode{id: ServerID(addr), logs: &gatedLogStore{InmemStore: NewInmemStore()}, trans: trans, fsm: &MockFSM{}}
		nodes = append(nodes, n)
		servers = append(servers, Server{ID: n.id, Address: addr, Suffrage: Voter})
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, n := range nodes {
		conf := inmemConfig(t)
		conf.LocalID = n.id
		conf.ParallelLeaderAppend = parallel
		stable := NewInmemStore()
		snaps := NewInmemSnapshotStore()
		if err := BootstrapCluster(conf, n.logs, stable, snaps, n.trans, Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := NewRaft(conf, n.fsm, n.logs, stable, snaps, n.trans)
		if err != nil {
			t.Fatal(err)
		}
		n.raft = r
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.logs.release()
			_ = n.raft.Shutdown().Error()
		}
	})
	leader := waitPALeader(t, nodes, nil)
	// The leader's first entries (its no-op among them) are committed.
	if err := leader.raft.Apply([]byte("warm-up"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	out := []*paNode{leader}
	for _, n := range nodes {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}

func waitPALeader(t *testing.T, nodes []*paNode, not *paNode) *paNode {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if n != not && n.raft.State() == Leader {
				return n
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no leader")
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func lastStored(t *testing.T, s LogStore) uint64 {
	idx, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// While the leader's own write is held, both followers receive and store
// the new entry, and it commits on their durable copies alone. Upstream
// hashicorp/raft (ParallelLeaderAppend off) sends nothing until the
// leader's write returns, so the followers' wait below times out.
func TestParallelAppendReplicatesWhileLeaderWrites(t *testing.T) {
	nodes := parallelCluster(t, true)
	leader := nodes[0]
	idx := leader.raft.LastIndex() + 1
	leader.logs.hold()
	f := leader.raft.Apply([]byte("x"), 0)
	for _, fol := range nodes[1:] {
		waitFor(t, string(fol.id)+" to store the entry", func() bool { return lastStored(t, fol.logs) >= idx })
	}
	if err := f.Error(); err != nil {
		t.Fatalf("apply while the leader's write is held: %v", err)
	}
	if got := lastStored(t, leader.logs); got >= idx {
		t.Fatalf("the leader's store holds %d though its write is held", got)
	}
	leader.logs.release()
	waitFor(t, "the leader's own write", func() bool { return lastStored(t, leader.logs) >= idx })
	if err := leader.raft.Apply([]byte("y"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
}

// With one follower cut off, the entry is durable only on the other
// follower until the leader's own write returns: it must not commit
// before that, although the leader has already counted the follower's
// acknowledgement. A leader that counted itself when it dispatched the
// entry would commit it here.
func TestParallelAppendLeaderCountsItselfOnlyAfterItsWrite(t *testing.T) {
	nodes := parallelCluster(t, true)
	leader, fol, cut := nodes[0], nodes[1], nodes[2]
	leader.trans.Disconnect(cut.trans.LocalAddr())
	cut.trans.DisconnectAll()
	// Read after a future of this term was answered, so after the leader
	// loop set it: no race with its writes.
	commitment := leader.raft.leaderState.commitment
	idx := leader.raft.LastIndex() + 1
	leader.logs.hold()
	f := leader.raft.Apply([]byte("x"), 0)
	waitFor(t, "the leader to count the follower's copy", func() bool {
		commitment.Lock()
		defer commitment.Unlock()
		return commitment.matchIndexes[fol.id] >= idx
	})
	if got := commitment.getCommitIndex(); got >= idx {
		t.Fatalf("committed %d with one durable copy out of three", got)
	}
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("apply answered before a majority held the entry")
	default:
	}
	leader.logs.release()
	if err := f.Error(); err != nil {
		t.Fatalf("after the leader's write: %v", err)
	}
}

// A failed local write makes the leader step down. Its caller learns the
// outcome is unknown (ErrLeadershipLost: the followers hold the entry and
// may commit it), not the disk error, and every replica's state machine
// ends up with the same entries.
func TestParallelAppendFailedLocalWriteStepsDown(t *testing.T) {
	nodes := parallelCluster(t, true)
	old := nodes[0]
	old.logs.failOnce()
	f := old.raft.Apply([]byte("x"), 5*time.Second)
	if err := f.Error(); !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("apply after a failed local write: %v, want ErrLeadershipLost", err)
	}
	waitFor(t, "the old leader to step down", func() bool { return old.raft.State() != Leader })
	leader := waitPALeader(t, nodes, nil)
	if err := leader.raft.Apply([]byte("after"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := leader.raft.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := leader.fsm.Logs()
	for _, n := range nodes {
		waitFor(t, string(n.id)+" to apply everything", func() bool { return len(n.fsm.Logs()) == len(want) })
		got := n.fsm.Logs()
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("%s applied %q at %d, the leader %q", n.id, got[i], i, want[i])
			}
		}
	}
}
