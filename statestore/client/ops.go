package client

import (
	"context"
	"errors"
	"fmt"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// ---- membership ----

// RegisterSubCluster registers (or re-registers) a sub-cluster; the store
// stamps its heartbeat time.
func (c *Client) RegisterSubCluster(ctx context.Context, info *pb.SubClusterInfo) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.RegisterSubClusterResponse, error) {
		return s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: info})
	})
	c.cache.wrote(true, false)
	return err
}

// Heartbeat overwrites a registered sub-cluster's state and capability.
// ErrNotFound if it never registered.
func (c *Client) Heartbeat(ctx context.Context, subClusterID string, state pb.SubClusterState, capability string) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.HeartbeatResponse, error) {
		return s.Heartbeat(ctx, &pb.HeartbeatRequest{SubClusterId: subClusterID, State: state, Capability: capability})
	})
	c.cache.wrote(true, false)
	return err
}

// DeregisterSubCluster sets a sub-cluster's (final) state.
func (c *Client) DeregisterSubCluster(ctx context.Context, subClusterID string, state pb.SubClusterState) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.DeregisterSubClusterResponse, error) {
		return s.DeregisterSubCluster(ctx, &pb.DeregisterSubClusterRequest{SubClusterId: subClusterID, State: state})
	})
	c.cache.wrote(true, false)
	return err
}

// GetSubCluster returns one sub-cluster, from the cache when it is fresh.
// Callers must not modify the result.
func (c *Client) GetSubCluster(ctx context.Context, subClusterID string) (*pb.SubClusterInfo, error) {
	all, err := c.subClusters(ctx)
	if err != nil {
		return nil, err
	}
	for _, sc := range all {
		if sc.GetSubClusterId() == subClusterID {
			return sc, nil
		}
	}
	return nil, fmt.Errorf("%w: sub-cluster %s", ErrNotFound, subClusterID)
}

// ListSubClusters lists sub-clusters (only RUNNING ones with
// filterInactive), from the cache when it is fresh. Callers must not
// modify the results.
func (c *Client) ListSubClusters(ctx context.Context, filterInactive bool) ([]*pb.SubClusterInfo, error) {
	all, err := c.subClusters(ctx)
	if err != nil || !filterInactive {
		return all, err
	}
	var out []*pb.SubClusterInfo
	for _, sc := range all {
		if sc.GetState() == pb.SubClusterState_SC_RUNNING {
			out = append(out, sc)
		}
	}
	return out, nil
}

func (c *Client) subClusters(ctx context.Context) ([]*pb.SubClusterInfo, error) {
	return c.cache.membership.load(ctx, c.cache, func(ctx context.Context) ([]*pb.SubClusterInfo, error) {
		r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ListSubClustersResponse, error) {
			return s.ListSubClusters(ctx, &pb.ListSubClustersRequest{})
		})
		return r.GetSubClusters(), err
	})
}

// ---- application homes ----

// AddApplicationHome stores home if the application has none and returns
// the home stored after the call: the given one (inserted; without the
// context, which the caller has) or the existing one with its stored
// context. This is what makes a resubmission after a router crash land on
// the same sub-cluster. Not resent once it may have reached the store:
// insert-if-absent is not idempotent under concurrent writes (a resend
// after the applied first attempt and another client's delete inserts
// again; after an update it answers the other client's home as if it had
// found it). ErrUnknownOutcome then; calling again is a new insert.
// Concurrent calls are coalesced into one RPC (see Config.DisableBatching).
func (c *Client) AddApplicationHome(ctx context.Context, home *pb.ApplicationHome) (stored *pb.ApplicationHome, inserted bool, err error) {
	if !c.cfg.DisableBatching {
		req := &addReq{ctx: ctx, home: home, done: make(chan addRes, 1)}
		select {
		case c.addCh <- req:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-c.closed:
			return nil, false, fmt.Errorf("%w: client closed", ErrUnavailable)
		}
		select {
		case r := <-req.done:
			return r.stored, r.inserted, r.err
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-c.closed:
			return nil, false, fmt.Errorf("%w: client closed", ErrUnavailable)
		}
	}
	r, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.AddApplicationHomeResponse, error) {
		return s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: home})
	})
	return r.GetStored(), r.GetInserted(), err
}

// UpdateApplicationHome moves an application to another home (and
// replaces its context when one is given). ErrNotFound if it has none.
// Not retried once it may have reached the store: a blind update resent
// after another caller's update would undo it (X, Y, X). Callers get
// ErrUnknownOutcome instead and may read the home to resolve it.
func (c *Client) UpdateApplicationHome(ctx context.Context, home *pb.ApplicationHome) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.UpdateApplicationHomeResponse, error) {
		return s.UpdateApplicationHome(ctx, &pb.UpdateApplicationHomeRequest{Home: home})
	})
	return err
}

// GetApplicationHome returns an application's home (without the submission
// context unless withContext).
func (c *Client) GetApplicationHome(ctx context.Context, appID string, withContext bool, opts ...ReadOption) (*pb.ApplicationHome, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetApplicationHomeResponse, error) {
		return s.GetApplicationHome(ctx, &pb.GetApplicationHomeRequest{ApplicationId: appID, IncludeContext: withContext, Read: readOpts(opts)})
	})
	return r.GetHome(), err
}

// DeleteApplicationHome deletes an application's home. ErrNotFound if it
// has none. Never resent once it may have reached the store (a resent
// delete that had succeeded would report ErrNotFound): ErrUnknownOutcome
// then.
func (c *Client) DeleteApplicationHome(ctx context.Context, appID string) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.DeleteApplicationHomeResponse, error) {
		return s.DeleteApplicationHome(ctx, &pb.DeleteApplicationHomeRequest{ApplicationId: appID})
	})
	return err
}

// ListQuery selects application homes.
type ListQuery struct {
	// SubClusterID keeps only homes in this sub-cluster when set.
	SubClusterID string
	// Limit is the page size; 0 or more than the server cap means the cap.
	Limit int
	// PageToken continues a previous listing.
	PageToken      []byte
	IncludeContext bool
}

// ListApplicationHomes returns one page of homes, newest first, and the
// token of the next page (nil at the end).
func (c *Client) ListApplicationHomes(ctx context.Context, q ListQuery, opts ...ReadOption) ([]*pb.ApplicationHome, []byte, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ListApplicationHomesResponse, error) {
		return s.ListApplicationHomes(ctx, &pb.ListApplicationHomesRequest{
			SubClusterId: q.SubClusterID, Limit: int32(q.Limit), PageToken: q.PageToken, IncludeContext: q.IncludeContext, Read: readOpts(opts),
		})
	})
	return r.GetHomes(), r.GetNextPageToken(), err
}

// ---- policies ----

// DefaultQueueKey is the policy key that applies to queues without their own.
const DefaultQueueKey = "*"

// GetPolicy returns the policy stored for exactly this queue (cached).
func (c *Client) GetPolicy(ctx context.Context, queue string) (*pb.PolicyConfiguration, error) {
	all, err := c.policies(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if p.GetQueue() == queue {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: no policy for queue %s", ErrNotFound, queue)
}

// PolicyFor resolves the policy for a queue the way Hadoop's routers do:
// the queue's own entry, else the "*" entry, else ErrNotFound (the caller
// then uses its configured default manager). An empty queue means
// "default".
func (c *Client) PolicyFor(ctx context.Context, queue string) (*pb.PolicyConfiguration, error) {
	if queue == "" {
		queue = "default"
	}
	p, err := c.GetPolicy(ctx, queue)
	if err == nil {
		return p, nil
	}
	if !isNotFound(err) {
		return nil, err
	}
	return c.GetPolicy(ctx, DefaultQueueKey)
}

// ListPolicies lists every stored policy (cached).
func (c *Client) ListPolicies(ctx context.Context) ([]*pb.PolicyConfiguration, error) {
	return c.policies(ctx)
}

func (c *Client) policies(ctx context.Context) ([]*pb.PolicyConfiguration, error) {
	return c.cache.policies.load(ctx, c.cache, func(ctx context.Context) ([]*pb.PolicyConfiguration, error) {
		r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ListPoliciesResponse, error) {
			return s.ListPolicies(ctx, &pb.ListPoliciesRequest{})
		})
		return r.GetPolicies(), err
	})
}

// SetPolicy stores a queue's policy ("*" for the default).
// Not retried once it may have reached the store (a blind overwrite,
// like UpdateApplicationHome); ErrUnknownOutcome then.
func (c *Client) SetPolicy(ctx context.Context, p *pb.PolicyConfiguration) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.SetPolicyResponse, error) {
		return s.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: p})
	})
	c.cache.wrote(false, true)
	return err
}

// DeletePolicies deletes the named queues' policies (missing ones are
// ignored).
// Not retried once it may have reached the store; ErrUnknownOutcome then.
func (c *Client) DeletePolicies(ctx context.Context, queues ...string) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.DeletePoliciesResponse, error) {
		return s.DeletePolicies(ctx, &pb.DeletePoliciesRequest{Queues: queues})
	})
	c.cache.wrote(false, true)
	return err
}

// DeleteAllPolicies deletes every policy.
// Not retried once it may have reached the store; ErrUnknownOutcome then.
func (c *Client) DeleteAllPolicies(ctx context.Context) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.DeletePoliciesResponse, error) {
		return s.DeletePolicies(ctx, &pb.DeletePoliciesRequest{All: true})
	})
	c.cache.wrote(false, true)
	return err
}

// ---- reservation homes ----

// AddReservationHome stores a reservation's home if absent and returns the
// stored one. Not resent once it may have reached the store (see
// AddApplicationHome); ErrUnknownOutcome then.
func (c *Client) AddReservationHome(ctx context.Context, h *pb.ReservationHome) (stored *pb.ReservationHome, inserted bool, err error) {
	r, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.AddReservationHomeResponse, error) {
		return s.AddReservationHome(ctx, &pb.AddReservationHomeRequest{Home: h})
	})
	return r.GetStored(), r.GetInserted(), err
}

// UpdateReservationHome moves a reservation. ErrNotFound if it has no home.
// Not retried once it may have reached the store; ErrUnknownOutcome then.
func (c *Client) UpdateReservationHome(ctx context.Context, h *pb.ReservationHome) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.UpdateReservationHomeResponse, error) {
		return s.UpdateReservationHome(ctx, &pb.UpdateReservationHomeRequest{Home: h})
	})
	return err
}

// GetReservationHome returns a reservation's home.
func (c *Client) GetReservationHome(ctx context.Context, reservationID string, opts ...ReadOption) (*pb.ReservationHome, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetReservationHomeResponse, error) {
		return s.GetReservationHome(ctx, &pb.GetReservationHomeRequest{ReservationId: reservationID, Read: readOpts(opts)})
	})
	return r.GetHome(), err
}

// ListReservationHomes lists every reservation home.
func (c *Client) ListReservationHomes(ctx context.Context, opts ...ReadOption) ([]*pb.ReservationHome, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ListReservationHomesResponse, error) {
		return s.ListReservationHomes(ctx, &pb.ListReservationHomesRequest{Read: readOpts(opts)})
	})
	return r.GetHomes(), err
}

// DeleteReservationHome deletes a reservation's home.
func (c *Client) DeleteReservationHome(ctx context.Context, reservationID string) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.DeleteReservationHomeResponse, error) {
		return s.DeleteReservationHome(ctx, &pb.DeleteReservationHomeRequest{ReservationId: reservationID})
	})
	return err
}

// ---- delegation-token state ----

// StoreMasterKey stores a new master key; ErrAlreadyExists for a used id.
func (c *Client) StoreMasterKey(ctx context.Context, k *pb.MasterKey) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.StoreMasterKeyResponse, error) {
		return s.StoreMasterKey(ctx, &pb.StoreMasterKeyRequest{Key: k})
	})
	return err
}

// RemoveMasterKey removes a master key.
func (c *Client) RemoveMasterKey(ctx context.Context, keyID int32) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.RemoveMasterKeyResponse, error) {
		return s.RemoveMasterKey(ctx, &pb.RemoveMasterKeyRequest{KeyId: keyID})
	})
	return err
}

// GetMasterKey returns a master key.
func (c *Client) GetMasterKey(ctx context.Context, keyID int32) (*pb.MasterKey, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetMasterKeyResponse, error) {
		return s.GetMasterKey(ctx, &pb.GetMasterKeyRequest{KeyId: keyID})
	})
	return r.GetKey(), err
}

// StoreToken stores a new delegation token; ErrAlreadyExists if present.
func (c *Client) StoreToken(ctx context.Context, t *pb.DelegationToken) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.StoreTokenResponse, error) {
		return s.StoreToken(ctx, &pb.StoreTokenRequest{Token: t})
	})
	return err
}

// UpdateToken replaces a stored token (renewal); ErrNotFound if absent.
// Not retried once it may have reached the store; ErrUnknownOutcome then.
func (c *Client) UpdateToken(ctx context.Context, t *pb.DelegationToken) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.UpdateTokenResponse, error) {
		return s.UpdateToken(ctx, &pb.UpdateTokenRequest{Token: t})
	})
	return err
}

// RemoveToken removes a token.
func (c *Client) RemoveToken(ctx context.Context, identifier []byte) error {
	_, err := call(ctx, c, false, func(ctx context.Context, s replica) (*pb.RemoveTokenResponse, error) {
		return s.RemoveToken(ctx, &pb.RemoveTokenRequest{Identifier: identifier})
	})
	return err
}

// GetToken returns a token by identifier.
func (c *Client) GetToken(ctx context.Context, identifier []byte) (*pb.DelegationToken, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetTokenResponse, error) {
		return s.GetToken(ctx, &pb.GetTokenRequest{Identifier: identifier})
	})
	return r.GetToken(), err
}

// ReserveRange reserves count consecutive values of a counter and returns
// the first; the caller owns [first, first+count). Retrying after an
// unknown outcome may skip a range but never hands one out twice.
func (c *Client) ReserveRange(ctx context.Context, counter pb.Counter, count int64) (first int64, err error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ReserveRangeResponse, error) {
		return s.ReserveRange(ctx, &pb.ReserveRangeRequest{Counter: counter, Count: count})
	})
	return r.GetFirst(), err
}

// GetCounter returns a counter (the last value handed out).
func (c *Client) GetCounter(ctx context.Context, counter pb.Counter) (int64, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetCounterResponse, error) {
		return s.GetCounter(ctx, &pb.GetCounterRequest{Counter: counter})
	})
	return r.GetValue(), err
}

// SetCounter sets a counter (Hadoop's setDelegationTokenSeqNum).
func (c *Client) SetCounter(ctx context.Context, counter pb.Counter, value int64) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.SetCounterResponse, error) {
		return s.SetCounter(ctx, &pb.SetCounterRequest{Counter: counter, Value: value})
	})
	return err
}

// ---- version, format, cluster ----

// GetVersion returns the stored data version and the server's.
func (c *Client) GetVersion(ctx context.Context) (stored, current *pb.Version, err error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetVersionResponse, error) {
		return s.GetVersion(ctx, &pb.GetVersionRequest{})
	})
	return r.GetStored(), r.GetCurrent(), err
}

// CheckVersion fails with ErrIncompatibleVersion when the stored data's
// major version differs from the server's (Hadoop's checkVersion).
func (c *Client) CheckVersion(ctx context.Context) error {
	stored, current, err := c.GetVersion(ctx)
	if err != nil {
		return err
	}
	if stored.GetMajor() != current.GetMajor() {
		return fmt.Errorf("%w: stored %d.%d, server %d.%d", ErrIncompatibleVersion, stored.GetMajor(), stored.GetMinor(), current.GetMajor(), current.GetMinor())
	}
	return nil
}

// Format wipes all federation data (admin only).
func (c *Client) Format(ctx context.Context) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.FormatResponse, error) {
		return s.Format(ctx, &pb.FormatRequest{Confirm: true})
	})
	c.cache.wrote(true, true)
	return err
}

// Status returns the cluster status as seen by the replica in use.
func (c *Client) Status(ctx context.Context) (*pb.StatusResponse, error) {
	return call(ctx, c, true, func(ctx context.Context, s replica) (*pb.StatusResponse, error) {
		return s.admin.Status(ctx, &pb.StatusRequest{})
	})
}

// Snapshot makes the replica in use take a Raft snapshot now (admin). To
// snapshot one particular replica, use a client with only its address.
// Not resent after an unknown outcome: a resend goes to the next replica,
// not the one asked; ErrUnknownOutcome then.
func (c *Client) Snapshot(ctx context.Context) (*pb.SnapshotResponse, error) {
	return call(ctx, c, false, func(ctx context.Context, s replica) (*pb.SnapshotResponse, error) {
		return s.admin.Snapshot(ctx, &pb.SnapshotRequest{})
	})
}

// Join adds a replica to the cluster. Retried across leader changes:
// adding a member that is already there with the same address is a no-op.
func (c *Client) Join(ctx context.Context, r *pb.JoinRequest) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.JoinResponse, error) {
		return s.admin.Join(ctx, r)
	})
	return err
}

// Remove removes a replica from the cluster (retried like Join).
func (c *Client) Remove(ctx context.Context, nodeID string) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.RemoveResponse, error) {
		return s.admin.Remove(ctx, &pb.RemoveRequest{NodeId: nodeID})
	})
	return err
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
