package client_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestLostReplyResentPerOperation pins, for every client method that
// calls the StateStore service, whether a call whose reply is lost (the
// store applied it, the connection broke) is sent again. The expected
// answer is written here, one line per method, not read from the code: a
// write marked idempotent by mistake (AddReservationHome resent could
// report "exists" for the caller's own insert, or insert after another
// client's delete) fails its line. A resend reaches the store twice; a
// call that is not resent reaches it once and reports ErrUnknownOutcome
// (the outcome tests in outcome_test.go check the errors and rows).
func TestLostReplyResentPerOperation(t *testing.T) {
	fence := &client.Fence{Lease: "gpg", Holder: "g1", Epoch: 1}
	rh := func() *pb.ReservationHome {
		return &pb.ReservationHome{ReservationId: "reservation_1_0001", HomeSubClusterId: "SC-1"}
	}
	cases := []struct {
		method string // the StateStore RPC the client method sends
		resent bool
		call   func(ctx context.Context, c *client.Client)
	}{
		// membership: a resend writes the same row again
		{"RegisterSubCluster", true, func(ctx context.Context, c *client.Client) {
			_ = c.RegisterSubCluster(ctx, &pb.SubClusterInfo{SubClusterId: "SC-9", State: pb.SubClusterState_SC_RUNNING})
		}},
		{"Heartbeat", true, func(ctx context.Context, c *client.Client) {
			_ = c.Heartbeat(ctx, "SC-1", pb.SubClusterState_SC_RUNNING, "{}")
		}},
		{"DeregisterSubCluster", true, func(ctx context.Context, c *client.Client) {
			_ = c.DeregisterSubCluster(ctx, "SC-1", pb.SubClusterState_SC_UNREGISTERED)
		}},
		{"ListSubClusters", true, func(ctx context.Context, c *client.Client) { _, _ = c.ListSubClusters(ctx, false) }},
		// application homes: insert-if-absent, blind update and delete are not resent
		{"AddApplicationHome", false, func(ctx context.Context, c *client.Client) {
			_, _, _ = c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0099", HomeSubClusterId: "SC-1"})
		}},
		{"AddApplicationHomes", false, func(ctx context.Context, c *client.Client) {
			_, _, _ = c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0098", HomeSubClusterId: "SC-1"})
		}},
		{"UpdateApplicationHome", false, func(ctx context.Context, c *client.Client) {
			_ = c.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1"})
		}},
		{"GetApplicationHome", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.GetApplicationHome(ctx, "application_1_0001", false)
		}},
		{"DeleteApplicationHome", false, func(ctx context.Context, c *client.Client) {
			_ = c.DeleteApplicationHome(ctx, "application_1_0001")
		}},
		{"ListApplicationHomes", true, func(ctx context.Context, c *client.Client) {
			_, _, _ = c.ListApplicationHomes(ctx, client.ListQuery{})
		}},
		{"DeleteApplicationHomes", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.DeleteApplicationHomes(ctx, []string{"application_1_0001"}, 1, fence)
		}},
		// policies
		{"ListPolicies", true, func(ctx context.Context, c *client.Client) { _, _ = c.ListPolicies(ctx) }},
		{"SetPolicy", false, func(ctx context.Context, c *client.Client) {
			_ = c.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "q1", Type: "x", Params: []byte("{}")})
		}},
		{"DeletePolicies", false, func(ctx context.Context, c *client.Client) { _ = c.DeletePolicies(ctx, "q1") }},
		{"DeleteAllPolicies", false, func(ctx context.Context, c *client.Client) { _ = c.DeleteAllPolicies(ctx) }},
		{"SetPolicies", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.SetPolicies(ctx, client.PoliciesWrite{Fence: fence})
		}},
		// GPG lease and fenced writes
		{"AcquireLease", true, func(ctx context.Context, c *client.Client) { _, _, _ = c.AcquireLease(ctx, "gpg", "g1", 60000) }},
		{"ReleaseLease", true, func(ctx context.Context, c *client.Client) { _ = c.ReleaseLease(ctx, "gpg", "g1", 1) }},
		{"GetLease", true, func(ctx context.Context, c *client.Client) { _, _ = c.GetLease(ctx, "gpg") }},
		{"PublishCapacity", true, func(ctx context.Context, c *client.Client) { _, _ = c.PublishCapacity(ctx, nil, fence) }},
		{"MarkSubClustersLost", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.MarkSubClustersLost(ctx, []string{"SC-1"}, 1, fence)
		}},
		// reservations: like application homes
		{"AddReservationHome", false, func(ctx context.Context, c *client.Client) { _, _, _ = c.AddReservationHome(ctx, rh()) }},
		{"UpdateReservationHome", false, func(ctx context.Context, c *client.Client) { _ = c.UpdateReservationHome(ctx, rh()) }},
		{"GetReservationHome", true, func(ctx context.Context, c *client.Client) { _, _ = c.GetReservationHome(ctx, "reservation_1_0001") }},
		{"ListReservationHomes", true, func(ctx context.Context, c *client.Client) { _, _ = c.ListReservationHomes(ctx) }},
		{"DeleteReservationHome", false, func(ctx context.Context, c *client.Client) { _ = c.DeleteReservationHome(ctx, "reservation_1_0001") }},
		// delegation tokens: writes are not resent, reads and counters are
		{"StoreMasterKey", false, func(ctx context.Context, c *client.Client) {
			_ = c.StoreMasterKey(ctx, &pb.MasterKey{KeyId: 7, KeyBytes: []byte("k"), ExpiryDateMs: 1})
		}},
		{"RemoveMasterKey", false, func(ctx context.Context, c *client.Client) { _ = c.RemoveMasterKey(ctx, 7) }},
		{"GetMasterKey", true, func(ctx context.Context, c *client.Client) { _, _ = c.GetMasterKey(ctx, 7) }},
		{"StoreToken", false, func(ctx context.Context, c *client.Client) {
			_ = c.StoreToken(ctx, &pb.DelegationToken{Identifier: []byte("id"), TokenInfo: []byte("pw")})
		}},
		{"UpdateToken", false, func(ctx context.Context, c *client.Client) {
			_ = c.UpdateToken(ctx, &pb.DelegationToken{Identifier: []byte("id"), TokenInfo: []byte("pw")})
		}},
		{"RemoveToken", false, func(ctx context.Context, c *client.Client) { _ = c.RemoveToken(ctx, []byte("id")) }},
		{"GetToken", true, func(ctx context.Context, c *client.Client) { _, _ = c.GetToken(ctx, []byte("id")) }},
		{"ReserveRange", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.ReserveRange(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE, 10)
		}},
		{"GetCounter", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.GetCounter(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE)
		}},
		{"SetCounter", true, func(ctx context.Context, c *client.Client) {
			_ = c.SetCounter(ctx, pb.Counter_COUNTER_TOKEN_SEQUENCE, 100)
		}},
		// UAM registry: put replaces, delete converges
		{"PutUAM", true, func(ctx context.Context, c *client.Client) {
			_, _ = c.PutUAM(ctx, &pb.UAMRecord{ApplicationId: "application_1_0001", SubClusterId: "SC-2"})
		}},
		{"GetUAMs", true, func(ctx context.Context, c *client.Client) { _, _ = c.GetUAMs(ctx, "application_1_0001") }},
		{"ListUAMs", true, func(ctx context.Context, c *client.Client) { _, _ = c.ListUAMs(ctx, "", 0) }},
		{"DeleteUAM", true, func(ctx context.Context, c *client.Client) { _, _ = c.DeleteUAM(ctx, "application_1_0001", "") }},
		// version and format
		{"GetVersion", true, func(ctx context.Context, c *client.Client) { _, _, _ = c.GetVersion(ctx) }},
		{"Format", true, func(ctx context.Context, c *client.Client) { _ = c.Format(ctx) }},
		// the Cluster service. Status reads; Join and Remove are resent
		// (raft makes adding a member already there with the same
		// address, or removing one already gone, a no-op); Snapshot is
		// not: a resend goes to the next replica, not the one asked.
		{"Status", true, func(ctx context.Context, c *client.Client) { _, _ = c.Status(ctx) }},
		{"Snapshot", false, func(ctx context.Context, c *client.Client) { _, _ = c.Snapshot(ctx) }},
		{"Join", true, func(ctx context.Context, c *client.Client) {
			// a non-voter at a dead address: the one-node cluster keeps
			// its quorum; Remove takes it out again
			_ = c.Join(ctx, &pb.JoinRequest{NodeId: "n9", RaftAddress: "127.0.0.1:1", NonVoter: true})
		}},
		{"Remove", true, func(ctx context.Context, c *client.Client) { _ = c.Remove(ctx, "n9") }},
	}
	// rpc names the RPC a client method sends where the two differ.
	rpc := map[string]string{"DeleteAllPolicies": "DeletePolicies"}
	covered := map[string]bool{
		"Watch": true, // a stream: re-opened by the watch loop, not resent
		// Not sent by the client: it reads the whole list (and caches it).
		"GetSubCluster": true, "GetPolicy": true,
	}
	for _, tc := range cases {
		covered[tc.method] = true
	}
	for _, desc := range []grpc.ServiceDesc{pb.StateStore_ServiceDesc, pb.Cluster_ServiceDesc} {
		for _, m := range desc.Methods {
			if !covered[m.MethodName] {
				t.Errorf("%s.%s: no line here; decide whether a lost reply is resent and add it", desc.ServiceName, m.MethodName)
			}
		}
	}
	// Every exported client method either has a line (it passes its own
	// flag to the retry loop) or is named here with why it has none, so a
	// new call with its own flag cannot go unpinned.
	noLine := map[string]string{
		"GetSubCluster": "reads ListSubClusters' list (the same call and flag)",
		"GetPolicy":     "reads ListPolicies' list",
		"PolicyFor":     "reads ListPolicies' list",
		"CheckVersion":  "calls GetVersion",
		"Close":         "sends nothing", "Raw": "sends nothing", "Synced": "sends nothing",
		"WatchEvents": "the Watch stream", "MembershipChanges": "sends nothing (signals from the cache's watch)",
	}
	ct := reflect.TypeOf(&client.Client{})
	for i := range ct.NumMethod() {
		name := ct.Method(i).Name
		if _, ok := noLine[name]; !ok && !covered[name] {
			t.Errorf("client method %s: no line here and not in noLine; add one", name)
		}
	}

	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	bc, err := client.New(client.Config{Addrs: []string{f.Addr}, RetryTimeout: 10 * time.Second, CallTimeout: 3 * time.Second, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			c := c
			if tc.method == "AddApplicationHomes" { // sent by the insert batcher
				c = bc
			}
			m := tc.method
			if r, ok := rpc[m]; ok {
				m = r
			}
			before := f.Calls(m)
			f.Once(m, storetest.DropReply)
			tc.call(ctx, c)
			n := f.Calls(m) - before
			if n == 0 {
				t.Fatalf("the call never reached the store as %s: the case calls the wrong method", m)
			}
			if resent := n > 1; resent != tc.resent {
				t.Errorf("%s with its reply lost reached the store %d times: resent=%v, want %v", tc.method, n, resent, tc.resent)
			}
		})
	}
}
