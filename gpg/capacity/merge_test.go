package capacity_test

import (
	"context"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
)

func TestMerge(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Unix(1_700_000_000, 0)
	east, west := gpgtest.NewFakeSource(), gpgtest.NewFakeSource()
	one := capacity.Merge(ctx, east)
	if one != capacity.Source(east) {
		t.Fatal("one source should be returned as it is")
	}
	m := capacity.Merge(ctx, east, west)
	if got := m.Snapshot(); len(got) != 0 {
		t.Fatalf("empty sources: %v", got)
	}

	east.Set(capacity.SubCluster{ID: "SC-A", Usable: capacity.Resources{MemoryMB: 1000, VCores: 10}, Nodes: 2, ObservedAt: t0})
	waitChanged(t, m)
	west.Set(capacity.SubCluster{ID: "SC-B", Usable: capacity.Resources{MemoryMB: 500, VCores: 5}, Nodes: 1, ObservedAt: t0})
	waitChanged(t, m)
	// SC-A also has NodeManagers in the west cluster: summed, oldest
	// observation.
	west.Set(capacity.SubCluster{ID: "SC-A", Usable: capacity.Resources{MemoryMB: 24, VCores: 1}, Nodes: 1, ObservedAt: t0.Add(-time.Hour)})
	waitChanged(t, m)

	want := map[string]capacity.SubCluster{
		"SC-A": {ID: "SC-A", Usable: capacity.Resources{MemoryMB: 1024, VCores: 11}, Nodes: 3, ObservedAt: t0.Add(-time.Hour)},
		"SC-B": {ID: "SC-B", Usable: capacity.Resources{MemoryMB: 500, VCores: 5}, Nodes: 1, ObservedAt: t0},
	}
	got := m.Snapshot()
	if len(got) != len(want) {
		t.Fatalf("snapshot %v, want %v", got, want)
	}
	for id, w := range want {
		if g := got[id]; g.ID != w.ID || g.Usable != w.Usable || g.Nodes != w.Nodes || !g.ObservedAt.Equal(w.ObservedAt) {
			t.Errorf("%s = %+v, want %+v", id, g, w)
		}
	}
	// The sources' own maps are not modified by the merge.
	if a := east.Snapshot()["SC-A"]; a.Usable.MemoryMB != 1000 || a.Nodes != 2 {
		t.Errorf("east modified: %+v", a)
	}
}

func waitChanged(t *testing.T, s capacity.Source) {
	t.Helper()
	select {
	case <-s.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no Changed signal")
	}
}
