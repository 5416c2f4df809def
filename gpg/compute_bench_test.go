package gpg

import (
	"context"
	"fmt"
	"testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// BenchmarkComputeSteady: the pure part of a policy round at issue 25's
// size (100 sub-clusters, each with a Kubernetes figure, 20 queues + "*")
// when nothing moved, so the round writes nothing: what every event-driven
// round costs the GPG between real changes.
// go test -run '^$' -bench ComputeSteady -benchmem ./gpg/
func BenchmarkComputeSteady(b *testing.B) {
	const subClusters, queues = 100, 20
	clk := newClock()
	st := gpgtest.NewFakeStore(clk.Now)
	src := gpgtest.NewFakeSource()
	for i := range subClusters {
		id := fmt.Sprintf("SC-%03d", i)
		st.Register(subCluster(id, pb.SubClusterState_SC_RUNNING, metricsJSON(int64(100000+1000*i), int64(100+i), int64(i%7))))
		src.Set(capacity.SubCluster{ID: id, Usable: capacity.Resources{MemoryMB: int64(50000 + 500*i), VCores: int64(50 + i)}, Nodes: 1000, ObservedAt: clk.Now()})
	}
	for q := range queues {
		st.PutPolicy(&pb.PolicyConfiguration{Queue: fmt.Sprintf("root.q%02d", q), Type: DefaultManager, Params: []byte(`{"headroomAlpha":"1.0"}`)})
	}
	g := newTestGPG(b, st, src, clk.Now, func(c *Config) { c.Generator.MaxStep = 1 })
	acquire(b, g)
	ctx := context.Background()
	for range 3 { // settle: weights and capacities stored
		if _, err := g.policyRound(ctx, g.lease.fence()); err != nil {
			b.Fatal(err)
		}
	}
	scs, _ := st.ListSubClusters(ctx, false)
	stored, _ := st.ListPolicies(ctx)
	snap := src.Snapshot()
	if res := g.compute(scs, stored, snap); len(res.Policies) != 0 || len(res.Capacities) != 0 {
		b.Fatalf("not steady: %d policies, %d capacities to write", len(res.Policies), len(res.Capacities))
	}
	b.ReportAllocs()
	for b.Loop() {
		g.compute(scs, stored, snap)
	}
}
