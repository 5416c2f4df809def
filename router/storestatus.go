package router

import (
	"context"
	"fmt"
)

// StoreStatusReader is optionally implemented by a StateStore that can
// describe the store behind it (replicas, Raft leader); the web UI's About
// page shows it. ClientStore implements it; the in-memory fake does not.
type StoreStatusReader interface {
	StoreStatus(ctx context.Context) (StoreStatus, error)
}

// StoreStatus describes the federation state store as one replica sees it.
type StoreStatus struct {
	Kind          string // e.g. "raft state store"
	Replica       string // the replica that answered
	RaftState     string // its Raft role
	LeaderID      string
	LeaderAddress string // the leader's gRPC address
	Members       []StoreMember
	Term          uint64
	AppliedIndex  uint64
	LastIndex     uint64
}

// StoreMember is one replica of the store.
type StoreMember struct {
	ID, RaftAddress, GRPCAddress string
	Voter, Leader                bool
}

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
