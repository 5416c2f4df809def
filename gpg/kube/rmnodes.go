package kube

import (
	"context"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// RMNode is what a sub-cluster's RM reports of one NodeManager: its total
// (what updateNodeResource set, or what it registered with) and what YARN
// has allocated on it.
type RMNode struct {
	State string
	Total capacity.Resources
	Used  capacity.Resources
}

// RMNodeReader reads a sub-cluster's NodeManagers from its active RM, keyed
// by NodeId ("host:port"). The node-resource push (second-writer detection)
// and the thirdPartyAllocations write-back read it.
type RMNodeReader interface {
	RMNodes(ctx context.Context, subCluster string) (map[string]RMNode, error)
}

// RMNodesFromREST adapts a reader of the RM's REST /ws/v1/cluster/nodes
// (such as (*gpg.GPG).RMNodes) to RMNodeReader, reading usedMemoryMB and
// usedVirtualCores, and totalResource.
type RMNodesFromREST func(ctx context.Context, subCluster string) ([]rmrest.Node, error)

// RMNodes implements RMNodeReader.
func (f RMNodesFromREST) RMNodes(ctx context.Context, subCluster string) (map[string]RMNode, error) {
	nodes, err := f(ctx, subCluster)
	if err != nil {
		return nil, err
	}
	out := make(map[string]RMNode, len(nodes))
	for _, n := range nodes {
		out[n.ID] = RMNode{
			State: n.State,
			Total: capacity.Resources{MemoryMB: n.TotalResource.Memory, VCores: int64(n.TotalResource.VCores)},
			Used:  capacity.Resources{MemoryMB: n.UsedMemoryMB, VCores: n.UsedVirtualCores},
		}
	}
	return out, nil
}
