package gpg

import (
	"context"
	"fmt"
	"strings"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// RMAdminAddresses maps each sub-cluster whose RM may be serving
// (NEW, RUNNING, UNHEALTHY, DECOMMISSIONING) to its RM admin addresses, from
// the same membership view the rounds read: the store client's cache, kept
// current by the store's watch. The sub-cluster agent re-registers the
// active RM's addresses on every failover, so this follows RM HA without
// configuration. A comma-separated address is an HA list, tried in order.
// Sub-clusters that left (LOST, DECOMMISSIONED, UNREGISTERED) are omitted:
// their address may name a host that now runs something else.
// gpg/kube/nmpush reads it as its nmpush.RMs.
func (g *GPG) RMAdminAddresses(ctx context.Context) (map[string][]string, error) {
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list sub-clusters: %w", err)
	}
	out := make(map[string][]string, len(scs))
	for _, sc := range scs {
		switch sc.GetState() {
		case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY, pb.SubClusterState_SC_DECOMMISSIONING:
		default:
			continue
		}
		var addrs []string
		for _, a := range strings.Split(sc.GetRmAdminServiceAddress(), ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) > 0 {
			out[sc.GetSubClusterId()] = addrs
		}
	}
	return out, nil
}
