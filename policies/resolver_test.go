package policies

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMachineListFromDocs(t *testing.T) {
	m, err := LoadMachineList("testdata/machine-list.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node string
		want SubClusterID
		ok   bool
	}{
		{"node1", "subcluster1", true},
		{"NODE4", "subcluster3", true}, // case-insensitive
		{"node9", "", false},
	}
	for _, tt := range tests {
		if got, ok := m.SubClusterForNode(tt.node); got != tt.want || ok != tt.ok {
			t.Errorf("SubClusterForNode(%q) = %q, %v", tt.node, got, ok)
		}
	}
	if got := m.SubClustersForRack("rack1"); !slices.Equal(got, []SubClusterID{"subcluster1", "subcluster2"}) {
		t.Errorf("rack1 = %v", got)
	}
	if got := m.SubClustersForRack("Rack2"); !slices.Equal(got, []SubClusterID{"subcluster3"}) {
		t.Errorf("rack2 = %v", got)
	}
	if got := m.SubClustersForRack("rack9"); got != nil {
		t.Errorf("unknown rack = %v", got)
	}
}

func TestMachineListMalformedAndReload(t *testing.T) {
	in := "n1,SC-1,r1\nbad line\nn2,SC-2\n\n# comment\nn3 , SC-3 , r1 \n,SC-4,r4\nn5,SC-5,r5,extra\n"
	m, err := ParseMachineList(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if m.Skipped() != 4 {
		t.Errorf("skipped = %d, want 4", m.Skipped())
	}
	if id, ok := m.SubClusterForNode("n3"); !ok || id != "SC-3" {
		t.Errorf("n3 = %q", id)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "machines")
	if err := os.WriteFile(path, []byte("n1,SC-9,r1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(path); err != nil {
		t.Fatal(err)
	}
	if id, _ := m.SubClusterForNode("n1"); id != "SC-9" {
		t.Errorf("after reload n1 = %q", id)
	}
	if err := m.Reload(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: no error")
	}
	if id, _ := m.SubClusterForNode("n1"); id != "SC-9" {
		t.Errorf("a failed reload must keep the previous table, n1 = %q", id)
	}
}

func TestMachineListLookupDoesNotAllocate(t *testing.T) {
	m, _ := ParseMachineList(strings.NewReader("node-1.example.com,SC-1,rack-a\n"))
	allocs := testing.AllocsPerRun(100, func() {
		m.SubClusterForNode("node-1.example.com")
		m.SubClustersForRack("rack-a")
	})
	if allocs != 0 {
		t.Errorf("lookups allocate %v times", allocs)
	}
}

func FuzzParseMachineList(f *testing.F) {
	doc, _ := os.ReadFile("testdata/machine-list.txt")
	f.Add(doc)
	f.Add([]byte("a,b,c\n,,\nX,Y,Z,W"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMachineList(bytes.NewReader(b))
		if err != nil {
			return
		}
		// Every well-formed line resolves its node to its sub-cluster
		// (the last line for a node wins).
		last := map[string]SubClusterID{}
		for _, line := range strings.Split(string(b), "\n") {
			parts := javaSplit(strings.TrimSpace(line), ",")
			if len(parts) != 3 || strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			node, id := strings.ToLower(strings.TrimSpace(parts[0])), SubClusterID(strings.TrimSpace(parts[1]))
			if node == "" || id == "" {
				continue
			}
			last[node] = id
		}
		for node, id := range last {
			if got, ok := m.SubClusterForNode(node); !ok || got != id {
				t.Fatalf("node %q -> %q, %v; want %q", node, got, ok, id)
			}
		}
	})
}

func TestMachineListSet(t *testing.T) {
	m := NewMachineList([]Machine{{"Host-A", "SC-2", "r1"}, {"host-b", "SC-1", "R1"}, {"", "SC-3", "r9"}})
	if id, ok := m.SubClusterForNode("host-a"); !ok || id != "SC-2" {
		t.Errorf("host-a = %q, %v", id, ok)
	}
	if got := m.SubClustersForRack("r1"); !slices.Equal(got, []SubClusterID{"SC-1", "SC-2"}) {
		t.Errorf("r1 = %v", got)
	}
	if m.Skipped() != 1 {
		t.Errorf("skipped = %d", m.Skipped())
	}
	m.Set(nil)
	if _, ok := m.SubClusterForNode("host-a"); ok {
		t.Error("Set must replace the table")
	}
}
