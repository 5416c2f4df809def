package store

import (
	"context"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM registry's operations (see apply_uam.go).

// PutUAM inserts or replaces the row (application, sub-cluster) and
// returns it as stored, with the store's times.
func (s *Store) PutUAM(ctx context.Context, r *pb.PutUAMRequest) (*pb.PutUAMResponse, error) {
	if err := s.cfg.Limits.ValidateUAM(r.GetRecord()); err != nil {
		return nil, err
	}
	return propose[*pb.PutUAMResponse](ctx, s, CmdPutUAM, &pb.PutUAMCommand{Record: r.GetRecord(), NowMs: nowMs()})
}

// DeleteUAM deletes one row, or all of an application's when the request
// names no sub-cluster, and says how many it deleted.
func (s *Store) DeleteUAM(ctx context.Context, r *pb.DeleteUAMRequest) (*pb.DeleteUAMResponse, error) {
	if err := s.cfg.Limits.ValidateDeleteUAM(r); err != nil {
		return nil, err
	}
	return propose[*pb.DeleteUAMResponse](ctx, s, CmdDeleteUAM, &pb.DeleteUAMCommand{ApplicationId: r.GetApplicationId(), SubClusterId: r.GetSubClusterId()})
}

// GetUAMs returns an application's rows ordered by sub-cluster (local
// read; see ReadBarrier).
func (s *Store) GetUAMs(appID string) ([]*pb.UAMRecord, error) {
	if err := s.cfg.Limits.ValidateGetUAMs(appID); err != nil {
		return nil, err
	}
	return s.fsm.getUAMs(appID)
}

// ListUAMs returns rows ordered by application and sub-cluster, filtered
// and limited as r says (local read; see ReadBarrier).
func (s *Store) ListUAMs(r *pb.ListUAMsRequest) ([]*pb.UAMRecord, error) {
	if err := s.cfg.Limits.ValidateListUAMs(r); err != nil {
		return nil, err
	}
	return s.fsm.listUAMs(r.GetSubClusterId(), int(r.GetLimit()))
}
