package kubebench

import (
	"context"
	"testing"
)

// A small run checks the figures against Expected (Measure fails
// otherwise) and reports every sub-cluster and pod it built.
func TestMeasureSmall(t *testing.T) {
	cfg := Config{Nodes: 200, PodsPerNode: 5, SubClusters: 7, Rounds: 3}
	res, err := Measure(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.SubClustersReported != 7 || res.Pods != 200*5 || res.Rounds != 3 || res.Median <= 0 {
		t.Errorf("result %+v", res)
	}
	t.Logf("median recompute %v, ratio to target %.3f", res.Median, res.RatioToTarget)
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
