package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// watchKinds reads s's watch from index 1 up to SYNCED and counts the
// events by kind.
func watchKinds(t *testing.T, ctx context.Context, s pb.StateStoreClient) map[pb.WatchEvent_Kind]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := s.Watch(ctx, &pb.WatchRequest{AfterIndex: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[pb.WatchEvent_Kind]int{}
	for {
		e, err := st.Recv()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if e.GetKind() == pb.WatchEvent_SYNCED {
			return out
		}
		out[e.GetKind()]++
	}
}

// TestWatchFilteredByAuthorization: an agent certificate, refused
// ListApplicationHomes and ListPolicies, gets no application-home or
// policy events from Watch either (it used to get every one from index
// 1), but still its membership events; a router gets everything.
func TestWatchFilteredByAuthorization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := newPKI(t)
	leader, _ := startTLSCluster(t, ctx, p)
	router, _ := dialStubs(t, leader.GRPCAddr(), p.client("router-1", security.RoleRouter))
	agent, _ := dialStubs(t, leader.GRPCAddr(), p.client("SC-1", security.RoleAgent))
	// The two-replica cluster may still be settling (Unavailable).
	storetest.Poll(t, 30*time.Second, func() bool {
		_, err := router.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1"}})
		return err == nil
	})
	if _, err := router.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "root.a", Type: "x", Params: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING,
		AmrmServiceAddress: "rm:8030", ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088", Capability: "{}"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.ListApplicationHomes(ctx, &pb.ListApplicationHomesRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("agent ListApplicationHomes: %v, want PermissionDenied (the table this test relies on)", err)
	}
	got := watchKinds(t, ctx, agent)
	if got[pb.WatchEvent_APPLICATION_HOME_PUT] != 0 || got[pb.WatchEvent_POLICY_PUT] != 0 {
		t.Errorf("agent's watch carried %d application homes and %d policies, want none", got[pb.WatchEvent_APPLICATION_HOME_PUT], got[pb.WatchEvent_POLICY_PUT])
	}
	if got[pb.WatchEvent_SUB_CLUSTER_PUT] == 0 {
		t.Errorf("agent's watch lost its membership events: %v", got)
	}
	all := watchKinds(t, ctx, router)
	if all[pb.WatchEvent_APPLICATION_HOME_PUT] == 0 || all[pb.WatchEvent_POLICY_PUT] == 0 || all[pb.WatchEvent_SUB_CLUSTER_PUT] == 0 {
		t.Errorf("router's watch: %v, want homes, policies and sub-clusters", all)
	}
}

// TestHeartbeatCapabilityBounded: an agent cannot store a 1.2 MB
// capability in its row (replicated and pushed to every watcher on each
// heartbeat): InvalidArgument, and the row keeps the last accepted one.
func TestHeartbeatCapabilityBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := newPKI(t)
	leader, _ := startTLSCluster(t, ctx, p)
	agent, _ := dialStubs(t, leader.GRPCAddr(), p.client("SC-1", security.RoleAgent))
	// The two-replica cluster may still be settling (Unavailable).
	storetest.Poll(t, 30*time.Second, func() bool {
		_, err := agent.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING,
			AmrmServiceAddress: "rm:8030", ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088", Capability: `{"ok":1}`}})
		return err == nil
	})
	big := `{"x":"` + strings.Repeat("a", 1200<<10) + `"}`
	_, err := agent.Heartbeat(ctx, &pb.HeartbeatRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING, Capability: big})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "capability is") {
		t.Fatalf("1.2 MB capability: %v, want InvalidArgument", err)
	}
	if _, err := agent.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING,
		AmrmServiceAddress: "rm:8030", ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088", Capability: big}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("1.2 MB capability at registration: %v, want InvalidArgument", err)
	}
	if _, err := agent.Heartbeat(ctx, &pb.HeartbeatRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING, Capability: `{"ok":2}`}); err != nil {
		t.Fatalf("small capability: %v", err)
	}
	sc, err := agent.GetSubCluster(ctx, &pb.GetSubClusterRequest{SubClusterId: "SC-1"})
	if err != nil || sc.GetInfo().GetCapability() != `{"ok":2}` {
		t.Fatalf("row after the refused heartbeat: %v %v", sc, err)
	}
}
