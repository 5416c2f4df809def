package hadoopipc

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
)

// ClientMetrics counts client calls; one per process, shared by clients
// through Interceptor.
type ClientMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewClientMetrics registers yarnfed_ipc_client_* with reg (nil: not
// registered).
func NewClientMetrics(reg prometheus.Registerer) *ClientMetrics {
	m := &ClientMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_ipc_client_calls_total",
			Help: "Hadoop IPC client calls by protocol, method and outcome (success, remote_error, transport_error, canceled).",
		}, []string{"protocol", "method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yarnfed_ipc_client_call_duration_seconds",
			Help:    "Hadoop IPC client call latency, failover included.",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"protocol", "method"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration)
	}
	return m
}

// Interceptor returns a ClientInterceptor recording calls of protocol.
func (m *ClientMetrics) Interceptor(protocol string) ClientInterceptor {
	return func(ctx context.Context, method string, req, resp proto.Message, invoker Invoker) error {
		start := time.Now()
		err := invoker(ctx, method, req, resp)
		outcome := "success"
		var re *RemoteError
		switch {
		case err == nil:
		case errors.As(err, &re):
			outcome = "remote_error"
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			outcome = "canceled"
		default:
			outcome = "transport_error"
		}
		m.calls.WithLabelValues(protocol, method, outcome).Inc()
		m.duration.WithLabelValues(protocol, method).Observe(time.Since(start).Seconds())
		return err
	}
}
