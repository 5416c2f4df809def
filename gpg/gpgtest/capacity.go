package gpgtest

import (
	"maps"
	"sync"

	"github.com/yarnfed/yarnfed/gpg/capacity"
)

// FakeSource is a capacity.Source whose figures a test sets.
type FakeSource struct {
	mu      sync.Mutex
	m       map[string]capacity.SubCluster
	changed chan struct{}
}

// NewFakeSource returns an empty source.
func NewFakeSource() *FakeSource {
	return &FakeSource{m: map[string]capacity.SubCluster{}, changed: make(chan struct{}, 1)}
}

// Set replaces one sub-cluster's figure and signals Changed.
func (f *FakeSource) Set(sc capacity.SubCluster) {
	f.mu.Lock()
	f.m[sc.ID] = sc
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *FakeSource) Snapshot() map[string]capacity.SubCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.m)
}

func (f *FakeSource) Changed() <-chan struct{} { return f.changed }

var _ capacity.Source = (*FakeSource)(nil)
