package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestMembershipChangesFollowHeartbeats: a consumer that re-reads
// membership only when MembershipChanges signals (as the router does, its
// poll aside) sees every state a heartbeat writes, over a real 3-replica
// store with the client's cache watching a follower. Each read after a
// signal must reach the store, not the list from before the change, or the
// consumer keeps the old state with no further signal to come.
func TestMembershipChangesFollowHeartbeats(t *testing.T) {
	cl := storetest.NewCluster(t, 3)
	leader := cl.WaitLeader()
	follower := (leader + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := cl.Client(leader)
	if err := w.RegisterSubCluster(ctx, &pb.SubClusterInfo{SubClusterId: "SC-A", ClientRmServiceAddress: "a:8032", AmrmServiceAddress: "a:8030", RmAdminServiceAddress: "a:8033", RmWebServiceAddress: "a:8088", State: pb.SubClusterState_SC_RUNNING}); err != nil {
		t.Fatal(err)
	}
	c := cl.Client(follower, leader, (leader+2)%3) // the cache watches the follower
	storetest.Poll(t, 10*time.Second, c.Synced)
	ch, err := c.MembershipChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state := func() pb.SubClusterState {
		l, err := c.ListSubClusters(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range l {
			if sc.GetSubClusterId() == "SC-A" {
				return sc.GetState()
			}
		}
		t.Fatal("SC-A missing")
		return 0
	}
	select {
	case <-ch: // the first signal comes at once
	case <-time.After(10 * time.Second):
		t.Fatal("no initial signal")
	}
	if got := state(); got != pb.SubClusterState_SC_RUNNING {
		t.Fatalf("initial state %v", got)
	}
	for round := range 20 {
		want := pb.SubClusterState_SC_LOST
		if round%2 == 1 {
			want = pb.SubClusterState_SC_RUNNING
		}
		if err := w.Heartbeat(ctx, "SC-A", want, "{}"); err != nil {
			t.Fatal(err)
		}
		for got := pb.SubClusterState(-1); got != want; {
			select {
			case <-ch:
				got = state()
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: no signal within 10 s and the consumer's last read was %v, want %v", round, got, want)
			}
		}
	}
}

// TestMembershipChangesNeedsCache: without the cache there is no watch to
// signal from; the caller is told so and can open its own stream.
func TestMembershipChangesNeedsCache(t *testing.T) {
	c, err := client.New(client.Config{Addrs: []string{"127.0.0.1:1"}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.MembershipChanges(context.Background()); !errors.Is(err, client.ErrCacheDisabled) {
		t.Fatalf("got %v, want ErrCacheDisabled", err)
	}
}
