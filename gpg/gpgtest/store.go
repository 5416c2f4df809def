// Package gpgtest holds fakes for GPG tests: an in-memory state store with
// the real store's lease, fence, pin and conditional-write semantics, and a
// capacity source.
package gpgtest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// FakeStore is an in-memory gpg.Store. It mirrors what statestore/store
// applies (tested there): leases with epochs, fenced writes refused with
// client.ErrFenced, pinned queues skipped, MarkSubClustersLost and
// DeleteApplicationHomes conditional on heartbeat and creation time.
type FakeStore struct {
	mu       sync.Mutex
	now      func() time.Time
	scs      map[string]*pb.SubClusterInfo
	homes    map[string]*pb.ApplicationHome
	policies map[string]*pb.PolicyConfiguration
	leases   map[string]*pb.Lease
	watchers []chan *pb.WatchEvent
	writes   map[string]int
	// Fail, if set, is asked before every operation; a non-nil error fails it.
	Fail func(op string) error
}

// NewFakeStore returns an empty store whose clock is now (nil: time.Now).
func NewFakeStore(now func() time.Time) *FakeStore {
	if now == nil {
		now = time.Now
	}
	return &FakeStore{now: now, scs: map[string]*pb.SubClusterInfo{}, homes: map[string]*pb.ApplicationHome{},
		policies: map[string]*pb.PolicyConfiguration{}, leases: map[string]*pb.Lease{}, writes: map[string]int{}}
}

// enter counts op and asks Fail; it runs before the store's lock is
// taken, so Fail may call the store (to race a write, say).
func (s *FakeStore) enter(op string, write bool) error {
	s.mu.Lock()
	if write {
		s.writes[op]++
	}
	fail := s.Fail
	s.mu.Unlock()
	if fail != nil {
		return fail(op)
	}
	return nil
}

// Writes reports how many times the write op was called (all write ops
// when op is "").
func (s *FakeStore) Writes(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op != "" {
		return s.writes[op]
	}
	n := 0
	for _, v := range s.writes {
		n += v
	}
	return n
}

func (s *FakeStore) emit(e *pb.WatchEvent) {
	for _, w := range s.watchers {
		select {
		case w <- e:
		default:
		}
	}
}

// Register registers (or re-registers) a sub-cluster now, keeping its
// published capacity, as the real store does.
func (s *FakeStore) Register(info *pb.SubClusterInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	info = proto.Clone(info).(*pb.SubClusterInfo)
	if info.LastHeartbeatMs == 0 {
		info.LastHeartbeatMs = s.now().UnixMilli()
	}
	info.PublishedCapacity = s.scs[info.GetSubClusterId()].GetPublishedCapacity()
	s.scs[info.GetSubClusterId()] = info
	s.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: info.GetSubClusterId()})
}

// Heartbeat overwrites state and capability with a fresh heartbeat time.
func (s *FakeStore) Heartbeat(id string, st pb.SubClusterState, capability string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.scs[id]
	if !ok {
		return fmt.Errorf("%w: sub-cluster %s", client.ErrNotFound, id)
	}
	sc.State, sc.Capability, sc.LastHeartbeatMs = st, capability, s.now().UnixMilli()
	s.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: id})
	return nil
}

// SubCluster returns a copy of a sub-cluster row.
func (s *FakeStore) SubCluster(id string) *pb.SubClusterInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.scs[id]; ok {
		return proto.Clone(sc).(*pb.SubClusterInfo)
	}
	return nil
}

// AddHome inserts an application home created at the given time.
func (s *FakeStore) AddHome(app, home string, created time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.homes[app] = &pb.ApplicationHome{ApplicationId: app, HomeSubClusterId: home, CreateTimeMs: created.UnixMilli()}
}

// Homes lists the stored application ids, sorted.
func (s *FakeStore) Homes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.homes))
	for id := range s.homes {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// PutPolicy stores a policy as SetPolicy does (pin included).
func (s *FakeStore) PutPolicy(p *pb.PolicyConfiguration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies[p.GetQueue()] = proto.Clone(p).(*pb.PolicyConfiguration)
}

// Policy returns a copy of a stored policy (nil if none).
func (s *FakeStore) Policy(queue string) *pb.PolicyConfiguration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.policies[queue]; ok {
		return proto.Clone(p).(*pb.PolicyConfiguration)
	}
	return nil
}

// ---- gpg.Store ----

func (s *FakeStore) ListSubClusters(_ context.Context, filterInactive bool) ([]*pb.SubClusterInfo, error) {
	if err := s.enter("ListSubClusters", false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.SubClusterInfo
	for _, sc := range s.scs {
		if !filterInactive || sc.GetState() == pb.SubClusterState_SC_RUNNING {
			out = append(out, proto.Clone(sc).(*pb.SubClusterInfo))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetSubClusterId() < out[j].GetSubClusterId() })
	return out, nil
}

func (s *FakeStore) ListPolicies(context.Context) ([]*pb.PolicyConfiguration, error) {
	if err := s.enter("ListPolicies", false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.PolicyConfiguration
	for _, p := range s.policies {
		out = append(out, proto.Clone(p).(*pb.PolicyConfiguration))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetQueue() < out[j].GetQueue() })
	return out, nil
}

// GetApplicationHome returns a copy of the application's home, or an
// error wrapping client.ErrNotFound, as the real client does.
func (s *FakeStore) GetApplicationHome(_ context.Context, appID string, _ bool, _ ...client.ReadOption) (*pb.ApplicationHome, error) {
	if err := s.enter("GetApplicationHome", false); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.homes[appID]
	if !ok {
		return nil, fmt.Errorf("%w: application %s has no home", client.ErrNotFound, appID)
	}
	return proto.Clone(h).(*pb.ApplicationHome), nil
}

// ListApplicationHomes returns every home in one page, newest first.
func (s *FakeStore) ListApplicationHomes(_ context.Context, _ client.ListQuery, _ ...client.ReadOption) ([]*pb.ApplicationHome, []byte, error) {
	if err := s.enter("ListApplicationHomes", false); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pb.ApplicationHome
	for _, h := range s.homes {
		out = append(out, proto.Clone(h).(*pb.ApplicationHome))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetCreateTimeMs() > out[j].GetCreateTimeMs() })
	return out, nil, nil
}

func (s *FakeStore) WatchEvents(ctx context.Context, _ *pb.WatchRequest) (<-chan *pb.WatchEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan *pb.WatchEvent, 64)
	s.watchers = append(s.watchers, ch)
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watchers = slices.DeleteFunc(s.watchers, func(c chan *pb.WatchEvent) bool { return c == ch })
		close(ch)
	}()
	return ch, nil
}

func (s *FakeStore) AcquireLease(_ context.Context, name, holder string, ttlMs int64) (*pb.Lease, bool, error) {
	if err := s.enter("AcquireLease", false); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UnixMilli()
	l, ok := s.leases[name]
	held := ok && l.GetExpiresMs() > now
	if held && l.GetHolder() != holder {
		return proto.Clone(l).(*pb.Lease), false, nil
	}
	if !ok {
		l = &pb.Lease{Name: name}
		s.leases[name] = l
	}
	if !held || l.GetHolder() != holder {
		l.Epoch++
		l.Holder = holder
	}
	l.ExpiresMs = now + ttlMs
	return proto.Clone(l).(*pb.Lease), true, nil
}

func (s *FakeStore) ReleaseLease(_ context.Context, name, holder string, epoch uint64) error {
	if err := s.enter("ReleaseLease", false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UnixMilli()
	if l, ok := s.leases[name]; ok && l.GetHolder() == holder && l.GetEpoch() == epoch && l.GetExpiresMs() > now {
		l.ExpiresMs = now
	}
	return nil
}

// Lease returns a copy of a lease (nil if never acquired).
func (s *FakeStore) Lease(name string) *pb.Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.leases[name]; ok {
		return proto.Clone(l).(*pb.Lease)
	}
	return nil
}

func (s *FakeStore) fenced(f *client.Fence) error {
	if f == nil {
		return nil
	}
	l, ok := s.leases[f.Lease]
	if !ok || l.GetHolder() != f.Holder || l.GetEpoch() != f.Epoch || l.GetExpiresMs() <= s.now().UnixMilli() {
		return fmt.Errorf("%w: lease %s not held by %s epoch %d", client.ErrFenced, f.Lease, f.Holder, f.Epoch)
	}
	return nil
}

// fencedWrite starts the write op: counts it, answers the injected
// failure if any, takes the lock and checks the fence. On success the
// caller holds the lock until it calls unlock.
func (s *FakeStore) fencedWrite(op string, f *client.Fence) (unlock func(), err error) {
	if err := s.enter(op, true); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if err := s.fenced(f); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return s.mu.Unlock, nil
}

func (s *FakeStore) SetPolicies(_ context.Context, w client.PoliciesWrite) (*pb.SetPoliciesResponse, error) {
	unlock, err := s.fencedWrite("SetPolicies", w.Fence)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := &pb.SetPoliciesResponse{}
	for _, it := range w.Capacities {
		sc, ok := s.scs[it.GetSubClusterId()]
		if !ok {
			out.UnknownSubClusters = append(out.UnknownSubClusters, it.GetSubClusterId())
			continue
		}
		sc.PublishedCapacity = &pb.PublishedCapacity{MemoryMb: it.GetMemoryMb(), Vcores: it.GetVcores(), Nodes: it.GetNodes(),
			ObservedMs: it.GetObservedMs(), PublishedMs: s.now().UnixMilli()}
		s.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: sc.GetSubClusterId()})
	}
	for _, p := range w.Policies {
		if cur, ok := s.policies[p.GetQueue()]; ok && cur.GetPinned() && w.SkipPinned {
			out.SkippedPinned = append(out.SkippedPinned, p.GetQueue())
			continue
		}
		s.policies[p.GetQueue()] = proto.Clone(p).(*pb.PolicyConfiguration)
		out.Written = append(out.Written, p.GetQueue())
	}
	return out, nil
}

func (s *FakeStore) MarkSubClustersLost(_ context.Context, ids []string, before int64, f *client.Fence) ([]string, error) {
	unlock, err := s.fencedWrite("MarkSubClustersLost", f)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []string
	for _, id := range ids {
		sc, ok := s.scs[id]
		if !ok || sc.GetLastHeartbeatMs() >= before {
			continue
		}
		switch sc.GetState() {
		case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY:
			sc.State = pb.SubClusterState_SC_LOST
			out = append(out, id)
			s.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: id})
		}
	}
	return out, nil
}

func (s *FakeStore) DeleteApplicationHomes(_ context.Context, ids []string, before int64, f *client.Fence) ([]string, error) {
	unlock, err := s.fencedWrite("DeleteApplicationHomes", f)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []string
	for _, id := range ids {
		if h, ok := s.homes[id]; ok && h.GetCreateTimeMs() < before {
			delete(s.homes, id)
			out = append(out, id)
		}
	}
	return out, nil
}
