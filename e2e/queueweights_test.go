//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestRealRMQueueWeights: the GPG's per-queue weights read a real Hadoop 3.4
// CapacityScheduler RM's /ws/v1/cluster/scheduler. The RM (MiniYARNCluster,
// one NodeManager) has root.a (capacity and maximum 25 %) and a parent
// root.eng whose only child is root.eng.b (maximum 100 %), so the answer
// also shows how Hadoop renders a one-element queue list. The other
// sub-cluster is a fake RM web service answering gpg/testdata's fixture
// (root.a 6 GiB / 6 vcores of headroom, root.eng.b 8 GiB / 8).
func TestRealRMQueueWeights(t *testing.T) {
	needJava(t)
	mc := newCluster(t, clusterOptions{clusterID: "e2e-queues", epoch: 41, nms: 1, set: []string{
		"yarn.scheduler.capacity.root.queues=a,eng",
		"yarn.scheduler.capacity.root.a.capacity=25",
		"yarn.scheduler.capacity.root.a.maximum-capacity=25",
		"yarn.scheduler.capacity.root.eng.capacity=75",
		"yarn.scheduler.capacity.root.eng.maximum-capacity=100",
		"yarn.scheduler.capacity.root.eng.queues=b",
		"yarn.scheduler.capacity.root.eng.b.capacity=100",
		"yarn.scheduler.capacity.root.eng.b.maximum-capacity=100",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	web := loopback(mc.info.Web)
	rest := rmrest.NewClient(web)
	m, err := rest.GetClusterMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total, vcores := m.TotalMB, m.TotalVirtualCores
	if total <= 0 || vcores <= 0 || m.AllocatedMB != 0 {
		t.Fatalf("cluster metrics %+v", m)
	}
	// Record the real shape of root.eng's one-element child list.
	var raw json.RawMessage
	if err := rest.GetJSON(ctx, "/scheduler", nil, &raw); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scheduler struct {
			SchedulerInfo struct {
				Queues struct {
					Queue []struct {
						QueueName string `json:"queueName"`
						Queues    *struct {
							Queue json.RawMessage `json:"queue"`
						} `json:"queues"`
					} `json:"queue"`
				} `json:"queues"`
			} `json:"schedulerInfo"`
		} `json:"scheduler"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the RM's scheduler answer: %v\n%s", err, tail(string(raw), 2000))
	}
	for _, q := range doc.Scheduler.SchedulerInfo.Queues.Queue {
		if q.Queues != nil && len(q.Queues.Queue) > 0 {
			t.Logf("root.%s's one-element child list renders as %s (%d bytes in all)", q.QueueName, map[bool]string{true: "an array", false: "a lone object"}[q.Queues.Queue[0] == '['], len(raw))
		}
	}

	fixture, err := os.ReadFile(filepath.Join("..", "gpg", "testdata", "scheduler-sc2.json"))
	if err != nil {
		t.Fatal(err)
	}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fixture)
	}))
	defer fake.Close()

	st := gpgtest.NewFakeStore(time.Now)
	metrics := func(availMB, availVC, totalMB, totalVC int64) string {
		return fmt.Sprintf(`{"clusterMetrics":{"availableMB":%d,"availableVirtualCores":%d,"allocatedMB":%d,"allocatedVirtualCores":%d,"totalMB":%d,"totalVirtualCores":%d,"appsPending":0}}`,
			availMB, availVC, totalMB-availMB, totalVC-availVC, totalMB, totalVC)
	}
	st.Register(&pb.SubClusterInfo{SubClusterId: "SC-REAL", State: pb.SubClusterState_SC_RUNNING, RmWebServiceAddress: web,
		Capability: metrics(total, vcores, total, vcores)})
	st.Register(&pb.SubClusterInfo{SubClusterId: "SC-FIX", State: pb.SubClusterState_SC_RUNNING, RmWebServiceAddress: fake.URL,
		Capability: metrics(14336, 14, 16384, 16)})
	cfg := gpg.DefaultConfig()
	cfg.ID, cfg.WebAddress, cfg.Store, cfg.Registerer = "gpg-e2e-queues", "", st, prometheus.NewRegistry()
	cfg.Generator.MaxStep = 1
	cfg.Generator.Queues = []string{"a", "root.eng.b"}
	g, err := gpg.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !g.TryLease(ctx) {
		t.Fatal("no lease")
	}
	g.RefreshQueueInputs(ctx)
	res, err := g.PolicyRound(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Headroom on the real RM, nothing running: a's maximum is 25 % of the
	// cluster, b's all of it. The capacity policy's share is the scarcer
	// of memory and vcores, normalized over both sub-clusters.
	share := func(mb, vc, otherMB, otherVC float64) float64 { return math.Min(mb/(mb+otherMB), vc/(vc+otherVC)) }
	want := map[string]gpg.Weights{}
	for q, h := range map[string][4]float64{
		"a":          {float64(total) / 4, float64(vcores) / 4, 6144, 6},
		"root.eng.b": {float64(total), float64(vcores), 8192, 8},
	} {
		rs, fs := share(h[0], h[1], h[2], h[3]), share(h[2], h[3], h[0], h[1])
		want[q] = gpg.Weights{"SC-REAL": rs / (rs + fs), "SC-FIX": fs / (rs + fs)}
	}
	t.Logf("real RM %d MiB / %d vcores; inputs %v; targets %v; want %v", total, vcores, res.QueueInputs, res.QueueTargets, want)
	for q, w := range want {
		if res.QueueInputs[q] != "per_queue" {
			t.Fatalf("queue %s: input %q (the real RM's answer was not read per queue)\n%s", q, res.QueueInputs[q], tail(string(raw), 3000))
		}
		for id, v := range w {
			if got := res.QueueTargets[q][id]; math.Abs(got-v) > 1e-3 {
				t.Fatalf("queue %s: target %v, want %v", q, res.QueueTargets[q], w)
			}
		}
	}
}
