package routertest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// CounterByMethod is the value of counter name{method} in reg (0 if absent):
// the router's per-method counters (retries, sub-clusters left out).
func CounterByMethod(t testing.TB, reg *prometheus.Registry, name, method string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() == method {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
