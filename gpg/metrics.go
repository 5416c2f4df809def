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

	// Per-queue inputs.
	schedulerReads *prometheus.CounterVec
	queueInputs    *prometheus.CounterVec

	// UAM reaper.
	uamRounds     *prometheus.CounterVec
	uamCandidates prometheus.Gauge
	uamsReaped    *prometheus.CounterVec
	uamsDryRun    *prometheus.CounterVec
	uamsKept      *prometheus.CounterVec
	uamErrors     *prometheus.CounterVec
	uamReapDelay  prometheus.Histogram
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
		schedulerReads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_scheduler_reads_total",
			Help: "Reads of a sub-cluster RM's /ws/v1/cluster/scheduler for per-queue weights, by result (ok, error)."}, []string{"subcluster", "result"}),
		queueInputs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_queue_inputs_total",
			Help: "Managed queues per round by the input of their weights: per_queue (the queue's own headroom everywhere), or the cluster-wide weights because default_queue, load_based, disabled, no_answer, not_capacity_scheduler, queue_not_found, no_effective_capacity."}, []string{"input"}),
		uamRounds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_uam_reaper_rounds_total",
			Help: "UAM reaper rounds by result (done, standby, error: the sub-cluster list could not be read)."}, []string{"result"}),
		uamCandidates: prometheus.NewGauge(prometheus.GaugeOpts{Name: "yarnfed_gpg_uam_reaper_candidates",
			Help: "Live unmanaged AMs of federated applications (home in another sub-cluster) the last UAM reaper round examined."}),
		uamsReaped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_uams_reaped_total",
			Help: "Unmanaged AMs the reaper killed, by reason (home_final: the home RM reports the application final; home_unknown: the home RM answered completely and does not know it)."}, []string{"reason"}),
		uamsDryRun: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_uams_reap_dry_run_total",
			Help: "Unmanaged AMs the reaper would have killed in dry-run mode, by reason."}, []string{"reason"}),
		uamsKept: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_uams_kept_total",
			Help: "Unmanaged AMs a reaper round examined and left running, by reason (home_live, home_unanswered, home_not_running, home_recovering, young, no_home, capped, kill_failed)."}, []string{"reason"}),
		uamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_gpg_uam_reaper_errors_total",
			Help: "UAM reaper failures by operation (list: an RM's unmanaged apps; home_lookup: the store's application home; home_rm: the home RM's answer; kill; delete_uam: the registry row)."}, []string{"op"}),
		uamReapDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "yarnfed_gpg_uam_reap_delay_seconds",
			Help: "From the home application's finish (the home RM's finishedTime) to the kill of its leftover unmanaged AM.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
	}
	if reg != nil {
		reg.MustRegister(m.leader, m.rounds, m.roundTime, m.writes, m.queues, m.weight, m.markedLost, m.deleted, m.wouldDelete, m.cleaner, m.blocked, m.published,
			m.schedulerReads, m.queueInputs,
			m.uamRounds, m.uamCandidates, m.uamsReaped, m.uamsDryRun, m.uamsKept, m.uamErrors, m.uamReapDelay)
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
