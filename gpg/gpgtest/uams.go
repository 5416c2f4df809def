package gpgtest

import (
	"context"
	"sort"
	"sync"
)

// FakeUAMRegistry is an in-memory gpg.UAMRegistry: the UAM registry rows
// the reaper may delete, keyed by application and sub-cluster.
type FakeUAMRegistry struct {
	mu      sync.Mutex
	rows    map[[2]string]bool
	deletes [][2]string
	// Fail, if set, is asked before every DeleteUAM; a non-nil error fails
	// it (nothing is deleted).
	Fail func(appID, subClusterID string) error
}

// NewFakeUAMRegistry returns an empty registry.
func NewFakeUAMRegistry() *FakeUAMRegistry {
	return &FakeUAMRegistry{rows: map[[2]string]bool{}}
}

// Put adds the row of a UAM of appID in subClusterID.
func (r *FakeUAMRegistry) Put(appID, subClusterID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows[[2]string{appID, subClusterID}] = true
}

// Has reports whether the row exists.
func (r *FakeUAMRegistry) Has(appID, subClusterID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows[[2]string{appID, subClusterID}]
}

// Deletes lists every successful DeleteUAM call as "app/sub-cluster", in
// call order (repeats included).
func (r *FakeUAMRegistry) Deletes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.deletes))
	for _, d := range r.deletes {
		out = append(out, d[0]+"/"+d[1])
	}
	return out
}

// Rows lists the remaining rows as "app/sub-cluster", sorted.
func (r *FakeUAMRegistry) Rows() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.rows))
	for k := range r.rows {
		out = append(out, k[0]+"/"+k[1])
	}
	sort.Strings(out)
	return out
}

// DeleteUAM deletes one row, or every row of the application when
// subClusterID is empty; idempotent; returns how many rows it removed.
func (r *FakeUAMRegistry) DeleteUAM(_ context.Context, appID, subClusterID string) (int, error) {
	r.mu.Lock()
	fail := r.Fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(appID, subClusterID); err != nil {
			return 0, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k := range r.rows {
		if k[0] == appID && (subClusterID == "" || k[1] == subClusterID) {
			delete(r.rows, k)
			n++
		}
	}
	r.deletes = append(r.deletes, [2]string{appID, subClusterID})
	return n, nil
}
