package gpg

import (
	"context"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Store is what the GPG needs from the federation state store.
// *client.Client implements it; gpgtest.FakeStore is an in-memory fake for
// unit tests.
type Store interface {
	ListSubClusters(ctx context.Context, filterInactive bool) ([]*pb.SubClusterInfo, error)
	ListPolicies(ctx context.Context) ([]*pb.PolicyConfiguration, error)
	ListApplicationHomes(ctx context.Context, q client.ListQuery, opts ...client.ReadOption) ([]*pb.ApplicationHome, []byte, error)
	// GetApplicationHome fails with an error wrapping client.ErrNotFound
	// when the application has no home row.
	GetApplicationHome(ctx context.Context, appID string, withContext bool, opts ...client.ReadOption) (*pb.ApplicationHome, error)
	WatchEvents(ctx context.Context, r *pb.WatchRequest) (<-chan *pb.WatchEvent, error)

	AcquireLease(ctx context.Context, name, holder string, ttlMs int64) (*pb.Lease, bool, error)
	ReleaseLease(ctx context.Context, name, holder string, epoch uint64) error

	// Fenced writes: each fails with client.ErrFenced once the lease named
	// in the fence is no longer held by its holder and epoch.
	SetPolicies(ctx context.Context, w client.PoliciesWrite) (*pb.SetPoliciesResponse, error)
	MarkSubClustersLost(ctx context.Context, ids []string, heartbeatBeforeMs int64, fence *client.Fence) ([]string, error)
	DeleteApplicationHomes(ctx context.Context, ids []string, createdBeforeMs int64, fence *client.Fence) ([]string, error)
}

var _ Store = (*client.Client)(nil)

// UAMRegistry is what the UAM reaper needs of the state store's UAM
// registry: deleting the row of a UAM it killed. The GPG role may delete
// rows but not read them (they hold live AMRMTokens), so the reaper finds
// UAMs on the RMs, never in the registry. DeleteUAM is idempotent and
// returns how many rows it removed. *client.Client implements it.
type UAMRegistry interface {
	DeleteUAM(ctx context.Context, appID, subClusterID string) (int, error)
}

var _ UAMRegistry = (*client.Client)(nil)
