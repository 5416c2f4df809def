package policies

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// AMRMPolicy splits an application master's resource asks across
// sub-clusters (Hadoop FederationAMRMProxyPolicy). One instance serves one
// application; it is safe for concurrent use.
type AMRMPolicy interface {
	// Type is the policy's short type name (e.g. "LocalityMulticast").
	Type() string
	// SplitResourceRequests returns, per sub-cluster, the asks to send it.
	// timedOut lists sub-clusters that have not answered recently; they get
	// no new asks unless every candidate has timed out. The returned slices
	// may share memory with asks and with each other: treat them as
	// read-only.
	SplitResourceRequests(ctx context.Context, snap *Snapshot, asks []ResourceRequest, timedOut []SubClusterID) (map[SubClusterID][]ResourceRequest, error)
	// NotifyOfResponse records an allocate response of sub-cluster sc;
	// headroom is its availableResources, nil when the response had none.
	NotifyOfResponse(sc SubClusterID, headroom *Resource) error
}

// AMRMBuilder makes the per-application AMRMProxy policies of one
// validated configuration.
type AMRMBuilder interface {
	// AMRMPolicy returns the policy for an application whose home is home.
	// When prev has the same type it is reconfigured in place and keeps what
	// it has learnt (headroom, sub-clusters contacted); otherwise a new
	// policy is made.
	AMRMPolicy(home SubClusterID, prev AMRMPolicy) (AMRMPolicy, error)
}

// excludeTimedOut drops timed-out sub-clusters unless that would leave
// none: asking a slow sub-cluster beats asking nobody (Hadoop does the same).
func excludeTimedOut(ids []SubClusterID, timedOut []SubClusterID) []SubClusterID {
	if len(timedOut) == 0 {
		return ids
	}
	out := make([]SubClusterID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(timedOut, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return ids
	}
	return out
}

// ---- Broadcast ------------------------------------------------------------

type broadcastBuilder struct{}

func (broadcastBuilder) AMRMPolicy(_ SubClusterID, prev AMRMPolicy) (AMRMPolicy, error) {
	if p, ok := prev.(*broadcast); ok {
		return p, nil
	}
	return &broadcast{known: map[SubClusterID]struct{}{}}, nil
}

// broadcast sends every ask to every active sub-cluster (Hadoop
// BroadcastAMRMProxyPolicy).
type broadcast struct {
	mu    sync.Mutex
	known map[SubClusterID]struct{}
}

func (*broadcast) Type() string { return "Broadcast" }

func (b *broadcast) SplitResourceRequests(_ context.Context, snap *Snapshot, asks []ResourceRequest, timedOut []SubClusterID) (map[SubClusterID][]ResourceRequest, error) {
	if snap == nil || len(snap.active) == 0 {
		return nil, errNoActive
	}
	targets := excludeTimedOut(snap.active, timedOut)
	out := make(map[SubClusterID][]ResourceRequest, len(targets))
	b.mu.Lock()
	for _, id := range targets {
		out[id] = asks
		b.known[id] = struct{}{}
	}
	b.mu.Unlock()
	return out, nil
}

func (b *broadcast) NotifyOfResponse(sc SubClusterID, _ *Resource) error {
	b.mu.Lock()
	_, ok := b.known[sc]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: response from %s, which this policy never asked", ErrUnknownSubCluster, sc)
	}
	return nil
}

// ---- Home -----------------------------------------------------------------

type homeBuilder struct{}

func (homeBuilder) AMRMPolicy(home SubClusterID, _ AMRMPolicy) (AMRMPolicy, error) {
	if home == "" {
		return nil, fmt.Errorf("%w: the Home AMRMProxy policy needs the application's home sub-cluster", ErrInvalidConfig)
	}
	return &homePolicy{home: home}, nil
}

// homePolicy sends every ask to the home sub-cluster (Hadoop
// HomeAMRMProxyPolicy).
type homePolicy struct{ home SubClusterID }

func (*homePolicy) Type() string { return "Home" }

func (h *homePolicy) SplitResourceRequests(_ context.Context, snap *Snapshot, asks []ResourceRequest, _ []SubClusterID) (map[SubClusterID][]ResourceRequest, error) {
	if snap == nil || !snap.IsActive(h.home) {
		return nil, fmt.Errorf("%w: %s", ErrHomeInactive, h.home)
	}
	return map[SubClusterID][]ResourceRequest{h.home: asks}, nil
}

func (h *homePolicy) NotifyOfResponse(sc SubClusterID, _ *Resource) error {
	if sc != h.home {
		return fmt.Errorf("%w: response from %s, but the home is %s", ErrUnknownSubCluster, sc, h.home)
	}
	return nil
}

// ---- Reject ---------------------------------------------------------------

type rejectBuilder struct{}

func (rejectBuilder) AMRMPolicy(SubClusterID, AMRMPolicy) (AMRMPolicy, error) {
	return rejectAMRM{}, nil
}

// rejectAMRM refuses every ask (Hadoop RejectAMRMProxyPolicy).
type rejectAMRM struct{}

func (rejectAMRM) Type() string { return "Reject" }

func (rejectAMRM) SplitResourceRequests(context.Context, *Snapshot, []ResourceRequest, []SubClusterID) (map[SubClusterID][]ResourceRequest, error) {
	return nil, fmt.Errorf("%w: the policy of this queue rejects all resource requests", ErrRejected)
}

func (rejectAMRM) NotifyOfResponse(SubClusterID, *Resource) error { return nil }

// ---- LocalityMulticast ----------------------------------------------------

// lmConfig is one validated LocalityMulticast configuration.
type lmConfig struct {
	weights  map[SubClusterID]float64
	alpha    float64
	resolver SubClusterResolver
	rnd      Source
}

type localityMulticastBuilder struct{ cfg *lmConfig }

func newLocalityMulticastBuilder(info *WeightedPolicyInfo, env Env) (*localityMulticastBuilder, error) {
	cfg := &lmConfig{weights: map[SubClusterID]float64{}, alpha: float64(info.HeadroomAlpha),
		resolver: env.Resolver, rnd: sourceOrDefault(env.Rand)}
	positive := false
	for _, w := range info.AMRMWeights {
		if w.ID == "" {
			return nil, fmt.Errorf("%w: amrmPolicyWeights: empty sub-cluster id", ErrInvalidConfig)
		}
		cfg.weights[w.ID] = float64(w.Value)
		positive = positive || w.Value > 0
	}
	if !positive {
		return nil, fmt.Errorf("%w: amrmPolicyWeights: empty or all zero, so no resource request could be forwarded", ErrInvalidConfig)
	}
	if cfg.resolver == nil {
		cfg.resolver = emptyResolver{}
	}
	return &localityMulticastBuilder{cfg: cfg}, nil
}

func (b *localityMulticastBuilder) AMRMPolicy(home SubClusterID, prev AMRMPolicy) (AMRMPolicy, error) {
	if home == "" {
		return nil, fmt.Errorf("%w: the LocalityMulticast policy needs the application's home sub-cluster", ErrInvalidConfig)
	}
	if p, ok := prev.(*localityMulticast); ok && p.home == home {
		p.cfg.Store(b.cfg)
		return p, nil
	}
	p := &localityMulticast{home: home, headroom: map[SubClusterID]Resource{}}
	p.cfg.Store(b.cfg)
	return p, nil
}

type emptyResolver struct{}

func (emptyResolver) SubClusterForNode(string) (SubClusterID, bool) { return "", false }
func (emptyResolver) SubClustersForRack(string) []SubClusterID      { return nil }

// localityMulticast implements Hadoop's LocalityMulticastAMRMProxyPolicy:
//   - a node ask goes to the sub-cluster owning the node;
//   - a rack ask goes to every sub-cluster owning part of the rack;
//   - a node or rack ask nobody can place goes to one random enabled
//     sub-cluster, the same one for every ask of that allocationRequestId;
//   - an ANY ask that shares its allocationRequestId with node asks is split
//     among those node asks' sub-clusters in proportion to their counts;
//   - any other ANY ask is split by alpha*headroomShare +
//     (1-alpha)*weightShare over the enabled sub-clusters;
//   - an ANY ask for zero containers (a cancel) goes to every active
//     sub-cluster that ever answered, timed out or not;
//   - only active sub-clusters with a positive AMRM weight are enabled;
//     timed-out ones are skipped unless all enabled ones timed out;
//   - rack asks are dropped from sub-clusters that got no node or ANY ask of
//     the same allocationRequestId.
type localityMulticast struct {
	home SubClusterID
	cfg  atomic.Pointer[lmConfig]

	mu       sync.Mutex
	headroom map[SubClusterID]Resource
}

func (*localityMulticast) Type() string { return "LocalityMulticast" }

func (l *localityMulticast) NotifyOfResponse(sc SubClusterID, headroom *Resource) error {
	if headroom == nil {
		return nil
	}
	l.mu.Lock()
	l.headroom[sc] = *headroom
	l.mu.Unlock()
	return nil
}

var errNoEnabledAMRM = fmt.Errorf("%w: none of the sub-clusters enabled in this policy (AMRM weight > 0) is active", ErrNoActiveSubCluster)

// bookkeeper accumulates one split.
type bookkeeper struct {
	enabled    []SubClusterID // active, weight > 0, not timed out; sorted
	isEnabled  map[SubClusterID]bool
	totWeight  float64
	totHR      float64
	knownHR    int
	answer     map[SubClusterID][]ResourceRequest
	mask       map[maskKey]struct{} // (SC, allocation id) with a non-rack ask
	hasMask    map[SubClusterID]bool
	perSC      map[int64]map[SubClusterID]int64
	perID      map[int64]int64
	unresolved map[int64]SubClusterID
}

type maskKey struct {
	sc SubClusterID
	id int64
}

func (b *bookkeeper) add(sc SubClusterID, rr ResourceRequest, rack bool) {
	if !rack {
		b.mask[maskKey{sc, rr.AllocationRequestID}] = struct{}{}
		b.hasMask[sc] = true
	}
	b.answer[sc] = append(b.answer[sc], rr)
}

func (b *bookkeeper) addNode(sc SubClusterID, rr ResourceRequest) {
	if rr.NumContainers > 0 {
		id := rr.AllocationRequestID
		m := b.perSC[id]
		if m == nil {
			m = map[SubClusterID]int64{}
			b.perSC[id] = m
		}
		m[sc] += int64(rr.NumContainers)
		b.perID[id] += int64(rr.NumContainers)
	}
	b.add(sc, rr, false)
}

func (l *localityMulticast) SplitResourceRequests(_ context.Context, snap *Snapshot, asks []ResourceRequest, timedOut []SubClusterID) (map[SubClusterID][]ResourceRequest, error) {
	cfg := l.cfg.Load()
	l.mu.Lock()
	headroom := maps.Clone(l.headroom)
	l.mu.Unlock()

	var enabled []SubClusterID
	if snap != nil {
		for _, id := range snap.active {
			if cfg.weights[id] > 0 {
				enabled = append(enabled, id)
			}
		}
	}
	b := &bookkeeper{
		isEnabled: make(map[SubClusterID]bool, len(enabled)), answer: make(map[SubClusterID][]ResourceRequest, len(enabled)),
		mask: make(map[maskKey]struct{}, len(enabled)+len(asks)), hasMask: make(map[SubClusterID]bool, len(enabled)),
		perSC: map[int64]map[SubClusterID]int64{}, perID: map[int64]int64{}, unresolved: map[int64]SubClusterID{},
	}
	if len(enabled) == 0 {
		return nil, errNoEnabledAMRM
	}
	b.enabled = excludeTimedOut(enabled, timedOut)
	for _, id := range b.enabled {
		b.isEnabled[id] = true
		b.totWeight += cfg.weights[id]
		if hr, ok := headroom[id]; ok {
			b.totHR += float64(hr.MemoryMB)
			b.knownHR++
		}
	}

	var anys []int
	for i := range asks {
		rr := asks[i]
		if rr.IsAny() {
			anys = append(anys, i)
			continue
		}
		if sc, ok := cfg.resolver.SubClusterForNode(rr.ResourceName); ok && b.isEnabled[sc] {
			b.addNode(sc, rr)
			continue
		}
		rack := cfg.resolver.SubClustersForRack(rr.ResourceName)
		placed := false
		for _, sc := range rack {
			if b.isEnabled[sc] {
				b.add(sc, rr, true)
				placed = true
			}
		}
		if placed {
			continue
		}
		// Nobody can place it: one random enabled sub-cluster per
		// allocationRequestId keeps an id's asks together.
		sc, ok := b.unresolved[rr.AllocationRequestID]
		if !ok {
			sc = b.enabled[intnFrom(cfg.rnd, len(b.enabled))]
			b.unresolved[rr.AllocationRequestID] = sc
		}
		if len(rack) > 0 {
			b.add(sc, rr, true)
		} else {
			b.addNode(sc, rr)
		}
	}

	// Cancels go to every sub-cluster that ever answered (it may hold an
	// earlier ask), as in Hadoop, but not to ones that left the federation.
	var seen []SubClusterID
	for sc := range headroom {
		if snap.IsActive(sc) {
			seen = append(seen, sc)
		}
	}
	slices.Sort(seen)
	for _, i := range anys {
		if err := l.splitAny(cfg, b, asks[i], headroom, seen); err != nil {
			return nil, err
		}
	}

	for sc, rrs := range b.answer {
		if !b.hasMask[sc] {
			delete(b.answer, sc) // only rack asks: useless without node/ANY asks
			continue
		}
		kept := rrs[:0]
		for _, rr := range rrs {
			if _, ok := b.mask[maskKey{sc, rr.AllocationRequestID}]; ok {
				kept = append(kept, rr)
			}
		}
		if len(kept) == 0 {
			delete(b.answer, sc)
			continue
		}
		b.answer[sc] = kept
	}
	return b.answer, nil
}

func (l *localityMulticast) splitAny(cfg *lmConfig, b *bookkeeper, rr ResourceRequest, headroom map[SubClusterID]Resource, seen []SubClusterID) error {
	if rr.NumContainers == 0 {
		// A zero ask may cancel an earlier one: every RM we asked must see it.
		for _, sc := range seen {
			b.add(sc, rr, false)
		}
		return nil
	}
	id := rr.AllocationRequestID
	local := b.perSC[id]
	var targets []SubClusterID
	if local != nil {
		targets = slices.Sorted(maps.Keys(local))
	} else {
		targets = b.enabled
	}
	weights := make([]float64, len(targets))
	n := float64(len(b.enabled))
	for i, sc := range targets {
		if local != nil {
			if tot := b.perID[id]; tot > 0 {
				weights[i] = float64(local[sc]) / float64(tot)
			}
			continue
		}
		hw := 1 / n
		if hr, ok := headroom[sc]; ok && b.totHR > 0 {
			hw = float64(hr.MemoryMB) / b.totHR * (float64(b.knownHR) / n)
		}
		pw := 0.0
		if b.totWeight > 0 {
			pw = cfg.weights[sc] / b.totWeight
		}
		weights[i] = cfg.alpha*hw + (1-cfg.alpha)*pw
	}
	counts, err := splitInteger(cfg.rnd, rr.NumContainers, weights)
	if err != nil {
		return err
	}
	for i, sc := range targets {
		if counts[i] > 0 {
			out := rr
			out.NumContainers = counts[i]
			b.add(sc, out, false)
		}
	}
	return nil
}

// splitInteger divides total into bins in proportion to the positive
// weights: every bin first gets the floor of its share, then the remaining
// containers (fewer than the number of bins) go one at a time to bins drawn
// at random by weight. The counts always add up to total.
func splitInteger(rnd Source, total int32, weights []float64) ([]int32, error) {
	out := make([]int32, len(weights))
	cum := make([]float64, len(weights))
	sum := 0.0
	for i, w := range weights {
		if w > 0 {
			sum += w
		}
		cum[i] = sum
	}
	if sum <= 0 {
		return nil, fmt.Errorf("%w: no positive weight to split %d containers over", ErrNoActiveSubCluster, total)
	}
	residue := total
	for i, w := range weights {
		if w > 0 {
			base := int32(float64(total) * w / sum)
			out[i] = base
			residue -= base
		}
	}
	// Each leftover container goes to a bin drawn by weight: a binary
	// search over the running sums, so a split over many sub-clusters stays
	// O(n + r log n) rather than O(n*r). Bins with weight <= 0 have an
	// empty interval and are never drawn.
	for ; residue > 0; residue-- {
		x := float64From(rnd) * sum
		lo, hi := 0, len(cum)-1
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if cum[mid] > x {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if cum[lo] <= x { // x rounded up to sum: take the last positive bin
			for lo = len(weights) - 1; weights[lo] <= 0; lo-- {
			}
		}
		out[lo]++
	}
	return out, nil
}
