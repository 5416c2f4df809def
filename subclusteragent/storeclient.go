package subclusteragent

import (
	"context"
	"errors"
	"fmt"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// ClientStore writes membership through statestore/client (retries across
// replicas and leader changes).
type ClientStore struct {
	c *client.Client
}

// NewClientStore wraps a state store client.
func NewClientStore(c *client.Client) *ClientStore { return &ClientStore{c: c} }

// RegisterSubCluster implements Store.
func (s *ClientStore) RegisterSubCluster(ctx context.Context, r Registration) error {
	var start int64
	if !r.LastStartTime.IsZero() {
		start = r.LastStartTime.UnixMilli()
	}
	err := s.c.RegisterSubCluster(ctx, &storepb.SubClusterInfo{
		SubClusterId: r.SubClusterID, AmrmServiceAddress: r.AMRMServiceAddress, ClientRmServiceAddress: r.ClientRMServiceAddress,
		RmAdminServiceAddress: r.RMAdminServiceAddress, RmWebServiceAddress: r.RMWebServiceAddress,
		State: storepb.SubClusterState(r.State), LastStartTimeMs: start, Capability: r.Capability,
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", r.SubClusterID, err)
	}
	return nil
}

// SubClusterHeartbeat implements Store. A row the store does not have (it
// was formatted, or the row deleted) is ErrNotRegistered, so the agent
// registers again.
func (s *ClientStore) SubClusterHeartbeat(ctx context.Context, id string, st State, capability string) error {
	err := s.c.Heartbeat(ctx, id, storepb.SubClusterState(st), capability)
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("heartbeat %s: %w: %w", id, ErrNotRegistered, err)
	}
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	}
	return nil
}
