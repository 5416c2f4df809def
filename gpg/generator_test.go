package gpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// storedWeights reads a queue's router weights, normalized.
func storedWeights(t *testing.T, st *gpgtest.FakeStore, queue string) Weights {
	t.Helper()
	p := st.Policy(queue)
	if p == nil {
		return nil
	}
	info, err := policies.ParseWeightedPolicyInfo(p.GetParams())
	if err != nil {
		t.Fatalf("queue %s: stored params unreadable by the policies package: %v", queue, err)
	}
	amrm := normalized(fromPolicyWeights(info.AMRMWeights))
	w := normalized(fromPolicyWeights(info.RouterWeights))
	for id, v := range w {
		if math.Abs(amrm[id]-v) > 1e-6 {
			t.Fatalf("router and AMRM weights differ: %v vs %v", w, amrm)
		}
	}
	return w
}

type genEnv struct {
	clk *clock
	st  *gpgtest.FakeStore
	src *gpgtest.FakeSource
	g   *GPG
}

func newGenEnv(t *testing.T, mutate func(*Config)) *genEnv {
	t.Helper()
	e := &genEnv{clk: newClock(), src: gpgtest.NewFakeSource()}
	e.st = gpgtest.NewFakeStore(e.clk.Now)
	e.st.Register(subCluster("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(30000, 30, 0)))
	e.st.Register(subCluster("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0)))
	e.g = newTestGPG(t, e.st, e.src, e.clk.Now, mutate)
	acquire(t, e.g)
	return e
}

func (e *genEnv) round(t *testing.T) RoundResult {
	t.Helper()
	acquire(t, e.g) // renew, as the lease loop would have
	res, err := e.g.policyRound(context.Background(), e.g.lease.fence())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func approx(t *testing.T, got Weights, want Weights) {
	t.Helper()
	for id, w := range want {
		if math.Abs(got[id]-w) > 1e-3 {
			t.Fatalf("weights %v, want %v", got, want)
		}
	}
}

func TestGeneratorWeightsFollowCapacity(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.MaxStep = 1 })
	// RM figures only: 3:1.
	e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.75, "SC-2": 0.25})
	if p := e.st.Policy("*"); p.GetType() != DefaultManager {
		t.Fatalf("new queue policy type %s", p.GetType())
	}
	// Kubernetes says SC-1's nodes can really give YARN only 10 GB / 10
	// vcores: equal headroom now, and the capacity is published.
	e.src.Set(capacity.SubCluster{ID: "SC-1", Usable: capacity.Resources{MemoryMB: 10000, VCores: 10}, Nodes: 40, ObservedAt: e.clk.Now()})
	res := e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.5, "SC-2": 0.5})
	if res.Writes != 1 || len(res.Capacities) != 1 {
		t.Fatalf("round wrote %d times with %d capacities", res.Writes, len(res.Capacities))
	}
	if pc := e.st.SubCluster("SC-1").GetPublishedCapacity(); pc.GetMemoryMb() != 10000 || pc.GetNodes() != 40 {
		t.Fatalf("published %v", pc)
	}
	// A stale Kubernetes figure counts as zero, never as unlimited.
	e.clk.Add(20 * time.Minute)
	e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(30000, 30, 0))
	e.st.Heartbeat("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0))
	e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0, "SC-2": 1})
}

func TestGeneratorHysteresisAndBoundedStep(t *testing.T) {
	e := newGenEnv(t, nil) // threshold 0.05, max step 0.2
	e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.75, "SC-2": 0.25})
	writes := e.st.Writes("SetPolicies")
	// A wobble below the threshold writes nothing.
	e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(31000, 31, 0))
	if res := e.round(t); res.Writes != 0 || e.st.Writes("SetPolicies") != writes {
		t.Fatalf("a small wobble wrote (%d writes)", e.st.Writes("SetPolicies")-writes)
	}
	// SC-1 fills up: the target flips to 0:1, but each round moves at most
	// 0.2, and the weights settle without flapping.
	e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(0, 0, 0))
	var seen []float64
	for range 6 {
		e.round(t)
		seen = append(seen, storedWeights(t, e.st, "*")["SC-1"])
	}
	want := []float64{0.55, 0.35, 0.15, 0, 0, 0}
	for i := range want {
		if math.Abs(seen[i]-want[i]) > 1e-3 {
			t.Fatalf("SC-1 weight per round %v, want %v", seen, want)
		}
	}
	if got := e.st.Writes("SetPolicies") - writes; got != 4 {
		t.Fatalf("%d writes while converging, want 4 (then none)", got)
	}
}

func TestGeneratorLeavesPinnedAndUnweightedQueues(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.MaxStep = 1 })
	pinned := &pb.PolicyConfiguration{Queue: "root.pinned", Type: DefaultManager, Pinned: true,
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.1"},{"key":{"id":"SC-2"},"value":"0.9"}]},"headroomAlpha":"0.5"}`)}
	e.st.PutPolicy(pinned)
	e.st.PutPolicy(&pb.PolicyConfiguration{Queue: "root.hash", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.HashBroadcastPolicyManager"})
	e.st.PutPolicy(&pb.PolicyConfiguration{Queue: "root.weighted", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedHomePolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.5"},{"key":{"id":"SC-2"},"value":"0.5"}]},"headroomAlpha":"0.3"}`)})
	res := e.round(t)
	if res.Writes != 1 {
		t.Fatalf("%d writes, want one for every queue together", res.Writes)
	}
	if p := e.st.Policy("root.pinned"); string(p.GetParams()) != string(pinned.GetParams()) || !p.GetPinned() {
		t.Fatalf("pinned queue changed: %s", p.GetParams())
	}
	if p := e.st.Policy("root.hash"); len(p.GetParams()) != 0 {
		t.Fatal("a queue whose manager takes no weights was written")
	}
	w := e.st.Policy("root.weighted")
	info, _ := policies.ParseWeightedPolicyInfo(w.GetParams())
	if w.GetType() != "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedHomePolicyManager" || info.HeadroomAlpha != 0.3 {
		t.Fatalf("weighted queue lost its manager or alpha: %s %s", w.GetType(), w.GetParams())
	}
	approx(t, storedWeights(t, e.st, "root.weighted"), Weights{"SC-1": 0.75, "SC-2": 0.25})
	if len(res.Pinned) != 1 || res.Pinned[0] != "root.pinned" {
		t.Fatalf("pinned %v", res.Pinned)
	}
}

// TestGeneratorPinRacingTheWrite: an operator pins a queue after the GPG
// read it; the store (not the GPG's stale view) keeps the pin.
func TestGeneratorPinRacingTheWrite(t *testing.T) {
	e := newGenEnv(t, nil)
	orig := &pb.PolicyConfiguration{Queue: "root.a", Type: DefaultManager,
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.5"},{"key":{"id":"SC-2"},"value":"0.5"}]},"headroomAlpha":"1.0"}`)}
	e.st.PutPolicy(orig)
	e.st.Fail = func(op string) error {
		if op == "SetPolicies" {
			p := e.st.Policy("root.a")
			p.Pinned = true
			e.st.PutPolicy(p)
		}
		return nil
	}
	e.round(t)
	if p := e.st.Policy("root.a"); string(p.GetParams()) != string(orig.GetParams()) {
		t.Fatalf("a queue pinned during the round was overwritten: %s", p.GetParams())
	}
}

func TestGeneratorReadOnlyWritesNothing(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.ReadOnly = true })
	e.src.Set(capacity.SubCluster{ID: "SC-1", Usable: capacity.Resources{MemoryMB: 10, VCores: 1}, ObservedAt: e.clk.Now()})
	res := e.round(t)
	if len(res.Policies) == 0 {
		t.Fatal("read-only round computed nothing")
	}
	if n := e.st.Writes(""); n != 0 || e.st.Policy("*") != nil {
		t.Fatalf("read-only round wrote %d times", n)
	}
}

func TestGeneratorLoadBasedPolicy(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.Policy = PolicyLoadBased; c.Generator.MaxStep = 1 })
	e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(1, 1, 550))
	e.st.Heartbeat("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(1, 1, 0))
	e.round(t)
	// Hadoop: SC-1 0.5, SC-2 1.0 -> stored with the same ratio.
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 1.0 / 3, "SC-2": 2.0 / 3})
}

func TestGeneratorSkipsDeadSubClusters(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.MaxStep = 1 })
	e.st.Register(subCluster("SC-3", pb.SubClusterState_SC_LOST, metricsJSON(90000, 90, 0)))
	e.round(t)
	w := storedWeights(t, e.st, "*")
	if _, ok := w["SC-3"]; ok {
		t.Fatalf("a LOST sub-cluster got a weight: %v", w)
	}
}

// TestLostLeaseWritesNothing: a GPG whose lease another GPG took cannot
// write, even if it still thinks it holds it (the store fences it).
func TestLostLeaseWritesNothing(t *testing.T) {
	e := newGenEnv(t, nil)
	stale := e.g.lease.fence()
	e.clk.Add(time.Minute) // our lease expires
	other := newTestGPG(t, e.st, nil, e.clk.Now, func(c *Config) { c.ID = "gpg-other" })
	acquire(t, other)
	if e.g.lease.holding() {
		t.Fatal("expired lease still held locally")
	}
	if _, err := e.g.policyRound(context.Background(), e.g.lease.fence()); !errors.Is(err, errNotLeader) {
		t.Fatalf("round without the lease: %v", err)
	}
	// Even a write carrying the old fence is refused by the store.
	_, err := e.st.SetPolicies(context.Background(), client.PoliciesWrite{Policies: []*pb.PolicyConfiguration{{Queue: "*", Type: DefaultManager}}, Fence: stale})
	if !errors.Is(err, client.ErrFenced) {
		t.Fatalf("stale fence: %v", err)
	}
}

// A source naming a sub-cluster the store does not know is ignored, with
// one warning per id (a typo is only visible this way).
func TestGeneratorWarnsOnceAboutUnknownSubCluster(t *testing.T) {
	var logs strings.Builder
	e := newGenEnv(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	e.src.Set(capacity.SubCluster{ID: "SC-TYPO", Usable: capacity.Resources{MemoryMB: 1, VCores: 1}, Nodes: 1, ObservedAt: e.clk.Now()})
	e.round(t)
	e.round(t)
	if n := strings.Count(logs.String(), "subcluster=SC-TYPO"); n != 1 {
		t.Fatalf("%d warnings about SC-TYPO, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "subcluster=SC-1") {
		t.Fatalf("warned about a known sub-cluster:\n%s", logs.String())
	}
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.75, "SC-2": 0.25})
}

// TestGeneratorNodeChurnWritesNothing: in a large cluster nodes leave and
// return all the time; one node of 1,000 moves neither the weights nor the
// published capacity past their thresholds, so the round writes nothing
// (the node count, which routers only display, moves with the same
// threshold as the capacity, and catches up at the next republish).
func TestGeneratorNodeChurnWritesNothing(t *testing.T) {
	e := newGenEnv(t, nil)
	set := func(nodes int64) {
		e.src.Set(capacity.SubCluster{ID: "SC-1", Usable: capacity.Resources{MemoryMB: 30 * nodes, VCores: nodes / 10}, Nodes: int(nodes), ObservedAt: e.clk.Now()})
	}
	set(1000)
	if res := e.round(t); res.Writes != 1 || len(res.Capacities) != 1 {
		t.Fatalf("first figure: %d writes, %d capacities", res.Writes, len(res.Capacities))
	}
	for _, nodes := range []int64{999, 1000, 990, 1000} {
		set(nodes)
		if res := e.round(t); res.Writes != 0 {
			t.Fatalf("%d of 1000 nodes: %d writes (capacities %v), want none", nodes, res.Writes, res.Capacities)
		}
	}
	if got := e.st.SubCluster("SC-1").GetPublishedCapacity().GetNodes(); got != 1000 {
		t.Fatalf("published nodes %d, want 1000", got)
	}
	// Past the threshold the count is published, with the capacity.
	set(900)
	if res := e.round(t); res.Writes != 1 || len(res.Capacities) != 1 || res.Capacities[0].GetNodes() != 900 {
		t.Fatalf("900 of 1000 nodes: %d writes, capacities %v", res.Writes, res.Capacities)
	}
	// A small move is published at the next republish.
	set(899)
	e.round(t)
	e.clk.Add(time.Minute)
	e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(30000, 30, 0))
	e.st.Heartbeat("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0))
	set(899)
	e.round(t)
	if got := e.st.SubCluster("SC-1").GetPublishedCapacity().GetNodes(); got != 899 {
		t.Fatalf("published nodes %d after the republish, want 899", got)
	}
}

// TestGeneratorRereadsChangedStoredWeights: a round reuses what it parsed
// from unchanged JSON (a steady round at 100 sub-clusters and 21 queues
// allocates almost nothing), but an operator's new weights for a queue, or
// a new capability, are read at the next round.
func TestGeneratorRereadsChangedStoredWeights(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.MaxStep = 1 })
	e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.75, "SC-2": 0.25})
	if res := e.round(t); res.Writes != 0 {
		t.Fatalf("steady round wrote %d times", res.Writes)
	}
	// An operator (unpinned) writes other weights: the GPG sees them and
	// moves the queue back to its target.
	e.st.PutPolicy(&pb.PolicyConfiguration{Queue: "*", Type: DefaultManager,
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.1"},{"key":{"id":"SC-2"},"value":"0.9"}]},"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.1"},{"key":{"id":"SC-2"},"value":"0.9"}]},"headroomAlpha":"0.5"}`)})
	if res := e.round(t); res.Writes != 1 {
		t.Fatalf("round after the operator's write: %d writes, want 1", res.Writes)
	}
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.75, "SC-2": 0.25})
	info, _ := policies.ParseWeightedPolicyInfo(e.st.Policy("*").GetParams())
	if info.HeadroomAlpha != 0.5 {
		t.Fatalf("alpha %v, want the operator's 0.5 kept", info.HeadroomAlpha)
	}
	// A new capability is read too.
	e.st.Heartbeat("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(30000, 30, 0))
	e.round(t)
	approx(t, storedWeights(t, e.st, "*"), Weights{"SC-1": 0.5, "SC-2": 0.5})
}

// TestSteadyComputeAllocatesLittle pins the parse reuse at issue 25's
// size: a steady round's compute at 100 sub-clusters and 21 queues made
// 32,642 allocations when every stored policy and capability was parsed
// again (107 with reuse). An allocation count, not a time.
func TestSteadyComputeAllocatesLittle(t *testing.T) {
	e := newGenEnv(t, func(c *Config) { c.Generator.MaxStep = 1 })
	for i := range 98 {
		e.st.Register(subCluster(fmt.Sprintf("SC-%03d", i+3), pb.SubClusterState_SC_RUNNING, metricsJSON(int64(100000+1000*i), int64(100+i), int64(i%7))))
	}
	for q := range 20 {
		e.st.PutPolicy(&pb.PolicyConfiguration{Queue: fmt.Sprintf("root.q%02d", q), Type: DefaultManager, Params: []byte(`{"headroomAlpha":"1.0"}`)})
	}
	e.round(t)
	ctx := context.Background()
	scs, _ := e.st.ListSubClusters(ctx, false)
	stored, _ := e.st.ListPolicies(ctx)
	snap := e.src.Snapshot()
	if res := e.g.compute(scs, stored, snap); len(res.Policies) != 0 {
		t.Fatalf("not steady: %d policies to write", len(res.Policies))
	}
	if n := testing.AllocsPerRun(5, func() { e.g.compute(scs, stored, snap) }); n > 2000 {
		t.Fatalf("a steady compute over %d sub-clusters and %d queues made %.0f allocations, want <= 2000 (stored JSON parsed again?)", len(scs), len(stored), n)
	}
}

// TestRecordedWritesParseBack: what a round records as parsed for the
// queues it writes equals what parsing the stored params gives, through
// moves, a drain to zero and a sub-cluster leaving the target, so the next
// round's reuse changes no decision.
func TestRecordedWritesParseBack(t *testing.T) {
	e := newGenEnv(t, nil) // bounded steps: several writes per change
	e.st.PutPolicy(&pb.PolicyConfiguration{Queue: "root.a", Type: DefaultManager, Params: []byte(`{"headroomAlpha":"0.7"}`)})
	check := func(step string) {
		t.Helper()
		for _, q := range []string{"*", "root.a"} {
			p := e.st.Policy(q)
			info, err := policies.ParseWeightedPolicyInfo(p.GetParams())
			if err != nil {
				t.Fatal(err)
			}
			want := parsedPolicy{params: string(p.GetParams()), weights: normalized(fromPolicyWeights(info.RouterWeights)), alpha: info.HeadroomAlpha}
			e.g.parsedMu.Lock()
			got, ok := e.g.parsed.policies[q]
			e.g.parsedMu.Unlock()
			if !ok || got.params != want.params || got.alpha != want.alpha || !maps.Equal(got.weights, want.weights) {
				t.Fatalf("%s, queue %s: recorded %+v, parsed %+v", step, q, got, want)
			}
		}
	}
	writes := 0
	for i, hb := range []string{metricsJSON(30000, 30, 0), metricsJSON(0, 0, 0), metricsJSON(5000, 7, 3)} {
		e.st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, hb)
		for r := range 6 {
			writes += e.round(t).Writes
			check(fmt.Sprintf("heartbeat %d, round %d", i, r))
		}
	}
	e.st.Heartbeat("SC-2", pb.SubClusterState_SC_DECOMMISSIONED, metricsJSON(10000, 10, 0))
	for r := range 6 {
		writes += e.round(t).Writes
		check(fmt.Sprintf("SC-2 gone, round %d", r))
	}
	if writes < 8 {
		t.Fatalf("only %d writes: the rounds did not move the weights", writes)
	}
}
