// Package routertest holds in-memory fakes for router tests: a state store
// and a ResourceManager that speaks ApplicationClientProtocol in-process.
//
// Everything here is reached from tests only, so `make deadcode` lists most
// of it (fed.go, sim.go, krb.go, policy.go, router.go, the fake RMs): the
// bench binary (`yarnfed bench router`) links the package for NewStore and
// the fake RMs, which pulls the whole package in. That is the one reason
// these functions are "unreachable", and why they are kept.
package routertest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/dtoken"
)

// Store is an in-memory router.StateStore (plus ReservationStore and
// MembershipWatcher) with failure injection.
type Store struct {
	mu    sync.Mutex
	scs   map[router.SubClusterID]router.SubClusterInfo
	homes map[string]router.SubClusterID
	// submissions holds the trimmed submission context stored with a home.
	submissions map[string][]byte
	resv        map[string]router.SubClusterID
	policies    map[string]router.PolicyConfiguration
	watchers    []chan struct{}
	// Fail, if set, is asked before every operation; a non-nil error fails it.
	Fail func(op string) error
	ops  map[string]int

	uamRows []router.UAMRow // the UAM registry (uam.go)

	keys   map[int32][]byte
	tokens map[string]dtoken.StoredToken
	keyIDs int32
	seq    int32
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		scs: map[router.SubClusterID]router.SubClusterInfo{}, homes: map[string]router.SubClusterID{}, submissions: map[string][]byte{},
		resv: map[string]router.SubClusterID{}, policies: map[string]router.PolicyConfiguration{},
		ops: map[string]int{},
	}
}

func (s *Store) enter(op string) error {
	s.ops[op]++
	if s.Fail != nil {
		return s.Fail(op)
	}
	return nil
}

// SetFail sets Fail while the store may be in use (Fail itself may only be
// assigned before the store is shared).
func (s *Store) SetFail(f func(op string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Fail = f
}

// Ops reports how many times op was called.
func (s *Store) Ops(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[op]
}

// Put registers or overwrites a sub-cluster (a heartbeat) and notifies watchers.
func (s *Store) Put(sc router.SubClusterInfo) {
	s.mu.Lock()
	if sc.LastHeartbeat.IsZero() {
		sc.LastHeartbeat = time.Now()
	}
	s.scs[sc.ID] = sc
	ws := append([]chan struct{}(nil), s.watchers...)
	s.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// SetState changes a sub-cluster's state with a fresh heartbeat time.
func (s *Store) SetState(id router.SubClusterID, st router.SubClusterState) {
	s.mu.Lock()
	sc := s.scs[id]
	s.mu.Unlock()
	sc.State = st
	sc.LastHeartbeat = time.Now()
	s.Put(sc)
}

// Homes returns a copy of the app-home table.
func (s *Store) Homes() map[string]router.SubClusterID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.homes)
}

// SetPolicy stores a queue policy.
func (s *Store) SetPolicy(p router.PolicyConfiguration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies[p.Queue] = p
}

func (s *Store) GetSubClusters(_ context.Context, activeOnly bool) ([]router.SubClusterInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("GetSubClusters"); err != nil {
		return nil, err
	}
	var out []router.SubClusterInfo
	for _, sc := range s.scs {
		if !activeOnly || sc.State.Active() {
			out = append(out, sc)
		}
	}
	return out, nil
}

func (s *Store) AddApplicationHome(_ context.Context, app string, sc router.SubClusterID, submission []byte) (router.SubClusterID, []byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("AddApplicationHome"); err != nil {
		return "", nil, false, err
	}
	if cur, ok := s.homes[app]; ok {
		return cur, s.submissions[app], false, nil
	}
	s.homes[app] = sc
	if submission != nil {
		s.submissions[app] = append([]byte(nil), submission...)
	}
	return sc, submission, true, nil
}

func (s *Store) UpdateApplicationHome(_ context.Context, app string, sc router.SubClusterID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("UpdateApplicationHome"); err != nil {
		return err
	}
	if _, ok := s.homes[app]; !ok {
		return fmt.Errorf("update home of %s: %w", app, router.ErrNoHome)
	}
	s.homes[app] = sc
	return nil
}

func (s *Store) GetApplicationHome(_ context.Context, app string) (router.SubClusterID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("GetApplicationHome"); err != nil {
		return "", err
	}
	sc, ok := s.homes[app]
	if !ok {
		return "", fmt.Errorf("%s: %w", app, router.ErrNoHome)
	}
	return sc, nil
}

// DeleteApplicationHome removes a row (to test the fan-out fallback).
func (s *Store) DeleteApplicationHome(app string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.homes, app)
	delete(s.submissions, app)
}

func (s *Store) GetPolicyConfiguration(_ context.Context, queue string) (router.PolicyConfiguration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("GetPolicyConfiguration"); err != nil {
		return router.PolicyConfiguration{}, err
	}
	p, ok := s.policies[queue]
	if !ok {
		return router.PolicyConfiguration{}, fmt.Errorf("queue %s: %w", queue, router.ErrNoPolicy)
	}
	return p, nil
}

func (s *Store) AddReservationHome(_ context.Context, id string, sc router.SubClusterID) (router.SubClusterID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.resv[id]; ok {
		return cur, nil
	}
	s.resv[id] = sc
	return sc, nil
}

func (s *Store) GetReservationHome(_ context.Context, id string) (router.SubClusterID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.resv[id]
	if !ok {
		return "", fmt.Errorf("%s: %w", id, router.ErrNoHome)
	}
	return sc, nil
}

func (s *Store) WatchSubClusters(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watchers = append(s.watchers, ch)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.watchers {
			if w == ch {
				s.watchers = append(s.watchers[:i], s.watchers[i+1:]...)
				break
			}
		}
	}()
	return ch, nil
}

// Delegation-token state (dtoken.Store).

func (s *Store) StoreMasterKey(_ context.Context, id int32, key []byte, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[int32][]byte{}
	}
	if _, ok := s.keys[id]; ok {
		return fmt.Errorf("master key %d exists", id)
	}
	s.keys[id] = append([]byte(nil), key...)
	return nil
}

func (s *Store) GetMasterKey(_ context.Context, id int32) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return nil, fmt.Errorf("master key %d: %w", id, dtoken.ErrNotFound)
	}
	return k, nil
}

func (s *Store) StoreToken(_ context.Context, t dtoken.StoredToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]dtoken.StoredToken{}
	}
	s.tokens[string(t.Identifier)] = t
	return nil
}

func (s *Store) UpdateToken(_ context.Context, t dtoken.StoredToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[string(t.Identifier)]; !ok {
		return fmt.Errorf("update token: %w", dtoken.ErrNotFound)
	}
	s.tokens[string(t.Identifier)] = t
	return nil
}

func (s *Store) RemoveToken(_ context.Context, identifier []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[string(identifier)]; !ok {
		return fmt.Errorf("remove token: %w", dtoken.ErrNotFound)
	}
	delete(s.tokens, string(identifier))
	return nil
}

func (s *Store) GetToken(_ context.Context, identifier []byte) (dtoken.StoredToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[string(identifier)]
	if !ok {
		return dtoken.StoredToken{}, fmt.Errorf("get token: %w", dtoken.ErrNotFound)
	}
	return t, nil
}

func (s *Store) ReserveMasterKeyID(context.Context) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyIDs++
	return s.keyIDs, nil
}

func (s *Store) ReserveTokenSequence(_ context.Context, n int) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.seq + 1
	s.seq += int32(n)
	return first, nil
}

// SavePolicy, ListPolicies, DeletePolicies, SetSubClusterState and
// RemoveApplicationHome make Store a router.AdminStore.
func (s *Store) SavePolicy(_ context.Context, p router.PolicyConfiguration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("SavePolicy"); err != nil {
		return err
	}
	p.Params = append([]byte(nil), p.Params...)
	s.policies[p.Queue] = p
	return nil
}

func (s *Store) ListPolicies(_ context.Context) ([]router.PolicyConfiguration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("ListPolicies"); err != nil {
		return nil, err
	}
	var out []router.PolicyConfiguration
	for _, p := range s.policies {
		out = append(out, p)
	}
	return out, nil
}

func (s *Store) DeletePolicies(_ context.Context, queues []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("DeletePolicies"); err != nil {
		return err
	}
	for _, q := range queues {
		delete(s.policies, q)
	}
	return nil
}

func (s *Store) SetSubClusterState(_ context.Context, id router.SubClusterID, state router.SubClusterState) error {
	s.mu.Lock()
	if err := s.enter("SetSubClusterState"); err != nil {
		s.mu.Unlock()
		return err
	}
	sc, ok := s.scs[id]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("sub-cluster %s: not registered", id)
	}
	sc.State = state // a deregistration keeps the last heartbeat time
	s.Put(sc)
	return nil
}

func (s *Store) RemoveApplicationHome(_ context.Context, app string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("RemoveApplicationHome"); err != nil {
		return err
	}
	delete(s.homes, app)
	delete(s.submissions, app)
	return nil
}

// Policy returns the stored policy of queue (for asserting stored bytes).
func (s *Store) Policy(queue string) (router.PolicyConfiguration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[queue]
	return p, ok
}

// GetApplicationSubmission returns the submission context stored with
// app's home (router.SubmissionStore).
func (s *Store) GetApplicationSubmission(_ context.Context, app string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("GetApplicationSubmission"); err != nil {
		return nil, err
	}
	if _, ok := s.homes[app]; !ok {
		return nil, fmt.Errorf("%s: %w", app, router.ErrNoHome)
	}
	return append([]byte(nil), s.submissions[app]...), nil
}
