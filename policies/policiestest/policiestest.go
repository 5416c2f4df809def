// Package policiestest holds the conformance suites every router and
// AMRMProxy policy must pass, and small fakes (resolver, reservations) for
// tests of code that uses policies.
package policiestest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/yarnfed/yarnfed/policies"
)

// StaticResolver is a fixed node/rack table.
type StaticResolver struct {
	Nodes map[string]policies.SubClusterID
	Racks map[string][]policies.SubClusterID
}

// SubClusterForNode implements policies.SubClusterResolver.
func (r StaticResolver) SubClusterForNode(node string) (policies.SubClusterID, bool) {
	id, ok := r.Nodes[node]
	return id, ok
}

// SubClustersForRack implements policies.SubClusterResolver.
func (r StaticResolver) SubClustersForRack(rack string) []policies.SubClusterID {
	return r.Racks[rack]
}

// Reservations is a fixed reservation -> home table.
type Reservations map[string]policies.SubClusterID

// ErrNoReservation is returned for unknown reservations.
var ErrNoReservation = errors.New("policiestest: unknown reservation")

// ReservationHome implements policies.ReservationResolver.
func (r Reservations) ReservationHome(_ context.Context, id string) (policies.SubClusterID, error) {
	if home, ok := r[id]; ok {
		return home, nil
	}
	return "", fmt.Errorf("%w %q", ErrNoReservation, id)
}

// Federation is the membership the suites run against: twelve sub-clusters
// SC-01..SC-12 in every state; the odd ones are RUNNING. Node "node-NN" and
// rack "rack-K" (K = (NN-1)/3) belong to SC-NN.
func Federation() []policies.SubCluster {
	states := []policies.SubClusterState{policies.StateNew, policies.StateUnhealthy,
		policies.StateDecommissioning, policies.StateLost, policies.StateUnregistered, policies.StateDecommissioned}
	var scs []policies.SubCluster
	for i := 1; i <= 12; i++ {
		st := policies.StateRunning
		if i%2 == 0 {
			st = states[(i/2-1)%len(states)]
		}
		scs = append(scs, policies.SubCluster{
			ID: ID(i), State: st,
			Capability: policies.Capability{AvailableMB: int64(1024 * ((i * 7) % 13)), AppsPending: int64(i)},
		})
	}
	return scs
}

// ID returns "SC-NN".
func ID(i int) policies.SubClusterID { return policies.SubClusterID(fmt.Sprintf("SC-%02d", i)) }

// Resolver maps Federation's nodes and racks.
func Resolver() StaticResolver {
	r := StaticResolver{Nodes: map[string]policies.SubClusterID{}, Racks: map[string][]policies.SubClusterID{}}
	for i := 1; i <= 12; i++ {
		r.Nodes[fmt.Sprintf("node-%02d", i)] = ID(i)
		rack := fmt.Sprintf("rack-%d", (i-1)/3)
		r.Racks[rack] = append(r.Racks[rack], ID(i))
	}
	return r
}

// WeightsJSON is WeightedPolicyInfo JSON giving every Federation
// sub-cluster router and AMRM weight 1 except SC-05 (0), alpha 0.5.
func WeightsJSON() []byte {
	info := policies.WeightedPolicyInfo{HeadroomAlpha: 0.5}
	for i := 1; i <= 12; i++ {
		w := float32(1)
		if i == 5 {
			w = 0
		}
		info.RouterWeights = append(info.RouterWeights, policies.Weight{ID: ID(i), Value: w})
		info.AMRMWeights = append(info.AMRMWeights, policies.Weight{ID: ID(i), Value: w})
	}
	return info.MarshalHadoopJSON()
}

// RouterFactory builds the router policy under test.
type RouterFactory func(env policies.Env) (policies.RouterPolicy, error)

// allowedRouterErr: errors a router may return when it cannot place.
func allowedRouterErr(err error) bool {
	return errors.Is(err, policies.ErrNoActiveSubCluster) || errors.Is(err, policies.ErrRejected)
}

func randomBlacklist(r *rand.Rand, scs []policies.SubCluster) []policies.SubClusterID {
	var bl []policies.SubClusterID
	for _, sc := range scs {
		if r.IntN(4) == 0 {
			bl = append(bl, sc.ID)
		}
	}
	return bl
}

func queues() []string { return []string{"", "default", "root.a", "root.b.c", "q-ü"} }

func amRequests(r *rand.Rand) []policies.ResourceRequest {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []policies.ResourceRequest{{ResourceName: policies.ResourceAny, NumContainers: 1, RelaxLocality: true}}
	}
	n := 1 + r.IntN(12)
	return []policies.ResourceRequest{
		{ResourceName: fmt.Sprintf("node-%02d", n), NumContainers: 1},
		{ResourceName: fmt.Sprintf("rack-%d", (n-1)/3), NumContainers: 1},
		{ResourceName: policies.ResourceAny, NumContainers: 1, RelaxLocality: true},
	}
}

// RunRouterConformance checks the contract every router policy keeps:
// it only picks active, non-blacklisted sub-clusters; it is deterministic
// under a seeded source; it fails with a sentinel error when nothing is
// eligible; it honours reservations; and it is safe for concurrent use.
func RunRouterConformance(t *testing.T, newPolicy RouterFactory) {
	t.Helper()
	ctx := context.Background()
	fed := Federation()
	snap := policies.NewSnapshot(fed)
	env := func(seed uint64) policies.Env {
		return policies.Env{Resolver: Resolver(), Rand: policies.NewSeededSource(seed),
			Reservations: Reservations{"res-active": ID(3), "res-inactive": ID(4)}}
	}
	build := func(t *testing.T, seed uint64) policies.RouterPolicy {
		t.Helper()
		p, err := newPolicy(env(seed))
		if err != nil {
			t.Fatalf("building policy: %v", err)
		}
		return p
	}

	t.Run("only active and not blacklisted", func(t *testing.T) {
		p := build(t, 1)
		r := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 2000; i++ {
			bl := randomBlacklist(r, fed)
			app := &policies.AppSubmission{Queue: queues()[r.IntN(len(queues()))], AMResourceRequests: amRequests(r)}
			id, err := p.HomeSubCluster(ctx, snap, app, bl)
			if err != nil {
				if !allowedRouterErr(err) {
					t.Fatalf("decision %d: unexpected error %v", i, err)
				}
				continue
			}
			if !snap.IsActive(id) {
				t.Fatalf("decision %d picked inactive %s", i, id)
			}
			if slices.Contains(bl, id) {
				t.Fatalf("decision %d picked blacklisted %s (blacklist %v)", i, id, bl)
			}
		}
	})

	t.Run("deterministic under seed", func(t *testing.T) {
		run := func() []string {
			p := build(t, 42)
			r := rand.New(rand.NewPCG(9, 9))
			var out []string
			for i := 0; i < 300; i++ {
				app := &policies.AppSubmission{Queue: queues()[r.IntN(len(queues()))], AMResourceRequests: amRequests(r)}
				id, err := p.HomeSubCluster(ctx, snap, app, randomBlacklist(r, fed))
				out = append(out, fmt.Sprint(id, errors.Is(err, policies.ErrNoActiveSubCluster)))
			}
			return out
		}
		if a, b := run(), run(); !slices.Equal(a, b) {
			t.Fatalf("two runs with the same seed differ:\n%v\n%v", a, b)
		}
	})

	t.Run("error when nothing is eligible", func(t *testing.T) {
		p := build(t, 1)
		var inactive []policies.SubCluster
		var all []policies.SubClusterID
		for _, sc := range fed {
			all = append(all, sc.ID)
			if !sc.State.Active() {
				inactive = append(inactive, sc)
			}
		}
		cases := []struct {
			name string
			snap *policies.Snapshot
			bl   []policies.SubClusterID
		}{
			{"no sub-clusters", policies.NewSnapshot(nil), nil},
			{"none active", policies.NewSnapshot(inactive), nil},
			{"all blacklisted", snap, all},
		}
		for _, c := range cases {
			for _, rr := range [][]policies.ResourceRequest{nil, amRequests(rand.New(rand.NewPCG(1, 2)))} {
				_, err := p.HomeSubCluster(ctx, c.snap, &policies.AppSubmission{Queue: "root.a", AMResourceRequests: rr}, c.bl)
				if !allowedRouterErr(err) {
					t.Errorf("%s: err = %v, want ErrNoActiveSubCluster (or ErrRejected)", c.name, err)
				}
			}
		}
		if _, err := p.HomeSubCluster(ctx, snap, nil, nil); err == nil {
			t.Errorf("nil submission: no error")
		}
	})

	t.Run("reservations", func(t *testing.T) {
		p := build(t, 1)
		id, err := p.HomeSubCluster(ctx, snap, &policies.AppSubmission{Queue: "root.a", ReservationID: "res-active"}, nil)
		if errors.Is(err, policies.ErrRejected) {
			return
		}
		if err != nil || id != ID(3) {
			t.Errorf("active reservation home: got %q, %v; want %s", id, err, ID(3))
		}
		for _, c := range []struct {
			res string
			bl  []policies.SubClusterID
		}{{"res-inactive", nil}, {"res-unknown", nil}, {"res-active", []policies.SubClusterID{ID(3)}}} {
			if _, err := p.HomeSubCluster(ctx, snap, &policies.AppSubmission{ReservationID: c.res}, c.bl); !errors.Is(err, policies.ErrReservation) {
				t.Errorf("reservation %s (blacklist %v): err = %v, want ErrReservation", c.res, c.bl, err)
			}
		}
		if id, err := p.ReservationHome(ctx, snap, "root.a"); err == nil && !snap.IsActive(id) {
			t.Errorf("ReservationHome picked inactive %s", id)
		}
	})

	t.Run("concurrent use", func(t *testing.T) {
		p := build(t, 3)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := 0; i < 200; i++ {
					app := &policies.AppSubmission{Queue: "root.a", AMResourceRequests: amRequests(r)}
					// Alternate snapshots so cached tables are rebuilt concurrently.
					s := snap
					if i%2 == 1 {
						s = policies.NewSnapshot(fed)
					}
					id, err := p.HomeSubCluster(ctx, s, app, nil)
					if err == nil && !s.IsActive(id) {
						errs <- fmt.Errorf("picked inactive %s", id)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// AMRMFactory builds the AMRMProxy policy builder under test.
type AMRMFactory func(env policies.Env) (policies.AMRMBuilder, error)

func allowedAMRMErr(err error) bool {
	return errors.Is(err, policies.ErrNoActiveSubCluster) || errors.Is(err, policies.ErrRejected) ||
		errors.Is(err, policies.ErrHomeInactive)
}

func randomAsks(r *rand.Rand) []policies.ResourceRequest {
	var asks []policies.ResourceRequest
	for i := 0; i < 1+r.IntN(6); i++ {
		id := int64(r.IntN(3))
		n := int32(r.IntN(5))
		switch r.IntN(4) {
		case 0:
			asks = append(asks, policies.ResourceRequest{AllocationRequestID: id, ResourceName: fmt.Sprintf("node-%02d", 1+r.IntN(14)), NumContainers: n})
		case 1:
			asks = append(asks, policies.ResourceRequest{AllocationRequestID: id, ResourceName: fmt.Sprintf("rack-%d", r.IntN(5)), NumContainers: n})
		default:
			asks = append(asks, policies.ResourceRequest{AllocationRequestID: id, ResourceName: policies.ResourceAny, NumContainers: n, RelaxLocality: true})
		}
	}
	return asks
}

// RunAMRMConformance checks the contract every AMRMProxy policy keeps: it
// only sends asks to active sub-clusters and sends timed-out ones nothing
// but cancels while others are available; it is deterministic under a seeded source; it
// fails with a sentinel error when nothing is eligible.
func RunAMRMConformance(t *testing.T, newBuilder AMRMFactory) {
	t.Helper()
	ctx := context.Background()
	fed := Federation()
	snap := policies.NewSnapshot(fed)
	home := ID(1)
	build := func(t *testing.T, seed uint64) policies.AMRMPolicy {
		t.Helper()
		b, err := newBuilder(policies.Env{Resolver: Resolver(), Rand: policies.NewSeededSource(seed)})
		if err != nil {
			t.Fatalf("building policy: %v", err)
		}
		p, err := b.AMRMPolicy(home, nil)
		if err != nil {
			t.Fatalf("policy for home %s: %v", home, err)
		}
		return p
	}
	feedback := func(p policies.AMRMPolicy, split map[policies.SubClusterID][]policies.ResourceRequest) {
		for sc := range split {
			_ = p.NotifyOfResponse(sc, &policies.Resource{MemoryMB: int64(len(sc)) * 512, VCores: 2})
		}
	}

	t.Run("only active, timed-out avoided", func(t *testing.T) {
		p := build(t, 1)
		r := rand.New(rand.NewPCG(5, 5))
		for i := 0; i < 500; i++ {
			var timedOut []policies.SubClusterID
			if r.IntN(2) == 0 {
				timedOut = []policies.SubClusterID{ID(3), ID(7)}
			}
			split, err := p.SplitResourceRequests(ctx, snap, randomAsks(r), timedOut)
			if err != nil {
				if !allowedAMRMErr(err) {
					t.Fatalf("split %d: unexpected error %v", i, err)
				}
				continue
			}
			for sc := range split {
				if !snap.IsActive(sc) {
					t.Fatalf("split %d sent asks to inactive %s", i, sc)
				}
				if slices.Contains(timedOut, sc) && sc != home {
					// Cancels (zero asks) must still reach a slow sub-cluster.
					for _, rr := range split[sc] {
						if rr.NumContainers != 0 {
							t.Fatalf("split %d sent a non-zero ask to timed-out %s", i, sc)
						}
					}
				}
			}
			feedback(p, split)
		}
	})

	t.Run("deterministic under seed", func(t *testing.T) {
		run := func() []string {
			p := build(t, 42)
			r := rand.New(rand.NewPCG(8, 8))
			var out []string
			for i := 0; i < 100; i++ {
				split, err := p.SplitResourceRequests(ctx, snap, randomAsks(r), nil)
				keys := slices.Sorted(func(yield func(policies.SubClusterID) bool) {
					for k := range split {
						if !yield(k) {
							return
						}
					}
				})
				for _, k := range keys {
					out = append(out, fmt.Sprintf("%s=%v", k, summarize(split[k])))
				}
				out = append(out, fmt.Sprint(err != nil))
				feedback(p, split)
			}
			return out
		}
		if a, b := run(), run(); !slices.Equal(a, b) {
			t.Fatalf("two runs with the same seed differ")
		}
	})

	t.Run("error when nothing is eligible", func(t *testing.T) {
		p := build(t, 1)
		var inactive []policies.SubCluster
		for _, sc := range fed {
			if !sc.State.Active() {
				inactive = append(inactive, sc)
			}
		}
		asks := []policies.ResourceRequest{{ResourceName: policies.ResourceAny, NumContainers: 3}}
		for name, s := range map[string]*policies.Snapshot{"empty": policies.NewSnapshot(nil), "none active": policies.NewSnapshot(inactive)} {
			if _, err := p.SplitResourceRequests(ctx, s, asks, nil); !allowedAMRMErr(err) {
				t.Errorf("%s: err = %v, want a sentinel", name, err)
			}
		}
	})

	t.Run("concurrent use", func(t *testing.T) {
		p := build(t, 2)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 3))
				for i := 0; i < 100; i++ {
					split, _ := p.SplitResourceRequests(ctx, snap, randomAsks(r), nil)
					feedback(p, split)
				}
			}(g)
		}
		wg.Wait()
	})
}

func summarize(rrs []policies.ResourceRequest) []string {
	var s []string
	for _, rr := range rrs {
		s = append(s, fmt.Sprintf("%d/%s/%d", rr.AllocationRequestID, rr.ResourceName, rr.NumContainers))
	}
	return s
}
