package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// ClientStore adapts statestore/client (retries across replicas and leader
// changes, a watch-fed membership and policy cache) to StateStore,
// ReservationStore and MembershipWatcher. This is the production store.
type ClientStore struct {
	c *client.Client
}

// NewClientStore wraps a state store client.
func NewClientStore(c *client.Client) *ClientStore { return &ClientStore{c: c} }

func (s *ClientStore) GetSubClusters(ctx context.Context, activeOnly bool) ([]SubClusterInfo, error) {
	list, err := s.c.ListSubClusters(ctx, activeOnly)
	if err != nil {
		return nil, fmt.Errorf("list sub-clusters: %w", err)
	}
	out := make([]SubClusterInfo, 0, len(list))
	for _, sc := range list {
		out = append(out, fromPB(sc))
	}
	return out, nil
}

func fromPB(sc *storepb.SubClusterInfo) SubClusterInfo {
	var pub *PublishedCapacity
	if p := sc.GetPublishedCapacity(); p != nil {
		pub = &PublishedCapacity{MemoryMB: p.GetMemoryMb(), VCores: p.GetVcores(), Nodes: p.GetNodes(),
			ObservedAt: time.UnixMilli(p.GetObservedMs()), PublishedAt: time.UnixMilli(p.GetPublishedMs())}
	}
	return SubClusterInfo{
		Published: pub,
		ID:        SubClusterID(sc.GetSubClusterId()), AMRMServiceAddress: sc.GetAmrmServiceAddress(),
		ClientRMServiceAddress: sc.GetClientRmServiceAddress(), RMAdminServiceAddress: sc.GetRmAdminServiceAddress(),
		RMWebServiceAddress: sc.GetRmWebServiceAddress(), State: SubClusterState(sc.GetState()),
		LastHeartbeat: time.UnixMilli(sc.GetLastHeartbeatMs()), LastStartTime: time.UnixMilli(sc.GetLastStartTimeMs()),
		Capability: sc.GetCapability(),
	}
}

// AddApplicationHome is insert-if-absent. The client does not resend an
// insert whose outcome is unknown (a resend is not the same operation
// under concurrent writes); the router inserts again instead, as a new
// call: if the first one was applied, the new one finds the row and
// reports inserted=false, which only makes the router treat the app as
// possibly submitted already (and check the stored context is its own).
func (s *ClientStore) AddApplicationHome(ctx context.Context, app string, sc SubClusterID, submission []byte) (SubClusterID, []byte, bool, error) {
	home := &storepb.ApplicationHome{ApplicationId: app, HomeSubClusterId: string(sc), SubmissionContext: submission}
	stored, inserted, err := s.c.AddApplicationHome(ctx, home)
	for try := 1; try < maxUnknownRetries && errors.Is(err, client.ErrUnknownOutcome) && ctx.Err() == nil; try++ {
		// The answer stands on its own: inserted=false (perhaps our own
		// first call's row) comes with the stored context to compare.
		stored, inserted, err = s.c.AddApplicationHome(ctx, home)
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("add home of %s: %w", app, err)
	}
	return SubClusterID(stored.GetHomeSubClusterId()), stored.GetSubmissionContext(), inserted, nil
}

// maxUnknownRetries bounds the router's new calls after answers of
// unknown outcome (each call has the client's own retry budget).
const maxUnknownRetries = 4

// UpdateApplicationHome is not resent by the client once it may have
// reached the store (a resend could undo a concurrent update). An unknown
// outcome is resolved by a linearizable read: if the home is now sc, an
// update to sc took effect within the call and the caller may go on.
func (s *ClientStore) UpdateApplicationHome(ctx context.Context, app string, sc SubClusterID) error {
	err := s.c.UpdateApplicationHome(ctx, &storepb.ApplicationHome{ApplicationId: app, HomeSubClusterId: string(sc)})
	if errors.Is(err, client.ErrUnknownOutcome) {
		if h, rerr := s.c.GetApplicationHome(ctx, app, false); rerr == nil && h.GetHomeSubClusterId() == string(sc) {
			return nil
		}
	}
	return mapNotFound(err, ErrNoHome, "update home of "+app)
}

// GetApplicationHome is linearizable: a home written through another
// router is seen at once.
func (s *ClientStore) GetApplicationHome(ctx context.Context, app string) (SubClusterID, error) {
	h, err := s.c.GetApplicationHome(ctx, app, false)
	if err != nil {
		return "", mapNotFound(err, ErrNoHome, "home of "+app)
	}
	return SubClusterID(h.GetHomeSubClusterId()), nil
}

// GetPolicyConfiguration returns the queue's own entry (cached by the
// client); the router falls back to "*" and its default itself.
func (s *ClientStore) GetPolicyConfiguration(ctx context.Context, queue string) (PolicyConfiguration, error) {
	p, err := s.c.GetPolicy(ctx, queue)
	if err != nil {
		return PolicyConfiguration{}, mapNotFound(err, ErrNoPolicy, "policy of queue "+queue)
	}
	return PolicyConfiguration{Queue: p.GetQueue(), Type: p.GetType(), Params: p.GetParams()}, nil
}

func (s *ClientStore) AddReservationHome(ctx context.Context, id string, sc SubClusterID) (SubClusterID, error) {
	h := &storepb.ReservationHome{ReservationId: id, HomeSubClusterId: string(sc)}
	stored, _, err := s.c.AddReservationHome(ctx, h)
	for try := 1; try < maxUnknownRetries && errors.Is(err, client.ErrUnknownOutcome) && ctx.Err() == nil; try++ {
		stored, _, err = s.c.AddReservationHome(ctx, h) // as in AddApplicationHome
	}
	if err != nil {
		return "", fmt.Errorf("add reservation home of %s: %w", id, err)
	}
	return SubClusterID(stored.GetHomeSubClusterId()), nil
}

func (s *ClientStore) GetReservationHome(ctx context.Context, id string) (SubClusterID, error) {
	h, err := s.c.GetReservationHome(ctx, id)
	if err != nil {
		return "", mapNotFound(err, ErrNoHome, "reservation home of "+id)
	}
	return SubClusterID(h.GetHomeSubClusterId()), nil
}

// WatchSubClusters signals whenever the client's cache drops its
// membership list (a watch event, a resync, the stream going down). The
// signal comes after the drop, so the refresh it triggers reads the store,
// not the list from before the change. (It used to open a second watch
// stream of its own; an event on that stream could arrive before the
// cache's own stream had dropped the list, and the refresh then cached
// the old rows until the next poll: the 1 s tail of LOST propagation in
// `bench federation`.) A client without a cache gets a stream of its own:
// its reads are never cached, so nothing races.
func (s *ClientStore) WatchSubClusters(ctx context.Context) (<-chan struct{}, error) {
	if ch, err := s.c.MembershipChanges(ctx); err == nil {
		return ch, nil
	} else if !errors.Is(err, client.ErrCacheDisabled) {
		return nil, fmt.Errorf("membership changes: %w", err)
	}
	out := make(chan struct{}, 1)
	notify := func() {
		select {
		case out <- struct{}{}:
		default:
		}
	}
	go func() {
		for ctx.Err() == nil {
			if ch, err := s.c.WatchEvents(ctx, &storepb.WatchRequest{Membership: true}); err == nil {
				notify()
				for range ch {
					notify()
				}
			}
			_ = sleep(ctx, 500*time.Millisecond)
		}
	}()
	return out, nil
}

func mapNotFound(err, sentinel error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, sentinel)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Delegation-token state (dtoken.Store).

func (s *ClientStore) StoreMasterKey(ctx context.Context, id int32, key []byte, expiry time.Time) error {
	return s.c.StoreMasterKey(ctx, &storepb.MasterKey{KeyId: id, KeyBytes: key, ExpiryDateMs: expiry.UnixMilli()})
}

func (s *ClientStore) GetMasterKey(ctx context.Context, id int32) ([]byte, error) {
	k, err := s.c.GetMasterKey(ctx, id)
	if err != nil {
		return nil, mapNotFound(err, dtoken.ErrNotFound, fmt.Sprintf("master key %d", id))
	}
	return k.GetKeyBytes(), nil
}

func (s *ClientStore) StoreToken(ctx context.Context, t dtoken.StoredToken) error {
	return s.c.StoreToken(ctx, &storepb.DelegationToken{Identifier: t.Identifier, RenewDateMs: t.RenewDate.UnixMilli(), TokenInfo: t.Password})
}

func (s *ClientStore) UpdateToken(ctx context.Context, t dtoken.StoredToken) error {
	err := s.c.UpdateToken(ctx, &storepb.DelegationToken{Identifier: t.Identifier, RenewDateMs: t.RenewDate.UnixMilli(), TokenInfo: t.Password})
	return mapNotFound(err, dtoken.ErrNotFound, "update token")
}

func (s *ClientStore) RemoveToken(ctx context.Context, identifier []byte) error {
	return mapNotFound(s.c.RemoveToken(ctx, identifier), dtoken.ErrNotFound, "remove token")
}

func (s *ClientStore) GetToken(ctx context.Context, identifier []byte) (dtoken.StoredToken, error) {
	t, err := s.c.GetToken(ctx, identifier)
	if err != nil {
		return dtoken.StoredToken{}, mapNotFound(err, dtoken.ErrNotFound, "get token")
	}
	return dtoken.StoredToken{Identifier: t.GetIdentifier(), Password: t.GetTokenInfo(), RenewDate: time.UnixMilli(t.GetRenewDateMs())}, nil
}

func (s *ClientStore) ReserveMasterKeyID(ctx context.Context) (int32, error) {
	first, err := s.c.ReserveRange(ctx, storepb.Counter_COUNTER_MASTER_KEY_ID, 1)
	return int32(first), err
}

func (s *ClientStore) ReserveTokenSequence(ctx context.Context, n int) (int32, error) {
	first, err := s.c.ReserveRange(ctx, storepb.Counter_COUNTER_TOKEN_SEQUENCE, int64(n))
	return int32(first), err
}

// SavePolicy writes a queue policy exactly as `yarnfedctl policy` does.
func (s *ClientStore) SavePolicy(ctx context.Context, p PolicyConfiguration) error {
	return s.c.SetPolicy(ctx, &storepb.PolicyConfiguration{Queue: p.Queue, Type: p.Type, Params: p.Params})
}

func (s *ClientStore) ListPolicies(ctx context.Context) ([]PolicyConfiguration, error) {
	ps, err := s.c.ListPolicies(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]PolicyConfiguration, len(ps))
	for i, p := range ps {
		out[i] = PolicyConfiguration{Queue: p.GetQueue(), Type: p.GetType(), Params: p.GetParams()}
	}
	return out, nil
}

func (s *ClientStore) DeletePolicies(ctx context.Context, queues []string) error {
	return s.c.DeletePolicies(ctx, queues...)
}

func (s *ClientStore) SetSubClusterState(ctx context.Context, id SubClusterID, state SubClusterState) error {
	return s.c.DeregisterSubCluster(ctx, string(id), storepb.SubClusterState(state))
}

func (s *ClientStore) RemoveApplicationHome(ctx context.Context, app string) error {
	return s.c.DeleteApplicationHome(ctx, app)
}

// GetApplicationSubmission is appacl.SubmissionStore for the state store client.
func (s *ClientStore) GetApplicationSubmission(ctx context.Context, app string) ([]byte, error) {
	h, err := s.c.GetApplicationHome(ctx, app, true)
	if err != nil {
		return nil, mapNotFound(err, ErrNoHome, "home of "+app)
	}
	return h.GetSubmissionContext(), nil
}
