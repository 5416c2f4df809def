package policies

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchFederation: n running sub-clusters SC-000.., each owning nodes
// node-<i>-{0..3} on rack rack-<i>, with varied weights and memory.
func benchFederation(n int) (*Snapshot, *MachineList, []byte) {
	var scs []SubCluster
	var ml strings.Builder
	info := WeightedPolicyInfo{HeadroomAlpha: 0.5}
	for i := 0; i < n; i++ {
		id := SubClusterID(fmt.Sprintf("SC-%03d", i))
		scs = append(scs, SubCluster{ID: id, State: StateRunning, Capability: Capability{AvailableMB: int64((i*7919)%100000 + 1)}})
		w := float32(1 + i%4)
		info.RouterWeights = append(info.RouterWeights, Weight{ID: id, Value: w})
		info.AMRMWeights = append(info.AMRMWeights, Weight{ID: id, Value: w})
		for k := 0; k < 4; k++ {
			fmt.Fprintf(&ml, "node-%d-%d,%s,rack-%d\n", i, k, id, i)
		}
	}
	m, err := ParseMachineList(strings.NewReader(ml.String()))
	if err != nil {
		panic(err)
	}
	return NewSnapshot(scs), m, info.MarshalHadoopJSON()
}

func loadBasedParams(n int) []byte {
	info := WeightedPolicyInfo{}
	for i := 0; i < n; i++ {
		info.RouterWeights = append(info.RouterWeights, Weight{ID: SubClusterID(fmt.Sprintf("SC-%03d", i)), Value: 1})
	}
	return info.MarshalHadoopJSON()
}

// BenchmarkRouter measures one routing decision per policy. UniformRandom
// is the baseline the others are compared with.
func BenchmarkRouter(b *testing.B) {
	reg := NewDefaultRegistry()
	for _, n := range []int{10, 100} {
		snap, ml, params := benchFederation(n)
		env := Env{Resolver: ml}
		for _, tc := range []struct {
			name, typ string
			params    []byte
			app       *AppSubmission
			blacklist []SubClusterID
		}{
			{"UniformRandom", "UniformRandom", nil, &AppSubmission{Queue: "root.a"}, nil},
			{"WeightedRandom", "WeightedRandom", params, &AppSubmission{Queue: "root.a"}, nil},
			{"WeightedRandom-blacklist1", "WeightedRandom", params, &AppSubmission{Queue: "root.a"}, []SubClusterID{"SC-003"}},
			{"Priority", "Priority", params, &AppSubmission{Queue: "root.a"}, nil},
			{"HashBased", "HashBased", nil, &AppSubmission{Queue: "root.production.etl"}, nil},
			{"LoadBased", "LoadBased", loadBasedParams(n), &AppSubmission{Queue: "root.a"}, nil},
			{"Locality-node-hit", "Locality", params, &AppSubmission{Queue: "root.a", AMResourceRequests: []ResourceRequest{
				{ResourceName: "node-7-1", NumContainers: 1}, {ResourceName: "rack-7", NumContainers: 1},
				{ResourceName: ResourceAny, NumContainers: 1, RelaxLocality: true}}}, nil},
		} {
			p, err := reg.NewRouterPolicy(tc.typ, tc.params, env)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.Run(fmt.Sprintf("%s/sc=%d", tc.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.HomeSubCluster(ctx, snap, tc.app, tc.blacklist); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkLocalityMulticastSplit splits a typical allocate: 20 node asks
// over 5 allocation ids with their ANY asks, 5 rack asks, 3 free ANY asks
// and a cancel.
func BenchmarkLocalityMulticastSplit(b *testing.B) {
	reg := NewDefaultRegistry()
	for _, n := range []int{10, 100} {
		snap, ml, params := benchFederation(n)
		builder, err := reg.NewAMRMBuilder("LocalityMulticast", params, Env{Resolver: ml})
		if err != nil {
			b.Fatal(err)
		}
		p, _ := builder.AMRMPolicy("SC-000", nil)
		for i := 0; i < n; i += 2 {
			_ = p.NotifyOfResponse(SubClusterID(fmt.Sprintf("SC-%03d", i)), &Resource{MemoryMB: int64(1024 * (1 + i%7))})
		}
		var asks []ResourceRequest
		for i := 0; i < 20; i++ {
			asks = append(asks, ResourceRequest{AllocationRequestID: int64(i % 5), ResourceName: fmt.Sprintf("node-%d-%d", (i*3)%n, i%4), NumContainers: 2})
		}
		for i := 0; i < 5; i++ {
			asks = append(asks, ResourceRequest{AllocationRequestID: int64(i), ResourceName: fmt.Sprintf("rack-%d", (i*3)%n), NumContainers: 2})
			asks = append(asks, ResourceRequest{AllocationRequestID: int64(i), ResourceName: ResourceAny, NumContainers: 8, RelaxLocality: true})
		}
		for i := 0; i < 3; i++ {
			asks = append(asks, ResourceRequest{AllocationRequestID: int64(10 + i), ResourceName: ResourceAny, NumContainers: int32(50 * (i + 1)), RelaxLocality: true})
		}
		asks = append(asks, ResourceRequest{AllocationRequestID: 20, ResourceName: ResourceAny, NumContainers: 0})
		ctx := context.Background()
		b.Run(fmt.Sprintf("sc=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.SplitResourceRequests(ctx, snap, asks, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseWeightedPolicyInfo: what a configuration change costs.
func BenchmarkParseWeightedPolicyInfo(b *testing.B) {
	_, _, params := benchFederation(100)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseWeightedPolicyInfo(params); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRouterDecisionsDoNotAllocate guards the zero-allocation property of
// the weighted, hash and priority decisions (speed is for the benchmarks).
func TestRouterDecisionsDoNotAllocate(t *testing.T) {
	snap, ml, params := benchFederation(100)
	reg := NewDefaultRegistry()
	for _, typ := range []string{"UniformRandom", "WeightedRandom", "Priority", "HashBased", "LoadBased", "Locality"} {
		p := params
		if typ == "LoadBased" {
			p = loadBasedParams(100)
		}
		pol, err := reg.NewRouterPolicy(typ, p, Env{Resolver: ml})
		if err != nil {
			t.Fatal(err)
		}
		app := &AppSubmission{Queue: "root.a"}
		bl := []SubClusterID{"SC-001"}
		_, _ = pol.HomeSubCluster(context.Background(), snap, app, nil) // warm the snapshot cache
		allocs := testing.AllocsPerRun(200, func() {
			_, _ = pol.HomeSubCluster(context.Background(), snap, app, nil)
			_, _ = pol.HomeSubCluster(context.Background(), snap, app, bl)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decision", typ, allocs)
		}
	}
}

// BenchmarkFacadeHomeSubCluster is the router's whole policy path: queue
// lookup in an in-memory store, cached manager, weighted decision.
func BenchmarkFacadeHomeSubCluster(b *testing.B) {
	snap, ml, params := benchFederation(100)
	src := &memSource{cfgs: map[string]PolicyConfig{}}
	src.set("root.a", PolicyConfig{Type: "WeightedLocalityPolicyManager", Params: params})
	f, err := NewFacade(FacadeConfig{Source: src, Env: Env{Resolver: ml}})
	if err != nil {
		b.Fatal(err)
	}
	app := &AppSubmission{Queue: "root.a"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.HomeSubCluster(ctx, snap, app, nil); err != nil {
			b.Fatal(err)
		}
	}
}
