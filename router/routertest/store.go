// Package routertest holds in-memory fakes for router tests: a state store
// and a ResourceManager that speaks ApplicationClientProtocol in-process.
package routertest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/router"
)

// Store is an in-memory router.StateStore (plus ReservationStore and
// MembershipWatcher) with failure injection.
type Store struct {
	mu       sync.Mutex
	scs      map[router.SubClusterID]router.SubClusterInfo
	homes    map[string]router.SubClusterID
	resv     map[string]router.SubClusterID
	policies map[string]router.PolicyConfiguration
	watchers []chan struct{}
	// Fail, if set, is asked before every operation; a non-nil error fails it.
	Fail func(op string) error
	ops  map[string]int
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		scs: map[router.SubClusterID]router.SubClusterInfo{}, homes: map[string]router.SubClusterID{},
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

func (s *Store) AddApplicationHome(_ context.Context, app string, sc router.SubClusterID) (router.SubClusterID, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("AddApplicationHome"); err != nil {
		return "", false, err
	}
	if cur, ok := s.homes[app]; ok {
		return cur, false, nil
	}
	s.homes[app] = sc
	return sc, true, nil
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
