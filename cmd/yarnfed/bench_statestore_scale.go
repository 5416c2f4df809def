//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	routerbench "github.com/yarnfed/yarnfed/router/bench"
	"github.com/yarnfed/yarnfed/statestore/bench"
)

// newBenchStatestoreScaleCmd is `yarnfed bench statestore-scale`.
func newBenchStatestoreScaleCmd() *cobra.Command {
	var cfg bench.ScaleConfig
	var levels, routerLevels string
	var withRouter bool
	var routerDuration time.Duration
	cmd := &cobra.Command{
		Use:   "statestore-scale",
		Short: "The state store holding --rows application homes against itself empty: inserts, RSS, snapshot, restore, router",
		Long: `Starts a 3-replica state store (three 'yarnfed statestore' processes on loopback, Raft log fsync on)
and, in one run: measures application-home inserts at each --concurrency on the empty store, runs the
router bench over it (one 'yarnfed router' process, simrm sub-clusters), preloads --rows homes through
the batch insert (AddApplicationHomes, 1,000 per request), measures the inserts and the router again,
reports each replica's RSS and its FSM, log and snapshot sizes, takes a snapshot on the leader and on
a follower (the Snapshot admin RPC), then restores twice: a follower killed with SIGKILL and restarted
(its FSM file is distrusted: it restores its own snapshot and replays the log after it) and a follower
whose data directory is wiped (it installs the leader's snapshot), each timed from the process start
until it has applied the leader's index. Ends with the load average and issue 15's scale targets.`,
		Example: `  yarnfed bench statestore-scale
  yarnfed bench statestore-scale --rows 100000 --duration 3s --router=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Concurrency, err = parseLevels("--concurrency", levels); err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Executable = exe
			if withRouter {
				rl, err := parseLevels("--router-concurrency", routerLevels)
				if err != nil {
					return err
				}
				cfg.Router = routerOverStore(exe, routerDuration, rl)
			}
			return bench.RunScale(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Rows, "rows", 1_000_000, "application homes preloaded")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each insert measurement")
	f.StringVar(&levels, "concurrency", "1,64", "concurrent clients for the insert measurements, comma-separated")
	f.IntVar(&cfg.Conns, "conns", 2, "client instances (one connection each) the callers share")
	f.IntVar(&cfg.TrailingLogs, "trailing-logs", 256, "the replicas' --trailing-logs: below the preload's entries, so a wiped replica installs the snapshot")
	f.IntVar(&cfg.SnapshotThreshold, "snapshot-threshold", 0, "the replicas' --snapshot-threshold (0: their default); automatic snapshots during measurements are counted")
	f.BoolVar(&withRouter, "router", true, "also run the router bench over the store, empty and preloaded")
	f.DurationVar(&routerDuration, "router-duration", 6*time.Second, "the router bench's --duration")
	f.StringVar(&routerLevels, "router-concurrency", "1,16", "the router bench's --concurrency")
	f.StringVar(&cfg.Dir, "dir", "", "keep the replicas' data and logs here (default: a temp dir, removed)")
	return cmd
}

// routerOverStore runs `yarnfed bench router` over a running store (the
// replicas the scale bench started), with the yarnfed binary exe.
func routerOverStore(exe string, d time.Duration, levels []int) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, addrs []string, w io.Writer) error {
		rc := routerbench.DefaultConfig()
		rc.Executable, rc.StoreAddrs, rc.Duration, rc.Concurrency = exe, addrs, d, levels
		return routerbench.Run(ctx, rc, w)
	}
}

func parseLevels(flag, s string) ([]int, error) {
	var out []int
	for _, l := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(l), &n); err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flag, l)
		}
		out = append(out, n)
	}
	return out, nil
}
