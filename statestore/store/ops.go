package store

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"

	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Write operations: validate (bad input never reaches the log), stamp the
// leader's clock into the command (Apply must not read clocks), propose.
// Each needs this replica to be the leader; the server forwards otherwise.

func nowMs() int64 { return time.Now().UnixMilli() }

func propose[T proto.Message](ctx context.Context, s *Store, t CommandType, m proto.Message) (T, error) {
	var zero T
	resp, err := s.Propose(ctx, t, m)
	if err != nil {
		return zero, err
	}
	out, ok := resp.(T)
	if !ok {
		return zero, ErrUnknownOutcome
	}
	return out, nil
}

// RegisterSubCluster registers or re-registers a sub-cluster.
func (s *Store) RegisterSubCluster(ctx context.Context, r *pb.RegisterSubClusterRequest) (*pb.RegisterSubClusterResponse, error) {
	if err := s.cfg.Limits.ValidateSubClusterInfo(r.GetInfo()); err != nil {
		return nil, err
	}
	return propose[*pb.RegisterSubClusterResponse](ctx, s, CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: r.GetInfo(), NowMs: nowMs()})
}

// Heartbeat records a sub-cluster heartbeat.
func (s *Store) Heartbeat(ctx context.Context, r *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	if err := s.cfg.Limits.ValidateHeartbeat(r); err != nil {
		return nil, err
	}
	return propose[*pb.HeartbeatResponse](ctx, s, CmdHeartbeat, &pb.HeartbeatCommand{Request: r, NowMs: nowMs()})
}

// DeregisterSubCluster sets a sub-cluster's final state.
func (s *Store) DeregisterSubCluster(ctx context.Context, r *pb.DeregisterSubClusterRequest) (*pb.DeregisterSubClusterResponse, error) {
	if err := s.cfg.Limits.ValidateDeregister(r); err != nil {
		return nil, err
	}
	return propose[*pb.DeregisterSubClusterResponse](ctx, s, CmdDeregisterSubCluster, &pb.DeregisterSubClusterCommand{Request: r, NowMs: nowMs()})
}

// AddApplicationHome inserts an application's home if it has none and
// returns the stored one either way.
func (s *Store) AddApplicationHome(ctx context.Context, r *pb.AddApplicationHomeRequest) (*pb.AddApplicationHomeResponse, error) {
	if err := s.cfg.Limits.ValidateApplicationHome(r.GetHome()); err != nil {
		return nil, err
	}
	return propose[*pb.AddApplicationHomeResponse](ctx, s, CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: r.GetHome(), NowMs: nowMs()})
}

// AddApplicationHomes is AddApplicationHome for many applications in one
// call. Items fail independently (their code and message say why); the
// call itself fails only when nothing could be proposed.
func (s *Store) AddApplicationHomes(ctx context.Context, r *pb.AddApplicationHomesRequest) (*pb.AddApplicationHomesResponse, error) {
	out := &pb.AddApplicationHomesResponse{Results: make([]*pb.AddApplicationHomesResponse_Result, len(r.GetHomes()))}
	var cmds [][]byte
	var idx []int
	now := nowMs()
	for i, h := range r.GetHomes() {
		out.Results[i] = &pb.AddApplicationHomesResponse_Result{}
		if err := s.cfg.Limits.ValidateApplicationHome(h); err != nil {
			out.Results[i].Code, out.Results[i].Message = int32(codes.InvalidArgument), err.Error()
			continue
		}
		data, err := EncodeCommand(CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: h, NowMs: now})
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, data)
		idx = append(idx, i)
	}
	if len(cmds) == 0 {
		return out, nil
	}
	res, err := s.proposeMany(ctx, cmds)
	if err != nil {
		return nil, err
	}
	for j, r := range res {
		item := out.Results[idx[j]]
		if r.err != nil {
			item.Code, item.Message = int32(Code(r.err)), r.err.Error()
			continue
		}
		resp, ok := r.resp.(*pb.AddApplicationHomeResponse)
		if !ok {
			item.Code, item.Message = int32(codes.Aborted), ErrUnknownOutcome.Error()
			continue
		}
		item.Stored, item.Inserted = resp.GetStored(), resp.GetInserted()
	}
	return out, nil
}

// Code maps a store error to the gRPC code the server answers with.
func Code(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, ErrNotFound):
		return codes.NotFound
	case errors.Is(err, ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, ErrInvalidArgument):
		return codes.InvalidArgument
	case errors.Is(err, ErrFenced):
		return codes.FailedPrecondition
	case errors.Is(err, ErrUnknownOutcome):
		// May have been applied: retry only if idempotent. Checked before
		// Unavailable: an error wrapping both must not claim "not applied".
		return codes.Aborted
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrUnavailable):
		// Not applied: always safe to retry. The server marks these
		// answers (storepb.NotApplied).
		return codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}

// UpdateApplicationHome moves an application to another home.
func (s *Store) UpdateApplicationHome(ctx context.Context, r *pb.UpdateApplicationHomeRequest) (*pb.UpdateApplicationHomeResponse, error) {
	if err := s.cfg.Limits.ValidateApplicationHome(r.GetHome()); err != nil {
		return nil, err
	}
	return propose[*pb.UpdateApplicationHomeResponse](ctx, s, CmdUpdateApplicationHome, &pb.UpdateApplicationHomeCommand{Home: r.GetHome(), NowMs: nowMs()})
}

// DeleteApplicationHome deletes an application's home.
func (s *Store) DeleteApplicationHome(ctx context.Context, r *pb.DeleteApplicationHomeRequest) (*pb.DeleteApplicationHomeResponse, error) {
	if err := s.cfg.Limits.id("application id", r.GetApplicationId()); err != nil {
		return nil, err
	}
	return propose[*pb.DeleteApplicationHomeResponse](ctx, s, CmdDeleteApplicationHome, r)
}

// SetPolicy stores a queue's policy.
func (s *Store) SetPolicy(ctx context.Context, r *pb.SetPolicyRequest) (*pb.SetPolicyResponse, error) {
	if err := s.cfg.Limits.ValidatePolicy(r.GetPolicy()); err != nil {
		return nil, err
	}
	return propose[*pb.SetPolicyResponse](ctx, s, CmdSetPolicy, r)
}

// DeletePolicies deletes some or all policies.
func (s *Store) DeletePolicies(ctx context.Context, r *pb.DeletePoliciesRequest) (*pb.DeletePoliciesResponse, error) {
	if err := s.cfg.Limits.ValidateDeletePolicies(r); err != nil {
		return nil, err
	}
	return propose[*pb.DeletePoliciesResponse](ctx, s, CmdDeletePolicies, r)
}

// AddReservationHome inserts a reservation's home if absent.
func (s *Store) AddReservationHome(ctx context.Context, r *pb.AddReservationHomeRequest) (*pb.AddReservationHomeResponse, error) {
	if err := s.cfg.Limits.ValidateReservationHome(r.GetHome()); err != nil {
		return nil, err
	}
	return propose[*pb.AddReservationHomeResponse](ctx, s, CmdAddReservationHome, r)
}

// UpdateReservationHome moves a reservation.
func (s *Store) UpdateReservationHome(ctx context.Context, r *pb.UpdateReservationHomeRequest) (*pb.UpdateReservationHomeResponse, error) {
	if err := s.cfg.Limits.ValidateReservationHome(r.GetHome()); err != nil {
		return nil, err
	}
	return propose[*pb.UpdateReservationHomeResponse](ctx, s, CmdUpdateReservationHome, r)
}

// DeleteReservationHome deletes a reservation's home.
func (s *Store) DeleteReservationHome(ctx context.Context, r *pb.DeleteReservationHomeRequest) (*pb.DeleteReservationHomeResponse, error) {
	if err := s.cfg.Limits.id("reservation id", r.GetReservationId()); err != nil {
		return nil, err
	}
	return propose[*pb.DeleteReservationHomeResponse](ctx, s, CmdDeleteReservationHome, r)
}

// StoreMasterKey stores a new router master key.
func (s *Store) StoreMasterKey(ctx context.Context, r *pb.StoreMasterKeyRequest) (*pb.StoreMasterKeyResponse, error) {
	if err := s.cfg.Limits.ValidateMasterKey(r.GetKey()); err != nil {
		return nil, err
	}
	return propose[*pb.StoreMasterKeyResponse](ctx, s, CmdStoreMasterKey, r)
}

// RemoveMasterKey removes a master key.
func (s *Store) RemoveMasterKey(ctx context.Context, r *pb.RemoveMasterKeyRequest) (*pb.RemoveMasterKeyResponse, error) {
	return propose[*pb.RemoveMasterKeyResponse](ctx, s, CmdRemoveMasterKey, r)
}

// StoreToken stores a new delegation token.
func (s *Store) StoreToken(ctx context.Context, r *pb.StoreTokenRequest) (*pb.StoreTokenResponse, error) {
	if err := s.cfg.Limits.ValidateToken(r.GetToken()); err != nil {
		return nil, err
	}
	return propose[*pb.StoreTokenResponse](ctx, s, CmdStoreToken, r)
}

// UpdateToken replaces a stored delegation token (renewal).
func (s *Store) UpdateToken(ctx context.Context, r *pb.UpdateTokenRequest) (*pb.UpdateTokenResponse, error) {
	if err := s.cfg.Limits.ValidateToken(r.GetToken()); err != nil {
		return nil, err
	}
	return propose[*pb.UpdateTokenResponse](ctx, s, CmdUpdateToken, r)
}

// RemoveToken removes a delegation token.
func (s *Store) RemoveToken(ctx context.Context, r *pb.RemoveTokenRequest) (*pb.RemoveTokenResponse, error) {
	if err := s.cfg.Limits.tokenID(r.GetIdentifier(), 0); err != nil {
		return nil, err
	}
	return propose[*pb.RemoveTokenResponse](ctx, s, CmdRemoveToken, r)
}

// ReserveRange reserves a block of counter values.
func (s *Store) ReserveRange(ctx context.Context, r *pb.ReserveRangeRequest) (*pb.ReserveRangeResponse, error) {
	if err := ValidateReserveRange(r); err != nil {
		return nil, err
	}
	return propose[*pb.ReserveRangeResponse](ctx, s, CmdReserveRange, r)
}

// SetCounter sets a counter.
func (s *Store) SetCounter(ctx context.Context, r *pb.SetCounterRequest) (*pb.SetCounterResponse, error) {
	if err := ValidateSetCounter(r); err != nil {
		return nil, err
	}
	return propose[*pb.SetCounterResponse](ctx, s, CmdSetCounter, r)
}

// Format wipes all federation data.
func (s *Store) Format(ctx context.Context, r *pb.FormatRequest) (*pb.FormatResponse, error) {
	if !r.GetConfirm() {
		return nil, invalid("format needs confirm=true")
	}
	return propose[*pb.FormatResponse](ctx, s, CmdFormat, r)
}

// Local reads. They see this replica's applied state; call ReadBarrier
// first (on the leader) for a linearizable read.

// GetSubCluster returns one sub-cluster.
func (s *Store) GetSubCluster(id string) (*pb.SubClusterInfo, error) {
	if err := s.cfg.Limits.id("sub-cluster id", id); err != nil {
		return nil, err
	}
	return s.fsm.getSubCluster(id)
}

// ListSubClusters lists sub-clusters, optionally only RUNNING ones.
func (s *Store) ListSubClusters(filterInactive bool) ([]*pb.SubClusterInfo, error) {
	return s.fsm.listSubClusters(filterInactive)
}

// GetApplicationHome returns an application's home.
func (s *Store) GetApplicationHome(id string, withContext bool) (*pb.ApplicationHome, error) {
	if err := s.cfg.Limits.id("application id", id); err != nil {
		return nil, err
	}
	return s.fsm.getApp(id, withContext)
}

// ListApplicationHomes lists homes newest first.
func (s *Store) ListApplicationHomes(r *pb.ListApplicationHomesRequest) (*pb.ListApplicationHomesResponse, error) {
	limit := int(r.GetLimit())
	if limit < 0 {
		return nil, invalid("negative limit %d", limit)
	}
	if limit == 0 || limit > s.cfg.Limits.MaxListLimit {
		limit = s.cfg.Limits.MaxListLimit
	}
	if t := r.GetPageToken(); len(t) > 0 && len(t) < 8 {
		return nil, invalid("malformed page token")
	}
	homes, next, err := s.fsm.listApps(r.GetSubClusterId(), limit, r.GetPageToken(), r.GetIncludeContext())
	if err != nil {
		return nil, err
	}
	return &pb.ListApplicationHomesResponse{Homes: homes, NextPageToken: next}, nil
}

// GetPolicy returns a queue's policy (no fallback to "*": callers decide).
func (s *Store) GetPolicy(queue string) (*pb.PolicyConfiguration, error) {
	if err := s.cfg.Limits.id("queue", queue); err != nil {
		return nil, err
	}
	return s.fsm.getPolicy(queue)
}

// ListPolicies lists all policies.
func (s *Store) ListPolicies() ([]*pb.PolicyConfiguration, error) { return s.fsm.listPolicies() }

// GetReservationHome returns a reservation's home.
func (s *Store) GetReservationHome(id string) (*pb.ReservationHome, error) {
	if err := s.cfg.Limits.id("reservation id", id); err != nil {
		return nil, err
	}
	return s.fsm.getReservation(id)
}

// ListReservationHomes lists reservation homes.
func (s *Store) ListReservationHomes() ([]*pb.ReservationHome, error) {
	return s.fsm.listReservations()
}

// GetMasterKey returns a master key.
func (s *Store) GetMasterKey(id int32) (*pb.MasterKey, error) { return s.fsm.getMasterKey(id) }

// GetToken returns a delegation token.
func (s *Store) GetToken(id []byte) (*pb.DelegationToken, error) {
	if err := s.cfg.Limits.tokenID(id, 0); err != nil {
		return nil, err
	}
	return s.fsm.getToken(id)
}

// GetCounter returns a counter's value (the last value handed out).
func (s *Store) GetCounter(c pb.Counter) (int64, error) {
	if err := ValidateCounter(c); err != nil {
		return 0, err
	}
	return s.fsm.getCounter(c)
}

// GetVersion returns the stored and current data versions.
func (s *Store) GetVersion() (*pb.GetVersionResponse, error) {
	v, err := s.fsm.getVersion()
	if err != nil {
		return nil, err
	}
	return &pb.GetVersionResponse{Stored: v, Current: CurrentVersion}, nil
}
