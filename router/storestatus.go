package router

import (
	"context"
	"fmt"

	"github.com/yarnfed/yarnfed/router/fed"
)

// StoreStatusReader is optionally implemented by a StateStore that can
// describe the store behind it (replicas, Raft leader); the web UI's About
// page shows it. ClientStore implements it; the in-memory fake does not.
type StoreStatusReader interface {
	StoreStatus(ctx context.Context) (StoreStatus, error)
}

// StoreStatus describes the federation state store (router/fed).
type StoreStatus = fed.StoreStatus

// StoreMember is one replica of the store.
type StoreMember = fed.StoreMember

// StoreStatus asks the replica in use for the Raft cluster's status.
func (s *ClientStore) StoreStatus(ctx context.Context) (StoreStatus, error) {
	st, err := s.c.Status(ctx)
	if err != nil {
		return StoreStatus{}, fmt.Errorf("store status: %w", err)
	}
	out := StoreStatus{Kind: "yarnfed Raft state store", Replica: st.GetNodeId(), RaftState: st.GetRaftState(),
		LeaderID: st.GetLeaderId(), LeaderAddress: st.GetLeaderGrpcAddress(),
		Term: st.GetTerm(), AppliedIndex: st.GetAppliedIndex(), LastIndex: st.GetLastIndex()}
	for _, n := range st.GetNodes() {
		out.Members = append(out.Members, StoreMember{ID: n.GetNodeId(), RaftAddress: n.GetRaftAddress(),
			GRPCAddress: n.GetGrpcAddress(), Voter: n.GetVoter(), Leader: n.GetLeader()})
	}
	return out, nil
}
