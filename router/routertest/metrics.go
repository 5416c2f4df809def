package routertest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/metrictest"
)

// CounterByMethod is the value of counter name{method} in reg (0 if absent):
// the router's per-method counters (retries, sub-clusters left out).
func CounterByMethod(t testing.TB, reg *prometheus.Registry, name, method string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, name, "method", method)
}
