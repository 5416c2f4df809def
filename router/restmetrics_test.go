package router_test

import (
	"encoding/json"
	"testing"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

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
