package systemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// startWriters starts workers writers on st; stop (also run at cleanup)
// ends them and waits.
func startWriters(t *testing.T, st *storeCluster, workers int) (w *writer, stop func()) {
	w = &writer{c: st.client(t)}
	ctx, cancel := context.WithCancel(context.Background())
	return w, stopAtCleanup(t, cancel, w.run(ctx, workers))
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
	w, stopWriters := startWriters(t, st, 8)

	w.waitAcked(t, 300, "before the kill")
	victim := st.leader(t)
	t.Logf("SIGKILL leader %s (pid %d) after %d acked inserts", victim.id, victim.p.Pid(), w.nAcked.Load())
	victim.p.Kill()

	// The survivors elect a new leader and keep taking writes.
	newLeader := st.leader(t)
	if newLeader == victim {
		t.Fatalf("dead replica %s still reported as leader", victim.id)
	}
	w.waitAcked(t, 300, "after the leader was killed")
	// What the operator sees: yarnfedctl through any replica names the new
	// leader (the dead replica in --store is skipped).
	var status struct {
		LeaderID string `json:"leaderId"`
		Nodes    []struct {
			NodeID string `json:"nodeId"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(ctl(t, "--store", st.addrs(), "-o", "json", "store", "status")), &status); err != nil {
		t.Fatalf("yarnfedctl store status: %v", err)
	}
	if status.LeaderID == "" || status.LeaderID == victim.id || len(status.Nodes) != 3 {
		t.Errorf("yarnfedctl store status after killing %s: leader %q, %d nodes", victim.id, status.LeaderID, len(status.Nodes))
	}

	// The operator restarts the killed replica with its data dir.
	h.restart(victim.p)
	waitFor(t, 30*time.Second, victim.id+" ready after restart", func() (bool, string) {
		if dead, err := victim.p.Exited(); dead {
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

// addReplica starts one more replica: the first with --bootstrap alone,
// later ones with --join through the first one's gRPC address.
func (sc *storeCluster) addReplica(t *testing.T, extra ...string) *storeNode {
	t.Helper()
	h := sc.h
	nd := &storeNode{id: fmt.Sprintf("ss%d", len(sc.nodes)+1)}
	h.launch("replica "+nd.id, 3, 60*time.Second, func(ports []string) []*proc {
		nd.grpc, nd.raft, nd.httpAddr = ports[0], ports[1], ports[2]
		nd.dir = dataDir(h, fmt.Sprintf("%s-%s", nd.id, strings.ReplaceAll(nd.raft, ":", "_")))
		args := []string{"statestore", "--node-id", nd.id, "--data-dir", nd.dir,
			"--grpc-address", nd.grpc, "--raft-address", nd.raft, "--http-address", nd.httpAddr,
			"--heartbeat-timeout", "500ms", "--election-timeout", "500ms"}
		if len(sc.nodes) == 0 {
			args = append(args, "--bootstrap")
		} else {
			args = append(args, "--join", sc.nodes[0].grpc)
		}
		args = append(args, storeTransport(extra)...)
		nd.p = h.spawn("statestore-"+nd.id, args...)
		return []*proc{nd.p}
	}, func() (bool, string) {
		l, d := nd.readyz()
		return l != "", d
	})
	sc.nodes = append(sc.nodes, nd)
	return nd
}

// TestStoreJoinedClusterRestarts: a cluster grown the operator's other
// way (bootstrap one replica, --join two more) forwards writes from any
// replica, and survives every replica being SIGKILLed and started again
// with the same command lines (a joined replica re-joins harmlessly).
func TestStoreJoinedClusterRestarts(t *testing.T) {
	h := newHarness(t)
	st := &storeCluster{h: h}
	for range 3 {
		st.addReplica(t)
	}
	waitFor(t, 30*time.Second, "3 voters", func() (bool, string) {
		s, err := st.client(t, st.nodes[2]).Status(ctxT(t, 5*time.Second))
		if err != nil {
			return false, err.Error()
		}
		voters := 0
		for _, n := range s.GetNodes() {
			if n.GetVoter() {
				voters++
			}
		}
		return voters == 3, s.String()
	})
	// Writes through a joined replica only: forwarded to the leader.
	joined := st.client(t, st.nodes[2])
	want := map[string]string{}
	for i := range 50 {
		id := fmt.Sprintf("application_1700000000000_%04d", i+1)
		if _, _, err := joined.AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}); err != nil {
			t.Fatalf("insert through joined replica %s: %v", st.nodes[2].id, err)
		}
		want[id] = "SC-1"
	}

	for _, nd := range st.nodes {
		nd.p.Kill()
	}
	for _, nd := range st.nodes {
		h.restart(nd.p)
	}
	waitFor(t, 60*time.Second, "replicas agree on a leader after a full restart", st.agreedLeader)
	for _, nd := range st.nodes {
		c := st.client(t, nd)
		waitFor(t, 30*time.Second, nd.id+" recovered every insert", func() (bool, string) {
			local, err := allHomes(ctxT(t, 10*time.Second), c, client.Stale())
			if err != nil {
				return false, err.Error()
			}
			for id := range want {
				if local[id] != "SC-1" {
					return false, fmt.Sprintf("%d homes, %s missing", len(local), id)
				}
			}
			return len(local) == len(want), fmt.Sprintf("%d homes, want %d", len(local), len(want))
		})
	}
	if _, _, err := st.client(t, st.nodes[1]).AddApplicationHome(ctxT(t, 15*time.Second),
		&pb.ApplicationHome{ApplicationId: "application_1700000000000_9999", HomeSubClusterId: "SC-2"}); err != nil {
		t.Fatalf("insert after the full restart: %v", err)
	}
}

// TestStoreJoinedReplicaRestartsWithoutItsSeed: the replica the others
// joined through dies for good; another replica restarts with its usual
// command line (--join naming the dead seed). It is already a member, so it
// must start without the seed, and with the third replica form a majority.
// (This test found the bug fixed in 131547a: the replica re-joined unconditionally.)
func TestStoreJoinedReplicaRestartsWithoutItsSeed(t *testing.T) {
	h := newHarness(t)
	st := &storeCluster{h: h}
	for range 3 {
		st.addReplica(t)
	}
	waitFor(t, 30*time.Second, "an agreed leader", st.agreedLeader)
	seed, restarted := st.nodes[0], st.nodes[1]
	seed.p.Kill()
	restarted.p.Kill()
	h.restart(restarted.p)
	waitFor(t, 20*time.Second, restarted.id+" finishes starting without its seed", func() (bool, string) {
		if dead, err := restarted.p.Exited(); dead {
			t.Fatalf("%s exited: %v", restarted.id, err)
		}
		return restarted.p.LogContains("statestore replica started"), "start has not returned (still joining?)"
	})
	if _, _, err := st.client(t, restarted).AddApplicationHome(ctxT(t, 15*time.Second),
		&pb.ApplicationHome{ApplicationId: "application_1700000000000_0001", HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatalf("insert through %s with the seed gone: %v", restarted.id, err)
	}
}

// TestStoreFrozenLeaderNoStaleRead: the leader freezes (SIGSTOP: a long GC
// pause, a paused VM) while writes continue on a new leader. When it thaws
// it still believes it leads; a linearizable read sent only to it must
// still see every write acknowledged meanwhile, and writes keep working.
func TestStoreFrozenLeaderNoStaleRead(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(3)
	w, stopWriters := startWriters(t, st, 4)
	w.waitAcked(t, 100, "before the freeze")

	old := st.leader(t)
	signal(t, old.p, syscall.SIGSTOP)
	t.Cleanup(func() { signal(t, old.p, syscall.SIGCONT) })
	t.Logf("leader %s frozen after %d acked inserts", old.id, w.nAcked.Load())
	// The others elect a leader among themselves and take writes.
	var others []*storeNode
	for _, nd := range st.nodes {
		if nd != old {
			others = append(others, nd)
		}
	}
	waitFor(t, 20*time.Second, "a new leader among the others", func() (bool, string) {
		l0, d0 := others[0].readyz()
		l1, _ := others[1].readyz()
		return l0 != "" && l0 == l1 && l0 != old.id, d0
	})
	w.waitAcked(t, 100, "with the old leader frozen")
	// One more write the old leader cannot know about.
	marker := "application_1800000000000_0001"
	if _, _, err := st.client(t, others...).AddApplicationHome(ctxT(t, 15*time.Second),
		&pb.ApplicationHome{ApplicationId: marker, HomeSubClusterId: "SC-9"}); err != nil {
		t.Fatalf("insert with the old leader frozen: %v", err)
	}

	signal(t, old.p, syscall.SIGCONT)
	// The first read after the thaw, only to the old leader, linearizable.
	home, err := st.client(t, old).GetApplicationHome(ctxT(t, 15*time.Second), marker, false)
	if err != nil || home.GetHomeSubClusterId() != "SC-9" {
		t.Fatalf("linearizable read from the thawed old leader %s: %v, %v; want the home written while it was frozen", old.id, home, err)
	}
	w.waitAcked(t, 100, "after the thaw")
	stopWriters()

	all, err := allHomes(ctxT(t, 20*time.Second), st.client(t, old))
	if err != nil {
		t.Fatalf("linearizable listing through %s: %v", old.id, err)
	}
	lost := 0
	w.acked.Range(func(k, v any) bool {
		if all[k.(string)] != v.(string) {
			lost++
		}
		return true
	})
	if lost > 0 {
		t.Errorf("%d acknowledged inserts missing from a linearizable listing", lost)
	}
}

// TestStoreReplicaReplacesLostDisk: writes through one replica are read
// back through another at once (linearizable reads). Then a follower loses
// its disk. The operator
// starts it again with the same command line and an empty data dir, and it
// is rebuilt from the others, while every replica snapshots often. (The
// Raft trailing-log count is not a flag, so the leader still holds the
// whole log: this does not force a snapshot install over the network.)
func TestStoreReplicaReplacesLostDisk(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(3, "--snapshot-threshold", "64", "--snapshot-interval", "200ms")
	c := st.client(t)
	// Each insert goes through one replica and is read back at once,
	// linearizably, through another: a read never misses a write that was
	// acknowledged before it started, whichever replicas serve them.
	per := []*client.Client{st.client(t, st.nodes[0]), st.client(t, st.nodes[1]), st.client(t, st.nodes[2])}
	want := map[string]string{}
	for i := range 400 {
		id := fmt.Sprintf("application_1700000000000_%04d", i+1)
		home := fmt.Sprintf("SC-%d", i%3+1)
		if _, _, err := per[i%3].AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: home}); err != nil {
			t.Fatalf("insert %s through %s: %v", id, st.nodes[i%3].id, err)
		}
		if got, err := per[(i+1)%3].GetApplicationHome(ctxT(t, 15*time.Second), id, false); err != nil || got.GetHomeSubClusterId() != home {
			t.Fatalf("read of %s through %s right after its insert through %s: %v %v", id, st.nodes[(i+1)%3].id, st.nodes[i%3].id, got, err)
		}
		want[id] = home
	}
	leader := st.leader(t)
	var lost *storeNode
	for _, nd := range st.nodes {
		if nd != leader {
			lost = nd
			break
		}
	}
	waitFor(t, 20*time.Second, "the leader to snapshot", func() (bool, string) {
		ents, _ := os.ReadDir(filepath.Join(leader.dir, "snapshots"))
		return len(ents) > 0, fmt.Sprintf("%d entries in %s/snapshots", len(ents), leader.dir)
	})
	lost.p.Kill()
	if err := os.RemoveAll(lost.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(lost.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// More writes while it is gone.
	for i := 400; i < 450; i++ {
		id := fmt.Sprintf("application_1700000000000_%04d", i+1)
		if _, _, err := c.AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}); err != nil {
			t.Fatalf("insert %s: %v", id, err)
		}
		want[id] = "SC-1"
	}
	h.restart(lost.p)
	lc := st.client(t, lost)
	waitFor(t, 30*time.Second, lost.id+" rebuilt from the others", func() (bool, string) {
		if dead, err := lost.p.Exited(); dead {
			t.Fatalf("%s exited: %v", lost.id, err)
		}
		local, err := allHomes(ctxT(t, 10*time.Second), lc, client.Stale())
		if err != nil {
			return false, err.Error()
		}
		for id, home := range want {
			if local[id] != home {
				return false, fmt.Sprintf("%d homes; %s: %q, want %q", len(local), id, local[id], home)
			}
		}
		return len(local) == len(want), fmt.Sprintf("%d homes, want %d", len(local), len(want))
	})
	s, err := lc.Status(ctxT(t, 10*time.Second))
	if err != nil || len(s.GetNodes()) != 3 {
		t.Fatalf("status of %s: %v %v; want 3 nodes", lost.id, s, err)
	}
}

// TestStoreMinorityRefusesWrites: two of three replicas die. The survivor
// (the leader) must not acknowledge a write it cannot replicate, and the
// error must be honest: Unavailable promises "not applied" (clients retry
// it on another replica), so a write answered Unavailable must never
// appear later; a write whose fate is unknown must say so (Aborted, or the
// deadline). Reads of older data keep working from the survivor (stale).
// When a majority is back, writes work again.
func TestStoreMinorityRefusesWrites(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(3)
	c := st.client(t)
	old := "application_1700000000000_0001"
	if _, _, err := c.AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: old, HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatal(err)
	}
	survivor := st.leader(t)
	// The survivor applied the write before answering; it is the leader.
	for _, nd := range st.nodes {
		if nd != survivor {
			nd.p.Kill()
		}
	}
	raw := st.client(t, survivor).Raw()
	refused := "application_1700000000000_0002"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := raw.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: refused, HomeSubClusterId: "SC-2"}})
	cancel()
	code := status.Code(err)
	t.Logf("write to a leader without a majority: %v", err)
	if err == nil {
		t.Fatal("a write was acknowledged by one replica of three")
	}
	home, err := st.client(t, survivor).GetApplicationHome(ctxT(t, 10*time.Second), old, false, client.Stale())
	if err != nil || home.GetHomeSubClusterId() != "SC-1" {
		t.Errorf("stale read from the survivor: %v %v", home, err)
	}

	for _, nd := range st.nodes {
		if nd != survivor {
			h.restart(nd.p)
		}
	}
	waitFor(t, 30*time.Second, "a majority and a leader again", st.agreedLeader)
	if _, _, err := c.AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: "application_1700000000000_0003", HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatalf("write with a majority back: %v", err)
	}
	_, err = c.GetApplicationHome(ctxT(t, 10*time.Second), refused, false)
	applied := err == nil
	if !applied && !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("read of the refused write: %v", err)
	}
	t.Logf("refused write (%v) applied after the majority returned: %v", code, applied)
	if applied && code == codes.Unavailable {
		t.Errorf("the write was answered Unavailable (a promise it was not applied) but was applied once a majority returned")
	}
}

// TestStoreCountersExactAfterCrash: the delegation-token sequence counter
// hands out ranges; a replica SIGKILLed after snapshots and later writes
// comes back with exactly the counter it acknowledged: no range handed out
// twice (lost writes) and none skipped (log entries applied twice on
// replay), with the FSM database fsynced per batch or rebuilt from the log.
func TestStoreCountersExactAfterCrash(t *testing.T) {
	for _, fsmSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsm-sync=%v", fsmSync), func(t *testing.T) {
			h := newHarness(t)
			extra := []string{"--snapshot-threshold", "16", "--snapshot-interval", "200ms"}
			if fsmSync {
				extra = append(extra, "--fsm-sync")
			}
			st := h.startStore(1, extra...)
			c := st.client(t)
			reserve := func(n int, last int64) int64 {
				for range n {
					first, err := c.ReserveRange(ctxT(t, 15*time.Second), pb.Counter_COUNTER_TOKEN_SEQUENCE, 10)
					if err != nil {
						t.Fatalf("reserve: %v", err)
					}
					if last != 0 && first != last+10 {
						t.Fatalf("range starts at %d after one that started at %d; want %d", first, last, last+10)
					}
					last = first
				}
				return last
			}
			last := reserve(60, 0)
			nd := st.nodes[0]
			waitFor(t, 20*time.Second, "a snapshot", func() (bool, string) {
				ents, _ := os.ReadDir(filepath.Join(nd.dir, "snapshots"))
				return len(ents) > 0, "no snapshot yet"
			})
			last = reserve(7, last) // log entries after the snapshot
			before, err := c.GetCounter(ctxT(t, 10*time.Second), pb.Counter_COUNTER_TOKEN_SEQUENCE)
			if err != nil {
				t.Fatal(err)
			}
			nd.p.Kill()
			h.restart(nd.p)
			waitFor(t, 30*time.Second, "the replica back", st.agreedLeader)
			after, err := c.GetCounter(ctxT(t, 10*time.Second), pb.Counter_COUNTER_TOKEN_SEQUENCE)
			if err != nil || after != before {
				t.Fatalf("counter %d before the crash, %d (%v) after", before, after, err)
			}
			reserve(1, last)
		})
	}
}

// TestStoreNonVoterReadReplica: a replica joined with --non-voter serves
// reads (stale locally, linearizable through the leader) and forwards
// writes, but does not count towards the majority: with one of the two
// voters gone, the cluster refuses writes until the voter returns.
func TestStoreNonVoterReadReplica(t *testing.T) {
	h := newHarness(t)
	st := &storeCluster{h: h}
	st.addReplica(t)
	st.addReplica(t)
	nv := st.addReplica(t, "--non-voter")
	c := st.client(t, nv)
	waitFor(t, 30*time.Second, "2 voters and a non-voter", func() (bool, string) {
		s, err := c.Status(ctxT(t, 5*time.Second))
		if err != nil {
			return false, err.Error()
		}
		voters, others := 0, 0
		for _, n := range s.GetNodes() {
			if n.GetVoter() {
				voters++
			} else {
				others++
			}
		}
		return voters == 2 && others == 1, s.String()
	})
	id := "application_1700000000000_0001"
	if _, _, err := c.AddApplicationHome(ctxT(t, 15*time.Second), &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatalf("write through the non-voter: %v", err)
	}
	if h, err := c.GetApplicationHome(ctxT(t, 15*time.Second), id, false); err != nil || h.GetHomeSubClusterId() != "SC-1" {
		t.Fatalf("linearizable read through the non-voter: %v %v", h, err)
	}
	waitFor(t, 10*time.Second, "the non-voter holds the write locally", func() (bool, string) {
		h, err := c.GetApplicationHome(ctxT(t, 5*time.Second), id, false, client.Stale())
		return err == nil && h.GetHomeSubClusterId() == "SC-1", fmt.Sprint(h, err)
	})

	// One voter of two gone: no majority, whatever the non-voter does.
	var voter *storeNode
	for _, nd := range st.nodes[:2] {
		if l, _ := nd.readyz(); l != nd.id {
			voter = nd // a follower voter
		}
	}
	if voter == nil {
		voter = st.nodes[1]
	}
	voter.p.Kill()
	short, err := client.New(client.Config{Addrs: []string{nv.grpc}, DisableCache: true, CallTimeout: time.Second, RetryTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if _, _, err := short.AddApplicationHome(ctxT(t, 10*time.Second), &pb.ApplicationHome{ApplicationId: "application_1700000000000_0002", HomeSubClusterId: "SC-1"}); err == nil {
		t.Fatal("a write was acknowledged by one voter and a non-voter")
	}
	h.restart(voter.p)
	if _, _, err := c.AddApplicationHome(ctxT(t, 30*time.Second), &pb.ApplicationHome{ApplicationId: "application_1700000000000_0003", HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatalf("write with both voters back: %v", err)
	}
}
