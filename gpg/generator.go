package gpg

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// RoundResult is what one policy round computed and wrote.
type RoundResult struct {
	// Target is the normalized target weight per eligible sub-cluster
	// (the cluster-wide vector).
	Target Weights
	// QueueTargets is each managed queue's own target, and QueueInputs
	// what it was computed from: "per_queue", or why the queue got Target
	// (see queues.go; with the sub-cluster that lacked the input).
	QueueTargets map[string]Weights
	QueueInputs  map[string]string
	// Policies are the queue policies written (or, read-only, that would
	// be); Capacities the capacities published.
	Policies   []*pb.PolicyConfiguration
	Capacities []*pb.PublishCapacityRequest_Item
	// Pinned lists managed queues left alone because an operator pinned
	// them.
	Pinned []string
	// Writes is the number of store writes the round made (0 or 1).
	Writes int
	// Compute is the time spent taking the capacity snapshot and computing
	// (store reads and the write excluded).
	Compute time.Duration
}

// policyRound computes target weights from membership and measured
// capacity, moves every managed queue's stored weights toward them
// (hysteresis, bounded step), and writes the changed queues and changed
// capacities in one fenced store write.
func (g *GPG) policyRound(ctx context.Context, fence *client.Fence) (RoundResult, error) {
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return RoundResult{}, fmt.Errorf("list sub-clusters: %w", err)
	}
	stored, err := g.store.ListPolicies(ctx)
	if err != nil {
		return RoundResult{}, fmt.Errorf("list policies: %w", err)
	}
	start := time.Now()
	var snap map[string]capacity.SubCluster
	if g.src != nil {
		snap = g.src.Snapshot()
	}
	res := g.compute(scs, stored, snap)
	res.Compute = time.Since(start)
	g.warnUnknownSubClusters(scs, snap)
	cfg := g.cfg.Generator
	for _, p := range res.Policies {
		g.log.Info("gpg policy: queue weights", "queue", p.GetQueue(), "params", string(p.GetParams()), "read_only", cfg.ReadOnly)
	}
	if cfg.ReadOnly {
		g.metrics.queues.WithLabelValues("read_only").Add(float64(len(res.Policies)))
		return res, nil
	}
	if len(res.Policies) == 0 && len(res.Capacities) == 0 {
		return res, nil
	}
	if fence == nil || !g.lease.holding() {
		return res, errNotLeader
	}
	out, err := g.store.SetPolicies(ctx, client.PoliciesWrite{Policies: res.Policies, Capacities: res.Capacities, SkipPinned: true, Fence: fence})
	g.metrics.storeWrite("set_policies", err)
	if err != nil {
		return res, fmt.Errorf("write policies: %w", err)
	}
	res.Writes = 1
	g.metrics.queues.WithLabelValues("written").Add(float64(len(out.GetWritten())))
	g.metrics.queues.WithLabelValues("pinned").Add(float64(len(out.GetSkippedPinned())))
	g.metrics.published.Add(float64(len(res.Capacities) - len(out.GetUnknownSubClusters())))
	return res, nil
}

// compute is the pure part of a round (what `yarnfed bench gpg` times).
func (g *GPG) compute(scs []*pb.SubClusterInfo, stored []*pb.PolicyConfiguration, snap map[string]capacity.SubCluster) RoundResult {
	cfg := g.cfg.Generator
	now := g.now()

	// Eligible: RUNNING with a heartbeat fresher than the liveness expiry.
	var in []loadInput
	parsed := parsedRound{policies: make(map[string]parsedPolicy, len(stored)), caps: make(map[string]parsedCapability, len(scs))}
	defer g.keepParsed(parsed)
	for _, sc := range scs {
		if !g.eligible(sc, now) {
			continue
		}
		capa := g.parsedCapability(sc.GetSubClusterId(), sc.GetCapability(), parsed) // none yet: zero, as Hadoop
		if m, ok := snap[sc.GetSubClusterId()]; ok {
			u := g.usable(m, now)
			capa = capa.WithPublished(u.MemoryMB, u.VCores)
		}
		in = append(in, loadInput{ID: sc.GetSubClusterId(), Capability: capa})
	}
	var target Weights
	if len(in) > 0 {
		if cfg.Policy == PolicyLoadBased {
			target = normalized(loadBasedWeights(in, cfg.LoadBased))
		} else {
			target = normalized(capacityWeights(in, cfg.PendingScale))
		}
	}
	res := RoundResult{Target: target, QueueTargets: map[string]Weights{}, QueueInputs: map[string]string{}}
	views := g.queueViews()

	// Queues to manage: every stored weighted queue, the configured ones
	// and "*"; pinned and non-weighted ones are left alone.
	byQueue := make(map[string]*pb.PolicyConfiguration, len(stored))
	queues := slices.Clone(cfg.Queues)
	for _, p := range stored {
		byQueue[p.GetQueue()] = p
		queues = append(queues, p.GetQueue())
	}
	if cfg.ManageDefault {
		queues = append(queues, client.DefaultQueueKey)
	}
	slices.Sort(queues)
	queues = slices.Compact(queues)
	if len(target) > 0 {
		for _, q := range queues {
			cur := byQueue[q]
			typ, alpha := cfg.Manager, float32(1)
			var old Weights
			if cur != nil {
				if cur.GetPinned() {
					res.Pinned = append(res.Pinned, q)
					continue
				}
				if !g.registry.SupportsWeights(cur.GetType()) {
					g.metrics.queues.WithLabelValues("not_weighted").Inc()
					continue
				}
				typ = cur.GetType()
				if sw, ok := g.parsedWeights(q, cur.GetParams(), parsed); ok {
					old, alpha = sw.weights, sw.alpha
				}
			}
			qTarget, input := g.queueTarget(q, in, target, views, now)
			res.QueueTargets[q], res.QueueInputs[q] = qTarget, input
			next, changed, _ := stepToward(old, qTarget, cfg.Threshold, cfg.MaxStep)
			if !changed {
				g.metrics.queues.WithLabelValues("unchanged").Inc()
				continue
			}
			ws := toPolicyWeights(next)
			info := policies.WeightedPolicyInfo{RouterWeights: ws, AMRMWeights: ws, HeadroomAlpha: alpha}
			params := info.MarshalHadoopJSON()
			res.Policies = append(res.Policies, &pb.PolicyConfiguration{Queue: q, Type: typ, Params: params})
			// What this round writes is what the next one reads back (the
			// store keeps params verbatim): recorded as parsed, so a round
			// after a change does not parse every queue again. A failed
			// write leaves other bytes stored, which then miss.
			parsed.policies[q] = parsedPolicy{params: string(params), weights: normalized(fromPolicyWeights(ws)), alpha: alpha}
		}
	}
	if cfg.PublishCapacity {
		res.Capacities = g.capacitiesToPublish(scs, snap, now)
	}
	for id, w := range target {
		g.metrics.weight.WithLabelValues(id).Set(w)
	}
	return res
}

// parsedRound holds what a round parsed from the store's JSON: each
// queue's stored weights and each sub-cluster's capability. The next round
// reuses an entry whose JSON is byte for byte the same. Parsing all of it
// every round was 83% (the queues) and most of the rest (the capabilities)
// of a steady round's compute at 100 sub-clusters and 21 queues
// (BenchmarkComputeSteady): O(queues x sub-clusters) of encoding/json for
// rounds that mostly change nothing. A round's parses become the cache
// (keepParsed), so queues and sub-clusters no longer stored drop out.
type parsedRound struct {
	policies map[string]parsedPolicy
	caps     map[string]parsedCapability
}

// parsedPolicy is a queue's stored policy as a round reads it: its
// router weights (normalized) and headroom alpha.
type parsedPolicy struct {
	params  string
	weights Weights
	alpha   float32
}

type parsedCapability struct {
	raw  string
	capa policies.Capability
}

// parsedWeights returns a queue's stored weights and alpha, parsed from
// params or reused; ok is false for unreadable params.
func (g *GPG) parsedWeights(queue string, params []byte, next parsedRound) (parsedPolicy, bool) {
	g.parsedMu.Lock()
	p, hit := g.parsed.policies[queue]
	g.parsedMu.Unlock()
	if !hit || p.params != string(params) {
		info, err := policies.ParseWeightedPolicyInfo(params)
		if err != nil {
			return parsedPolicy{}, false
		}
		p = parsedPolicy{params: string(params), weights: normalized(fromPolicyWeights(info.RouterWeights)), alpha: info.HeadroomAlpha}
	}
	next.policies[queue] = p
	return p, true
}

// parsedCapability returns a sub-cluster's capability, parsed from raw or
// reused; unreadable (or none yet) is zero.
func (g *GPG) parsedCapability(id, raw string, next parsedRound) policies.Capability {
	g.parsedMu.Lock()
	c, hit := g.parsed.caps[id]
	g.parsedMu.Unlock()
	if !hit || c.raw != raw {
		c.raw = raw
		c.capa, _ = policies.ParseCapability([]byte(raw))
	}
	next.caps[id] = c
	return c.capa
}

func (g *GPG) keepParsed(r parsedRound) {
	g.parsedMu.Lock()
	g.parsed = r
	g.parsedMu.Unlock()
}

// queueTarget is a managed queue's target: from its own headroom in
// every eligible sub-cluster when the capacity policy has a complete
// per-queue view, else the cluster-wide target. input says which (and
// why, with the sub-cluster that lacked the input).
func (g *GPG) queueTarget(queue string, in []loadInput, target Weights, views map[string]*queueView, now time.Time) (Weights, string) {
	cfg := g.cfg.Generator
	reason, sc := "", ""
	switch {
	case queue == client.DefaultQueueKey:
		reason = inputDefaultQueue
	case cfg.Policy != PolicyCapacity:
		reason = inputLoadBased
	case !cfg.QueueInputs.Enabled:
		reason = inputDisabled
	default:
		var qin []loadInput
		if qin, reason, sc = g.queueInputs(queue, in, views, now); reason == inputPerQueue {
			g.metrics.queueInputs.WithLabelValues(reason).Inc()
			return normalized(capacityWeights(qin, cfg.PendingScale)), reason
		}
	}
	g.metrics.queueInputs.WithLabelValues(reason).Inc()
	if sc != "" {
		return target, "cluster-wide: " + reason + " (" + sc + ")"
	}
	return target, "cluster-wide: " + reason
}

// usable is a source figure as the GPG trusts it: older than
// capacity_max_age counts as nothing (Koordinator itself zeroes stale
// batch capacity; never treat unknown as unlimited).
func (g *GPG) usable(m capacity.SubCluster, now time.Time) capacity.Resources {
	if now.Sub(m.ObservedAt) > g.cfg.Generator.CapacityMaxAge.D() {
		return capacity.Resources{}
	}
	return capacity.Resources{MemoryMB: max(0, m.Usable.MemoryMB), VCores: max(0, m.Usable.VCores)}
}

// capacitiesToPublish lists measured capacities that moved by more than
// the publish threshold, or were last published longer ago than
// republish (so routers, which ignore old figures, keep seeing them).
func (g *GPG) capacitiesToPublish(scs []*pb.SubClusterInfo, snap map[string]capacity.SubCluster, now time.Time) []*pb.PublishCapacityRequest_Item {
	cfg := g.cfg.Generator
	var out []*pb.PublishCapacityRequest_Item
	for _, sc := range scs {
		m, ok := snap[sc.GetSubClusterId()]
		if !ok {
			continue
		}
		u := g.usable(m, now)
		cur := sc.GetPublishedCapacity()
		// The node count moves with the same threshold as the capacity: in
		// a cluster of thousands of nodes one leaves or returns every few
		// seconds, and routers only display the count, so an exact match
		// would cost a store write per round for nothing; the republish
		// brings it up to date.
		due := cur == nil || now.Sub(time.UnixMilli(cur.GetPublishedMs())) >= cfg.Republish.D() ||
			moved(cur.GetMemoryMb(), u.MemoryMB, cfg.PublishThreshold) || moved(cur.GetVcores(), u.VCores, cfg.PublishThreshold) ||
			moved(int64(cur.GetNodes()), int64(m.Nodes), cfg.PublishThreshold)
		if !due {
			continue
		}
		var observed int64
		if !m.ObservedAt.IsZero() {
			observed = m.ObservedAt.UnixMilli()
		}
		out = append(out, &pb.PublishCapacityRequest_Item{SubClusterId: sc.GetSubClusterId(), MemoryMb: u.MemoryMB, Vcores: u.VCores,
			Nodes: int32(m.Nodes), ObservedMs: max(0, observed)})
	}
	return out
}

// moved reports a relative change beyond threshold (any change from or
// to zero counts).
func moved(old, cur int64, threshold float64) bool {
	if old == cur {
		return false
	}
	if old == 0 || cur == 0 {
		return true
	}
	return math.Abs(float64(cur-old))/float64(old) > threshold
}

// warnUnknownSubClusters says, once per id, when a capacity source reports
// a sub-cluster the store does not know: its figure is ignored, which is
// right for a sub-cluster not registered yet and wrong for a typo in
// default_sub_cluster or a cluster-id annotation, which only an operator
// can tell apart.
func (g *GPG) warnUnknownSubClusters(scs []*pb.SubClusterInfo, snap map[string]capacity.SubCluster) {
	if len(snap) == 0 {
		return
	}
	known := make(map[string]bool, len(scs))
	for _, sc := range scs {
		known[sc.GetSubClusterId()] = true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, m := range snap {
		if known[id] || g.warnedUnknown[id] {
			continue
		}
		if g.warnedUnknown == nil {
			g.warnedUnknown = map[string]bool{}
		}
		g.warnedUnknown[id] = true
		g.log.Warn("gpg: a capacity source reports a sub-cluster the state store does not know; its figure is ignored until it registers (a typo in default_sub_cluster or a cluster-id annotation?)",
			"subcluster", id, "usable_mb", m.Usable.MemoryMB, "usable_vcores", m.Usable.VCores, "nodes", m.Nodes)
	}
}
