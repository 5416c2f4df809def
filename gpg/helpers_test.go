package gpg

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// clock is a settable time source shared by a fake store and a GPG.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testLogger() *slog.Logger {
	if os.Getenv("GPG_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newTestGPG builds a GPG over st (no web port, no Run): tests drive
// the lease and rounds directly.
func newTestGPG(t testing.TB, st Store, src capacity.Source, now func() time.Time, mutate func(*Config)) *GPG {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID = "gpg-test"
	cfg.WebAddress = ""
	cfg.Store = st
	cfg.Logger = testLogger()
	cfg.Registerer = prometheus.NewRegistry()
	cfg.Now = now
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// acquire makes g take the lease (or fails the test).
func acquire(t testing.TB, g *GPG) {
	t.Helper()
	g.lease.tryOnce(context.Background())
	if !g.lease.holding() {
		t.Fatal("GPG did not get the lease")
	}
}

func subCluster(id string, st pb.SubClusterState, capability string) *pb.SubClusterInfo {
	return &pb.SubClusterInfo{SubClusterId: id, State: st, AmrmServiceAddress: "h:1", ClientRmServiceAddress: "h:2",
		RmAdminServiceAddress: "h:3", RmWebServiceAddress: "h:4", Capability: capability}
}

func metricsJSON(availMB, availVC, pending int64) string {
	return fmt.Sprintf(`{"clusterMetrics":{"availableMB":%d,"availableVirtualCores":%d,"appsPending":%d,"allocatedMB":0,"allocatedVirtualCores":0,"totalMB":%d,"totalVirtualCores":%d}}`,
		availMB, availVC, pending, availMB, availVC)
}

// submit submits an application to a simulated RM and returns its id.
// Unmanaged applications stay RUNNING (no AM ever finishes them); managed
// ones run simrm's built-in AM and finish.
func submit(t testing.TB, rm *simrm.RM, unmanaged bool) string {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		t.Fatal(err)
	}
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.ApplicationId, ApplicationName: proto.String("gpg-test"), Queue: proto.String("default"),
		UnmanagedAm:     proto.Bool(unmanaged),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
	}}
	if err := c.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	id := na.GetApplicationId()
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}
