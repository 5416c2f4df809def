package gpg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/yarnfed/yarnfed/internal/rmrest"

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

// ErrNoRMWeb is returned by RMNodes for a sub-cluster the membership does
// not list as serving, or without a web address.
var ErrNoRMWeb = errors.New("gpg: no RM web address for the sub-cluster")

// RMNodes reads a sub-cluster's NodeManagers from its active RM's REST API
// (/ws/v1/cluster/nodes), at the rmWebServiceAddress in the membership (an
// HA list is tried in order; a standby answers 503 and the next is tried),
// with the cleaner's timeout and user and, under Kerberos, SPNEGO as the
// GPG. gpg/kube's node-resource push and thirdPartyAllocations write-back
// read it (kube.RMNodesFromREST).
func (g *GPG) RMNodes(ctx context.Context, subCluster string) ([]rmrest.Node, error) {
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list sub-clusters: %w", err)
	}
	for _, sc := range scs {
		if sc.GetSubClusterId() != subCluster {
			continue
		}
		switch sc.GetState() {
		case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY, pb.SubClusterState_SC_DECOMMISSIONING:
		default:
			return nil, fmt.Errorf("%w: %s is %s", ErrNoRMWeb, subCluster, sc.GetState())
		}
		var errs []error
		for _, addr := range strings.Split(sc.GetRmWebServiceAddress(), ",") {
			if addr = strings.TrimSpace(addr); addr == "" {
				continue
			}
			c := rmrest.NewClient(addr)
			c.HTTP, c.User, c.SPNEGO = g.rmREST.http, g.cfg.Cleaner.RMUser, g.rmREST.spnego
			nodes, err := c.GetNodes(ctx, "")
			if err == nil {
				return nodes, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		}
		if len(errs) == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNoRMWeb, subCluster)
		}
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%w: %s is not registered", ErrNoRMWeb, subCluster)
}
