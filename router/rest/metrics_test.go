package rest_test

import (
	"encoding/json"
	"testing"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/rest"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestMergeClusterMetricsRecomputesPercentages: two RMs at 17% and 62%
// vCore utilization once added up to 124%. Percentages come from the
// summed totals, as an RM computes them; the scheduler-busy figure is the
// busiest RM's.
func TestMergeClusterMetricsRecomputesPercentages(t *testing.T) {
	a := &rmrest.ClusterMetrics{AppsSubmitted: 2, TotalMB: 1000, UtilizedMB: 170, TotalVirtualCores: 100, UtilizedVirtualCores: 17,
		UtilizedMBPercent: 17, UtilizedVCoresPercent: 17, RMSchedulerBusyPct: 5}
	b := &rmrest.ClusterMetrics{AppsSubmitted: 3, TotalMB: 3000, UtilizedMB: 1860, TotalVirtualCores: 300, UtilizedVirtualCores: 186,
		UtilizedMBPercent: 62, UtilizedVCoresPercent: 62, RMSchedulerBusyPct: 40}
	got := rest.MergeClusterMetrics([]*rmrest.ClusterMetrics{a, b})
	if got.AppsSubmitted != 5 || got.TotalMB != 4000 || got.UtilizedVirtualCores != 203 {
		t.Fatalf("sums: %+v", got)
	}
	// (170+1860)*100/4000 = 50 (integer division, as the RM); (17+186)*100/400 = 50.
	if got.UtilizedMBPercent != 50 || got.UtilizedVCoresPercent != 50 {
		t.Fatalf("utilized %d%% MB, %d%% vCores; want 50, 50", got.UtilizedMBPercent, got.UtilizedVCoresPercent)
	}
	if got.RMSchedulerBusyPct != 40 {
		t.Fatalf("rmSchedulerBusyPercent %d, want 40", got.RMSchedulerBusyPct)
	}
	// No capacity at all: 0%, not a division by zero; monitors off: -1.
	empty := rest.MergeClusterMetrics([]*rmrest.ClusterMetrics{{RMSchedulerBusyPct: -1}, {RMSchedulerBusyPct: -1}})
	if empty.UtilizedMBPercent != 0 || empty.UtilizedVCoresPercent != 0 || empty.RMSchedulerBusyPct != -1 {
		t.Fatalf("empty: %+v", empty)
	}
}

// TestRESTMetricsPercentagesThroughRouter is the same bug end to end:
// /ws/v1/cluster/metrics over two sub-clusters at 17% and 62%.
func TestRESTMetricsPercentagesThroughRouter(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "x:1", State: router.StateRunning,
		Capability: `{"clusterMetrics":{"totalVirtualCores":100,"utilizedVirtualCores":17,"utilizedVirtualCoresPercent":17}}`})
	f.Store.Put(router.SubClusterInfo{ID: "SC-2", ClientRMServiceAddress: "x:2", State: router.StateRunning,
		Capability: `{"clusterMetrics":{"totalVirtualCores":300,"utilizedVirtualCores":186,"utilizedVirtualCoresPercent":62}}`})
	var last []byte
	routertest.Poll(t, "merged metrics", func() bool {
		code, b := f.Do("GET", "/ws/v1/cluster/metrics", "", "", "")
		last = b
		var m rmrest.ClusterMetricsResponse
		return code == 200 && json.Unmarshal(b, &m) == nil && m.ClusterMetrics.TotalVirtualCores == 400
	})
	var m rmrest.ClusterMetricsResponse
	_ = json.Unmarshal(last, &m)
	if p := m.ClusterMetrics.UtilizedVCoresPercent; p != 50 {
		t.Fatalf("utilizedVirtualCoresPercent %d, want 50 (%s)", p, last)
	}
}
