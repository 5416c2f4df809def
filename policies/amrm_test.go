package policies

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// lmFixture: SC-1..SC-4 running, SC-5 lost; SC-4 has AMRM weight 0.
func lmFixture(t *testing.T, amrm string, alpha float32) (*Snapshot, AMRMPolicy) {
	t.Helper()
	snap := NewSnapshot(append(running("SC-1", "SC-2", "SC-3", "SC-4"), SubCluster{ID: "SC-5", State: StateLost}))
	res := fakeResolver{
		nodes: map[string]SubClusterID{"n1": "SC-1", "n2": "SC-2", "n3": "SC-3", "n4": "SC-4", "n5": "SC-5"},
		racks: map[string][]SubClusterID{"ra": {"SC-1", "SC-2"}, "rx": {"SC-5"}},
	}
	b, err := NewDefaultRegistry().NewAMRMBuilder("LocalityMulticast", weightsJSON("SC-1:1", amrm, alpha), Env{Resolver: res, Rand: NewSeededSource(3)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.AMRMPolicy("SC-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap, p
}

type ask struct {
	id   int64
	name string
	n    int32
}

func asks(as ...ask) []ResourceRequest {
	var out []ResourceRequest
	for _, a := range as {
		out = append(out, ResourceRequest{AllocationRequestID: a.id, ResourceName: a.name, NumContainers: a.n, RelaxLocality: a.name == ResourceAny})
	}
	return out
}

// flatten renders a split as sc -> [id/name/n ...] for comparison.
func flatten(split map[SubClusterID][]ResourceRequest) map[SubClusterID][]ask {
	out := map[SubClusterID][]ask{}
	for sc, rrs := range split {
		for _, rr := range rrs {
			out[sc] = append(out[sc], ask{rr.AllocationRequestID, rr.ResourceName, rr.NumContainers})
		}
	}
	return out
}

func anyTotal(split map[SubClusterID][]ResourceRequest, id int64) int32 {
	var n int32
	for _, rrs := range split {
		for _, rr := range rrs {
			if rr.IsAny() && rr.AllocationRequestID == id {
				n += rr.NumContainers
			}
		}
	}
	return n
}

func TestLocalityMulticastSplit(t *testing.T) {
	const equal = "SC-1:1,SC-2:1,SC-3:1,SC-4:0,SC-5:1"
	tests := []struct {
		name     string
		amrm     string
		alpha    float32
		headroom map[SubClusterID]int64
		timedOut []SubClusterID
		in       []ResourceRequest
		want     map[SubClusterID][]ask
	}{
		{
			name: "node ask and its ANY stay on the node's sub-cluster",
			amrm: equal, in: asks(ask{1, "n1", 2}, ask{1, ResourceAny, 4}),
			want: map[SubClusterID][]ask{"SC-1": {{1, "n1", 2}, {1, ResourceAny, 4}}},
		},
		{
			name: "ANY follows node asks in proportion",
			amrm: equal, in: asks(ask{7, "n1", 1}, ask{7, "n2", 3}, ask{7, ResourceAny, 8}),
			want: map[SubClusterID][]ask{
				"SC-1": {{7, "n1", 1}, {7, ResourceAny, 2}},
				"SC-2": {{7, "n2", 3}, {7, ResourceAny, 6}},
			},
		},
		{
			name: "free ANY split by weights (alpha 0)",
			amrm: "SC-1:0.5,SC-2:0.25,SC-3:0.25", in: asks(ask{2, ResourceAny, 8}),
			want: map[SubClusterID][]ask{"SC-1": {{2, ResourceAny, 4}}, "SC-2": {{2, ResourceAny, 2}}, "SC-3": {{2, ResourceAny, 2}}},
		},
		{
			name: "free ANY split by headroom (alpha 1), unknown headroom gets 1/N",
			amrm: equal, alpha: 1, headroom: map[SubClusterID]int64{"SC-1": 6000, "SC-2": 2000},
			in: asks(ask{2, ResourceAny, 12}),
			// SC-1: 6000/8000*2/3 = 0.5, SC-2: 0.1667, SC-3: 1/3 -> 6, 2, 4.
			want: map[SubClusterID][]ask{"SC-1": {{2, ResourceAny, 6}}, "SC-2": {{2, ResourceAny, 2}}, "SC-3": {{2, ResourceAny, 4}}},
		},
		{
			name: "rack ask kept only where its ANY landed",
			amrm: "SC-1:0.5,SC-2:0,SC-3:0.5", in: asks(ask{3, "ra", 2}, ask{3, ResourceAny, 2}),
			want: map[SubClusterID][]ask{"SC-1": {{3, "ra", 2}, {3, ResourceAny, 1}}, "SC-3": {{3, ResourceAny, 1}}},
		},
		{
			name: "timed-out sub-cluster gets no new asks",
			amrm: equal, timedOut: []SubClusterID{"SC-2"}, in: asks(ask{2, ResourceAny, 4}),
			want: map[SubClusterID][]ask{"SC-1": {{2, ResourceAny, 2}}, "SC-3": {{2, ResourceAny, 2}}},
		},
		{
			name: "all timed out: timeouts ignored",
			amrm: "SC-1:1", timedOut: []SubClusterID{"SC-1"}, in: asks(ask{2, ResourceAny, 4}),
			want: map[SubClusterID][]ask{"SC-1": {{2, ResourceAny, 4}}},
		},
		{
			name: "cancel goes to every active sub-cluster seen",
			amrm: equal, headroom: map[SubClusterID]int64{"SC-2": 1, "SC-4": 1, "SC-5": 1},
			in: asks(ask{9, ResourceAny, 0}),
			// SC-5 answered once but is lost now; SC-4 has weight 0 but may hold an old ask.
			want: map[SubClusterID][]ask{"SC-2": {{9, ResourceAny, 0}}, "SC-4": {{9, ResourceAny, 0}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, p := lmFixture(t, tt.amrm, tt.alpha)
			for sc, mb := range tt.headroom {
				if err := p.NotifyOfResponse(sc, &Resource{MemoryMB: mb}); err != nil {
					t.Fatal(err)
				}
			}
			split, err := p.SplitResourceRequests(context.Background(), snap, tt.in, tt.timedOut)
			if err != nil {
				t.Fatal(err)
			}
			got := flatten(split)
			if len(got) != len(tt.want) {
				t.Fatalf("split = %v, want %v", got, tt.want)
			}
			for sc, w := range tt.want {
				if !slices.Equal(got[sc], w) {
					t.Errorf("%s: got %v, want %v (whole split %v)", sc, got[sc], w, got)
				}
			}
		})
	}
}

func TestLocalityMulticastUnresolvable(t *testing.T) {
	snap, p := lmFixture(t, "SC-1:1,SC-2:1,SC-3:1,SC-4:0,SC-5:1", 0)
	for i := 0; i < 50; i++ {
		// n4 belongs to weight-0 SC-4 and n5 to lost SC-5: both are
		// unplaceable, so they go to one random enabled sub-cluster, the
		// same for the whole allocation id, with their ANY.
		split, err := p.SplitResourceRequests(context.Background(), snap,
			asks(ask{4, "n4", 1}, ask{4, "n5", 1}, ask{4, "unknown", 1}, ask{4, ResourceAny, 3}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(split) != 1 {
			t.Fatalf("split = %v, want one sub-cluster", flatten(split))
		}
		for sc, rrs := range split {
			if sc == "SC-4" || sc == "SC-5" || len(rrs) != 4 || anyTotal(split, 4) != 3 {
				t.Fatalf("split = %v", flatten(split))
			}
		}
	}
}

func TestLocalityMulticastConservesContainers(t *testing.T) {
	snap, p := lmFixture(t, "SC-1:0.3,SC-2:0.5,SC-3:0.2", 0.5)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		n := int32(1 + r.IntN(1000))
		split, err := p.SplitResourceRequests(context.Background(), snap, asks(ask{1, ResourceAny, n}, ask{2, "n2", 5}, ask{2, "n3", 1}, ask{2, ResourceAny, n}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := anyTotal(split, 1); got != n {
			t.Fatalf("free ANY of %d split into %d", n, got)
		}
		if got := anyTotal(split, 2); got != n {
			t.Fatalf("localized ANY of %d split into %d", n, got)
		}
		for sc := range split {
			_ = p.NotifyOfResponse(sc, &Resource{MemoryMB: int64(r.IntN(10000))})
		}
	}
}

func TestSplitInteger(t *testing.T) {
	rnd := NewSeededSource(1)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1000; i++ {
		w := make([]float64, 1+r.IntN(20))
		for j := range w {
			if r.IntN(3) > 0 {
				w[j] = r.Float64()
			}
		}
		w[r.IntN(len(w))] = 0.5
		total := int32(r.IntN(500))
		got, err := splitInteger(rnd, total, w)
		if err != nil {
			t.Fatal(err)
		}
		var sum int32
		for j, n := range got {
			sum += n
			if w[j] <= 0 && n != 0 {
				t.Fatalf("zero-weight bin %d got %d", j, n)
			}
		}
		if sum != total {
			t.Fatalf("split %d into %v (sum %d)", total, got, sum)
		}
	}
	if _, err := splitInteger(rnd, 3, []float64{0, -1}); !errors.Is(err, ErrNoActiveSubCluster) {
		t.Errorf("no positive weight: err = %v", err)
	}
}

func TestLocalityMulticastConfig(t *testing.T) {
	reg := NewDefaultRegistry()
	for name, params := range map[string][]byte{
		"all zero": weightsJSON("SC-1:1", "SC-1:0,SC-2:0", 0),
		"empty":    weightsJSON("SC-1:1", "", 0),
		"empty id": weightsJSON("SC-1:1", ":1", 0),
		"garbage":  []byte("{"),
	} {
		if _, err := reg.NewAMRMBuilder("LocalityMulticast", params, Env{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
	b, err := reg.NewAMRMBuilder("LocalityMulticast", weightsJSON("SC-1:1", "SC-1:1", 0), Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AMRMPolicy("", nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("no home: err = %v", err)
	}
	p1, _ := b.AMRMPolicy("SC-1", nil)
	_ = p1.NotifyOfResponse("SC-1", &Resource{MemoryMB: 5})
	b2, _ := reg.NewAMRMBuilder("LocalityMulticast", weightsJSON("SC-1:1", "SC-1:0.5,SC-2:0.5", 0), Env{})
	p2, _ := b2.AMRMPolicy("SC-1", p1)
	if p2 != p1 {
		t.Errorf("reconfiguring must keep the instance (and its headroom)")
	}
	if _, ok := p2.(*localityMulticast).headroom["SC-1"]; !ok {
		t.Errorf("headroom lost on reconfiguration")
	}
}

func TestBroadcastHomeReject(t *testing.T) {
	ctx := context.Background()
	snap := NewSnapshot(append(running("SC-1", "SC-2"), SubCluster{ID: "SC-3", State: StateDecommissioned}))
	reg := NewDefaultRegistry()
	in := asks(ask{1, "n1", 1}, ask{1, ResourceAny, 2})

	b, _ := reg.NewAMRMBuilder("Broadcast", nil, Env{})
	p, _ := b.AMRMPolicy("SC-1", nil)
	if err := p.NotifyOfResponse("SC-1", nil); !errors.Is(err, ErrUnknownSubCluster) {
		t.Errorf("broadcast: response before any ask: err = %v", err)
	}
	split, err := p.SplitResourceRequests(ctx, snap, in, []SubClusterID{"SC-2"})
	if err != nil || len(split) != 1 || len(split["SC-1"]) != 2 {
		t.Errorf("broadcast with SC-2 timed out: %v, %v", flatten(split), err)
	}
	split, _ = p.SplitResourceRequests(ctx, snap, in, nil)
	if len(split) != 2 || len(split["SC-2"]) != 2 {
		t.Errorf("broadcast: %v", flatten(split))
	}
	if err := p.NotifyOfResponse("SC-2", nil); err != nil {
		t.Errorf("broadcast: known sub-cluster: %v", err)
	}

	b, _ = reg.NewAMRMBuilder("Home", nil, Env{})
	p, _ = b.AMRMPolicy("SC-2", nil)
	split, err = p.SplitResourceRequests(ctx, snap, in, []SubClusterID{"SC-2"})
	if err != nil || len(split) != 1 || len(split["SC-2"]) != 2 {
		t.Errorf("home: %v, %v", flatten(split), err)
	}
	if err := p.NotifyOfResponse("SC-1", nil); !errors.Is(err, ErrUnknownSubCluster) {
		t.Errorf("home: response from another sub-cluster: err = %v", err)
	}
	p, _ = b.AMRMPolicy("SC-3", nil)
	if _, err := p.SplitResourceRequests(ctx, snap, in, nil); !errors.Is(err, ErrHomeInactive) {
		t.Errorf("home inactive: err = %v", err)
	}

	b, _ = reg.NewAMRMBuilder("Reject", nil, Env{})
	p, _ = b.AMRMPolicy("SC-1", nil)
	if _, err := p.SplitResourceRequests(ctx, snap, in, nil); !errors.Is(err, ErrRejected) {
		t.Errorf("reject: err = %v", err)
	}
}
