package router

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"

	"github.com/yarnfed/yarnfed/internal/rmbreaker"
)

// metrics are per client method and per sub-cluster. A nil Registerer gets
// working collectors that are simply not exported.
type metrics struct {
	requests   *prometheus.CounterVec   // method, outcome
	latency    *prometheus.HistogramVec // method
	scCalls    *prometheus.CounterVec   // subcluster, method, outcome
	scLatency  *prometheus.HistogramVec // subcluster
	breaker    *prometheus.GaugeVec     // subcluster
	retries    *prometheus.CounterVec   // method
	routable   prometheus.Gauge
	homeLookup *prometheus.CounterVec // source: cache, store, fanout
	evictions  *prometheus.CounterVec // pool: client, admin
	webRefused prometheus.Counter
	// appACLDenied counts calls refused by application ACLs (appacl.go).
	appACLDenied *prometheus.CounterVec // method
	// leftOut counts sub-clusters left out of partial fan-out answers.
	leftOut *prometheus.CounterVec // method
}

func newMetrics(reg prometheus.Registerer) *metrics {
	buckets := []float64{.0002, .0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_requests_total",
			Help: "Client requests served by the router, by protocol method and outcome (ok, error).",
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yarnfed_router_request_seconds",
			Help:    "Latency of client requests through the router, by method.",
			Buckets: buckets,
		}, []string{"method"}),
		scCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_subcluster_calls_total",
			Help: "Calls from the router to sub-cluster RMs, by sub-cluster, method and outcome (ok, app_error, down, circuit_open).",
		}, []string{"subcluster", "method", "outcome"}),
		scLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yarnfed_router_subcluster_call_seconds",
			Help:    "Latency of router calls to sub-cluster RMs, by sub-cluster.",
			Buckets: buckets,
		}, []string{"subcluster"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "yarnfed_router_breaker_state",
			Help: "Circuit breaker state per sub-cluster: 0 closed, 1 half-open, 2 open (out of routing).",
		}, []string{"subcluster"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_retries_total",
			Help: "Tries on another sub-cluster after a failure, by method.",
		}, []string{"method"}),
		routable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yarnfed_router_routable_subclusters",
			Help: "Sub-clusters that are RUNNING with a closed breaker, as of the last membership refresh.",
		}),
		homeLookup: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_home_lookups_total",
			Help: "Application home lookups by source (cache, store, fanout).",
		}, []string{"source"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_rm_client_evictions_total",
			Help: "Per-user RM clients closed because the pool reached max_rm_clients, by pool (client, admin).",
		}, []string{"pool"}),
		webRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yarnfed_router_web_connections_refused_total",
			Help: "REST connections closed on accept because their address had web.max_conns_per_addr open.",
		}),
		appACLDenied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_app_acl_denied_total",
			Help: "Calls refused because the caller lacks the application's VIEW_APP or MODIFY_APP access, by method.",
		}, []string{"method"}),
		leftOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_fanout_subclusters_left_out_total",
			Help: "Sub-clusters left out of a fan-out's partial answer (failed or no answer by the fan-out deadline, partial results on), by method.",
		}, []string{"method"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.scCalls, m.scLatency, m.breaker, m.retries, m.routable, m.homeLookup, m.evictions, m.webRefused, m.appACLDenied, m.leftOut)
	}
	return m
}

func (m *metrics) observe(method string, start time.Time, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.requests.WithLabelValues(method, outcome).Inc()
	m.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

func (m *metrics) breakerState(sc SubClusterID, s gobreaker.State) {
	m.breaker.WithLabelValues(string(sc)).Set(rmbreaker.StateValue(s))
}
