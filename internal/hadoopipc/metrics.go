package hadoopipc

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the server's Prometheus collectors (yarnfed_ipc_*).
type Metrics struct {
	calls       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rejected    *prometheus.CounterVec
	conns       prometheus.Gauge
	connsTotal  prometheus.Counter
	authFailure prometheus.Counter
	preAuth     prometheus.Gauge
	// backPressure counts a reader finding every in-flight slot of its
	// connection taken (MaxInFlightPerConn): it then stops reading until a
	// reply frees one.
	backPressure prometheus.Counter
}

// newMetrics registers the collectors with reg; a nil reg keeps them
// unregistered (they still count, nobody scrapes them).
func newMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_ipc_calls_total",
			Help: "Hadoop IPC calls dispatched to a handler, by protocol, method and outcome (success or error).",
		}, []string{"protocol", "method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yarnfed_ipc_call_duration_seconds",
			Help:    "Time spent in the handler chain per Hadoop IPC call.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"protocol", "method"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_ipc_rejected_total",
			Help: "Requests or connections refused by the IPC layer before reaching a handler, by reason.",
		}, []string{"reason"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yarnfed_ipc_connections",
			Help: "Open Hadoop IPC server connections.",
		}),
		connsTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yarnfed_ipc_connections_total",
			Help: "Hadoop IPC server connections accepted.",
		}),
		authFailure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yarnfed_ipc_auth_failures_total",
			Help: "SASL logins that failed (FATAL_UNAUTHORIZED).",
		}),
		preAuth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "yarnfed_ipc_preauth_buffered_bytes",
			Help: "Bytes buffered for packets of connections that have not completed their handshake (bounded by PreAuthBufferBytes).",
		}),
		backPressure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yarnfed_ipc_backpressure_waits_total",
			Help: "Times a connection's reader found all MaxInFlightPerConn call slots taken and stopped reading until a reply freed one.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration, m.rejected, m.conns, m.connsTotal, m.authFailure, m.preAuth, m.backPressure)
	}
	return m
}
