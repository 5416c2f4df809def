package routertest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/yarnfed/yarnfed/router"
)

// The UAM registry part of the fake store (router.UAMRegistry). Tests
// write rows with PutUAM, as an AMRMProxy would; the router reads and
// deletes them. Fail sees "GetUAMs" and "DeleteUAM".

// PutUAM inserts or replaces the row (app, sub-cluster), stamping times.
func (s *Store) PutUAM(r router.UAMRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	r.Updated = now
	for i, old := range s.uamRows {
		if old.App == r.App && old.SubCluster == r.SubCluster {
			r.Created = old.Created
			s.uamRows[i] = r
			return
		}
	}
	r.Created = now
	s.uamRows = append(s.uamRows, r)
}

// UAMs returns a copy of every row.
func (s *Store) UAMs() []router.UAMRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.uamRows)
}

func (s *Store) GetUAMs(_ context.Context, app string, _ bool) ([]router.UAMRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("GetUAMs"); err != nil {
		return nil, err
	}
	var out []router.UAMRow
	for _, r := range s.uamRows {
		if r.App == app {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b router.UAMRow) int { return cmp.Compare(a.SubCluster, b.SubCluster) })
	return out, nil
}

func (s *Store) DeleteUAM(_ context.Context, app string, sc router.SubClusterID) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enter("DeleteUAM"); err != nil {
		return 0, err
	}
	n := len(s.uamRows)
	s.uamRows = slices.DeleteFunc(s.uamRows, func(r router.UAMRow) bool {
		return r.App == app && (sc == "" || r.SubCluster == sc)
	})
	return n - len(s.uamRows), nil
}
