package uam

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

func TestLaunchGivesTheTokenOnceAndRetryIsSafe(t *testing.T) {
	rm := simrmtest.Start(t, "SC-2", nil)
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	// Another cluster's application id: the UAM carries the home's id.
	app := &yarnpb.ApplicationIdProto{Id: proto.Int32(42), ClusterTimestamp: proto.Int64(1_600_000_000_000)}
	spec := Spec{App: app, Queue: "default", Timeout: 10 * time.Second}
	tok, err := Launch(ctx, c, spec)
	if err != nil || len(tok.GetIdentifier()) == 0 {
		t.Fatalf("launch: %v %v", tok, err)
	}
	again, err := Launch(ctx, c, spec) // a retried launch before registration
	if err != nil || !proto.Equal(again, tok) {
		t.Fatalf("relaunch: %v %v", again, err)
	}
	rep := &yarnpb.GetApplicationReportResponseProto{}
	if err := c.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: app}, rep); err != nil {
		t.Fatal(err)
	}
	r := rep.GetApplicationReport()
	if !r.GetUnmanagedApplication() || r.GetUser() != "alice" || r.GetName() != "UnmanagedAM" {
		t.Fatalf("report %v", r)
	}
	// Once registered, a launch from elsewhere fails fast and says why.
	am, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Scheduler}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	if err := am.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{}, &yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(ctx, c, spec); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("launch after registration: %v", err)
	}
}

func TestRetryStopsOnPermanentErrors(t *testing.T) {
	n := 0
	perm := errors.New("permanent")
	err := Retry(context.Background(), 5, time.Millisecond, func(err error) bool { return errors.Is(err, perm) }, func() error { n++; return perm })
	if !errors.Is(err, perm) || n != 1 {
		t.Fatalf("%v after %d tries", err, n)
	}
	n = 0
	err = Retry(context.Background(), 3, time.Millisecond, nil, func() error { n++; return errors.New("transient") })
	if err == nil || n != 3 {
		t.Fatalf("%v after %d tries", err, n)
	}
}
