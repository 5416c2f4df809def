//go:build bench

package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/router/bench"
)

// newBenchFederationCmd is `yarnfed bench federation`.
func newBenchFederationCmd() *cobra.Command {
	cfg := bench.DefaultFedConfig()
	var verbose bool
	var sizes string
	cmd := &cobra.Command{
		Use:   "federation",
		Short: "The routers against the number of sub-clusters: a client and UI call mix, per call type curves, policy propagation",
		Long: `For each N in --subclusters: starts N simrm sub-clusters in this process (--nodes-per-subcluster
simulated nodes and --apps-per-subcluster running applications each), a fresh 3-replica state store
(three 'yarnfed statestore' processes, Raft log fsync on) and --routers 'yarnfed router' processes over
it, then runs --concurrency clients for --duration, each call going to the next router: submissions
(getNewApplication + submitApplication), getApplicationReport, forceKillApplication, and the fan-out
calls (getApplications filtered by states, user or tags, getClusterMetrics, getClusterNodes, REST
/apps, /nodes and /metrics, the web UI's apps page). Prints, per call type, ops/s, p50/p99 and the
largest answer against N; the routers' CPU and RSS against N (and the CPU of this process, which
runs the simrms and clients, and of the store); each call type made alone by one client
(--solo-calls, its own cost without the mix's queueing); and the policy propagation time: from
a policy write (the store call 'yarnfedctl policy save' makes) until a submission through every
router lands on the sub-cluster the new policy names, over --policy-changes changes (p50/p99), and
the time from a sub-cluster's row written LOST until no router routes to it (--lost-changes).
Any failed call, or a call type with no successful call, fails the run.`,
		Example: `  yarnfed bench federation --subclusters 10,30,100 --routers 3
  yarnfed bench federation --subclusters 2,4 --nodes-per-subcluster 100 --duration 3s --policy-changes 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			var err error
			if cfg.SubClusters, err = parseLevels("--subclusters", sizes); err != nil {
				return err
			}
			if cfg.Executable, err = os.Executable(); err != nil {
				return err
			}
			return bench.RunFederation(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "subclusters", "10,30,100", "federation sizes, comma-separated: one run each, printed as curves")
	f.IntVar(&cfg.Routers, "routers", cfg.Routers, "router processes over the one store (clients call them round-robin)")
	f.IntVar(&cfg.NodesPerSubCluster, "nodes-per-subcluster", cfg.NodesPerSubCluster, "simulated NodeManagers per sub-cluster")
	f.IntVar(&cfg.AppsPerSubCluster, "apps-per-subcluster", cfg.AppsPerSubCluster, "running applications preloaded into each sub-cluster (users and tags spread)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured mix per N")
	f.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured mix before each N's measurement")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "client goroutines running the mix")
	f.IntVar(&cfg.MinCalls, "min-calls", cfg.MinCalls, "the mix goes on past --duration (up to 10x) until every call type has this many successful calls")
	f.IntVar(&cfg.SoloCalls, "solo-calls", cfg.SoloCalls, "after the mix, calls of each type made one at a time by one client (their own cost against N; 0 skips)")
	f.IntVar(&cfg.LostChanges, "lost-changes", cfg.LostChanges, "sub-clusters written LOST (one at a time) whose exclusion by every router is timed (0 skips)")
	f.IntVar(&cfg.PolicyChanges, "policy-changes", cfg.PolicyChanges, "policy writes whose propagation to every router is timed (0 skips)")
	f.StringVar(&cfg.Dir, "dir", "", "keep the processes' data and logs here (default: a temp dir, removed)")
	f.BoolVar(&verbose, "verbose", false, "log simrm activity to stderr")
	return cmd
}
