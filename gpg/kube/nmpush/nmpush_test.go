package nmpush

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/ipctest"
	"github.com/yarnfed/yarnfed/internal/metrictest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// fakeNodes is a NodeSource whose results the test sets.
type fakeNodes struct {
	mu sync.Mutex
	m  map[string]kube.NodeResult
}

func (f *fakeNodes) Nodes() map[string]kube.NodeResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.m)
}

func (f *fakeNodes) set(node, sc, nodeID string, vcores, mb int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[node] = kube.NodeResult{SubCluster: sc, NodeID: nodeID, Status: kube.NodeContributing,
		Usable: capacity.Resources{VCores: vcores, MemoryMB: mb}}
}

// adminRM is a real Hadoop IPC server speaking the RM admin protocol's
// updateNodeResource, recording what it is sent.
type adminRM struct {
	mu    sync.Mutex
	calls [][]string // per call: "host:port=vcores/mb/timeout"
	fail  bool
	// unknown NodeIds make the whole request fail, as a Hadoop RM's
	// AdminService does for a node it does not know.
	unknown map[string]bool
	addr    string
	users   []hadoopipc.User // caller of each accepted call
}

func startAdminRM(t *testing.T) *adminRM {
	return startAdminRMWith(t, hadoopipc.DefaultServerConfig())
}

func startAdminRMWith(t *testing.T, cfg hadoopipc.ServerConfig) *adminRM {
	rm := &adminRM{}
	srv := ipctest.Start(t, cfg, hadoopipc.Protocol{
		Name: hadoopipc.ProtocolRMAdmin, Version: 1,
		Methods: []hadoopipc.Method{hadoopipc.NewMethod("updateNodeResource",
			func() *yarnpb.UpdateNodeResourceRequestProto { return &yarnpb.UpdateNodeResourceRequestProto{} },
			func(ctx context.Context, req *yarnpb.UpdateNodeResourceRequestProto) (*yarnpb.UpdateNodeResourceResponseProto, error) {
				rm.mu.Lock()
				defer rm.mu.Unlock()
				u, _ := hadoopipc.UserFromContext(ctx)
				rm.users = append(rm.users, u)
				if rm.fail {
					return nil, errors.New("RM says no")
				}
				for _, e := range req.GetNodeResourceMap() {
					if id := fmt.Sprintf("%s:%d", e.GetNodeId().GetHost(), e.GetNodeId().GetPort()); rm.unknown[id] {
						return nil, fmt.Errorf("Resource update get failed on all nodes due to change resource on an unrecognized node: %s", id)
					}
				}
				var call []string
				for _, e := range req.GetNodeResourceMap() {
					r := e.GetResourceOption()
					call = append(call, fmt.Sprintf("%s:%d=%d/%d/%d", e.GetNodeId().GetHost(), e.GetNodeId().GetPort(),
						r.GetResource().GetVirtualCores(), r.GetResource().GetMemory(), r.GetOverCommitTimeout()))
				}
				rm.calls = append(rm.calls, call)
				return &yarnpb.UpdateNodeResourceResponseProto{}, nil
			})},
	})
	rm.addr = srv.Addr
	return rm
}

func (rm *adminRM) takeCalls() [][]string {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	c := rm.calls
	rm.calls = nil
	return c
}

func TestPushDebouncedAndBatched(t *testing.T) {
	rmA, rmB := startAdminRM(t), startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 60, 100_000)
	src.set("n2", "sc-a", "n2.example:8041", 10, 20_000)
	src.set("n3", "sc-b", "n3.example:8041", 5, 5_000)
	src.set("n4", "sc-c", "n4.example:8041", 5, 5_000) // no RM configured: left alone
	src.set("n5", "sc-a", "", 5, 5_000)                // no NodeId: cannot address it
	src.m["n6"] = kube.NodeResult{Status: kube.NodeStale}

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	cfg := testConfig(StaticRMs{"sc-a": {rmA.addr}, "sc-b": {rmB.addr}}, clk)
	cfg.Name, cfg.Registerer = "k8s-1", prometheus.NewRegistry()
	p := mustNew(t, cfg, src)
	ctx := context.Background()

	if n := p.PushOnce(ctx); n != 3 {
		t.Errorf("first push accepted %d NodeManagers, want 3", n)
	}
	if got, want := fmt.Sprint(rmA.takeCalls()), "[[n1.example:8041=60/100000/-1 n2.example:8041=10/20000/-1]]"; got != want {
		t.Errorf("RM A calls %s, want %s (one batched call)", got, want)
	}
	if got, want := fmt.Sprint(rmB.takeCalls()), "[[n3.example:8041=5/5000/-1]]"; got != want {
		t.Errorf("RM B calls %s, want %s", got, want)
	}

	// Below 10%: nothing is sent. At 10% of either resource: sent.
	src.set("n1", "sc-a", "n1.example:8041", 55, 95_000) // -8.3% vcores, -5% memory
	src.set("n2", "sc-a", "n2.example:8041", 10, 18_000) // -10% memory
	p.PushOnce(ctx)
	if got, want := fmt.Sprint(rmA.takeCalls()), "[[n2.example:8041=10/18000/-1]]"; got != want {
		t.Errorf("after small changes RM A calls %s, want %s", got, want)
	}

	// MaxAge re-pushes unchanged figures (an RM restart forgets them).
	clk.Step(5 * time.Minute)
	p.PushOnce(ctx)
	if got, want := fmt.Sprint(rmA.takeCalls()), "[[n1.example:8041=55/95000/-1 n2.example:8041=10/18000/-1]]"; got != want {
		t.Errorf("after MaxAge RM A calls %s, want %s", got, want)
	}
	if got := rmB.takeCalls(); len(got) != 1 {
		t.Errorf("after MaxAge RM B calls %v, want one", got)
	}
	// A second cluster's Pusher registers beside the first.
	cfg2 := cfg
	cfg2.Name = "k8s-2"
	if _, err := New(cfg2, src); err != nil {
		t.Errorf("second Pusher on one registry: %v", err)
	}

	// A failed call is retried at the next interval.
	rmA.mu.Lock()
	rmA.fail = true
	rmA.mu.Unlock()
	src.set("n1", "sc-a", "n1.example:8041", 20, 95_000)
	if n := p.PushOnce(ctx); n != 0 {
		t.Errorf("push to a failing RM accepted %d", n)
	}
	rmA.mu.Lock()
	rmA.fail = false
	rmA.mu.Unlock()
	p.PushOnce(ctx)
	if got, want := fmt.Sprint(rmA.takeCalls()), "[[n1.example:8041=20/95000/-1]]"; got != want {
		t.Errorf("after recovery RM A calls %s, want %s", got, want)
	}
}

func TestChanged(t *testing.T) {
	r := func(v, m int64) capacity.Resources { return capacity.Resources{VCores: v, MemoryMB: m} }
	for _, tc := range []struct {
		old, cur capacity.Resources
		want     bool
	}{
		{r(10, 1000), r(10, 1000), false},
		{r(10, 1000), r(11, 1000), true},   // exactly 10%
		{r(100, 1000), r(91, 1000), false}, // 9%
		{r(10, 1000), r(10, 899), true},
		{r(0, 0), r(1, 0), true},
		{r(5, 5), r(0, 0), true},
	} {
		if got := changed(tc.old, tc.cur, 0.10); got != tc.want {
			t.Errorf("changed(%v, %v) = %v, want %v", tc.old, tc.cur, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err == nil {
		t.Error("config without RMs and user validated")
	}
	cfg.RMs = StaticRMs{"sc": {"127.0.0.1:8033"}}
	cfg.User = "yarn"
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	cfg.MinChange = 2
	cfg.Interval = 0
	if err := cfg.Validate(); err == nil {
		t.Error("bad config validated")
	}
}

// newPusher builds a Pusher on a fake clock over rms.
func newPusher(t *testing.T, src NodeSource, rms RMs, active func() bool) (*Pusher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Name, cfg.User, cfg.RMs, cfg.Active, cfg.Registerer = "k8s", "yarn", rms, active, reg
	cfg.Clock = clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	p, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, reg
}

func TestOnlyTheActiveGPGPushes(t *testing.T) {
	rm := startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 8, 8192)
	var mu sync.Mutex
	active := false
	setActive := func(v bool) { mu.Lock(); active = v; mu.Unlock() }
	p, reg := newPusher(t, src, StaticRMs{"sc-a": {rm.addr}}, func() bool { mu.Lock(); defer mu.Unlock(); return active })
	ctx := context.Background()

	if n := p.PushOnce(ctx); n != 0 || len(rm.takeCalls()) != 0 {
		t.Fatalf("a standby pushed %d NodeManagers", n)
	}
	setActive(true)
	if n := p.PushOnce(ctx); n != 1 {
		t.Fatalf("the lease holder pushed %d, want 1", n)
	}
	if n := p.PushOnce(ctx); n != 0 {
		t.Fatalf("an unchanged figure was pushed again (%d)", n)
	}
	// Losing the lease and getting it back: another GPG may have pushed
	// in between, so the new tenure pushes everything once.
	setActive(false)
	p.PushOnce(ctx)
	setActive(true)
	p.PushOnce(ctx)
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n1.example:8041=8/8192/-1] [n1.example:8041=8/8192/-1]]"; got != want {
		t.Errorf("RM calls %s, want %s", got, want)
	}
	if got := metrictest.Counter(t, reg, "yarnfed_gpg_kube_node_resource_push_rounds_total", "result", "standby"); got != 2 {
		t.Errorf("standby rounds %v, want 2", got)
	}
}

// movingRMs is an RMs whose answer the test changes (a failover).
type movingRMs struct {
	mu sync.Mutex
	m  map[string][]string
}

func (r *movingRMs) AdminAddresses(context.Context) (map[string][]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.m), nil
}

func TestFollowsRMFailover(t *testing.T) {
	rm1, rm2 := startAdminRM(t), startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 8, 8192)
	src.set("n2", "sc-b", "n2.example:8041", 4, 4096)
	rms := &movingRMs{m: map[string][]string{"sc-a": {rm1.addr}}}
	p, _ := newPusher(t, src, rms, nil)
	ctx := context.Background()

	if n := p.PushOnce(ctx); n != 1 { // sc-b has no RM yet: left alone
		t.Fatalf("pushed %d, want 1", n)
	}
	// The agent re-registers sc-a with the new active RM; sc-b joins.
	rms.mu.Lock()
	rms.m = map[string][]string{"sc-a": {rm2.addr}, "sc-b": {rm1.addr}}
	rms.mu.Unlock()
	if n := p.PushOnce(ctx); n != 2 {
		t.Fatalf("after the failover pushed %d, want 2 (the new RM gets the unchanged figure at once)", n)
	}
	if got, want := fmt.Sprint(rm1.takeCalls()), "[[n1.example:8041=8/8192/-1] [n2.example:8041=4/4096/-1]]"; got != want {
		t.Errorf("old RM calls %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(rm2.takeCalls()), "[[n1.example:8041=8/8192/-1]]"; got != want {
		t.Errorf("new RM calls %s, want %s", got, want)
	}
}

func TestUnknownNodeManagerDoesNotBlockOthers(t *testing.T) {
	rm := startAdminRM(t)
	rm.unknown = map[string]bool{"n2.example:8041": true}
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 8, 8192)
	src.set("n2", "sc-a", "n2.example:8041", 4, 4096)
	src.set("n3", "sc-a", "n3.example:8041", 2, 2048)
	p, _ := newPusher(t, src, StaticRMs{"sc-a": {rm.addr}}, nil)
	ctx := context.Background()
	if n := p.PushOnce(ctx); n != 2 {
		t.Fatalf("pushed %d, want 2 (all but the NodeManager the RM does not know)", n)
	}
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n1.example:8041=8/8192/-1] [n3.example:8041=2/2048/-1]]"; got != want {
		t.Errorf("RM calls %s, want %s", got, want)
	}
	// Once it registers, it is pushed; the others are not resent.
	rm.mu.Lock()
	rm.unknown = nil
	rm.mu.Unlock()
	if n := p.PushOnce(ctx); n != 1 {
		t.Fatalf("pushed %d, want 1", n)
	}
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n2.example:8041=4/4096/-1]]"; got != want {
		t.Errorf("RM calls %s, want %s", got, want)
	}
}
