package client

import (
	"context"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Calls for the Global Policy Generator: a lease so one GPG acts at a
// time, and writes fenced by it (ErrFenced once the lease is lost).

// Fence names the lease tenure a fenced write depends on.
type Fence struct {
	Lease  string
	Holder string
	Epoch  uint64
}

func (f *Fence) pb() *pb.Fence {
	if f == nil {
		return nil
	}
	return &pb.Fence{Lease: f.Lease, Holder: f.Holder, Epoch: f.Epoch}
}

// AcquireLease acquires the named lease for holder, or renews it if holder
// has it; acquired is false (and lease names the holder) when another
// holder has an unexpired one. Retried across leader changes: acquiring is
// idempotent for the same holder.
func (c *Client) AcquireLease(ctx context.Context, name, holder string, ttlMs int64) (lease *pb.Lease, acquired bool, err error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.AcquireLeaseResponse, error) {
		return s.AcquireLease(ctx, &pb.AcquireLeaseRequest{Name: name, Holder: holder, TtlMs: ttlMs})
	})
	return r.GetLease(), r.GetAcquired(), err
}

// ReleaseLease ends holder's tenure early (no-op if it is not held).
func (c *Client) ReleaseLease(ctx context.Context, name, holder string, epoch uint64) error {
	_, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.ReleaseLeaseResponse, error) {
		return s.ReleaseLease(ctx, &pb.ReleaseLeaseRequest{Name: name, Holder: holder, Epoch: epoch})
	})
	return err
}

// GetLease reads a lease. ErrNotFound if it was never acquired.
func (c *Client) GetLease(ctx context.Context, name string, opts ...ReadOption) (*pb.Lease, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.GetLeaseResponse, error) {
		return s.GetLease(ctx, &pb.GetLeaseRequest{Name: name, Read: readOpts(opts)})
	})
	return r.GetLease(), err
}

// SetPolicies writes many policies (and, optionally, published
// capacities) as one store entry. With SkipPinned, queues whose stored
// policy is pinned are left alone (decided when the write applies). Fence
// may be nil.
func (c *Client) SetPolicies(ctx context.Context, w PoliciesWrite) (*pb.SetPoliciesResponse, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.SetPoliciesResponse, error) {
		return s.SetPolicies(ctx, &pb.SetPoliciesRequest{Policies: w.Policies, SkipPinned: w.SkipPinned, Capacities: w.Capacities, Fence: w.Fence.pb()})
	})
	c.cache.wrote(len(w.Capacities) > 0, true)
	return r, err
}

// PoliciesWrite is one SetPolicies call.
type PoliciesWrite struct {
	Policies   []*pb.PolicyConfiguration
	Capacities []*pb.PublishCapacityRequest_Item
	SkipPinned bool
	Fence      *Fence
}

// PublishCapacity records externally measured capacities (heartbeats never
// overwrite them). fence may be nil.
func (c *Client) PublishCapacity(ctx context.Context, items []*pb.PublishCapacityRequest_Item, fence *Fence) (*pb.PublishCapacityResponse, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.PublishCapacityResponse, error) {
		return s.PublishCapacity(ctx, &pb.PublishCapacityRequest{Items: items, Fence: fence.pb()})
	})
	c.cache.wrote(true, false)
	return r, err
}

// MarkSubClustersLost marks the named usable sub-clusters SC_LOST if their
// last heartbeat is still before heartbeatBeforeMs when applied; it returns
// the ones marked.
func (c *Client) MarkSubClustersLost(ctx context.Context, ids []string, heartbeatBeforeMs int64, fence *Fence) ([]string, error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.MarkSubClustersLostResponse, error) {
		return s.MarkSubClustersLost(ctx, &pb.MarkSubClustersLostRequest{SubClusterIds: ids, HeartbeatBeforeMs: heartbeatBeforeMs, Fence: fence.pb()})
	})
	c.cache.wrote(true, false)
	return r.GetMarked(), err
}

// DeleteApplicationHomes deletes the named homes created before
// createdBeforeMs; it returns the ones deleted. Idempotent: a retry finds
// the rows gone and reports them kept.
func (c *Client) DeleteApplicationHomes(ctx context.Context, ids []string, createdBeforeMs int64, fence *Fence) (deleted []string, err error) {
	r, err := call(ctx, c, true, func(ctx context.Context, s replica) (*pb.DeleteApplicationHomesResponse, error) {
		return s.DeleteApplicationHomes(ctx, &pb.DeleteApplicationHomesRequest{ApplicationIds: ids, CreatedBeforeMs: createdBeforeMs, Fence: fence.pb()})
	})
	return r.GetDeleted(), err
}
