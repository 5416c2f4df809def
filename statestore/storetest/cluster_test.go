package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func scInfo(id string) *pb.SubClusterInfo {
	return &pb.SubClusterInfo{SubClusterId: id, State: pb.SubClusterState_SC_RUNNING, AmrmServiceAddress: "rm:8030",
		ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088", Capability: "{}"}
}

func app(i int) string { return fmt.Sprintf("application_1700000000000_%06d", i) }

func follower(c *Cluster) int {
	l := c.Leader()
	for i := range c.Nodes {
		if i != l && c.Nodes[i].running {
			return i
		}
	}
	return -1
}

func TestFollowerForwardsAndReadsAreLinearizable(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	cl := c.Client(follower(c)) // only ever talks to a follower
	if err := cl.RegisterSubCluster(ctx, scInfo("SC-1")); err != nil {
		t.Fatal(err)
	}
	stored, inserted, err := insertHome(ctx, cl, &pb.ApplicationHome{ApplicationId: app(1), HomeSubClusterId: "SC-1"})
	if err != nil || !inserted || stored.GetCreateTimeMs() == 0 {
		t.Fatalf("add: %v %v %v", stored, inserted, err)
	}
	// A linearizable read through the follower sees the write at once.
	h, err := cl.GetApplicationHome(ctx, app(1), false)
	if err != nil || h.GetHomeSubClusterId() != "SC-1" {
		t.Fatalf("get: %v %v", h, err)
	}
	// A stale read gets there eventually.
	Poll(t, 10*time.Second, func() bool {
		h, err := cl.GetApplicationHome(ctx, app(1), false, client.Stale())
		return err == nil && h.GetHomeSubClusterId() == "SC-1"
	})
	st, err := cl.Status(ctx)
	if err != nil || len(st.GetNodes()) != 3 || st.GetLeaderId() != c.Nodes[c.Leader()].ID {
		t.Fatalf("status: %v %v", st, err)
	}
	if err := cl.CheckVersion(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLeaderLossUnderWriteLoadLosesNoAcknowledgedWrite(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	cl := c.Client()
	var (
		mu    sync.Mutex
		acked []string
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := app(int(next.Add(1)))
				_, _, err := cl.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"})
				if err != nil {
					continue // not acknowledged: may or may not exist
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	Poll(t, 30*time.Second, func() bool { return count() >= 200 })
	old := c.Leader()
	c.Stop(old)
	before := count()
	Poll(t, 30*time.Second, func() bool { return count() >= before+200 })
	stop.Store(true)
	wg.Wait()
	c.Restart(old)
	c.WaitLeader()

	mu.Lock()
	defer mu.Unlock()
	for _, id := range acked {
		if _, err := cl.GetApplicationHome(ctx, id, false); err != nil {
			t.Fatalf("acknowledged write %s lost: %v", id, err)
		}
	}
	// The restarted node catches up to the same rows.
	want := len(acked)
	Poll(t, 30*time.Second, func() bool {
		n, _ := c.Nodes[old].Store.Counts()
		return n["apps"] >= want
	})
}

func TestPartitionedMinorityRefusesWrites(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	old := c.Leader()
	c.Partition(old)
	// The majority elects a new leader and keeps taking writes.
	Poll(t, 20*time.Second, func() bool {
		for i, nd := range c.Nodes {
			if i != old && nd.Store.IsLeader() {
				return true
			}
		}
		return false
	})
	majority := (old + 1) % 3
	if err := c.Client(majority).RegisterSubCluster(ctx, scInfo("SC-majority")); err != nil {
		t.Fatal(err)
	}
	// The cut-off node cannot commit anything.
	iso, err := client.New(client.Config{Addrs: []string{c.Nodes[old].Addr}, RetryTimeout: 1500 * time.Millisecond, CallTimeout: 500 * time.Millisecond, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer iso.Close()
	err = iso.RegisterSubCluster(ctx, scInfo("SC-minority"))
	if err == nil {
		t.Fatal("minority accepted a write")
	}
	if !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrUnknownOutcome) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("minority write: unexpected error %v", err)
	}
	// Nor serve a linearizable read, though a stale one works.
	if _, err := iso.GetApplicationHome(ctx, app(1), false); errors.Is(err, client.ErrNotFound) || err == nil {
		t.Fatalf("minority served a linearizable read: %v", err)
	}
	if _, err := iso.GetApplicationHome(ctx, app(1), false, client.Stale()); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("stale read on minority: %v", err)
	}
	c.Heal()
	c.WaitLeader()
	if _, err := c.Client().GetSubCluster(ctx, "SC-minority"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("minority write surfaced after heal: %v", err)
	}
	Poll(t, 20*time.Second, func() bool {
		_, err := c.Nodes[old].Store.GetSubCluster("SC-majority")
		return err == nil
	})
}

func TestRestartEveryNodeRecoversFromDisk(t *testing.T) {
	for _, fsmSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("FSMSync=%v", fsmSync), func(t *testing.T) {
			c := NewCluster(t, 3, func(cfg *store.Config) { cfg.FSMSync = fsmSync })
			ctx := ctxT(t)
			cl := c.Client()
			for i := 0; i < 20; i++ {
				if _, _, err := insertHome(ctx, cl, &pb.ApplicationHome{ApplicationId: app(i), HomeSubClusterId: "SC-1"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "*", Type: "UniformBroadcastPolicyManager"}); err != nil {
				t.Fatal(err)
			}
			for i := range c.Nodes {
				c.Stop(i)
			}
			for i := range c.Nodes {
				c.Restart(i)
			}
			c.WaitLeader()
			l, _, err := cl.ListApplicationHomes(ctx, client.ListQuery{})
			if err != nil || len(l) != 20 {
				t.Fatalf("after restart: %d homes, %v", len(l), err)
			}
			if _, err := cl.GetPolicy(ctx, "*"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLaggingFollowerCatchesUpBySnapshot(t *testing.T) {
	c := NewCluster(t, 3, func(cfg *store.Config) { cfg.TrailingLogs = 10; cfg.SnapshotThreshold = 50 })
	ctx := ctxT(t)
	cl := c.Client()
	f := follower(c)
	c.Stop(f)
	for i := 0; i < 100; i++ {
		if _, _, err := insertHome(ctx, cl, &pb.ApplicationHome{ApplicationId: app(i), HomeSubClusterId: "SC-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Nodes[c.Leader()].Store.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.Restart(f)
	Poll(t, 30*time.Second, func() bool {
		n, _ := c.Nodes[f].Store.Counts()
		return n["apps"] == 100
	})
}

func TestConcurrentInsertIfAbsentYieldsOneHome(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	const n = 24
	var wg sync.WaitGroup
	homes := make([]string, n)
	inserted := make([]bool, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		cl := c.Client(i % 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, ins, err := cl.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: app(7), HomeSubClusterId: fmt.Sprintf("SC-%d", i)})
			homes[i], inserted[i], errs[i] = st.GetHomeSubClusterId(), ins, err
		}()
	}
	wg.Wait()
	winners := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if homes[i] != homes[0] {
			t.Fatalf("client %d got home %s, client 0 got %s", i, homes[i], homes[0])
		}
		if inserted[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d inserts won, want 1", winners)
	}
}

func TestBadInputIsInvalidArgumentAndChangesNothing(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	cl := c.Client(follower(c))
	bad := scInfo("SC-1")
	bad.State = 99
	cases := []struct {
		name string
		call func() error
	}{
		{"unknown sub-cluster state", func() error { return cl.RegisterSubCluster(ctx, bad) }},
		{"heartbeat unknown state", func() error { return cl.Heartbeat(ctx, "SC-1", 0, "") }},
		{"empty sub-cluster id", func() error { return cl.RegisterSubCluster(ctx, scInfo("")) }},
		{"empty application id", func() error {
			_, _, err := cl.AddApplicationHome(ctx, &pb.ApplicationHome{HomeSubClusterId: "SC-1"})
			return err
		}},
		{"empty home", func() error {
			_, _, err := cl.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: app(1)})
			return err
		}},
		{"oversized context", func() error {
			_, _, err := cl.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: app(1), HomeSubClusterId: "SC-1", SubmissionContext: make([]byte, 300<<10)})
			return err
		}},
		{"malformed policy params", func() error {
			return cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "root.a", Type: "WeightedLocalityPolicyManager", Params: []byte{0xff, 0x00}})
		}},
		{"empty queue", func() error { return cl.SetPolicy(ctx, &pb.PolicyConfiguration{Type: "X"}) }},
		{"negative counter", func() error { return cl.SetCounter(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE, -1) }},
		{"unknown counter", func() error { _, err := cl.ReserveRange(ctx, 9, 1); return err }},
		{"empty token", func() error { return cl.StoreToken(ctx, &pb.DelegationToken{}) }},
		{"bad page token", func() error {
			_, _, err := cl.ListApplicationHomes(ctx, client.ListQuery{PageToken: []byte{1}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, client.ErrInvalidArgument) {
				t.Fatalf("got %v, want ErrInvalidArgument", err)
			}
		})
	}
	// Nothing was stored anywhere. (The applied index may move: a
	// leader change on a loaded machine logs its own entries.)
	if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "barrier", Type: "X"}); err != nil {
		t.Fatal(err)
	}
	for _, nd := range c.Nodes {
		Poll(t, 10*time.Second, func() bool { _, err := nd.Store.GetPolicy("barrier"); return err == nil })
		n, err := nd.Store.Counts()
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"subclusters", "apps", "appctx", "apptime", "reservations", "masterkeys", "tokens"} {
			if n[table] != 0 {
				t.Fatalf("%s: bad input stored %d rows in %s", nd.ID, n[table], table)
			}
		}
		if n["policies"] != 1 {
			t.Fatalf("%s: %d policies, want only the barrier", nd.ID, n["policies"])
		}
	}
}

func TestErrorsMapToSentinels(t *testing.T) {
	c := NewCluster(t, 1)
	ctx := ctxT(t)
	cl := c.Client()
	if _, err := cl.GetApplicationHome(ctx, app(1), false); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if err := cl.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: app(1), HomeSubClusterId: "SC-1"}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	k := &pb.MasterKey{KeyId: 1, KeyBytes: []byte("k")}
	if err := cl.StoreMasterKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := cl.StoreMasterKey(ctx, k); !errors.Is(err, client.ErrAlreadyExists) {
		t.Fatalf("dup key: %v", err)
	}
	if _, err := cl.PolicyFor(ctx, "root.a"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("no policy: %v", err)
	}
	if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "*", Type: "HashBroadcastPolicyManager"}); err != nil {
		t.Fatal(err)
	}
	if p, err := cl.PolicyFor(ctx, "root.a"); err != nil || p.GetType() != "HashBroadcastPolicyManager" {
		t.Fatalf("fallback to *: %v %v", p, err)
	}
	a, _ := cl.ReserveRange(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE, 10)
	b, _ := cl.ReserveRange(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE, 10)
	if a != 1 || b != 11 {
		t.Fatalf("ranges %d, %d", a, b)
	}
}

func TestWatchKeepsCacheFresh(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	reader := c.Client(follower(c))
	writer := c.Client(c.Leader()) // the leader has applied every acknowledged write
	Poll(t, 10*time.Second, reader.Synced)
	if l, err := reader.ListSubClusters(ctx, false); err != nil || len(l) != 0 {
		t.Fatalf("initial: %v %v", l, err)
	}
	if err := writer.RegisterSubCluster(ctx, scInfo("SC-1")); err != nil {
		t.Fatal(err)
	}
	Poll(t, 10*time.Second, func() bool {
		l, err := reader.ListSubClusters(ctx, true)
		return err == nil && len(l) == 1
	})
	if err := writer.Heartbeat(ctx, "SC-1", pb.SubClusterState_SC_LOST, "{}"); err != nil {
		t.Fatal(err)
	}
	Poll(t, 10*time.Second, func() bool {
		l, err := reader.ListSubClusters(ctx, true)
		return err == nil && len(l) == 0
	})
	if err := writer.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "root.a", Type: "X"}); err != nil {
		t.Fatal(err)
	}
	Poll(t, 10*time.Second, func() bool {
		p, err := reader.GetPolicy(ctx, "root.a")
		return err == nil && p.GetType() == "X"
	})
	// Raw event stream with catch-up from an index.
	ch, err := writer.WatchEvents(ctx, &pb.WatchRequest{AfterIndex: 1, Policies: true})
	if err != nil {
		t.Fatal(err)
	}
	for e := range ch {
		if e.GetKind() == pb.WatchEvent_POLICY_PUT && e.GetKey() == "root.a" {
			return
		}
		if e.GetKind() == pb.WatchEvent_SYNCED {
			t.Fatal("SYNCED before the backlog event")
		}
	}
	t.Fatal("watch ended without the policy event")
}

// TestLargeContextsAreBatchedWithinMessageLimits: concurrent inserts whose
// contexts together exceed gRPC's 4 MiB message limit still all succeed.
func TestLargeContextsAreBatchedWithinMessageLimits(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	cl := c.Client(follower(c))
	var wg sync.WaitGroup
	errs := make([]error, 24)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = insertHome(ctx, cl, &pb.ApplicationHome{ApplicationId: app(i), HomeSubClusterId: "SC-1", SubmissionContext: make([]byte, 200<<10)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	h, err := cl.GetApplicationHome(ctx, app(3), true)
	if err != nil || len(h.GetSubmissionContext()) != 200<<10 {
		t.Fatalf("context: %d bytes, %v", len(h.GetSubmissionContext()), err)
	}
	// Resubmitting returns the stored context (the router compares it).
	stored, inserted, err := insertHome(ctx, cl, &pb.ApplicationHome{ApplicationId: app(3), HomeSubClusterId: "SC-2"})
	if err != nil || inserted || stored.GetHomeSubClusterId() != "SC-1" || len(stored.GetSubmissionContext()) != 200<<10 {
		t.Fatalf("resubmission: %v %d bytes %v", inserted, len(stored.GetSubmissionContext()), err)
	}
}

// TestCacheLeavesCutOffReplica: a cache watching a replica that loses
// touch with the leader stops serving, moves to another replica and sees
// new writes there.
func TestCacheLeavesCutOffReplica(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	f := follower(c)
	other := 3 - f - c.Leader()
	reader := c.Client(f, other) // watches f first
	Poll(t, 10*time.Second, reader.Synced)
	if _, err := reader.ListSubClusters(ctx, false); err != nil {
		t.Fatal(err)
	}
	c.Partition(f)
	if err := c.Client(c.Leader()).RegisterSubCluster(ctx, scInfo("SC-after-cut")); err != nil {
		t.Fatal(err)
	}
	Poll(t, 20*time.Second, func() bool {
		_, err := reader.GetSubCluster(ctx, "SC-after-cut")
		return err == nil
	})
}

func TestRemoveNode(t *testing.T) {
	c := NewCluster(t, 3)
	ctx := ctxT(t)
	cl := c.Client()
	gone := follower(c)
	if err := cl.Remove(ctx, c.Nodes[gone].ID); err != nil {
		t.Fatal(err)
	}
	for i, nd := range c.Nodes {
		if i == gone {
			continue
		}
		Poll(t, 10*time.Second, func() bool {
			st, err := nd.Store.Status()
			return err == nil && len(st.GetNodes()) == 2
		})
	}
	// The remaining two still form a quorum.
	if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "*", Type: "X"}); err != nil {
		t.Fatal(err)
	}
}

// insertHome inserts as the router does: an insert whose outcome is
// unknown (leadership lost mid-commit, common while these tests churn
// leaders on a loaded machine) is not resent by the client, so insert
// again as a new call, which finds the row if the first one stored it.
func insertHome(ctx context.Context, cl *client.Client, h *pb.ApplicationHome) (*pb.ApplicationHome, bool, error) {
	for try := 1; ; try++ {
		stored, inserted, err := cl.AddApplicationHome(ctx, h)
		if !errors.Is(err, client.ErrUnknownOutcome) || try == 10 || ctx.Err() != nil {
			return stored, inserted, err
		}
		// Leadership lost mid-commit again and again means elections
		// are churning (a loaded CI machine, 5 MB batches): let one settle.
		time.Sleep(time.Duration(try) * 100 * time.Millisecond)
	}
}
