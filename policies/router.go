package policies

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"unicode/utf8"
)

// RouterPolicy picks the home sub-cluster of an application (Hadoop
// FederationRouterPolicy). Implementations are safe for concurrent use and
// immutable once built: a configuration change builds a new policy.
type RouterPolicy interface {
	// Type is the policy's short type name (e.g. "WeightedRandom").
	Type() string
	// HomeSubCluster picks app's home among snap's active sub-clusters that
	// are not in blacklist. An application with a reservation goes to the
	// reservation's home. An empty queue means DefaultQueue. Errors wrap
	// ErrNoActiveSubCluster, ErrRejected, ErrReservation or
	// ErrInvalidRequest.
	HomeSubCluster(ctx context.Context, snap *Snapshot, app *AppSubmission, blacklist []SubClusterID) (SubClusterID, error)
	// ReservationHome picks the sub-cluster for a new reservation in queue.
	ReservationHome(ctx context.Context, snap *Snapshot, queue string) (SubClusterID, error)
}

// chooser is the per-policy part of a router policy: pick among the active
// sub-clusters of snap that are not blacklisted.
type chooser interface {
	choose(snap *Snapshot, queue string, blacklist []SubClusterID) (SubClusterID, error)
}

// routerBase implements the steps every Hadoop router policy shares
// (AbstractRouterPolicy.getHomeSubcluster): default queue, reservation
// pre-filter, availability check, then the policy's own choice.
type routerBase struct {
	typ          string
	reservations ReservationResolver
	c            chooser
}

func (r *routerBase) Type() string { return r.typ }

func (r *routerBase) HomeSubCluster(ctx context.Context, snap *Snapshot, app *AppSubmission, blacklist []SubClusterID) (SubClusterID, error) {
	if app == nil {
		return "", fmt.Errorf("%w: nil application submission", ErrInvalidRequest)
	}
	if app.ReservationID != "" {
		return r.reservationHome(ctx, snap, app.ReservationID, blacklist)
	}
	if err := checkAvailable(snap, blacklist); err != nil {
		return "", err
	}
	return r.c.choose(snap, app.QueueOrDefault(), blacklist)
}

func (r *routerBase) ReservationHome(ctx context.Context, snap *Snapshot, queue string) (SubClusterID, error) {
	if queue == "" {
		queue = DefaultQueue
	}
	if err := checkAvailable(snap, nil); err != nil {
		return "", err
	}
	return r.c.choose(snap, queue, nil)
}

// reservationHome: an application submitted into a reservation must run
// where the reservation lives. Hadoop narrows the candidates to that one
// sub-cluster and lets the policy choose; we return it directly and refuse
// clearly when it cannot take the application.
func (r *routerBase) reservationHome(ctx context.Context, snap *Snapshot, id string, blacklist []SubClusterID) (SubClusterID, error) {
	if r.reservations == nil {
		return "", fmt.Errorf("%w: reservation %q: no reservation resolver configured", ErrReservation, id)
	}
	home, err := r.reservations.ReservationHome(ctx, id)
	if err != nil {
		return "", fmt.Errorf("%w: reservation %q: %w", ErrReservation, id, err)
	}
	if !snap.IsActive(home) {
		return "", fmt.Errorf("%w: reservation %q: home sub-cluster %s is not active", ErrReservation, id, home)
	}
	if slices.Contains(blacklist, home) {
		return "", fmt.Errorf("%w: reservation %q: home sub-cluster %s is blacklisted", ErrReservation, id, home)
	}
	return home, nil
}

// errNoActive is preallocated: it is returned on the hot path when every
// sub-cluster is down, which is exactly when we must not add GC pressure.
var errNoActive = fmt.Errorf("%w: no active sub-cluster that is not blacklisted", ErrNoActiveSubCluster)

func checkAvailable(snap *Snapshot, blacklist []SubClusterID) error {
	if snap == nil {
		return errNoActive
	}
	for _, id := range snap.active {
		if !slices.Contains(blacklist, id) {
			return nil
		}
	}
	return errNoActive
}

// snapCache memoises a table derived from one snapshot. Membership changes
// produce a new snapshot, so the identity check is the whole invalidation.
type snapCache[T any] struct {
	p atomic.Pointer[snapEntry[T]]
}

type snapEntry[T any] struct {
	snap *Snapshot
	v    T
}

func (c *snapCache[T]) get(snap *Snapshot, build func(*Snapshot) T) T {
	if e := c.p.Load(); e != nil && e.snap == snap {
		return e.v
	}
	v := build(snap)
	c.p.Store(&snapEntry[T]{snap: snap, v: v})
	return v
}

// ---- UniformRandom --------------------------------------------------------

// uniformRandom picks uniformly among active, non-blacklisted sub-clusters,
// ignoring weights (Hadoop UniformRandomRouterPolicy).
type uniformRandom struct{ rnd Source }

func (u *uniformRandom) choose(snap *Snapshot, _ string, blacklist []SubClusterID) (SubClusterID, error) {
	ids := snap.active
	if len(blacklist) == 0 {
		return ids[intnFrom(u.rnd, len(ids))], nil
	}
	n := 0
	for _, id := range ids {
		if !slices.Contains(blacklist, id) {
			n++
		}
	}
	k := intnFrom(u.rnd, n)
	for _, id := range ids {
		if slices.Contains(blacklist, id) {
			continue
		}
		if k == 0 {
			return id, nil
		}
		k--
	}
	return "", errNoActive // unreachable: checkAvailable ran first
}

// ---- WeightedRandom -------------------------------------------------------

// weightedTable is the weighted-random table of one snapshot: active
// sub-clusters with a positive weight, and the running sum of weights.
type weightedTable struct {
	ids   []SubClusterID
	w     []float64
	cum   []float64
	index map[SubClusterID]int
	total float64
}

func buildWeightedTable(ws []Weight, snap *Snapshot) *weightedTable {
	t := &weightedTable{index: map[SubClusterID]int{}}
	// Sorted by id: equal configurations give equal decisions whatever the
	// order of their JSON entries.
	sorted := slices.Clone(ws)
	slices.SortFunc(sorted, func(a, b Weight) int { return compareIDs(a.ID, b.ID) })
	for _, x := range sorted {
		if x.Value > 0 && snap.IsActive(x.ID) {
			t.index[x.ID] = len(t.ids)
			t.ids = append(t.ids, x.ID)
			t.w = append(t.w, float64(x.Value))
			t.total += float64(x.Value)
			t.cum = append(t.cum, t.total)
		}
	}
	return t
}

var errNoPositiveWeight = fmt.Errorf("%w: no active sub-cluster has a positive router weight", ErrNoActiveSubCluster)

// search returns the first index whose running sum exceeds x: O(log n).
func (t *weightedTable) search(x float64) int {
	lo, hi := 0, len(t.cum)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.cum[mid] > x {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// maxRejections bounds rejection sampling; past it we scan.
const maxRejections = 32

// pick samples the table, skipping blacklisted ids.
func (t *weightedTable) pick(rnd Source, blacklist []SubClusterID) (SubClusterID, error) {
	if t.total <= 0 {
		return "", errNoPositiveWeight
	}
	blocked := 0.0
	for _, b := range blacklist {
		if i, ok := t.index[b]; ok {
			blocked += t.w[i]
		}
	}
	if blocked == 0 {
		return t.ids[t.search(float64From(rnd)*t.total)], nil
	}
	// Few blacklisted by weight: draw from the whole table and redraw on a
	// blacklisted pick. Conditioning on "not blacklisted" keeps the draw
	// exactly proportional to the remaining weights, in O(log n) expected.
	if blocked < t.total/2 {
		for i := 0; i < maxRejections; i++ {
			id := t.ids[t.search(float64From(rnd)*t.total)]
			if !slices.Contains(blacklist, id) {
				return id, nil
			}
		}
	}
	total := 0.0
	for i, id := range t.ids {
		if !slices.Contains(blacklist, id) {
			total += t.w[i]
		}
	}
	if total <= 0 {
		return "", errNoPositiveWeight
	}
	x := float64From(rnd) * total
	last := -1
	for i, id := range t.ids {
		if slices.Contains(blacklist, id) {
			continue
		}
		if x < t.w[i] {
			return id, nil
		}
		x -= t.w[i]
		last = i
	}
	return t.ids[last], nil
}

// weightedRandom samples active, non-blacklisted sub-clusters in proportion
// to their router weights; weight 0 and unlisted sub-clusters never get
// applications (Hadoop WeightedRandomRouterPolicy).
type weightedRandom struct {
	weights []Weight
	rnd     Source
	cache   snapCache[*weightedTable]
}

func (w *weightedRandom) table(snap *Snapshot) *weightedTable {
	return w.cache.get(snap, func(s *Snapshot) *weightedTable { return buildWeightedTable(w.weights, s) })
}

func (w *weightedRandom) choose(snap *Snapshot, _ string, blacklist []SubClusterID) (SubClusterID, error) {
	t := w.table(snap)
	return t.pick(w.rnd, blacklist)
}

// ---- Priority -------------------------------------------------------------

// priority sends every application to the active, non-blacklisted
// sub-cluster with the highest router weight (Hadoop PriorityRouterPolicy).
// Ties go to the smallest id so the choice is stable.
type priority struct {
	weights []Weight
	cache   snapCache[[]SubClusterID]
}

var errNoPriority = fmt.Errorf("%w: no active sub-cluster has a router weight greater than zero", ErrNoActiveSubCluster)

func (p *priority) choose(snap *Snapshot, _ string, blacklist []SubClusterID) (SubClusterID, error) {
	order := p.cache.get(snap, func(s *Snapshot) []SubClusterID {
		var c []Weight
		for _, x := range p.weights {
			if x.Value > 0 && s.IsActive(x.ID) {
				c = append(c, x)
			}
		}
		slices.SortStableFunc(c, func(a, b Weight) int {
			switch {
			case a.Value > b.Value:
				return -1
			case a.Value < b.Value:
				return 1
			}
			return compareIDs(a.ID, b.ID)
		})
		ids := make([]SubClusterID, len(c))
		for i, x := range c {
			ids[i] = x.ID
		}
		return ids
	})
	for _, id := range order {
		if !slices.Contains(blacklist, id) {
			return id, nil
		}
	}
	return "", errNoPriority
}

// ---- HashBased ------------------------------------------------------------

// hashBased maps a queue to abs(javaHash(queue) % n) over the sorted,
// active, non-blacklisted sub-clusters (Hadoop HashBasedRouterPolicy). It
// uses Java's String.hashCode so a queue lands on the same sub-cluster
// whether a Hadoop router or ours routes it.
type hashBased struct{}

func (hashBased) choose(snap *Snapshot, queue string, blacklist []SubClusterID) (SubClusterID, error) {
	ids := snap.active
	n := len(ids)
	if len(blacklist) > 0 {
		n = 0
		for _, id := range ids {
			if !slices.Contains(blacklist, id) {
				n++
			}
		}
	}
	h := javaStringHashNoAlloc(queue)
	pos := int(h % int32(n))
	if pos < 0 {
		pos = -pos
	}
	if len(blacklist) == 0 {
		return ids[pos], nil
	}
	for _, id := range ids {
		if len(blacklist) > 0 && slices.Contains(blacklist, id) {
			continue
		}
		if pos == 0 {
			return id, nil
		}
		pos--
	}
	return "", errNoActive // unreachable: checkAvailable ran first
}

// javaStringHashNoAlloc is javaStringHash without the UTF-16 conversion
// buffer.
func javaStringHashNoAlloc(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// ---- LoadBased ------------------------------------------------------------

// loadBased sends an application to the enabled (weight 1) active,
// non-blacklisted sub-cluster with the most available memory (Hadoop
// LoadBasedRouterPolicy). Weights must be 0 or 1.
type loadBased struct {
	weights []Weight
	cache   snapCache[[]SubClusterID]
}

var errNoEnabled = fmt.Errorf("%w: no active sub-cluster is enabled (weight 1) in this policy", ErrNoActiveSubCluster)

func (l *loadBased) choose(snap *Snapshot, _ string, blacklist []SubClusterID) (SubClusterID, error) {
	// Capabilities are part of the snapshot, so the ranking is too: the
	// decision is the first enabled sub-cluster that is not blacklisted.
	order := l.cache.get(snap, func(s *Snapshot) []SubClusterID {
		var idx []int
		for i, sc := range s.all {
			if w, ok := lookupWeight(l.weights, sc.ID); ok && w > 0 && sc.State.Active() {
				idx = append(idx, i)
			}
		}
		// Most available memory first; ties keep id order (Hadoop keeps the
		// first one it sees).
		slices.SortStableFunc(idx, func(a, b int) int {
			ma, mb := s.all[a].Capability.AvailableMB, s.all[b].Capability.AvailableMB
			switch {
			case ma > mb:
				return -1
			case ma < mb:
				return 1
			}
			return 0
		})
		ids := make([]SubClusterID, len(idx))
		for i, x := range idx {
			ids[i] = s.all[x].ID
		}
		return ids
	})
	for _, id := range order {
		if !slices.Contains(blacklist, id) {
			return id, nil
		}
	}
	return "", errNoEnabled
}

// ---- Reject ---------------------------------------------------------------

// reject refuses every application (Hadoop RejectRouterPolicy).
type reject struct{}

func (reject) choose(_ *Snapshot, queue string, _ []SubClusterID) (SubClusterID, error) {
	return "", fmt.Errorf("%w: the policy of queue %q rejects all routing requests", ErrRejected, queue)
}

// rejectRouter rejects before looking at reservations or availability.
type rejectRouter struct{ routerBase }

func (r *rejectRouter) HomeSubCluster(_ context.Context, _ *Snapshot, app *AppSubmission, _ []SubClusterID) (SubClusterID, error) {
	q := DefaultQueue
	if app != nil {
		q = app.QueueOrDefault()
	}
	return reject{}.choose(nil, q, nil)
}

func (r *rejectRouter) ReservationHome(_ context.Context, _ *Snapshot, queue string) (SubClusterID, error) {
	if queue == "" {
		queue = DefaultQueue
	}
	return reject{}.choose(nil, queue, nil)
}

// ---- Locality -------------------------------------------------------------

// localityRouter places the AM on the sub-cluster that owns the node its
// NODE-level AM request names, when that sub-cluster is active, not
// blacklisted and has a positive router weight; otherwise it falls back to
// weighted random (Hadoop LocalityRouterPolicy).
type localityRouter struct {
	routerBase
	resolver SubClusterResolver
	wr       *weightedRandom
	enabled  map[SubClusterID]bool // router weight > 0
}

func (l *localityRouter) HomeSubCluster(ctx context.Context, snap *Snapshot, app *AppSubmission, blacklist []SubClusterID) (SubClusterID, error) {
	if app == nil {
		return "", fmt.Errorf("%w: nil application submission", ErrInvalidRequest)
	}
	rrs := app.AMResourceRequests
	if len(rrs) == 0 || (len(rrs) == 1 && rrs[0].IsAny()) || app.ReservationID != "" {
		return l.routerBase.HomeSubCluster(ctx, snap, app, blacklist)
	}
	if len(rrs) != 3 {
		return "", fmt.Errorf("%w: locality routing needs 0, 1 (ANY) or 3 (NODE, RACK, ANY) AM resource requests, got %d", ErrInvalidRequest, len(rrs))
	}
	if err := checkAvailable(snap, blacklist); err != nil {
		return "", err
	}
	var target SubClusterID
	var haveNode, haveRack, haveAny bool
	anyIdx := -1
	for i := range rrs {
		rr := &rrs[i]
		if l.resolver != nil {
			if id, ok := l.resolver.SubClusterForNode(rr.ResourceName); ok {
				target, haveNode = id, true
			}
			if l.resolver.SubClustersForRack(rr.ResourceName) != nil {
				haveRack = true
			}
		}
		if rr.IsAny() {
			haveAny, anyIdx = true, i
		}
	}
	if haveNode && haveRack && haveAny && snap.IsActive(target) && !slices.Contains(blacklist, target) {
		if l.enabled[target] {
			return target, nil
		}
	}
	// Like Hadoop, the fallback also rewrites the AM request to a single
	// relaxed ANY request: the AM may now start anywhere in the chosen
	// sub-cluster, and the router must submit the rewritten requests.
	anyRR := ResourceRequest{ResourceName: ResourceAny}
	if anyIdx >= 0 {
		anyRR = rrs[anyIdx]
	}
	anyRR.NumContainers, anyRR.RelaxLocality = 1, true
	app.AMResourceRequests = []ResourceRequest{anyRR}
	return l.wr.choose(snap, app.QueueOrDefault(), blacklist)
}
