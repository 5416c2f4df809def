package capacity

import (
	"context"
	"sync"
)

// Merge combines sources (one per Kubernetes cluster) into one Source that
// lives until ctx ends. One source is returned as it is.
//
// Snapshot is the union by sub-cluster id. A sub-cluster that several
// sources report (one YARN RM whose NodeManagers run in two Kubernetes
// clusters: disjoint nodes) gets the sum of their Usable and Nodes, and the
// oldest ObservedAt, so a stale part makes the consumer distrust the whole
// figure (the safe side: never more than was measured recently).
//
// Changed coalesces every source's signal into one (at most one pending).
func Merge(ctx context.Context, srcs ...Source) Source {
	if len(srcs) == 1 {
		return srcs[0]
	}
	m := &merged{srcs: srcs, changed: make(chan struct{}, 1)}
	for _, s := range srcs {
		m.wg.Add(1)
		go m.forward(ctx, s.Changed())
	}
	return m
}

type merged struct {
	srcs    []Source
	changed chan struct{}
	wg      sync.WaitGroup
}

func (m *merged) forward(ctx context.Context, ch <-chan struct{}) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			select {
			case m.changed <- struct{}{}:
			default:
			}
		}
	}
}

func (m *merged) Changed() <-chan struct{} { return m.changed }

func (m *merged) Snapshot() map[string]SubCluster {
	out := make(map[string]SubCluster)
	for _, s := range m.srcs {
		for id, sc := range s.Snapshot() {
			cur, ok := out[id]
			if !ok {
				sc.ID = id
				out[id] = sc
				continue
			}
			cur.Usable.MemoryMB += sc.Usable.MemoryMB
			cur.Usable.VCores += sc.Usable.VCores
			cur.Nodes += sc.Nodes
			if sc.ObservedAt.Before(cur.ObservedAt) {
				cur.ObservedAt = sc.ObservedAt
			}
			out[id] = cur
		}
	}
	return out
}
