// Package bench measures a GPG policy round at scale (`yarnfed bench
// gpg`): N sub-clusters, M Kubernetes nodes' capacity through a synthetic
// capacity.Source, Q queues, against a real state store.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/procstat"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Config shapes a run.
type Config struct {
	SubClusters int
	Nodes       int
	// Queues with their own weighted policy (plus "*").
	Queues int
	// Rounds measured in each phase.
	Rounds int
	// Store is a client of a real state store (the command starts one).
	Store  *client.Client
	Logger *slog.Logger
}

// DefaultConfig is the target: 50 sub-clusters, 10,000 nodes.
func DefaultConfig() Config {
	return Config{SubClusters: 50, Nodes: 10_000, Queues: 20, Rounds: 30}
}

// nodeSource is a synthetic capacity.Source over individual nodes: every
// Snapshot sums all nodes into per-sub-cluster figures, the most a real
// source could do per round (gpg/kube keeps running sums instead).
type nodeSource struct {
	mu    sync.Mutex
	subs  []string
	nodes []node
	ch    chan struct{}
}

type node struct {
	sub        int
	mem, vcore int64
	gone       bool // not Ready (or deleted): counts for nothing
}

func (s *nodeSource) Snapshot() map[string]capacity.SubCluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	// Summed by index, then one map entry per sub-cluster: a map update
	// per node cost ~10 ms at 100,000 nodes, the bench's own overhead.
	sums := make([]capacity.SubCluster, len(s.subs))
	for _, n := range s.nodes {
		if n.gone {
			continue
		}
		sc := &sums[n.sub]
		sc.Usable.MemoryMB += n.mem
		sc.Usable.VCores += n.vcore
		sc.Nodes++
	}
	out := make(map[string]capacity.SubCluster, len(s.subs))
	for i, sc := range sums {
		if sc.Nodes > 0 {
			sc.ID, sc.ObservedAt = s.subs[i], now
			out[sc.ID] = sc
		}
	}
	return out
}

func (s *nodeSource) Changed() <-chan struct{} { return s.ch }

// scale multiplies the capacity of the nodes of the first half of the
// sub-clusters by f (other pods come and go on those nodes).
func (s *nodeSource) scale(f float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.nodes {
		if s.nodes[i].sub < len(s.subs)/2 {
			s.nodes[i].mem = int64(float64(s.nodes[i].mem) * f)
			s.nodes[i].vcore = max(1, int64(float64(s.nodes[i].vcore)*f))
		}
	}
}

// flip takes the first node of the first sub-cluster away, or brings it
// back: the churn of a large cluster (a node NotReady for a while, drained,
// replaced), which moves its sub-cluster's figures by one node.
func (s *nodeSource) flip() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[0].gone = !s.nodes[0].gone
}

// countingStore counts store writes.
type countingStore struct {
	gpg.Store
	writes atomic.Int64
}

func (c *countingStore) SetPolicies(ctx context.Context, w client.PoliciesWrite) (*pb.SetPoliciesResponse, error) {
	c.writes.Add(1)
	return c.Store.SetPolicies(ctx, w)
}

func (c *countingStore) MarkSubClustersLost(ctx context.Context, ids []string, before int64, f *client.Fence) ([]string, error) {
	c.writes.Add(1)
	return c.Store.MarkSubClustersLost(ctx, ids, before, f)
}

func (c *countingStore) DeleteApplicationHomes(ctx context.Context, ids []string, before int64, f *client.Fence) ([]string, error) {
	c.writes.Add(1)
	return c.Store.DeleteApplicationHomes(ctx, ids, before, f)
}

type sample struct {
	round, compute time.Duration
	cpu            time.Duration // the process's: the GPG and the in-process store
	writes, bytes  int64
	queues, caps   int
}

// Phase summarises the rounds of one phase.
type Phase struct {
	Rounds                 int
	P50, P99, Max          time.Duration // full round
	ComputeP50, ComputeP99 time.Duration
	MinWrites, MaxWrites   int64 // store writes per round
	QueuesWrittenPerRound  float64
	// MaxWriteBytes is the largest policy write (the SetPolicies request's
	// protobuf size: queues' weights and published capacities).
	MaxWriteBytes int64
	// CPU is the process's mean CPU time per round: the GPG and, when the
	// command started it, the store (Raft, bbolt, gRPC) in this process.
	CPU time.Duration
}

// Result is what Run measured.
type Result struct {
	Changing Phase // capacity changes every round: every round must write once
	Steady   Phase // nothing changes: no round may write
	// Churn: one node of the first sub-cluster leaves or returns every
	// round; no round may write while one node is within the publish
	// threshold of its sub-cluster (NodeChurnSilent).
	Churn Phase
	// NodeChurnSilent: one node is at most generator.publish_threshold of
	// a sub-cluster's nodes, so the churn phase must write nothing.
	NodeChurnSilent bool
}

// Run sets up the federation in cfg.Store, runs the two phases and prints
// a table to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	if cfg.Store == nil {
		return Result{}, fmt.Errorf("bench gpg: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	src := &nodeSource{ch: make(chan struct{})}
	for i := range cfg.SubClusters {
		id := fmt.Sprintf("SC-%02d", i+1)
		src.subs = append(src.subs, id)
		capJSON := fmt.Sprintf(`{"clusterMetrics":{"availableMB":%d,"availableVirtualCores":%d,"allocatedMB":0,"allocatedVirtualCores":0,"totalMB":%d,"totalVirtualCores":%d,"appsPending":%d}}`,
			1<<30, 1<<20, 1<<30, 1<<20, i%7)
		info := &pb.SubClusterInfo{SubClusterId: id, State: pb.SubClusterState_SC_RUNNING, Capability: capJSON,
			AmrmServiceAddress: "rm:8030", ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088"}
		if err := cfg.Store.RegisterSubCluster(ctx, info); err != nil {
			return Result{}, fmt.Errorf("register %s: %w", id, err)
		}
	}
	for i := range cfg.Nodes {
		// Nodes of 64-256 GB and 16-64 vcores of batch capacity.
		src.nodes = append(src.nodes, node{sub: i % cfg.SubClusters, mem: int64(65536 * (1 + i%4)), vcore: int64(16 * (1 + i%4))})
	}
	for q := range cfg.Queues {
		p := &pb.PolicyConfiguration{Queue: fmt.Sprintf("root.q%02d", q), Type: gpg.DefaultManager, Params: []byte(`{"headroomAlpha":"1.0"}`)}
		if err := cfg.Store.SetPolicy(ctx, p); err != nil {
			return Result{}, err
		}
	}
	st := &countingStore{Store: cfg.Store}
	gcfg := gpg.DefaultConfig()
	gcfg.ID, gcfg.WebAddress, gcfg.Store, gcfg.Logger = "bench-gpg", "", st, cfg.Logger
	gcfg.Registerer = prometheus.NewRegistry()
	g, err := gpg.New(gcfg, src)
	if err != nil {
		return Result{}, err
	}
	if !g.TryLease(ctx) {
		return Result{}, fmt.Errorf("bench gpg: lease held by another GPG (a GPG runs against this store?)")
	}
	round := func() (sample, error) {
		if !g.TryLease(ctx) {
			return sample{}, fmt.Errorf("bench gpg: lost the lease")
		}
		before := st.writes.Load()
		cpu0, start := procstat.Self(), time.Now()
		res, err := g.PolicyRound(ctx)
		took, cpu := time.Since(start), procstat.Self()-cpu0
		if err != nil {
			return sample{}, err
		}
		s := sample{round: took, cpu: cpu, compute: res.Compute, writes: st.writes.Load() - before, queues: len(res.Policies), caps: len(res.Capacities)}
		if res.Writes > 0 { // the request the round sent, sized outside the timing
			s.bytes = int64(proto.Size(&pb.SetPoliciesRequest{Policies: res.Policies, Capacities: res.Capacities, SkipPinned: true}))
		}
		return s, nil
	}
	// Warm up: first weights and capacities for every queue.
	for range 3 {
		if _, err := round(); err != nil {
			return Result{}, err
		}
	}
	fmt.Fprintf(out, "GPG policy round: %d sub-clusters, %d Kubernetes nodes (summed every round), %d queues + '*', real state store\n\n",
		cfg.SubClusters, cfg.Nodes, cfg.Queues)
	fmt.Fprintf(out, "%-30s %6s %9s %9s %9s %9s %11s %11s %12s %10s %11s\n", "phase", "rounds", "round p50", "p99", "max", "cpu/round", "compute p50", "compute p99", "writes/round", "queues/rnd", "write bytes")
	var changing, steady []sample
	// Phase 1: capacity moves every round (half the sub-clusters lose or
	// regain 60% of their batch capacity): every round must write, once.
	f := 0.4
	for range cfg.Rounds {
		src.scale(f)
		f = 1 / f
		s, err := round()
		if err != nil {
			return Result{}, err
		}
		changing = append(changing, s)
	}
	// Phase 2: settle, then nothing moves: no round may write.
	for range 50 {
		s, err := round()
		if err != nil {
			return Result{}, err
		}
		if s.writes == 0 {
			break
		}
	}
	for range cfg.Rounds {
		s, err := round()
		if err != nil {
			return Result{}, err
		}
		steady = append(steady, s)
	}
	// Phase 3: node churn. One node of SC-01 leaves, then returns, every
	// round: the capacity and node count of one sub-cluster move by one
	// node, which neither the weights' hysteresis nor the publish threshold
	// should turn into a write.
	var churn []sample
	for range cfg.Rounds {
		src.flip()
		s, err := round()
		if err != nil {
			return Result{}, err
		}
		churn = append(churn, s)
	}
	perSub := cfg.Nodes / cfg.SubClusters
	res := Result{Changing: report(out, "capacity changes every round", changing), Steady: report(out, "steady (no write: hysteresis)", steady),
		Churn: report(out, fmt.Sprintf("one node of %d leaves/returns", perSub), churn),
		// moved() is strict: one node of exactly 1/threshold is not a move.
		NodeChurnSilent: perSub > 0 && 1/float64(perSub) <= gcfg.Generator.PublishThreshold}
	fmt.Fprintln(out, "\nround = read membership and policies (watch-fed client cache), sum every node, weights for every queue, one fenced write;")
	fmt.Fprintln(out, "cpu/round = this process's CPU time per round (the GPG and, unless --store, the store: Raft, bbolt, gRPC);")
	fmt.Fprintln(out, "compute = the capacity snapshot and the weights alone; write bytes = the largest SetPolicies request.")
	fmt.Fprintln(out, "Target: round <= 100ms, one store write per changing round, none while steady or while one node churns.")
	return res, nil
}

func report(out io.Writer, name string, ss []sample) Phase {
	rounds := make([]time.Duration, len(ss))
	comp := make([]time.Duration, len(ss))
	var minW, maxW int64 = 1 << 62, 0
	var queues int
	var maxBytes int64
	var cpu time.Duration
	for i, s := range ss {
		cpu += s.cpu
		rounds[i], comp[i] = s.round, s.compute
		minW, maxW = min(minW, s.writes), max(maxW, s.writes)
		queues += s.queues
		maxBytes = max(maxBytes, s.bytes)
	}
	slices.Sort(rounds)
	slices.Sort(comp)
	pct := func(d []time.Duration, p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	ph := Phase{Rounds: len(ss), P50: pct(rounds, 0.5), P99: pct(rounds, 0.99), Max: rounds[len(rounds)-1],
		ComputeP50: pct(comp, 0.5), ComputeP99: pct(comp, 0.99), MinWrites: minW, MaxWrites: maxW,
		QueuesWrittenPerRound: float64(queues) / float64(len(ss)), MaxWriteBytes: maxBytes, CPU: cpu / time.Duration(len(ss))}
	writes := fmt.Sprintf("%d", minW)
	if minW != maxW {
		writes = fmt.Sprintf("%d-%d", minW, maxW)
	}
	fmt.Fprintf(out, "%-30s %6d %9s %9s %9s %9s %11s %11s %12s %10.1f %11d\n", name, ph.Rounds, ms(ph.P50), ms(ph.P99), ms(ph.Max), ms(ph.CPU),
		ms(ph.ComputeP50), ms(ph.ComputeP99), writes, ph.QueuesWrittenPerRound, ph.MaxWriteBytes)
	return ph
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
