package kube

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// metrics are the Source's Prometheus series; with a nil Registerer they are
// created but not exported.
type metrics struct {
	syncs            prometheus.Counter
	recomputeSeconds prometheus.Observer
	nodes            *prometheus.GaugeVec
	watchErrors      *prometheus.CounterVec
	synced           prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, cluster string) *metrics {
	labels := prometheus.Labels{"kubernetes_cluster": cluster}
	syncs := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_node_syncs_total", ConstLabels: labels,
		Help: "Per-node capacity computations triggered by Node or Pod events and staleness deadlines.",
	})
	recompute := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "yarnfed_gpg_kube_recompute_seconds", ConstLabels: labels,
		Help:    "Time of a full recomputation of every node from the informer caches.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	})
	nodes := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "yarnfed_gpg_kube_nodes", ConstLabels: labels,
		Help: "Nodes by what they contribute to YARN (status=contributing) or why they contribute nothing.",
	}, []string{"status"})
	watchErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_watch_errors_total", ConstLabels: labels,
		Help: "Failed lists and watches of nodes or pods (RBAC denials, unreachable API server); the informers retry.",
	}, []string{"resource"})
	synced := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "yarnfed_gpg_kube_synced", ConstLabels: labels,
		Help: "1 once the initial node and pod lists arrived and capacity is computed; 0 before (no figure from this cluster).",
	})
	if reg != nil {
		reg.MustRegister(syncs, recompute, nodes, watchErrors, synced)
	}
	return &metrics{syncs: syncs, recomputeSeconds: recompute, nodes: nodes, watchErrors: watchErrors, synced: synced}
}

func (m *metrics) setNodeCounts(counts *[numNodeStatus]int) {
	for st, n := range counts {
		m.nodes.WithLabelValues(NodeStatus(st).String()).Set(float64(n))
	}
}

// ForeignWritersMetric counts what a GPG leaves to another writer, by kind
// (node_resource: NodeManager sizes in an RM, gpg/kube/nmpush;
// third_party_allocations: Nodes' hadoop-yarn entries, gpg/kube/writeback).
// Both register it with the same help, as the registry requires.
const (
	ForeignWritersMetric = "yarnfed_gpg_kube_foreign_writers"
	ForeignWritersHelp   = "NodeManagers (kind=node_resource) or Nodes (kind=third_party_allocations) another writer (koord-yarn-operator) updates, which this GPG leaves alone instead of fighting over them."
)

// NewForeignWritersGauge is ForeignWritersMetric for one Kubernetes
// cluster and kind.
func NewForeignWritersGauge(cluster, kind string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: ForeignWritersMetric, Help: ForeignWritersHelp,
		ConstLabels: prometheus.Labels{"kubernetes_cluster": cluster, "kind": kind},
	})
}

// Every calls round every interval of clk until ctx ends, then returns
// ctx's error: the loop of the push, the write-back, the source's resync
// and the GPG's cleaner and reaper rounds.
func Every(ctx context.Context, clk clock.WithTicker, interval time.Duration, round func(context.Context)) error {
	t := clk.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
			round(ctx)
		}
	}
}
