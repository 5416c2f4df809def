package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/statestore/node"
)

// newStatestoreCmd is `yarnfed statestore`: one replica of the
// Raft-replicated federation state store.
func newStatestoreCmd() *cobra.Command {
	cfg := node.DefaultConfig()
	var configFile string
	logLevel := "info"
	cmd := &cobra.Command{
		Use:   "statestore",
		Short: "Run a state store replica (gRPC on 9090, Raft on 9091, metrics/health on 9092)",
		Long: `The state store holds federation membership, application homes, queue policies, reservation
homes and delegation-token state, replicated with Raft. Routers, AMRMProxies and the GPG reach it
with statestore/client through any replica's gRPC address.

Start a single replica with --bootstrap. For three (or five) replicas, start each with --bootstrap and
the same --peers list, or bootstrap one and start the others with --join pointing at it.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.
HTTP endpoints: /metrics (Prometheus), /healthz (process up), /readyz (a leader is known).`,
		Example: `  yarnfed statestore --bootstrap --data-dir /var/lib/yarnfed/ss
  yarnfed statestore --node-id ss1 --bootstrap --peers ss1=10.0.0.1:9091,ss2=10.0.0.2:9091,ss3=10.0.0.3:9091 \
      --grpc-address 10.0.0.1:9090 --raft-address 10.0.0.1:9091 --http-address 10.0.0.1:9092
  yarnfed statestore --node-id ss4 --join 10.0.0.1:9090 --raft-address 10.0.0.4:9091`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				fileCfg := node.DefaultConfig()
				if err := node.LoadConfigFile(configFile, &fileCfg); err != nil {
					return err
				}
				// Flags the user set win over the file.
				fs := pflag.NewFlagSet("overlay", pflag.ContinueOnError)
				bindStatestoreFlags(fs, &fileCfg)
				var err error
				cmd.Flags().Visit(func(f *pflag.Flag) {
					dst := fs.Lookup(f.Name)
					if dst == nil || err != nil {
						return
					}
					if sv, ok := f.Value.(pflag.SliceValue); ok {
						err = dst.Value.(pflag.SliceValue).Replace(sv.GetSlice())
						return
					}
					err = dst.Value.Set(f.Value.String())
				})
				if err != nil {
					return err
				}
				cfg = fileCfg
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("statestore config: %w", err)
			}
			log, err := statestoreLogger(logLevel)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
			n, err := node.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "statestore %s: grpc %s, raft %s, http %s, data %s\n", cfg.NodeID, n.GRPCAddr(), cfg.RaftAddress, n.HTTPAddr(), cfg.DataDir)
			<-cmd.Context().Done()
			return n.Close()
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "JSON config file (keys as in statestore/node.Config's json tags)")
	f.StringVar(&logLevel, "log-level", logLevel, "debug, info, warn or error")
	bindStatestoreFlags(f, &cfg)
	return cmd
}

func bindStatestoreFlags(f *pflag.FlagSet, cfg *node.Config) {
	f.StringVar(&cfg.NodeID, "node-id", cfg.NodeID, "stable Raft id of this replica")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the Raft log, FSM database and snapshots")
	f.StringVar(&cfg.GRPCAddress, "grpc-address", cfg.GRPCAddress, "gRPC listen address (clients and forwarding)")
	f.StringVar(&cfg.GRPCAdvertise, "grpc-advertise", cfg.GRPCAdvertise, "gRPC address other replicas use (default: the bound address)")
	f.StringVar(&cfg.RaftAddress, "raft-address", cfg.RaftAddress, "Raft TCP listen address")
	f.StringVar(&cfg.RaftAdvertise, "raft-advertise", cfg.RaftAdvertise, "Raft address peers dial (default: --raft-address)")
	f.StringVar(&cfg.HTTPAddress, "http-address", cfg.HTTPAddress, "HTTP address for /metrics, /healthz, /readyz (empty disables)")
	f.BoolVar(&cfg.Bootstrap, "bootstrap", cfg.Bootstrap, "form a new cluster if the data dir is empty")
	f.StringSliceVar(&cfg.Peers, "peers", cfg.Peers, "initial voters for --bootstrap, id=raft-host:port,... (same on every member)")
	f.StringSliceVar(&cfg.Join, "join", cfg.Join, "gRPC addresses of existing replicas to join through")
	f.BoolVar(&cfg.NonVoter, "non-voter", cfg.NonVoter, "join as a non-voting read replica")
	f.BoolVar(&cfg.FSMSync, "fsm-sync", cfg.FSMSync, "fsync the FSM database per batch (otherwise rebuilt from the log after a crash)")
	f.BoolVar(&cfg.NoSync, "unsafe-no-sync", cfg.NoSync, "skip fsync of the Raft log (loses acknowledged writes on power failure)")
	f.Var(nodeDuration{&cfg.HeartbeatTimeout}, "heartbeat-timeout", "Raft heartbeat timeout")
	f.Var(nodeDuration{&cfg.ElectionTimeout}, "election-timeout", "Raft election timeout")
	f.Var(nodeDuration{&cfg.SnapshotInterval}, "snapshot-interval", "how often to check whether to snapshot")
	f.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", cfg.SnapshotThreshold, "log entries between snapshots")
	f.IntVar(&cfg.MaxContextBytes, "max-context-bytes", cfg.MaxContextBytes, "largest application submission context accepted")
	f.IntVar(&cfg.MaxListApplications, "max-list-applications", cfg.MaxListApplications, "cap of one application-home listing (yarn.federation.state-store.max-applications)")
}

// statestoreLogger builds the role's text logger.
func statestoreLogger(level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// nodeDuration lets a node.Duration be a flag.
type nodeDuration struct{ d *node.Duration }

func (f nodeDuration) String() string {
	if f.d == nil {
		return ""
	}
	return time.Duration(*f.d).String()
}

func (f nodeDuration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = node.Duration(v)
	return nil
}

func (f nodeDuration) Type() string { return "duration" }
