package server

import (
	"context"
	"errors"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Join adds a node; on a follower it is forwarded to the leader.
func (s *Server) Join(ctx context.Context, r *pb.JoinRequest) (*pb.JoinResponse, error) {
	if s.st.IsLeader() {
		err := s.st.Join(ctx, r)
		if !errors.Is(err, store.ErrNotLeader) {
			return &pb.JoinResponse{}, ToStatus(err)
		}
	}
	c, fctx, err := s.leader(ctx)
	if err != nil {
		return nil, err
	}
	return pb.NewClusterClient(c).Join(fctx, r)
}

// Remove takes a node out; on a follower it is forwarded to the leader.
func (s *Server) Remove(ctx context.Context, r *pb.RemoveRequest) (*pb.RemoveResponse, error) {
	if s.st.IsLeader() {
		err := s.st.Remove(ctx, r.GetNodeId())
		if !errors.Is(err, store.ErrNotLeader) {
			return &pb.RemoveResponse{}, ToStatus(err)
		}
	}
	c, fctx, err := s.leader(ctx)
	if err != nil {
		return nil, err
	}
	return pb.NewClusterClient(c).Remove(fctx, r)
}

// Status reports this replica's view; it is never forwarded.
func (s *Server) Status(context.Context, *pb.StatusRequest) (*pb.StatusResponse, error) {
	st, err := s.st.Status()
	return st, ToStatus(err)
}

// Snapshot takes a Raft snapshot of this replica; it is never forwarded
// (each replica snapshots its own state).
func (s *Server) Snapshot(context.Context, *pb.SnapshotRequest) (*pb.SnapshotResponse, error) {
	resp, err := s.st.TakeSnapshot()
	return resp, ToStatus(err)
}
