package client

import (
	"context"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM registry (issue 19): one row per application and secondary
// sub-cluster, holding the UAM's attempt, its AMRMToken and the AMRMProxy
// that launched it. Only the AMRMProxy role may put rows; it and the
// router may read them; it, the router and the GPG may delete them
// (ErrPermissionDenied otherwise).

// PutUAM inserts or replaces the row (r.ApplicationId, r.SubClusterId)
// and returns it as stored: the store stamps UpdateTimeMs and keeps the
// first put's CreateTimeMs. ErrInvalidArgument for a malformed row (ids
// not YARN's, attempts of another application, the home as the UAM's
// sub-cluster, an AMRMToken that is not a TokenProto or over 64 KiB);
// ErrNotFound when either sub-cluster is not registered.
//
// Resent after an unknown outcome (idempotent): a resend writes what the
// caller wrote again, and the creation time stays the first attempt's. The
// row's writer is the proxy serving the application's current attempt; a
// resend that lands after another proxy re-attached could put the older
// row back, as a resent SetCounter could (statestore/DESIGN.md).
func (c *Client) PutUAM(ctx context.Context, r *pb.UAMRecord) (*pb.UAMRecord, error) {
	out, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.PutUAMResponse, error) {
		return s.PutUAM(ctx, &pb.PutUAMRequest{Record: r})
	})
	return out.GetStored(), err
}

// GetUAMs returns the application's rows ordered by sub-cluster; none is
// an empty result, not an error.
func (c *Client) GetUAMs(ctx context.Context, appID string, opts ...ReadOption) ([]*pb.UAMRecord, error) {
	out, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetUAMsResponse, error) {
		return s.GetUAMs(ctx, &pb.GetUAMsRequest{ApplicationId: appID, Read: readOpts(opts)})
	})
	return out.GetRecords(), err
}

// ListUAMs returns up to limit rows (0: all) ordered by application, then
// sub-cluster; only those on subClusterID when it is not empty.
func (c *Client) ListUAMs(ctx context.Context, subClusterID string, limit int, opts ...ReadOption) ([]*pb.UAMRecord, error) {
	out, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ListUAMsResponse, error) {
		return s.ListUAMs(ctx, &pb.ListUAMsRequest{SubClusterId: subClusterID, Limit: int32(min(max(limit, -1), 1<<31-1)), Read: readOpts(opts)})
	})
	return out.GetRecords(), err
}

// DeleteUAM deletes the row (appID, subClusterID), or every row of the
// application when subClusterID is empty, and returns how many rows went.
// Deleting nothing is not an error. Resent after an unknown outcome
// (deleting twice leaves the same state); the count is then the last
// attempt's, so it may say 0 for rows an earlier attempt deleted.
func (c *Client) DeleteUAM(ctx context.Context, appID, subClusterID string) (int, error) {
	out, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.DeleteUAMResponse, error) {
		return s.DeleteUAM(ctx, &pb.DeleteUAMRequest{ApplicationId: appID, SubClusterId: subClusterID})
	})
	return int(out.GetDeleted()), err
}
