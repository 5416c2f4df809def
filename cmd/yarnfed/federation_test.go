package main

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storetest"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// fedOptions says what startFederation builds; the zero value is a
// one-replica store and sub-clusters SC-1 and SC-2 of simrm.TestConfig's
// size, probed every 50 ms.
type fedOptions struct {
	Replicas    int             // Raft store replicas; 0 means 1
	SubClusters []fedSubCluster // nil means SC-1 and SC-2
	Probe       time.Duration   // the agents' probe interval; 0 means 50 ms
	// LongRunning makes simulated AMs' containers run for an hour, so
	// applications stay RUNNING for the whole test.
	LongRunning bool
}

// fedSubCluster names one simrm sub-cluster; Nodes 0 means
// simrm.TestConfig's count.
type fedSubCluster struct {
	ID    string
	Nodes int
}

// testFederation is what `yarnfed statestore`, `yarnfed subcluster-agent`
// and a simrm per sub-cluster run, wired in process: the federation the
// role tests put a router, an AMRMProxy or a GPG in front of.
type testFederation struct {
	Store *storetest.Cluster
	SC    *client.Client // a client of the store (any replica)
	RMs   []*simrm.RM    // in SubClusters order
}

// startFederation starts the store, one simrm RM and agent per sub-cluster,
// and waits until the store lists every sub-cluster as active. Everything
// stops at the test's cleanup (agents first, then RMs, then the store).
func startFederation(t *testing.T, opts fedOptions) *testFederation {
	t.Helper()
	if opts.Replicas == 0 {
		opts.Replicas = 1
	}
	if opts.SubClusters == nil {
		opts.SubClusters = []fedSubCluster{{ID: "SC-1"}, {ID: "SC-2"}}
	}
	if opts.Probe == 0 {
		opts.Probe = 50 * time.Millisecond
	}
	f := &testFederation{Store: storetest.NewCluster(t, opts.Replicas)}
	f.SC = f.Store.Client()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for i, s := range opts.SubClusters {
		rm := simrmtest.Start(t, s.ID, func(c *simrm.Config) {
			c.ClusterTimestamp = 1_700_000_000_000 + int64(i) // app ids must not collide across sub-clusters
			if s.Nodes != 0 {
				c.Nodes = s.Nodes
			}
			if opts.LongRunning {
				c.SimAM.ContainerRuntime = config.Duration(time.Hour)
			}
		})
		f.RMs = append(f.RMs, rm)
		a := rm.Addrs()
		acfg := subclusteragent.DefaultConfig()
		acfg.SubClusterID, acfg.Store = s.ID, subclusteragent.NewClientStore(f.Store.Client())
		acfg.RMs = []subclusteragent.RMEndpoint{{ClientRM: a.Client, AMRM: a.Scheduler, Admin: a.Admin, Web: a.Web}}
		acfg.ProbeInterval = config.Duration(opts.Probe)
		agent, err := subclusteragent.New(acfg)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = agent.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	storetest.Poll(t, 30*time.Second, func() bool {
		l, err := f.SC.ListSubClusters(context.Background(), true)
		return err == nil && len(l) == len(opts.SubClusters)
	})
	return f
}

// startRouter runs a router over store (the federation's own client if
// nil): client RPC on a loopback port, no web UI, membership re-read every
// 50 ms; mutate, if not nil, adjusts the configuration last. The router
// stops at the test's cleanup, and must stop cleanly.
func (f *testFederation) startRouter(t *testing.T, store *client.Client, mutate func(*router.Config)) *router.Router {
	t.Helper()
	if store == nil {
		store = f.SC
	}
	cfg := router.DefaultConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ClientListener, cfg.WebAddress = ln, ""
	cfg.Store = router.NewClientStore(store)
	cfg.MembershipRefresh = router.Duration(50 * time.Millisecond)
	if mutate != nil {
		mutate(&cfg)
	}
	return routertest.StartRouter(t, cfg)
}

// appClient is a YARN client (ApplicationClientProtocol) of r as user,
// closed at the test's cleanup.
func appClient(t *testing.T, r *router.Router, user string) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: user})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// submitter returns a function that submits one application named name
// (1 GiB, 1 vcore, default queue) through yc and returns the home
// sub-cluster the store recorded for it.
func submitter(t *testing.T, yc *hadoopipc.Client, sc *client.Client, name string) func() string {
	return func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		na := &yarnpb.GetNewApplicationResponseProto{}
		if err := yc.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
			t.Fatal(err)
		}
		sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(name),
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}}}
		if err := yc.Call(ctx, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatalf("submit: %v", err)
		}
		home, err := sc.GetApplicationHome(ctx, yarnid.AppIDString(na.GetApplicationId()), false)
		if err != nil {
			t.Fatal(err)
		}
		return home.GetHomeSubClusterId()
	}
}
