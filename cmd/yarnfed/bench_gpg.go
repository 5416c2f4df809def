//go:build bench

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
	"github.com/yarnfed/yarnfed/gpg/kube/kubebench"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// newBenchGPGCmd is `yarnfed bench gpg`: the time of a full GPG policy
// round at scale and the store writes it makes.
func newBenchGPGCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	kcfg := kubebench.DefaultConfig()
	var addrs string
	var sec security.ClientFlags // for --store: a running store is a client like any other
	var verbose bool
	cmd := &cobra.Command{
		Use:   "gpg",
		Short: "GPG: Kubernetes full recompute (10,000 nodes) and policy round (50 sub-clusters) against their targets",
		Long: `Two measurements, each printed against the issue's target (<= 100 ms, one store write per round):

1. Kubernetes full recompute (package gpg/kube): a synthetic co-location cluster (--nodes nodes,
--pods-per-node pods each, one of them a NodeManager, over --subclusters sub-clusters) is served to a
real gpg/kube Source from memory (its informers, transforms and indexes run; no API server), then
every node's usable batch capacity and the per-sub-cluster sums are recomputed from scratch
--kube-rounds times. The figures are checked against the closed-form truth.

2. GPG policy round: starts a single-replica state store in this process (Raft log fsync on; or use --store to
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
				nc.Insecure = true // loopback benchmark, in this process
				sec = security.ClientFlags{Insecure: true}
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
			tc, err := sec.TLSConfig(log)
			if err != nil {
				return err
			}
			c, err := client.New(client.Config{Addrs: list, Logger: log, TLS: tc})
			if err != nil {
				return err
			}
			defer c.Close()
			cfg.Store = c
			out := cmd.OutOrStdout()
			kcfg.Nodes, kcfg.SubClusters = cfg.Nodes, cfg.SubClusters
			kres, err := kubebench.Measure(cmd.Context(), kcfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "1. Kubernetes full recompute (gpg/kube Source, in-memory informer feed): %d nodes, %d pods, %d sub-clusters, figures checked\n",
				kres.Nodes, kres.Pods, kres.SubClustersReported)
			fmt.Fprintf(out, "   initial sync %v, live heap %.1f MiB; %d recomputes: min %v, median %v, max %v\n\n",
				kres.InitialSync.Round(time.Millisecond), float64(kres.HeapBytes)/(1<<20), kres.Rounds,
				kres.Min.Round(time.Microsecond), kres.Median.Round(time.Microsecond), kres.Max.Round(time.Microsecond))
			fmt.Fprint(out, "2. ")
			res, err := bench.Run(cmd.Context(), cfg, out)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "\nagainst the targets:")
			target := func(name string, got, limit time.Duration) {
				fmt.Fprintf(out, "  %-58s %9s  target <= %v  %s\n", name, ms(got), limit, verdict(got <= limit))
			}
			target("Kubernetes full recompute, median", kres.Median, kubebench.Target)
			target("Kubernetes full recompute, max", kres.Max, kubebench.Target)
			target("GPG round while capacity changes, p99", res.Changing.P99, kubebench.Target)
			target("recompute median + round p99 (a change end to end)", kres.Median+res.Changing.P99, kubebench.Target)
			fmt.Fprintf(out, "  %-58s %9s  target  = 1       %s\n", "store writes per round while capacity changes",
				writesRange(res.Changing), verdict(res.Changing.MinWrites == 1 && res.Changing.MaxWrites == 1))
			fmt.Fprintf(out, "  %-58s %9s  target  = 0       %s\n", "store writes per steady round",
				writesRange(res.Steady), verdict(res.Steady.MaxWrites == 0))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "store", "", "use a running (empty) state store at these gRPC addresses instead of starting one")
	sec.BindFlags(f)
	f.IntVar(&cfg.SubClusters, "subclusters", cfg.SubClusters, "sub-clusters")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "Kubernetes nodes lending batch capacity")
	f.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues with their own weighted policy (plus '*')")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "measured GPG rounds per phase")
	f.IntVar(&kcfg.PodsPerNode, "pods-per-node", kcfg.PodsPerNode, "Kubernetes pods per node (one is the NodeManager)")
	f.IntVar(&kcfg.Rounds, "kube-rounds", kcfg.Rounds, "timed Kubernetes full recomputes")
	f.BoolVar(&verbose, "verbose", false, "log GPG activity to stderr")
	return cmd
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

func writesRange(p bench.Phase) string {
	if p.MinWrites == p.MaxWrites {
		return fmt.Sprintf("%d", p.MinWrites)
	}
	return fmt.Sprintf("%d-%d", p.MinWrites, p.MaxWrites)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
