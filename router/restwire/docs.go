package restwire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// ParseCapability reads a sub-cluster's capability JSON: the RM's
// clusterMetrics object, bare or in its {"clusterMetrics":{...}} envelope.
func ParseCapability(s string) (*rmrest.ClusterMetrics, error) {
	if s == "" {
		return nil, fmt.Errorf("empty capability")
	}
	var env rmrest.ClusterMetricsResponse
	if err := json.Unmarshal([]byte(s), &env); err == nil && env.ClusterMetrics != (rmrest.ClusterMetrics{}) {
		return &env.ClusterMetrics, nil
	}
	var bare rmrest.ClusterMetrics
	if err := json.Unmarshal([]byte(s), &bare); err != nil {
		return nil, fmt.Errorf("capability: %w", err)
	}
	return &bare, nil
}

// NodeStates are the node states the REST API's states= filter accepts
// (NodeStateProto's names without NS_).
var NodeStates = func() []string {
	var out []string
	for i := int32(1); ; i++ {
		n, ok := yarnpb.NodeStateProto_name[i]
		if !ok {
			return out
		}
		out = append(out, strings.TrimPrefix(n, "NS_"))
	}
}()
