package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/gpg/bench"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
)

// newBenchGPGCmd is `yarnfed bench gpg`: the time of a full GPG policy
// round at scale and the store writes it makes.
func newBenchGPGCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var addrs string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "gpg",
		Short: "GPG policy round: 50 sub-clusters, 10,000 Kubernetes nodes, against a real state store",
		Long: `Starts a single-replica state store in this process (Raft log fsync on; or use --store to
measure a running, empty one), registers the sub-clusters and queues, feeds the nodes' batch capacity
through a synthetic capacity source, and times policy rounds: read membership and policies, sum every
node's capacity, compute weights for every queue, write. Prints p50/p99/max of the full round, the
compute part alone, and store writes per round, while capacity changes every round and then while
nothing changes.`,
		Example: `  yarnfed bench gpg
  yarnfed bench gpg --subclusters 50 --nodes 10000 --queues 20 --rounds 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.DiscardHandler)
			if verbose {
				log = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			cfg.Logger = log
			list := strings.Split(addrs, ",")
			if addrs == "" {
				dir, err := os.MkdirTemp("", "yarnfed-bench-gpg-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return err
				}
				raftAddr := l.Addr().String()
				l.Close()
				nc := node.DefaultConfig()
				nc.NodeID, nc.DataDir = "bench-gpg", filepath.Join(dir, "store")
				nc.GRPCAddress, nc.RaftAddress, nc.HTTPAddress, nc.Bootstrap = "127.0.0.1:0", raftAddr, "", true
				nc.Logger = log
				n, err := node.Start(cmd.Context(), nc)
				if err != nil {
					return err
				}
				defer n.Close()
				for deadline := time.Now().Add(20 * time.Second); !n.Store.IsLeader(); {
					if time.Now().After(deadline) {
						return fmt.Errorf("bench gpg: the store elected no leader")
					}
					time.Sleep(10 * time.Millisecond)
				}
				list = []string{n.GRPCAddr()}
			}
			c, err := client.New(client.Config{Addrs: list, Logger: log})
			if err != nil {
				return err
			}
			defer c.Close()
			cfg.Store = c
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "store", "", "use a running (empty) state store at these gRPC addresses instead of starting one")
	f.IntVar(&cfg.SubClusters, "subclusters", cfg.SubClusters, "sub-clusters")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "Kubernetes nodes lending batch capacity")
	f.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues with their own weighted policy (plus '*')")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "measured rounds per phase")
	f.BoolVar(&verbose, "verbose", false, "log GPG activity to stderr")
	return cmd
}
