package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestRouterWithRealStore wires what `yarnfed router` and
// `yarnfed subcluster-agent` wire, in process: a 3-replica Raft state
// store, two simrm sub-clusters with agents, and two routers side by side.
// A YARN client submits through one router and reads through the other;
// the store's queue policy decides the home.
func TestRouterWithRealStore(t *testing.T) {
	f := startFederation(t, fedOptions{Replicas: 3, LongRunning: true})
	cl := f.Store
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cl.Client().SetPolicy(ctx, &storepb.PolicyConfiguration{Queue: "root.b",
		Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0"},{"key":{"id":"SC-2"},"value":"1"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"1"}]},"headroomAlpha":"1.0"}`)}); err != nil {
		t.Fatal(err)
	}

	// Two routers, each over its own store client.
	c0 := appClient(t, f.startRouter(t, cl.Client(0), nil), "bob")
	c1 := appClient(t, f.startRouter(t, cl.Client(1), nil), "bob")
	call := func(c *hadoopipc.Client, m string, req, resp proto.Message) error {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		return c.Call(cctx, m, req, resp)
	}
	storetest.Poll(t, 20*time.Second, func() bool { // agents registered, routers see both
		m := &yarnpb.GetClusterMetricsResponseProto{}
		return call(c0, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m) == nil &&
			m.GetClusterMetrics().GetNumNodeManagers() == int32(2*simrm.TestConfig().Nodes)
	})

	for range 5 {
		na := &yarnpb.GetNewApplicationResponseProto{}
		if err := call(c0, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
			t.Fatal(err)
		}
		sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: na.GetApplicationId(), Queue: proto.String("root.b"), ApplicationName: proto.String("it"),
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}}}
		if err := call(c0, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		home, err := cl.Client().GetApplicationHome(ctx, yarnid.AppIDString(na.GetApplicationId()), false)
		if err != nil || home.GetHomeSubClusterId() != "SC-2" {
			t.Fatalf("home %v, %v; queue root.b routes to SC-2 only", home, err)
		}
		// The other router finds it through the store.
		rep := &yarnpb.GetApplicationReportResponseProto{}
		if err := call(c1, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}, rep); err != nil {
			t.Fatalf("report via router 2: %v", err)
		}
		// Resubmission through the other router is acknowledged, not duplicated.
		if err := call(c1, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatalf("resubmit via router 2: %v", err)
		}
	}
	// A delegation token issued by one router is renewed through the other
	// (master keys and tokens live in the store).
	dt := &commonpb.GetDelegationTokenResponseProto{}
	if err := call(c0, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("bob")}, dt); err != nil {
		t.Fatalf("getDelegationToken: %v", err)
	}
	if err := call(c1, "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: dt.GetToken()}, &commonpb.RenewDelegationTokenResponseProto{}); err != nil {
		t.Fatalf("renew through the other router: %v", err)
	}

	apps := &yarnpb.GetApplicationsResponseProto{}
	if err := call(c1, "getApplications", &yarnpb.GetApplicationsRequestProto{}, apps); err != nil || len(apps.GetApplications()) != 5 {
		t.Fatalf("getApplications: %d, %v", len(apps.GetApplications()), err)
	}
}
