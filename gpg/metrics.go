package gpg

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	leader      prometheus.Gauge
	rounds      *prometheus.CounterVec
	roundTime   prometheus.Histogram
	writes      *prometheus.CounterVec
	queues      *prometheus.CounterVec
	weight      *prometheus.GaugeVec
	markedLost  prometheus.Counter
	deleted     prometheus.Counter
	wouldDelete prometheus.Counter
	cleaner     *prometheus.CounterVec
	blocked     *prometheus.CounterVec
	published   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "yarnfed_gpg_leader",
			Help: "1 while this GPG holds the lease and acts, 0 while it stands by."}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_rounds_total",
			Help: "Policy rounds by result (wrote, unchanged, read_only, standby, error)."}, []string{"result"}),
		roundTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "yarnfed_gpg_round_seconds",
			Help: "Time of a policy round: read membership and policies, compute weights, write.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_store_writes_total",
			Help: "State store writes by operation and result."}, []string{"op", "result"}),
		queues: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_queue_updates_total",
			Help: "Queue policies by outcome per round (written, unchanged, pinned, not_weighted, read_only)."}, []string{"outcome"}),
		weight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_gpg_target_weight",
			Help: "Normalized target weight of each sub-cluster from the last round."}, []string{"subcluster"}),
		markedLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_gpg_subclusters_marked_lost_total",
			Help: "Sub-clusters marked SC_LOST for a heartbeat older than the expiry."}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_gpg_application_homes_deleted_total",
			Help: "Application homes the cleaner deleted."}),
		wouldDelete: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_gpg_application_homes_dry_run_total",
			Help: "Application homes the cleaner would have deleted in dry-run mode."}),
		cleaner: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_cleaner_rounds_total",
			Help: "Cleaner rounds by result (complete; incomplete: some RM did not answer completely, nothing deleted; error)."}, []string{"result"}),
		blocked: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_cleaner_blocked_total",
			Help: "Cleaner rounds that deleted nothing because this sub-cluster's RM did not answer completely."}, []string{"subcluster"}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_gpg_capacities_published_total",
			Help: "Sub-cluster capacities published to the store."}),
	}
	if reg != nil {
		reg.MustRegister(m.leader, m.rounds, m.roundTime, m.writes, m.queues, m.weight, m.markedLost, m.deleted, m.wouldDelete, m.cleaner, m.blocked, m.published)
	}
	return m
}

func (m *metrics) storeWrite(op string, err error) {
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.writes.WithLabelValues(op, r).Inc()
}
