//go:build bench

package main

import (
	"errors"
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
		Short: "Application-home inserts and reads: yarnfed's state store vs ZooKeeper and etcd",
		Long: `Starts a 3-replica state store on loopback (fsync on), a 3-server ZooKeeper ensemble
(Debian's zookeeper package) and, with --etcd, a 3-member etcd cluster (each member its own process;
binary from 'make kube-binaries'), runs the same workload against each, and prints a table:
application-home inserts/s (insert-if-absent on every system; on etcd a Txn If CreateRevision==0
Then Put Else Get) with p50/p99 latency and CPU per op at each concurrency, then linearizable and
stale reads/s, the ratios, the servers' RSS and the load average. --rows preloads each system.
Every run writes its own application ids (application_<run start ms>_N). With --store it measures
a running cluster instead (writing rows with those fake application ids), over mutual TLS with
--store-tls-cert/--store-tls-key/--store-tls-ca (a certificate from 'yarnfed certs' whose role may
write application homes, e.g. router), or plaintext with --store-insecure.`,
		Example: `  yarnfed bench statestore --etcd
  yarnfed bench statestore --duration 10s --concurrency 1,64,256 --rows 100000 --etcd
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
			var err error
			if cfg.Concurrency, err = parseLevels("--concurrency", levels); err != nil {
				return err
			}
			if !inProcess && len(cfg.Addrs) == 0 {
				// Each replica in its own process, as deployed (and as the
				// ZooKeeper servers run).
				if cfg.Executable, err = os.Executable(); err != nil {
					return err
				}
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
	f.StringVar(&cfg.RaftLogStore, "raft-log-store", cfg.RaftLogStore, "the replicas' Raft log store: wal or bolt (default: the store's default)")
	f.BoolVar(&cfg.ZooKeeper, "zookeeper", cfg.ZooKeeper, "compare against a 3-server ZooKeeper ensemble")
	f.StringVar(&cfg.Java, "java", cfg.Java, "java binary for ZooKeeper")
	f.StringVar(&cfg.ZKClasspath, "zk-classpath", cfg.ZKClasspath, "ZooKeeper server classpath")
	f.BoolVar(&cfg.Etcd, "etcd", cfg.Etcd, "compare against a 3-member etcd cluster (separate processes)")
	f.StringVar(&cfg.EtcdBinary, "etcd-binary", "", "etcd binary (default: etcd in $PATH, else the one 'make kube-binaries' built)")
	f.IntVar(&cfg.Rows, "rows", 0, "application homes inserted into every system before measuring")
	return cmd
}
