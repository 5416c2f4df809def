//go:build bench

package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/router/bench"
)

// newBenchRouterCmd is `yarnfed bench router`.
func newBenchRouterCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var verbose bool
	var levels, store string
	cmd := &cobra.Command{
		Use:   "router",
		Short: "The router vs calling the RMs directly (and vs Hadoop's Java Router with --peer hadoop)",
		Long: `One op = getNewApplication + submitApplication + getApplicationReport. Starts --sub-clusters
simrm sub-clusters in this process, a 3-replica state store (three 'yarnfed statestore' processes,
Raft log fsync on, plaintext gRPC on loopback) and a 'yarnfed router' process over it, and measures
ops/s, p50/p99, the router's CPU per op and RSS, and its cold start, against calling the RMs directly.
--peer hadoop adds Apache Hadoop's Router (hadoop-yarn-server-router 3.4.2, fetched by Maven from
bench/hadooprouter) over a 3-server ZooKeeper ensemble (Debian's zookeeper package) in front of the
same sub-clusters. --java-client also drives every target with Hadoop's YarnClient.
--in-memory-store runs the router in this process over an in-memory store (the output says so; it
leaves out the store write every real submission pays). --store and --router measure running ones.`,
		Example: `  yarnfed bench router --peer hadoop --concurrency 1,16,64
  yarnfed bench router --duration 30s --sub-clusters 4 --peer hadoop --java-client
  yarnfed bench router --store 10.0.0.1:9090 --router 10.0.0.5:8050`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			var err error
			if cfg.Concurrency, err = parseLevels("--concurrency", levels); err != nil {
				return err
			}
			if store != "" {
				cfg.StoreAddrs = strings.Split(store, ",")
			}
			if cfg.Executable, err = os.Executable(); err != nil {
				return err
			}
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per target and concurrency")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "alternating rounds the duration is split into")
	f.StringVar(&levels, "concurrency", "16", "client goroutines, comma-separated levels (one table each)")
	f.IntVar(&cfg.SubClusters, "sub-clusters", cfg.SubClusters, "simrm sub-clusters started in this process")
	f.DurationVar(&cfg.RMLatency, "rm-latency", 0, "service time simrm adds to every call (a real RM's is milliseconds); 0 = pure overhead")
	f.BoolVar(&cfg.InMemoryStore, "in-memory-store", false, "router in this process over an in-memory store (leaves out the store write; said in the output)")
	f.StringVar(&store, "store", "", "use a running state store (gRPC addresses, plaintext) instead of starting three replicas")
	f.BoolVar(&cfg.StoreTLS, "store-tls", false, "run the started store with mutual TLS (yarnfed certs), as deployed; default plaintext (--insecure), like the peer's ZooKeeper")
	f.StringVar(&cfg.RouterAddr, "router", "", "measure a running router (clientrm address) that reads --store")
	f.StringVar(&cfg.Peer, "peer", "", `"hadoop": also measure Apache Hadoop's Router over a ZooKeeper ensemble`)
	f.BoolVar(&cfg.JavaClient, "java-client", false, "also drive every target with Hadoop's Java YarnClient")
	f.StringVar(&cfg.HadoopDir, "hadoop-dir", cfg.HadoopDir, "Maven module with Hadoop's Router and the bench helper")
	f.StringVar(&cfg.HadoopHeap, "hadoop-heap", cfg.HadoopHeap, "the Hadoop Router JVM's -Xmx")
	f.StringVar(&cfg.Java, "java", cfg.Java, "java binary")
	f.StringVar(&cfg.ZKClasspath, "zk-classpath", cfg.ZKClasspath, "ZooKeeper server classpath")
	f.StringVar(&cfg.Dir, "dir", "", "keep the processes' data and logs here (default: a temp dir, removed)")
	f.BoolVar(&verbose, "verbose", false, "log simrm activity to stderr")
	return cmd
}
