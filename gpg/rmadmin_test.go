package gpg

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func TestRMAdminAddressesFollowMembership(t *testing.T) {
	st := gpgtest.NewFakeStore(nil)
	reg := func(id string, state pb.SubClusterState, admin string) {
		sc := subCluster(id, state, "")
		sc.RmAdminServiceAddress = admin
		st.Register(sc)
	}
	reg("running", pb.SubClusterState_SC_RUNNING, "rm1:8033")
	reg("ha", pb.SubClusterState_SC_UNHEALTHY, "rm1:8033, rm2:8033")
	reg("new", pb.SubClusterState_SC_NEW, "rm3:8033")
	reg("no-admin", pb.SubClusterState_SC_RUNNING, "")
	reg("lost", pb.SubClusterState_SC_LOST, "old:8033")
	reg("gone", pb.SubClusterState_SC_DECOMMISSIONED, "old:8033")
	g := newTestGPG(t, st, nil, nil, nil)
	got, err := g.RMAdminAddresses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"running": {"rm1:8033"}, "ha": {"rm1:8033", "rm2:8033"}, "new": {"rm3:8033"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("addresses %v, want %v", got, want)
	}
	// A failover re-registers the sub-cluster with the new active RM.
	reg("running", pb.SubClusterState_SC_RUNNING, "rm9:8033")
	if got, _ := g.RMAdminAddresses(context.Background()); fmt.Sprint(got["running"]) != "[rm9:8033]" {
		t.Fatalf("after re-registration %v", got["running"])
	}
}

// RMNodes reads the active RM of an HA pair (the standby's 503 is skipped)
// and refuses sub-clusters that left or are unknown.
func TestRMNodesFromTheActiveRM(t *testing.T) {
	active, standby := simrmtest.StartHA(t, "ha", func(c *simrm.Config) { c.Nodes = 3 })
	st := gpgtest.NewFakeStore(nil)
	sc := subCluster("ha", pb.SubClusterState_SC_RUNNING, "")
	sc.RmWebServiceAddress = standby.Addrs().Web + "," + active.Addrs().Web
	st.Register(sc)
	st.Register(subCluster("lost", pb.SubClusterState_SC_LOST, ""))
	g := newTestGPG(t, st, nil, nil, nil)
	ctx := context.Background()
	nodes, err := g.RMNodes(ctx, "ha")
	if err != nil || len(nodes) != 3 {
		t.Fatalf("RMNodes = %d nodes, %v; want the active RM's 3", len(nodes), err)
	}
	for _, id := range []string{"lost", "nope"} {
		if _, err := g.RMNodes(ctx, id); !errors.Is(err, ErrNoRMWeb) {
			t.Errorf("RMNodes(%s) = %v, want ErrNoRMWeb", id, err)
		}
	}
}
