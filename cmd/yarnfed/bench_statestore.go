//go:build bench

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/statestore/bench"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// newBenchStatestoreCmd is `yarnfed bench statestore`.
func newBenchStatestoreCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var addrs, levels string
	var inProcess bool
	var sec security.ClientFlags
	cmd := &cobra.Command{
		Use:   "statestore",
		Short: "Application-home inserts and reads: yarnfed's state store vs a ZooKeeper ensemble",
		Long: `Starts a 3-replica state store on loopback (fsync on) and a 3-server ZooKeeper ensemble
(Debian's zookeeper package), runs the same workload against each, and prints a table:
application-home inserts/s with p50/p99 latency at each concurrency, then linearizable and stale
reads/s. With --store it measures a running cluster instead (writes rows with fake application ids),
over mutual TLS with --store-tls-cert/--store-tls-key/--store-tls-ca (a certificate from 'yarnfed
certs' whose role may write application homes, e.g. router), or plaintext with --store-insecure.`,
		Example: `  yarnfed bench statestore
  yarnfed bench statestore --duration 10s --concurrency 64 --zookeeper=false
  yarnfed bench statestore --store 10.0.0.1:9090,10.0.0.2:9090 \
      --store-tls-cert pki/router-1/cert.crt --store-tls-key pki/router-1/cert.key --store-tls-ca pki/router-1/ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addrs != "" {
				cfg.Addrs = strings.Split(addrs, ",")
				tc, err := sec.TLSConfig(slog.Default())
				if err != nil {
					return err // names the flags
				}
				cfg.TLS = tc
			} else if !sec.TLS.Empty() || sec.Insecure {
				return errors.New("--store-tls-* and --store-insecure apply to a running cluster (--store); the replicas this benchmark starts are plaintext on loopback")
			}
			cfg.Concurrency = nil
			for _, l := range strings.Split(levels, ",") {
				var n int
				if _, err := fmt.Sscan(strings.TrimSpace(l), &n); err != nil || n <= 0 {
					return fmt.Errorf("--concurrency: %q is not a positive number", l)
				}
				cfg.Concurrency = append(cfg.Concurrency, n)
			}
			if !inProcess && len(cfg.Addrs) == 0 {
				// Each replica in its own process, as deployed (and as the
				// ZooKeeper servers run).
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				cfg.Executable = exe
			}
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "store", "", "measure a running cluster at these gRPC addresses instead of starting one")
	sec.BindFlags(f)
	f.StringVar(&levels, "concurrency", "1,8,64,256", "concurrent clients for the insert rows, comma-separated")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each measurement")
	f.IntVar(&cfg.ReadConcurrency, "read-concurrency", cfg.ReadConcurrency, "concurrent clients for the read rows")
	f.IntVar(&cfg.Conns, "conns", cfg.Conns, "client instances (one connection each, like router processes) the callers share")
	f.BoolVar(&inProcess, "in-process", false, "run the three replicas inside the benchmark process instead of as child processes")
	f.BoolVar(&cfg.FSMSync, "fsm-sync", cfg.FSMSync, "also fsync the FSM database per batch")
	f.BoolVar(&cfg.ZooKeeper, "zookeeper", cfg.ZooKeeper, "compare against a 3-server ZooKeeper ensemble")
	f.StringVar(&cfg.Java, "java", cfg.Java, "java binary for ZooKeeper")
	f.StringVar(&cfg.ZKClasspath, "zk-classpath", cfg.ZKClasspath, "ZooKeeper server classpath")
	return cmd
}
