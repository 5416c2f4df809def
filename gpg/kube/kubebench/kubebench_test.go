package kubebench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A small run checks the figures against Expected and prints the ratio last.
func TestRunSmall(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{Nodes: 200, PodsPerNode: 5, SubClusters: 7, Rounds: 3}
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(lines[len(lines)-1], "median / target") {
		t.Errorf("last line %q is not the ratio", lines[len(lines)-1])
	}
	t.Log(out.String())
}

func TestExpectedByHand(t *testing.T) {
	// 3 nodes, 2 sub-clusters, 5 pods per node (the NodeManager's included:
	// 5 cores, 10 GiB): per node 59 vcores and 246 GiB = 251904 MiB.
	got := Expected(Config{Nodes: 3, PodsPerNode: 5, SubClusters: 2})
	if s := got["sc-00"]; s.Nodes != 2 || s.Usable.VCores != 118 || s.Usable.MemoryMB != 2*251904 {
		t.Errorf("sc-00 = %+v", s)
	}
	if s := got["sc-01"]; s.Nodes != 1 || s.Usable.VCores != 59 || s.Usable.MemoryMB != 251904 {
		t.Errorf("sc-01 = %+v", s)
	}
}
