package nmpush

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
)

// A node Koordinator reset (batch keys deleted) is pushed as 0 with
// overCommitTimeout -1 (drain: no container is killed), once; stale or
// NotReady nodes keep what their RM has.
func TestResetNodeIsDrained(t *testing.T) {
	rm := startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 10, 10_000)
	src.set("n2", "sc-a", "n2.example:8041", 8, 8_000)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	cfg := DefaultConfig()
	cfg.RMs = StaticRMs{"sc-a": {rm.addr}}
	cfg.User = "yarn"
	cfg.Clock = clk
	p, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	p.PushOnce(ctx)
	rm.takeCalls()

	src.mu.Lock()
	src.m["n1"] = kube.NodeResult{SubCluster: "sc-a", NodeID: "n1.example:8041", Status: kube.NodeBatchReset}
	src.m["n2"] = kube.NodeResult{SubCluster: "sc-a", NodeID: "n2.example:8041", Status: kube.NodeStale}
	src.mu.Unlock()
	if n := p.PushOnce(ctx); n != 1 {
		t.Errorf("pushed %d, want 1 (the reset node only)", n)
	}
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n1.example:8041=0/0/-1]]"; got != want {
		t.Errorf("RM calls %s, want %s (drain, overCommitTimeout -1)", got, want)
	}
	p.PushOnce(ctx)
	if c := rm.takeCalls(); len(c) != 0 {
		t.Errorf("a drained node is pushed again: %v", c)
	}
	// Koordinator gives the batch back: the node is resized at once.
	src.set("n1", "sc-a", "n1.example:8041", 4, 4_000)
	p.PushOnce(ctx)
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n1.example:8041=4/4000/-1]]"; got != want {
		t.Errorf("RM calls %s, want %s", got, want)
	}
}

// fakeRMNodes is an RMNodeReader whose totals the test sets, standing for
// the RM's REST /ws/v1/cluster/nodes.
type fakeRMNodes struct {
	mu    sync.Mutex
	total map[string]capacity.Resources
}

func (f *fakeRMNodes) set(id string, vcores, mb int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total[id] = capacity.Resources{VCores: vcores, MemoryMB: mb}
}

func (f *fakeRMNodes) RMNodes(context.Context, string) (map[string]kube.RMNode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]kube.RMNode{}
	for id, t := range f.total {
		out[id] = kube.RMNode{State: "RUNNING", Total: t}
	}
	return out, nil
}

// A NodeManager restart (the RM shows its registered size once) is
// repaired; another writer setting the size again after our repair
// (koord-yarn-operator still running) is detected and left alone: no
// further pushes to that NodeManager, a metric, a status entry. Others go
// on; a new tenure looks again.
func TestSecondWriterOfNodeResource(t *testing.T) {
	rm := startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 10, 10_000)
	src.set("n2", "sc-a", "n2.example:8041", 8, 8_000)
	rmNodes := &fakeRMNodes{total: map[string]capacity.Resources{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	active := true
	cfg := DefaultConfig()
	cfg.Name = "k8s-1"
	cfg.RMs = StaticRMs{"sc-a": {rm.addr}}
	cfg.RMNodes = rmNodes
	cfg.Active = func() bool { return active }
	cfg.User = "yarn"
	cfg.Clock = clk
	cfg.Registerer = reg
	p, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	step := func() { clk.Step(cfg.Interval.D()); p.PushOnce(ctx) }

	p.PushOnce(ctx)
	rm.takeCalls()
	rmNodes.set("n1.example:8041", 10, 10_000)
	rmNodes.set("n2.example:8041", 8, 8_000)
	step()
	if c := rm.takeCalls(); len(c) != 0 {
		t.Fatalf("pushed %v while the RM agrees", c)
	}

	// n1's NodeManager restarts: it registers with its configured size.
	rmNodes.set("n1.example:8041", 1, 1024)
	step()
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n1.example:8041=10/10000/-1]]"; got != want {
		t.Fatalf("after a restart: %s, want %s (repaired)", got, want)
	}
	rmNodes.set("n1.example:8041", 10, 10_000)
	step() // agrees again: the count starts over

	// koord-yarn-operator sets n1 to the origin batch (its figure).
	rmNodes.set("n1.example:8041", 12, 12_288)
	step()
	if got := fmt.Sprint(rm.takeCalls()); got != "[[n1.example:8041=10/10000/-1]]" {
		t.Fatalf("first difference: %s, want one repair", got)
	}
	step() // the other writer's figure again (the RM still shows 12/12288)
	for range 3 {
		src.set("n1", "sc-a", "n1.example:8041", 3, 3_000) // even a real change
		step()
	}
	if c := rm.takeCalls(); len(c) != 0 {
		t.Errorf("kept pushing a NodeManager another writer sizes: %v", c)
	}
	if f := p.ForeignNodeManagers(); len(f) != 1 || f["n1.example:8041"] == "" {
		t.Errorf("ForeignNodeManagers = %v, want n1", f)
	}
	if v := gaugeValue(t, p.foreignGauge); v != 1 {
		t.Errorf("%s = %v, want 1", kube.ForeignWritersMetric, v)
	}
	// The others are still pushed.
	src.set("n2", "sc-a", "n2.example:8041", 2, 2_000)
	step()
	if got, want := fmt.Sprint(rm.takeCalls()), "[[n2.example:8041=2/2000/-1]]"; got != want {
		t.Errorf("n2: %s, want %s", got, want)
	}
	// A new tenure looks again.
	active = false
	step()
	if len(p.ForeignNodeManagers()) != 0 || gaugeValue(t, p.foreignGauge) != 0 {
		t.Error("standby kept the foreign list")
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
