package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
)

// SubCluster is the membership row the proxy needs.
type SubCluster struct {
	ID                     string
	AMRMServiceAddress     string // comma-separated = RM HA list
	ClientRMServiceAddress string
	State                  policies.SubClusterState
	LastHeartbeat          time.Time
	Capability             string
}

// Store is what the proxy reads from the federation state store:
// membership and queue policies (both served from the client's watch-fed
// cache, so they cost no round trip on the allocate path).
type Store interface {
	SubClusters(ctx context.Context) ([]SubCluster, error)
	// PolicyConfig returns the policy stored for exactly queue (ok=false:
	// none); it is a policies.ConfigSource.
	PolicyConfig(ctx context.Context, queue string) (policies.PolicyConfig, bool, error)
}

// ClientStore adapts statestore/client to Store.
type ClientStore struct{ C *client.Client }

func (s ClientStore) SubClusters(ctx context.Context) ([]SubCluster, error) {
	list, err := s.C.ListSubClusters(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list sub-clusters: %w", err)
	}
	out := make([]SubCluster, 0, len(list))
	for _, sc := range list {
		out = append(out, SubCluster{
			ID: sc.GetSubClusterId(), AMRMServiceAddress: sc.GetAmrmServiceAddress(),
			ClientRMServiceAddress: sc.GetClientRmServiceAddress(), State: policies.SubClusterState(sc.GetState()),
			LastHeartbeat: time.UnixMilli(sc.GetLastHeartbeatMs()), Capability: sc.GetCapability(),
		})
	}
	return out, nil
}

func (s ClientStore) PolicyConfig(ctx context.Context, queue string) (policies.PolicyConfig, bool, error) {
	p, err := s.C.GetPolicy(ctx, queue)
	if errors.Is(err, client.ErrNotFound) {
		return policies.PolicyConfig{}, false, nil
	}
	if err != nil {
		return policies.PolicyConfig{}, false, err
	}
	return policies.PolicyConfig{Queue: p.GetQueue(), Type: p.GetType(), Params: p.GetParams()}, true, nil
}

// Submission returns the submission context the router stored beside the
// application's home (nil when the application has no home row or none
// was stored: it was submitted to its home RM directly, or by an older
// router).
func (s ClientStore) Submission(ctx context.Context, appID string) (*yarnpb.ApplicationSubmissionContextProto, error) {
	h, err := s.C.GetApplicationHome(ctx, appID, true)
	if errors.Is(err, client.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(h.GetSubmissionContext()) == 0 {
		return nil, nil
	}
	asc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(h.GetSubmissionContext(), asc); err != nil {
		return nil, fmt.Errorf("stored submission context of %s: %w", appID, err)
	}
	return asc, nil
}

// queueAliases makes a stored policy for "a.b" also apply to the AM's
// queue path "root.a.b" (RMs report the full path in the register
// response; operators and routers usually key policies by the name given
// at submission). The queue's own entry wins.
type queueAliases struct{ s Store }

func (q queueAliases) PolicyConfig(ctx context.Context, queue string) (policies.PolicyConfig, bool, error) {
	c, ok, err := q.s.PolicyConfig(ctx, queue)
	if err != nil || ok || !strings.HasPrefix(queue, "root.") {
		return c, ok, err
	}
	return q.s.PolicyConfig(ctx, strings.TrimPrefix(queue, "root."))
}
