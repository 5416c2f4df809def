// Package metrictest reads Prometheus counters back in tests.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter is the value of counter name{label="value"} in g, 0 if it was
// never counted: a labelled counter appears only once incremented.
func Counter(t testing.TB, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
