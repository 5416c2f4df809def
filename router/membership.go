package router

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// membership caches the store's sub-cluster rows. It is refreshed by a poll
// loop (and a store watch when available), never on the request path, so a
// routed call costs no store round trip for membership.
type membership struct {
	store StateStore
	// expiry is the heartbeat age past which a sub-cluster takes no new
	// work (0: never); now is the clock (tests replace it).
	expiry  time.Duration
	now     func() time.Time
	brk     *breakers
	log     *slog.Logger
	onFetch func(map[SubClusterID]SubClusterInfo)

	mu      sync.RWMutex
	rows    map[SubClusterID]SubClusterInfo
	loaded  bool
	changed chan struct{} // closed and replaced on every refresh
	lastErr error
}

func newMembership(store StateStore, brk *breakers, log *slog.Logger) *membership {
	return &membership{store: store, brk: brk, log: log, now: time.Now, rows: map[SubClusterID]SubClusterInfo{}, changed: make(chan struct{})}
}

// refresh re-reads every row (not only active ones: per-app calls need the
// address of a home that is briefly unhealthy).
func (m *membership) refresh(ctx context.Context) error {
	list, err := m.store.GetSubClusters(ctx, false)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.lastErr = err
		return err
	}
	rows := make(map[SubClusterID]SubClusterInfo, len(list))
	for _, sc := range list {
		rows[sc.ID] = sc
	}
	m.rows, m.loaded, m.lastErr = rows, true, nil
	close(m.changed)
	m.changed = make(chan struct{})
	if m.onFetch != nil {
		m.onFetch(rows)
	}
	return nil
}

// ensure loads membership once if the poll loop has not yet.
func (m *membership) ensure(ctx context.Context) error {
	m.mu.RLock()
	loaded := m.loaded
	m.mu.RUnlock()
	if loaded {
		return nil
	}
	return m.refresh(ctx)
}

func (m *membership) get(id SubClusterID) (SubClusterInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sc, ok := m.rows[id]
	return sc, ok
}

func (m *membership) all() []SubClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SubClusterInfo, 0, len(m.rows))
	for _, sc := range m.rows {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// routable reports whether sc may receive new work: RUNNING in the store,
// a heartbeat fresher than the expiry, and its breaker not open.
func (m *membership) routable(sc SubClusterInfo) bool {
	return sc.State.Active() && !m.stale(sc) && !m.brk.open(sc.ID)
}

// stale reports whether sc's last heartbeat is older than the expiry. A
// row without a heartbeat time (the store always stamps one) is not
// judged.
func (m *membership) stale(sc SubClusterInfo) bool {
	if m.expiry <= 0 || sc.LastHeartbeat.IsZero() || sc.LastHeartbeat.UnixMilli() == 0 {
		return false
	}
	return m.now().Sub(sc.LastHeartbeat) > m.expiry
}

// candidates returns the routable sub-clusters not excluded by bl, sorted
// by id (policies such as HashBased need a stable order).
func (m *membership) candidates(bl *blacklist) []SubClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SubClusterInfo, 0, len(m.rows))
	for _, sc := range m.rows {
		if m.routable(sc) && !bl.excludes(sc) {
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *membership) wait() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

// waitFor polls until pick returns something or the failover window ends.
// This is how the router rides through an RM failover or a breaker's open
// period instead of failing with "no active sub-cluster" at once.
func (m *membership) waitFor(ctx context.Context, window time.Duration, pick func() bool) error {
	if err := m.ensure(ctx); err != nil {
		return fmt.Errorf("read membership: %w", err)
	}
	if pick() {
		return nil
	}
	if window <= 0 {
		return ErrNoActiveSubCluster
	}
	deadline := time.NewTimer(window)
	defer deadline.Stop()
	// Poll fast: breakers reopen by time, not by a store event.
	tick := time.NewTicker(max(window/50, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return ErrNoActiveSubCluster
		case <-m.wait():
		case <-tick.C:
			_ = m.refresh(ctx)
		}
		if pick() {
			return nil
		}
	}
}

// run polls the store (and follows a watch when the store offers one).
func (m *membership) run(ctx context.Context, every time.Duration) {
	var watch <-chan struct{}
	if w, ok := m.store.(MembershipWatcher); ok {
		if ch, err := w.WatchSubClusters(ctx); err == nil {
			watch = ch
		} else {
			m.log.Warn("membership watch unavailable, polling only", "err", err)
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case _, ok := <-watch:
			if !ok {
				watch = nil
				continue
			}
		}
		if err := m.refresh(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("membership refresh failed; routing on the last good view", "err", err)
		}
	}
}

// blacklist is the per-request set of sub-clusters that failed this
// request. An entry lapses when the sub-cluster proves liveness again (a
// newer heartbeat or a new RM address, as after an HA failover, or its
// circuit breaker letting a probe through again), so a request waiting
// out a failover can return to its only sub-cluster.
type blacklist struct {
	brk *breakers
	m   map[SubClusterID]blEntry
}

type blEntry struct {
	sc   SubClusterInfo
	gen  uint64 // breaker recoveries seen when blacklisted
	hung bool   // timed out: only a new RM address lifts the entry
}

func (r *Router) newBlacklist() *blacklist {
	return &blacklist{brk: r.brk, m: map[SubClusterID]blEntry{}}
}

func (b *blacklist) add(sc SubClusterInfo) {
	b.m[sc.ID] = blEntry{sc: sc, gen: b.brk.generation(sc.ID)}
}

// addHung blacklists sc after a call to it timed out. A hung RM still
// heartbeats through its agent and its breaker may let a probe through,
// but calling it again would cost this request another full call timeout;
// only a failover to another RM address makes it worth a second try.
func (b *blacklist) addHung(sc SubClusterInfo) {
	b.m[sc.ID] = blEntry{sc: sc, gen: b.brk.generation(sc.ID), hung: true}
}

func (b *blacklist) excludes(sc SubClusterInfo) bool {
	if b == nil {
		return false
	}
	e, ok := b.m[sc.ID]
	if !ok {
		return false
	}
	if e.hung {
		return e.sc.ClientRMServiceAddress == sc.ClientRMServiceAddress
	}
	if b.brk.generation(sc.ID) != e.gen {
		return false // its breaker lets calls through again since
	}
	return e.sc.ClientRMServiceAddress == sc.ClientRMServiceAddress && !sc.LastHeartbeat.After(e.sc.LastHeartbeat)
}
