package writeback

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
)

// Fakes for a write-back round without an API server or RMs: a source of
// fixed allocations, RMs answering fixed NodeManagers, and a Node writer
// that counts patches.
type fakeAllocations []kube.NodeAllocation

func (f *fakeAllocations) Allocations() []kube.NodeAllocation { return *f }

type fakeRMNodes map[string]map[string]kube.RMNode

func (f fakeRMNodes) RMNodes(_ context.Context, sc string) (map[string]kube.RMNode, error) {
	return f[sc], nil
}

type fakeNodeWriter struct{ patches int }

func (f *fakeNodeWriter) GetNode(context.Context, string) (*corev1.Node, error) {
	return nil, fmt.Errorf("fakeNodeWriter: no API server")
}

func (f *fakeNodeWriter) PatchNode(context.Context, string, []byte) (*corev1.Node, error) {
	f.patches++
	return nil, fmt.Errorf("fakeNodeWriter: no API server")
}

// steadyCluster is n Nodes over subClusters, each with one NodeManager
// holding 4 vcores / 4096 MB and the GPG's entry and record already
// saying so: a round has nothing to write.
func steadyCluster(n, subClusters int) (fakeAllocations, fakeRMNodes) {
	used := capacity.Resources{VCores: 4, MemoryMB: 4096}
	p, err := parsed{ours: -1}.with(ToBatch(used))
	if err != nil {
		panic(err)
	}
	written := encodeWritten(ToBatch(used))
	allocs := make(fakeAllocations, n)
	rms := fakeRMNodes{}
	for i := range allocs {
		sc, node := fmt.Sprintf("sc-%02d", i%subClusters), fmt.Sprintf("node-%d", i)
		// Each Node's strings are its own, as the informer's copies are.
		allocs[i] = kube.NodeAllocation{Node: node, ResourceVersion: "1", SubCluster: sc, NodeID: node + ":8041",
			ThirdParty: string([]byte(p)), ThirdPartyPresent: true, Written: string([]byte(written)), WrittenPresent: true}
		if rms[sc] == nil {
			rms[sc] = map[string]kube.RMNode{}
		}
		rms[sc][node+":8041"] = kube.RMNode{State: "RUNNING", Used: used}
	}
	return allocs, rms
}

// BenchmarkWriteOnceSteady: one write-back round over 100,000 Nodes whose
// entries already say what YARN holds (the steady state, every 2 s by
// default). go test -run '^$' -bench WriteOnceSteady -benchmem ./gpg/kube/writeback/
func BenchmarkWriteOnceSteady(b *testing.B) {
	allocs, rms := steadyCluster(100_000, 100)
	nw := &fakeNodeWriter{}
	w, err := New(Config{Name: "bench", WriteBackConfig: kube.DefaultWriteBackConfig(), RMNodes: rms, Nodes: nw}, &allocs)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if n := w.WriteOnce(ctx); n != 0 || nw.patches != 0 {
		b.Fatalf("steady round patched %d Nodes (%d patch calls)", n, nw.patches)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.WriteOnce(ctx)
	}
}

// A round reuses what it read from a Node's unchanged annotations, but a
// changed annotation is read again (another writer's value is seen at the
// next round), and Nodes gone drop out of what is kept.
func TestRoundRereadsChangedAnnotations(t *testing.T) {
	allocs, rms := steadyCluster(50, 5)
	nw := &fakeNodeWriter{}
	w, err := New(Config{Name: "test", WriteBackConfig: kube.DefaultWriteBackConfig(), RMNodes: rms, Nodes: nw}, &allocs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if n := w.WriteOnce(ctx); n != 0 || nw.patches != 0 {
			t.Fatalf("steady round patched %d Nodes", n)
		}
	}
	// koord-yarn-operator overwrites node-7's entry (8 vcores): foreign.
	other, err := parsed{ours: -1}.with(ToBatch(capacity.Resources{VCores: 8, MemoryMB: 8192}))
	if err != nil {
		t.Fatal(err)
	}
	allocs[7].ThirdParty = other
	w.WriteOnce(ctx)
	w.mu.Lock()
	_, foreign := w.foreign["node-7"]
	w.mu.Unlock()
	if !foreign || nw.patches != 0 {
		t.Fatalf("a changed entry was not read again: foreign %v, %d patch calls", foreign, nw.patches)
	}
	allocs = allocs[:40]
	w.WriteOnce(ctx)
	w.mu.Lock()
	kept := len(w.reads)
	w.mu.Unlock()
	if kept != 40 {
		t.Fatalf("%d Nodes' reads kept, want the 40 left", kept)
	}
}
