package kuberm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// Registration is the sub-cluster row kuberm writes (as subclusteragent
// does for a stock RM).
type Registration struct {
	SubClusterID           string
	ClientRMServiceAddress string
	AMRMServiceAddress     string
	RMAdminServiceAddress  string
	RMWebServiceAddress    string
	LastStartTime          time.Time
	// Capability is the RM REST API's /ws/v1/cluster/metrics answer,
	// {"clusterMetrics":{...}}: what the sub-cluster agent registers for a
	// stock RM, and what the GPG and the routers parse
	// (policies.ParseCapability, which refuses the bare object).
	Capability string
}

// ErrNotRegistered is what a Store returns for a heartbeat of a row it
// does not have; kuberm then registers again.
var ErrNotRegistered = errors.New("sub-cluster not registered")

// Store is what kuberm needs from the federation state store.
type Store interface {
	RegisterSubCluster(ctx context.Context, r Registration) error
	SubClusterHeartbeat(ctx context.Context, id string, running bool, capability string) error
}

// ClientStore writes membership through statestore/client.
type ClientStore struct{ c *client.Client }

// NewClientStore wraps a state store client.
func NewClientStore(c *client.Client) *ClientStore { return &ClientStore{c: c} }

// RegisterSubCluster implements Store.
func (s *ClientStore) RegisterSubCluster(ctx context.Context, r Registration) error {
	err := s.c.RegisterSubCluster(ctx, &storepb.SubClusterInfo{
		SubClusterId: r.SubClusterID, ClientRmServiceAddress: r.ClientRMServiceAddress, AmrmServiceAddress: r.AMRMServiceAddress,
		RmAdminServiceAddress: r.RMAdminServiceAddress, RmWebServiceAddress: r.RMWebServiceAddress, State: storepb.SubClusterState_SC_RUNNING,
		LastStartTimeMs: r.LastStartTime.UnixMilli(), Capability: r.Capability,
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", r.SubClusterID, err)
	}
	return nil
}

// SubClusterHeartbeat implements Store.
func (s *ClientStore) SubClusterHeartbeat(ctx context.Context, id string, running bool, capability string) error {
	st := storepb.SubClusterState_SC_RUNNING
	if !running {
		st = storepb.SubClusterState_SC_UNHEALTHY
	}
	err := s.c.Heartbeat(ctx, id, st, capability)
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("heartbeat %s: %w: %w", id, ErrNotRegistered, err)
	}
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	}
	return nil
}

// ClusterMetrics is the RM's /ws/v1/cluster/metrics object, from the
// Nodes and the applications: the capability the router's load-based
// policy and the GPG read from the store.
func (r *RM) ClusterMetrics(ctx context.Context) (rmrest.ClusterMetrics, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return rmrest.ClusterMetrics{}, err
	}
	apps, err := r.Apps(ctx)
	if err != nil {
		return rmrest.ClusterMetrics{}, err
	}
	var m rmrest.ClusterMetrics
	for _, n := range nodes {
		m.TotalNodes++
		switch n.state {
		case yarnpb.NodeStateProto_NS_RUNNING:
			m.ActiveNodes++
			m.TotalMB += n.capability.MemoryMB
			m.TotalVirtualCores += n.capability.VCores
			m.AllocatedMB += n.used.MemoryMB
			m.AllocatedVirtualCores += n.used.VCores
			m.ContainersAllocated += n.containers
		case yarnpb.NodeStateProto_NS_UNHEALTHY:
			m.UnhealthyNodes++
		case yarnpb.NodeStateProto_NS_DECOMMISSIONED:
			m.DecommissionedNodes++
		}
	}
	// The capability excludes other pods' requests but not ours, so what
	// is left for YARN is capability - ours.
	m.AvailableMB = max(m.TotalMB-m.AllocatedMB, 0)
	m.AvailableVirtualCores = max(m.TotalVirtualCores-m.AllocatedVirtualCores, 0)
	for i := range apps {
		m.AppsSubmitted++
		switch apps[i].state {
		case yarnpb.YarnApplicationStateProto_ACCEPTED:
			m.AppsPending++
		case yarnpb.YarnApplicationStateProto_RUNNING:
			m.AppsRunning++
		case yarnpb.YarnApplicationStateProto_FINISHED:
			m.AppsCompleted++
		case yarnpb.YarnApplicationStateProto_FAILED:
			m.AppsFailed++
		case yarnpb.YarnApplicationStateProto_KILLED:
			m.AppsKilled++
		}
	}
	return m, nil
}

// heartbeatOnce registers (first time, or after the store lost the row) or
// heartbeats. It reports whether the row is now registered.
func (r *RM) heartbeatOnce(ctx context.Context, registered bool) bool {
	m, err := r.ClusterMetrics(ctx)
	running := err == nil
	if err != nil {
		r.log.Warn("cannot compute cluster metrics; heartbeating UNHEALTHY", "err", err)
	}
	// The envelope, as the RM's REST API answers and the agent registers:
	// the GPG and the routers parse nothing else, so a bare object made
	// kuberm's capability zero to them (no weight, whatever its batch).
	capJSON, jerr := json.Marshal(rmrest.ClusterMetricsResponse{ClusterMetrics: m})
	if jerr != nil {
		capJSON = []byte("{}")
	}
	if !registered && running {
		a := r.Addrs()
		reg := Registration{SubClusterID: r.cfg.SubClusterID, ClientRMServiceAddress: firstNonEmpty(r.cfg.AdvertiseClientAddress, a.Client),
			AMRMServiceAddress:    firstNonEmpty(r.cfg.AdvertiseSchedulerAddress, a.Scheduler),
			RMAdminServiceAddress: firstNonEmpty(r.cfg.AdvertiseAdminAddress, a.Admin),
			RMWebServiceAddress:   firstNonEmpty(r.cfg.AdvertiseWebAddress, a.Web), LastStartTime: r.started, Capability: string(capJSON)}
		if err := r.cfg.Store.RegisterSubCluster(ctx, reg); err != nil {
			r.metrics.heartbeats.WithLabelValues("register", "error").Inc()
			r.log.Warn("state store registration failed; retrying", "err", err)
			return false
		}
		r.metrics.heartbeats.WithLabelValues("register", "ok").Inc()
		r.log.Info("sub-cluster registered", "clientrm", reg.ClientRMServiceAddress)
		return true
	}
	if !registered {
		return false // nothing to say yet: register once the API server answers
	}
	err = r.cfg.Store.SubClusterHeartbeat(ctx, r.cfg.SubClusterID, running, string(capJSON))
	if errors.Is(err, ErrNotRegistered) {
		r.metrics.heartbeats.WithLabelValues("heartbeat", "error").Inc()
		return false
	}
	if err != nil {
		r.metrics.heartbeats.WithLabelValues("heartbeat", "error").Inc()
		r.log.Warn("state store heartbeat failed; retrying", "err", err)
		return true
	}
	r.metrics.heartbeats.WithLabelValues("heartbeat", "ok").Inc()
	return true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
