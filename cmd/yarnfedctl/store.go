package main

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/statestore/client"
)

func (c *ctl) newStoreCmd() *cobra.Command {
	g := newGroup("store", "The Raft state store itself")
	g.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the store's leader, replicas and Raft indexes, as the replica in use sees them",
		Example: `  yarnfedctl store status
  yarnfedctl --store 10.0.0.1:9090,10.0.0.2:9090 store status -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				st, err := cl.Status(ctx)
				if err != nil {
					return err
				}
				stored, current, verr := cl.GetVersion(ctx)
				if c.output == "json" {
					type nodeJSON struct {
						NodeID      string `json:"nodeId"`
						RaftAddress string `json:"raftAddress"`
						GRPCAddress string `json:"grpcAddress,omitempty"`
						Voter       bool   `json:"voter"`
						Leader      bool   `json:"leader"`
					}
					out := struct {
						NodeID            string     `json:"nodeId"`
						RaftState         string     `json:"raftState"`
						LeaderID          string     `json:"leaderId"`
						LeaderGRPCAddress string     `json:"leaderGrpcAddress"`
						Term              uint64     `json:"term"`
						AppliedIndex      uint64     `json:"appliedIndex"`
						LastIndex         uint64     `json:"lastIndex"`
						DataVersion       string     `json:"dataVersion,omitempty"`
						ServerVersion     string     `json:"serverVersion,omitempty"`
						Nodes             []nodeJSON `json:"nodes"`
					}{NodeID: st.GetNodeId(), RaftState: st.GetRaftState(), LeaderID: st.GetLeaderId(), LeaderGRPCAddress: st.GetLeaderGrpcAddress(),
						Term: st.GetTerm(), AppliedIndex: st.GetAppliedIndex(), LastIndex: st.GetLastIndex(), Nodes: []nodeJSON{}}
					if verr == nil {
						out.DataVersion, out.ServerVersion = version(stored.GetMajor(), stored.GetMinor()), version(current.GetMajor(), current.GetMinor())
					}
					for _, n := range st.GetNodes() {
						out.Nodes = append(out.Nodes, nodeJSON{n.GetNodeId(), n.GetRaftAddress(), n.GetGrpcAddress(), n.GetVoter(), n.GetLeader()})
					}
					return writeJSON(c.out, out)
				}
				t := newTable(c.out, "Answered by", st.GetNodeId()+" ("+st.GetRaftState()+")")
				t.row("Leader", st.GetLeaderId()+" "+st.GetLeaderGrpcAddress())
				t.row("Term", strconv.FormatUint(st.GetTerm(), 10))
				t.row("Applied index", strconv.FormatUint(st.GetAppliedIndex(), 10))
				t.row("Last index", strconv.FormatUint(st.GetLastIndex(), 10))
				if verr == nil {
					t.row("Data version", version(stored.GetMajor(), stored.GetMinor())+" (server "+version(current.GetMajor(), current.GetMinor())+")")
				}
				if err := t.flush(); err != nil {
					return err
				}
				c.out.Write([]byte("\n"))
				nt := newTable(c.out, "NODE", "RAFT ADDRESS", "GRPC ADDRESS", "ROLE")
				for _, n := range st.GetNodes() {
					role := "voter"
					if !n.GetVoter() {
						role = "non-voter"
					}
					if n.GetLeader() {
						role += ", leader"
					}
					nt.row(n.GetNodeId(), n.GetRaftAddress(), n.GetGrpcAddress(), role)
				}
				return nt.flush()
			})
		},
	})
	return g
}

func version(major, minor int32) string {
	return strconv.Itoa(int(major)) + "." + strconv.Itoa(int(minor))
}
