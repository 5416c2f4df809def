package store

import "github.com/prometheus/client_golang/prometheus"

// limitsGauge exposes the input limits in force, so /metrics shows what
// a caller can make the store hold.
func limitsGauge(l Limits) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_statestore_input_limit",
		Help: "Input limits in force: max_context_bytes, max_policy_params_bytes, max_id_bytes, max_token_bytes, max_list_limit, max_capability_bytes."}, []string{"limit"})
	capBytes := l.MaxCapabilityBytes
	if capBytes <= 0 {
		capBytes = DefaultLimits().MaxCapabilityBytes
	}
	for name, v := range map[string]int{
		"max_context_bytes": l.MaxContextBytes, "max_policy_params_bytes": l.MaxPolicyParamsBytes,
		"max_id_bytes": l.MaxIDBytes, "max_token_bytes": l.MaxTokenBytes, "max_list_limit": l.MaxListLimit,
		"max_capability_bytes": capBytes,
	} {
		g.WithLabelValues(name).Set(float64(v))
	}
	return g
}
