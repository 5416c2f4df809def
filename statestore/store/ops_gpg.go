package store

import (
	"context"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Writes for the Global Policy Generator (see apply_gpg.go).

// SetPolicies stores many queues' policies in one entry.
func (s *Store) SetPolicies(ctx context.Context, r *pb.SetPoliciesRequest) (*pb.SetPoliciesResponse, error) {
	if err := s.cfg.Limits.ValidateSetPolicies(r); err != nil {
		return nil, err
	}
	return propose[*pb.SetPoliciesResponse](ctx, s, CmdSetPolicies, &pb.SetPoliciesCommand{Request: r, NowMs: nowMs()})
}

// AcquireLease acquires or renews a lease.
func (s *Store) AcquireLease(ctx context.Context, r *pb.AcquireLeaseRequest) (*pb.AcquireLeaseResponse, error) {
	if err := s.cfg.Limits.ValidateLease(r); err != nil {
		return nil, err
	}
	return propose[*pb.AcquireLeaseResponse](ctx, s, CmdAcquireLease, &pb.AcquireLeaseCommand{Request: r, NowMs: nowMs()})
}

// ReleaseLease gives up a lease early (a clean shutdown).
func (s *Store) ReleaseLease(ctx context.Context, r *pb.ReleaseLeaseRequest) (*pb.ReleaseLeaseResponse, error) {
	if err := s.cfg.Limits.ValidateReleaseLease(r); err != nil {
		return nil, err
	}
	return propose[*pb.ReleaseLeaseResponse](ctx, s, CmdReleaseLease, &pb.ReleaseLeaseCommand{Request: r, NowMs: nowMs()})
}

// PublishCapacity records externally measured capacity per sub-cluster.
func (s *Store) PublishCapacity(ctx context.Context, r *pb.PublishCapacityRequest) (*pb.PublishCapacityResponse, error) {
	if err := s.cfg.Limits.ValidatePublishCapacity(r); err != nil {
		return nil, err
	}
	return propose[*pb.PublishCapacityResponse](ctx, s, CmdPublishCapacity, &pb.PublishCapacityCommand{Request: r, NowMs: nowMs()})
}

// MarkSubClustersLost marks silent usable sub-clusters SC_LOST.
func (s *Store) MarkSubClustersLost(ctx context.Context, r *pb.MarkSubClustersLostRequest) (*pb.MarkSubClustersLostResponse, error) {
	if err := s.cfg.Limits.ValidateMarkLost(r); err != nil {
		return nil, err
	}
	return propose[*pb.MarkSubClustersLostResponse](ctx, s, CmdMarkSubClustersLost, &pb.MarkSubClustersLostCommand{Request: r, NowMs: nowMs()})
}

// DeleteApplicationHomes deletes old enough application homes.
func (s *Store) DeleteApplicationHomes(ctx context.Context, r *pb.DeleteApplicationHomesRequest) (*pb.DeleteApplicationHomesResponse, error) {
	if err := s.cfg.Limits.ValidateDeleteApplicationHomes(r); err != nil {
		return nil, err
	}
	return propose[*pb.DeleteApplicationHomesResponse](ctx, s, CmdDeleteApplicationHomes, &pb.DeleteApplicationHomesCommand{Request: r, NowMs: nowMs()})
}

// GetLease returns a lease (local read; see ReadBarrier).
func (s *Store) GetLease(name string) (*pb.Lease, error) {
	if err := s.cfg.Limits.id("lease name", name); err != nil {
		return nil, err
	}
	return s.fsm.getLease(name)
}
