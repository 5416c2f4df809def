package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	storepb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestAMRMProxyWithRealStore wires what `yarnfed amrmproxy` wires, in
// process, over the real Raft store: membership comes from sub-cluster
// agents, the proxy reads it through statestore/client, and an AM on SC-1
// gets containers from both sub-clusters. (AM logins are verified by the
// home simrm's own token checker here, standing in for the SASL relay.)
func TestAMRMProxyWithRealStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, fedOptions{})
	sc, rms := f.SC, f.RMs

	cfg := amrmproxy.DefaultConfig()
	cfg.SubClusterID, cfg.AMRMAddress, cfg.WebAddress, cfg.DataDir = "SC-1", "127.0.0.1:0", "127.0.0.1:0", t.TempDir()
	cfg.Store = amrmproxy.ClientStore{C: sc}
	home := rms[0].AMRMSecrets()
	cfg.Secrets = home
	cfg.Passwords = func(id []byte) ([]byte, error) { pw, _, err := home.RetrievePassword(id); return pw, err }
	p, err := amrmproxy.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(ctx) }()

	tok := launchAM(t, ctx, rms[0])
	am, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{p.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	epochs := registerAndAllocate(t, ctx, am)
	if !epochs[rms[0].Epoch()] || !epochs[rms[1].Epoch()] {
		t.Fatalf("container epochs %v, want SC-1 %d and SC-2 %d", epochs, rms[0].Epoch(), rms[1].Epoch())
	}

	// A later AM attempt learns keep-containers from the submission
	// context the router stored beside the application's home.
	asc := &yarnpb.ApplicationSubmissionContextProto{ApplicationName: proto.String("x"), KeepContainersAcrossApplicationAttempts: proto.Bool(true)}
	b, _ := proto.Marshal(asc)
	if _, _, err := sc.AddApplicationHome(ctx, &storepb.ApplicationHome{ApplicationId: "application_1_0042", HomeSubClusterId: "SC-1", SubmissionContext: b}); err != nil {
		t.Fatal(err)
	}
	got, err := amrmproxy.ClientStore{C: sc}.Submission(ctx, "application_1_0042")
	if err != nil || !got.GetKeepContainersAcrossApplicationAttempts() {
		t.Fatalf("stored submission context: %v %v", got, err)
	}
	if got, err := (amrmproxy.ClientStore{C: sc}).Submission(ctx, "application_1_0043"); got != nil || err != nil {
		t.Fatalf("no home row: %v %v, want nothing", got, err)
	}
}

// registerAndAllocate registers the AM and asks for one container at a
// time until containers came from both sub-clusters; it returns the
// epochs (the bits above 40 of a container id) seen.
func registerAndAllocate(t *testing.T, ctx context.Context, am *hadoopipc.Client) map[int64]bool {
	t.Helper()
	if err := am.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h"), RpcPort: proto.Int32(1), TrackingUrl: proto.String("")},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatal(err)
	}
	epochs := map[int64]bool{}
	id := int32(0)
	ask := []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1), RelaxLocality: proto.Bool(true)}}
	deadline := time.Now().Add(20 * time.Second)
	for len(epochs) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("containers from %d sub-clusters, want 2", len(epochs))
		}
		resp := &yarnpb.AllocateResponseProto{}
		if err := am.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(id), Ask: ask}, resp); err != nil {
			t.Fatal(err)
		}
		ask, id = nil, resp.GetResponseId()
		for _, c := range resp.AllocatedContainers {
			epochs[c.GetId().GetId()>>40] = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return epochs
}

// launchAM submits an unmanaged application as alice straight to rm (the
// home RM), and returns the AMRM token its AM logs in with.
func launchAM(t *testing.T, ctx context.Context, rm *simrm.RM) *commonpb.TokenProto {
	t.Helper()
	cc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := cc.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		t.Fatal(err)
	}
	tok, err := uam.Launch(ctx, cc, uam.Spec{App: na.ApplicationId, Queue: "default", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
