package main

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// TestAMRMProxyRelayedLogins runs the production wiring: the AM's token
// login is relayed to the home RM, which alone can check it.
func TestAMRMProxyRelayedLogins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, fedOptions{})
	sc, rms := f.SC, f.RMs
	cfg := amrmproxy.DefaultConfig()
	cfg.SubClusterID, cfg.AMRMAddress, cfg.WebAddress, cfg.DataDir = "SC-1", "127.0.0.1:0", "", t.TempDir()
	cfg.Store = amrmproxy.ClientStore{C: sc}
	p, err := amrmproxy.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.Run(ctx) }()

	tok := launchAM(t, ctx, rms[0])
	// A forged token (right identifier, wrong password) is refused by the home RM.
	bad := proto.Clone(tok).(*commonpb.TokenProto)
	bad.Password = []byte("not the password")
	forged, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{p.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: bad, FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer forged.Close()
	if err := forged.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{}, &yarnpb.RegisterApplicationMasterResponseProto{}); err == nil {
		t.Fatal("a forged token logged in")
	} else {
		t.Logf("forged token refused: %v", err)
	}

	am, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{p.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	registerAndAllocate(t, ctx, am)
	fr := &yarnpb.FinishApplicationMasterResponseProto{}
	if err := am.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, fr); err != nil || !fr.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", fr, err)
	}
}
