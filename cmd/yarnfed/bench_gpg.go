//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/gpg/bench"
	"github.com/yarnfed/yarnfed/gpg/kube/kubebench"
	"github.com/yarnfed/yarnfed/internal/procstat"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// newBenchGPGCmd is `yarnfed bench gpg`: the time of a full GPG policy
// round at scale and the store writes it makes; with --curve, the same at
// several sizes and one table of how each figure grows.
func newBenchGPGCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	kcfg := kubebench.DefaultConfig()
	var addrs, curve string
	var sec security.ClientFlags // for --store: a running store is a client like any other
	var verbose bool
	cmd := &cobra.Command{
		Use:   "gpg",
		Short: "GPG: Kubernetes full recompute (10,000 nodes) and policy round (50 sub-clusters) against their targets; --curve for how they grow",
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
compute part alone, store writes per round and the largest write's size, while capacity changes every
round, while nothing changes, and while one node leaves and returns every round.

--curve "10x10000,30x30000,100x100000" runs both at each size (sub-clusters x nodes), each over a
fresh in-process store, and ends with one table: recompute and round times, writes per round, the
Source's live heap and the process's RSS (peak per size: the sizes run in the order given, and the
peak is reset before each where the kernel allows).`,
		Example: `  yarnfed bench gpg
  yarnfed bench gpg --subclusters 50 --nodes 10000 --queues 20 --rounds 50
  yarnfed bench gpg --curve 10x10000,30x30000,100x100000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := slog.New(slog.DiscardHandler)
			if verbose {
				log = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			cfg.Logger = log
			out := cmd.OutOrStdout()
			if curve == "" {
				p, err := benchGPGPoint(cmd.Context(), cfg, kcfg, addrs, sec, out)
				if err != nil {
					return err
				}
				printGPGTargets(out, p)
				return nil
			}
			if addrs != "" {
				return fmt.Errorf("--curve starts a fresh store per size; it cannot use --store")
			}
			sizes, err := parseCurve(curve)
			if err != nil {
				return err
			}
			var points []gpgPoint
			for i, sz := range sizes {
				c := cfg
				c.SubClusters, c.Nodes = sz.subClusters, sz.nodes
				fmt.Fprintf(out, "=== size %d of %d: %d sub-clusters, %d nodes (%s)\n", i+1, len(sizes), sz.subClusters, sz.nodes, procstat.LoadAvg())
				p, err := benchGPGPoint(cmd.Context(), c, kcfg, "", sec, out)
				if err != nil {
					return fmt.Errorf("%d sub-clusters x %d nodes: %w", sz.subClusters, sz.nodes, err)
				}
				printGPGTargets(out, p)
				fmt.Fprintln(out)
				points = append(points, p)
			}
			printGPGCurve(out, points)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "store", "", "use a running (empty) state store at these gRPC addresses instead of starting one")
	sec.BindFlags(f)
	f.IntVar(&cfg.SubClusters, "subclusters", cfg.SubClusters, "sub-clusters")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "Kubernetes nodes lending batch capacity")
	f.StringVar(&curve, "curve", "", "sizes to run one after the other, as SUBCLUSTERSxNODES,... (e.g. 10x10000,30x30000,100x100000); overrides --subclusters and --nodes")
	f.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues with their own weighted policy (plus '*')")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "measured GPG rounds per phase")
	f.IntVar(&kcfg.PodsPerNode, "pods-per-node", kcfg.PodsPerNode, "Kubernetes pods per node (one is the NodeManager)")
	f.IntVar(&kcfg.Rounds, "kube-rounds", kcfg.Rounds, "timed Kubernetes full recomputes")
	f.BoolVar(&verbose, "verbose", false, "log GPG activity to stderr")
	return cmd
}

// gpgPoint is one size's measurements.
type gpgPoint struct {
	kube               kubebench.Result
	round              bench.Result
	rss, rssPeak       int64 // the process's, after the size ran
	rssPeakPerSize     bool  // the peak was reset before this size
	elapsed            time.Duration
	subClusters, nodes int
}

// benchGPGPoint runs both measurements at one size: over the store at
// addrs, or a single-replica store started in this process for it.
func benchGPGPoint(ctx context.Context, cfg bench.Config, kcfg kubebench.Config, addrs string, sec security.ClientFlags, out io.Writer) (gpgPoint, error) {
	log := cfg.Logger
	runtime.GC()
	debug.FreeOSMemory()
	// Reset VmHWM to the current RSS (Linux 4.0+), so the peak is this size's.
	peakReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	start := time.Now()
	list := strings.Split(addrs, ",")
	if addrs == "" {
		dir, err := os.MkdirTemp("", "yarnfed-bench-gpg-")
		if err != nil {
			return gpgPoint{}, err
		}
		defer os.RemoveAll(dir)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return gpgPoint{}, err
		}
		raftAddr := l.Addr().String()
		l.Close()
		nc := node.DefaultConfig()
		nc.NodeID, nc.DataDir = "bench-gpg", filepath.Join(dir, "store")
		nc.GRPCAddress, nc.RaftAddress, nc.HTTPAddress, nc.Bootstrap = "127.0.0.1:0", raftAddr, "", true
		nc.Logger = log
		nc.Insecure = true // loopback benchmark, in this process
		sec = security.ClientFlags{Insecure: true}
		n, err := node.Start(ctx, nc)
		if err != nil {
			return gpgPoint{}, err
		}
		defer n.Close()
		for deadline := time.Now().Add(20 * time.Second); !n.Store.IsLeader(); {
			if time.Now().After(deadline) {
				return gpgPoint{}, fmt.Errorf("bench gpg: the store elected no leader")
			}
			time.Sleep(10 * time.Millisecond)
		}
		list = []string{n.GRPCAddr()}
	}
	tc, err := sec.TLSConfig(log)
	if err != nil {
		return gpgPoint{}, err
	}
	c, err := client.New(client.Config{Addrs: list, Logger: log, TLS: tc})
	if err != nil {
		return gpgPoint{}, err
	}
	defer c.Close()
	cfg.Store = c
	kcfg.Nodes, kcfg.SubClusters = cfg.Nodes, cfg.SubClusters
	kres, err := kubebench.Measure(ctx, kcfg)
	if err != nil {
		return gpgPoint{}, err
	}
	fmt.Fprintf(out, "1. Kubernetes full recompute (gpg/kube Source, in-memory informer feed): %d nodes, %d pods, %d sub-clusters, figures checked\n",
		kres.Nodes, kres.Pods, kres.SubClustersReported)
	fmt.Fprintf(out, "   initial sync %v, live heap %.1f MiB; %d recomputes: min %v, median %v, max %v, CPU %v each\n\n",
		kres.InitialSync.Round(time.Millisecond), float64(kres.HeapBytes)/(1<<20), kres.Rounds,
		kres.Min.Round(time.Microsecond), kres.Median.Round(time.Microsecond), kres.Max.Round(time.Microsecond), kres.CPU.Round(time.Microsecond))
	fmt.Fprint(out, "2. ")
	res, err := bench.Run(ctx, cfg, out)
	if err != nil {
		return gpgPoint{}, err
	}
	p := gpgPoint{kube: kres, round: res, rssPeakPerSize: peakReset, elapsed: time.Since(start), subClusters: cfg.SubClusters, nodes: cfg.Nodes}
	p.rss, p.rssPeak = procstat.RSS(os.Getpid())
	return p, nil
}

// printGPGTargets prints one size's figures against the targets.
func printGPGTargets(out io.Writer, p gpgPoint) {
	kres, res := p.kube, p.round
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
	if res.NodeChurnSilent {
		fmt.Fprintf(out, "  %-58s %9s  target  = 0       %s\n", "store writes per round while one node leaves/returns",
			writesRange(res.Churn), verdict(res.Churn.MaxWrites == 0))
	} else {
		fmt.Fprintf(out, "  %-58s %9s  (one node is over publish_threshold of its sub-cluster: writes expected)\n",
			"store writes per round while one node leaves/returns", writesRange(res.Churn))
	}
	fmt.Fprintf(out, "  process RSS %s, peak %s; %s\n", mib(p.rss), mib(p.rssPeak), procstat.LoadAvg())
}

// printGPGCurve prints every size in one table.
func printGPGCurve(out io.Writer, ps []gpgPoint) {
	fmt.Fprintf(out, "=== curve (%s)\n", procstat.LoadAvg())
	fmt.Fprintf(out, "%5s %7s %7s | %9s %9s %9s %8s %9s | %9s %9s %9s %9s %9s | %-7s %-6s %-6s %9s | %9s %9s\n",
		"subcl", "nodes", "pods", "recomp50", "recompmax", "recompCPU", "sync", "src heap",
		"round p50", "p99", "roundCPU", "steady50", "churn50", "w/chg", "w/std", "w/chrn", "write B", "RSS", "RSS peak")
	for _, p := range ps {
		r := p.round
		peak := mib(p.rssPeak)
		if !p.rssPeakPerSize {
			peak += "*"
		}
		fmt.Fprintf(out, "%5d %7d %7d | %9s %9s %9s %8s %9s | %9s %9s %9s %9s %9s | %-7s %-6s %-6s %9d | %9s %9s\n",
			p.subClusters, p.nodes, p.kube.Pods, ms(p.kube.Median), ms(p.kube.Max), ms(p.kube.CPU), p.kube.InitialSync.Round(time.Millisecond), mib(p.kube.HeapBytes),
			ms(r.Changing.P50), ms(r.Changing.P99), ms(r.Changing.CPU), ms(r.Steady.P50), ms(r.Churn.P50),
			writesRange(r.Changing), writesRange(r.Steady), writesRange(r.Churn), r.Changing.MaxWriteBytes, mib(p.rss), peak)
	}
	fmt.Fprintln(out, "recomp = Kubernetes full recompute (median, max, process CPU each); sync = informers' list + first recompute; src heap =")
	fmt.Fprintln(out, "the synced Source's live heap; round = GPG policy round while capacity changes (p50, p99, process CPU per round: the")
	fmt.Fprintln(out, "GPG and the in-process store), steady and one-node-churn p50; w/ = store writes per round")
	fmt.Fprintln(out, "(changing, steady, churn); write B = largest SetPolicies request; RSS = this process after the size (the synthetic API")
	fmt.Fprintln(out, "objects included), peak since the size started (* = could not reset: peak since the process started).")
}

// curveSize is one --curve entry.
type curveSize struct{ subClusters, nodes int }

// parseCurve reads "10x10000,30x30000".
func parseCurve(s string) ([]curveSize, error) {
	var out []curveSize
	for _, e := range strings.Split(s, ",") {
		var sz curveSize
		a, b, ok := strings.Cut(strings.TrimSpace(e), "x")
		if ok {
			_, errA := fmt.Sscan(a, &sz.subClusters)
			_, errB := fmt.Sscan(b, &sz.nodes)
			ok = errA == nil && errB == nil && sz.subClusters > 0 && sz.nodes > 0
		}
		if !ok {
			return nil, fmt.Errorf("--curve: %q is not SUBCLUSTERSxNODES with both positive", e)
		}
		out = append(out, sz)
	}
	return out, nil
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

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
