package router

import (
	"context"
	"time"

	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router/fed"
)

// SubClusterID names a sub-cluster (router/fed holds the type the rooms share).
type SubClusterID = fed.SubClusterID

// SubClusterState is Hadoop's sub-cluster state, numbered as in its proto;
// the router shares the policies package's type so the two never drift.
type SubClusterState = policies.SubClusterState

// Sub-cluster states, numbered as in yarn_server_federation_protos.proto.
const (
	StateNew             = policies.StateNew
	StateRunning         = policies.StateRunning
	StateUnhealthy       = policies.StateUnhealthy
	StateDecommissioning = policies.StateDecommissioning
	StateLost            = policies.StateLost
	StateUnregistered    = policies.StateUnregistered
	StateDecommissioned  = policies.StateDecommissioned
)

// SubClusterInfo is the membership row the router needs (Hadoop SubClusterInfo).
type SubClusterInfo = fed.SubClusterInfo

// PublishedCapacity is the capacity the GPG measured for a sub-cluster.
type PublishedCapacity = fed.PublishedCapacity

// PolicyConfiguration is the stored per-queue policy (Hadoop
// SubClusterPolicyConfiguration): the manager type and its opaque params.
type PolicyConfiguration struct {
	Queue  string
	Type   string
	Params []byte
}

// StateStore is what the router needs from the federation state store. The
// real implementation adapts statestore/client; routertest.Store is an
// in-memory fake for tests.
//
// Error contract: GetApplicationHome returns an error wrapping ErrNoHome when
// the store has no row; GetPolicyConfiguration returns one wrapping
// ErrNoPolicy when the queue has no entry.
type StateStore interface {
	// GetSubClusters lists membership; activeOnly keeps RUNNING rows only.
	GetSubClusters(ctx context.Context, activeOnly bool) ([]SubClusterInfo, error)
	// AddApplicationHome inserts app -> sc, with the trimmed submission
	// context (nil: none), unless a row exists. It returns the home now
	// stored (the existing one on a resubmission), the submission stored
	// with it (nil if none was), and whether this call inserted it.
	AddApplicationHome(ctx context.Context, app string, sc SubClusterID, submission []byte) (stored SubClusterID, storedSubmission []byte, inserted bool, err error)
	// UpdateApplicationHome overwrites the home of app.
	UpdateApplicationHome(ctx context.Context, app string, sc SubClusterID) error
	GetApplicationHome(ctx context.Context, app string) (SubClusterID, error)
	GetPolicyConfiguration(ctx context.Context, queue string) (PolicyConfiguration, error)
	UAMRegistry
}

// UAMRow is one row of the UAM registry (statestore UAMRecord) as the
// router reads it: where an application runs an unmanaged AM besides its
// home. The AMRMToken is left out: the router never needs it.
type UAMRow struct {
	App        string
	SubCluster SubClusterID // the secondary the UAM runs on
	Home       SubClusterID
	Attempt    string // the UAM's attempt on the secondary
	Proxy      string // the AMRMProxy that launched it
	AMAttempt  string // the home AM attempt it serves
	User       string
	Queue      string
	Registered bool
	Created    time.Time
	Updated    time.Time
}

// UAMRegistry is the router's part of the UAM registry (UAMAPI.md): read
// an application's rows (to kill and to show its secondaries) and delete
// them after a kill. Both are idempotent.
type UAMRegistry interface {
	// GetUAMs lists app's rows, ordered by sub-cluster; none is no error.
	// stale allows a replica's possibly older copy (display only).
	GetUAMs(ctx context.Context, app string, stale bool) ([]UAMRow, error)
	// DeleteUAM removes app's row on sc, or every row of app when sc is
	// empty, and returns how many it removed.
	DeleteUAM(ctx context.Context, app string, sc SubClusterID) (int, error)
}

// ReservationStore is optionally implemented by a StateStore that keeps
// reservation homes; without it reservation calls that need a home fan out.
type ReservationStore interface {
	AddReservationHome(ctx context.Context, reservation string, sc SubClusterID) (SubClusterID, error)
	GetReservationHome(ctx context.Context, reservation string) (SubClusterID, error)
}

// MembershipWatcher is optionally implemented by a StateStore that can push
// membership changes; the router then refreshes at once instead of waiting
// for its poll tick (so an RM failover is routable within milliseconds).
type MembershipWatcher interface {
	// WatchSubClusters sends a value whenever membership may have changed
	// and closes the channel when ctx ends or the watch breaks.
	WatchSubClusters(ctx context.Context) (<-chan struct{}, error)
}

// AdminStore is what the router's admin protocol (RM admin port, `yarn
// routeradmin`) writes: queue policies, sub-cluster deregistration and
// application-home cleanup. A StateStore without it serves the admin
// port's RM calls but refuses the federation ones.
type AdminStore interface {
	// SavePolicy writes (creates or replaces) one queue's policy.
	SavePolicy(ctx context.Context, p PolicyConfiguration) error
	// ListPolicies returns every stored queue policy.
	ListPolicies(ctx context.Context) ([]PolicyConfiguration, error)
	// DeletePolicies removes the named queues' policies.
	DeletePolicies(ctx context.Context, queues []string) error
	// SetSubClusterState sets a sub-cluster's state (deregistration).
	SetSubClusterState(ctx context.Context, id SubClusterID, state SubClusterState) error
	// RemoveApplicationHome deletes an application's home row.
	RemoveApplicationHome(ctx context.Context, app string) error
}
