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
	p := mustNew(t, testConfig(StaticRMs{"sc-a": {rm.addr}}, clk), src)
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
	cfg := testConfig(StaticRMs{"sc-a": {rm.addr}}, clk)
	cfg.Name, cfg.RMNodes, cfg.Registerer = "k8s-1", rmNodes, reg
	cfg.Active = func() bool { return active }
	p := mustNew(t, cfg, src)
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
	step()              // agrees again
	clk.Step(time.Hour) // the restart is forgotten after otherWriterWindow
	p.PushOnce(ctx)
	rm.takeCalls() // max_age re-push

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

// koord-yarn-operator writes a NodeManager's size on Node events, which
// come minutes apart on a quiet node (the kubelet's status report every
// 5 min, koord-manager's batch update every 300 s): between its writes the
// RM shows our repaired figure. A slow second writer is still detected on
// its second write (the match in between does not start the count over),
// instead of being repaired after each of its writes forever (a flap with
// the operator's period). A lone difference, such as a NodeManager
// restart, is still repaired once the earlier one is out of the window.
func TestSlowSecondWriterIsNotFought(t *testing.T) {
	rm := startAdminRM(t)
	src := &fakeNodes{m: map[string]kube.NodeResult{}}
	src.set("n1", "sc-a", "n1.example:8041", 10, 10_000)
	rmNodes := &fakeRMNodes{total: map[string]capacity.Resources{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	cfg := testConfig(StaticRMs{"sc-a": {rm.addr}}, clk)
	cfg.Name, cfg.RMNodes = "k8s-1", rmNodes
	p := mustNew(t, cfg, src)
	ctx := context.Background()
	// round advances the clock by d and runs one round; the RM applies
	// whatever it accepted (as a real RM does).
	round := func(d time.Duration) []string {
		clk.Step(d)
		p.PushOnce(ctx)
		var out []string
		for _, c := range rm.takeCalls() {
			out = append(out, fmt.Sprint(c))
			rmNodes.set("n1.example:8041", 10, 10_000)
		}
		return out
	}
	round(0)
	// A NodeManager restart long ago: repaired.
	round(time.Hour)
	rmNodes.set("n1.example:8041", 1, 1024)
	if got := round(cfg.Interval.D()); len(got) != 1 {
		t.Fatalf("a restart: calls %v, want one repair", got)
	}
	// The operator, an hour later, then again minutes later, with our
	// repaired figure on the RM in between.
	round(time.Hour)
	rmNodes.set("n1.example:8041", 12, 12_288)
	if got := round(cfg.Interval.D()); len(got) != 1 {
		t.Fatalf("the operator's first write: calls %v, want one repair (it may be a restart)", got)
	}
	for range 20 { // minutes of rounds agreeing with us (less than max_age)
		if got := round(cfg.Interval.D()); len(got) != 0 {
			t.Fatalf("pushed %v while the RM agrees", got)
		}
	}
	rmNodes.set("n1.example:8041", 12, 12_288)
	for i := range 10 {
		if got := round(cfg.Interval.D()); len(got) != 0 {
			t.Fatalf("round %d after the operator's second write: pushed %v over it (a flap with the operator's period)", i, got)
		}
	}
	if f := p.ForeignNodeManagers(); f["n1.example:8041"] == "" {
		t.Errorf("ForeignNodeManagers = %v, want n1", f)
	}
}
