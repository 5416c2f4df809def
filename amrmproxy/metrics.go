package amrmproxy

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	allocate    prometheus.Histogram
	rmAllocate  *prometheus.HistogramVec
	uams        prometheus.Gauge
	uamLaunches *prometheus.CounterVec
	containers  *prometheus.CounterVec
	attempts    prometheus.Gauge
	stateErrors prometheus.Counter
	// containersAborted and uamsAbandoned count what a lost secondary cost.
	containersAborted *prometheus.CounterVec
	uamsAbandoned     *prometheus.CounterVec
	// AM-facing protocol events.
	registers  prometheus.Counter
	resyncs    prometheus.Counter
	finishes   prometheus.Counter
	recoveries prometheus.Counter
	// rmErrors counts failed calls to one RM (home or secondary).
	rmErrors *prometheus.CounterVec
	breaker  *prometheus.GaugeVec
	// attemptsEnded counts attempts ended without a finish, by reason.
	attemptsEnded  *prometheus.CounterVec
	registryErrors *prometheus.CounterVec
	reattached     *prometheus.CounterVec
	// NM tokens of secondaries the proxy handed an AM attempt itself, or
	// could not (none known), or pushed out beyond the per-UAM bound.
	nmTokensGiven   *prometheus.CounterVec
	nmTokensMissing *prometheus.CounterVec
	nmTokensDropped *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	m := &metrics{
		allocate: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "yarnfed_amrmproxy_allocate_seconds",
			Help: "Latency of AM allocate calls through the proxy (split, home call, bounded wait for secondaries, merge).", Buckets: buckets}),
		rmAllocate: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "yarnfed_amrmproxy_rm_allocate_seconds",
			Help: "Latency of allocate calls from the proxy to one sub-cluster RM (home or UAM).", Buckets: buckets}, []string{"subcluster"}),
		uams: prometheus.NewGauge(prometheus.GaugeOpts{Name: "yarnfed_amrmproxy_uams",
			Help: "Unmanaged AMs this proxy currently runs on secondary sub-clusters."}),
		uamLaunches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_uam_launches_total",
			Help: "Unmanaged AM launches (submit, token, register), by sub-cluster and result."}, []string{"subcluster", "result"}),
		containers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_containers_allocated_total",
			Help: "Containers handed to AMs, by the sub-cluster that allocated them."}, []string{"subcluster"}),
		attempts: prometheus.NewGauge(prometheus.GaugeOpts{Name: "yarnfed_amrmproxy_attempts",
			Help: "Application attempts this proxy serves (registered or recovered)."}),
		stateErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_state_write_errors_total",
			Help: "Failed writes of per-attempt state to the local disk."}),
		containersAborted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_containers_aborted_total",
			Help: "Containers reported ABORTED to AMs because their secondary sub-cluster was lost, by sub-cluster."}, []string{"subcluster"}),
		uamsAbandoned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_uams_abandoned_total",
			Help: "Unmanaged AMs left unregistered at finish because their sub-cluster was lost, by sub-cluster."}, []string{"subcluster"}),
		registers: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_registers_total",
			Help: "registerApplicationMaster calls of AMs answered successfully (first registrations and re-registrations)."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_resyncs_total",
			Help: "AM heartbeats answered ApplicationMasterNotRegisteredException so the AM re-registers and re-sends its asks (proxy or RM restart)."}),
		finishes: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_finishes_total",
			Help: "Attempts that finished through the proxy (home and every reachable UAM unregistered)."}),
		recoveries: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_recoveries_total",
			Help: "Attempts rebuilt from the local state at start-up."}),
		rmErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_rm_errors_total",
			Help: "Failed calls from the proxy to one sub-cluster's RM (home or UAM: register, allocate, finish, launch), by sub-cluster."}, []string{"subcluster"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_amrmproxy_breaker_state",
			Help: "Circuit breaker state per secondary sub-cluster: 0 closed, 1 half-open, 2 open (out of splitting)."}, []string{"subcluster"}),
		attemptsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_attempts_ended_total",
			Help: "Attempts whose local state ended without the AM finishing, by reason: killed, failed (application failed or the attempt is no longer current), reaped (application finished elsewhere or unknown to its home), expired (attempt_expiry)."}, []string{"reason"}),
		registryErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_registry_errors_total",
			Help: "Failed calls to the state store's UAM registry, by operation."}, []string{"op"}),
		reattached: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_uams_reattached_total",
			Help: "UAMs of an earlier AM attempt re-attached by a later attempt from the UAM registry, by sub-cluster."}, []string{"subcluster"}),
		nmTokensGiven: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_nm_tokens_given_total",
			Help: "NM tokens of a secondary's node the proxy added to an AM's allocate answer (the first container of that node for the attempt, the RM not sending the token again), by sub-cluster."}, []string{"subcluster"}),
		nmTokensMissing: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_nm_tokens_missing_total",
			Help: "Containers of a secondary handed to an AM attempt that holds no NM token for their node and for which the proxy knows none (the AM may fail to start them), by sub-cluster."}, []string{"subcluster"}),
		nmTokensDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_amrmproxy_nm_tokens_dropped_total",
			Help: "NM tokens a UAM's bounded per-node set pushed out (more nodes than a registry row keeps), by sub-cluster."}, []string{"subcluster"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.allocate, m.rmAllocate, m.uams, m.uamLaunches, m.containers, m.attempts, m.stateErrors,
			m.containersAborted, m.uamsAbandoned, m.registers, m.resyncs, m.finishes, m.recoveries, m.rmErrors, m.breaker,
			m.attemptsEnded, m.registryErrors, m.reattached, m.nmTokensGiven, m.nmTokensMissing, m.nmTokensDropped} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
