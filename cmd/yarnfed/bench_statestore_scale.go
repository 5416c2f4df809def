//go:build bench

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
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
		Long: `Starts two 3-replica state stores (three 'yarnfed statestore' processes each, on loopback, Raft log
fsync on), preloads --rows application homes into one through the batch insert (AddApplicationHomes,
1,000 per request) and, in one run: measures application-home inserts at each --concurrency in
--rounds rounds alternating between the empty and the preloaded store (each round's p50/p99 and the
leaders' Raft commit histograms from their /metrics are printed, then the per-round ratio range);
runs the router bench (one 'yarnfed router' process, simrm sub-clusters) over each store in
--router-rounds rounds, the order swapped every round; reports each replica's RSS and its FSM, log
and snapshot sizes; takes a snapshot on the leader and on a follower (the Snapshot admin RPC), then
restores twice: a follower killed with SIGKILL and restarted (its FSM file is distrusted: it
restores its own snapshot and replays the log after it) and a follower whose data directory is
wiped (it installs the leader's snapshot), each timed from the process start until it has applied
the leader's index. Ends with the load average and issue 15's scale targets.`,
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
	f.IntVar(&cfg.Rounds, "rounds", 4, "alternating insert rounds (empty, preloaded) per concurrency; each round's p50/p99 is printed")
	f.IntVar(&cfg.RouterRounds, "router-rounds", 2, "alternating router bench rounds (empty and preloaded store, the order swapped each round)")
	f.IntVar(&cfg.Conns, "conns", 2, "client instances (one connection each) the callers share")
	f.IntVar(&cfg.TrailingLogs, "trailing-logs", 256, "the replicas' --trailing-logs: below the preload's entries, so a wiped replica installs the snapshot")
	f.StringVar(&cfg.RaftLogStore, "raft-log-store", "", "the replicas' --raft-log-store (wal, bolt; empty: their default)")
	f.IntVar(&cfg.SnapshotThreshold, "snapshot-threshold", 0, "the replicas' --snapshot-threshold (0: their default); automatic snapshots during measurements are counted")
	f.BoolVar(&withRouter, "router", true, "also run the router bench over the store, empty and preloaded")
	f.DurationVar(&routerDuration, "router-duration", 4*time.Second, "the router bench's --duration, per round")
	f.StringVar(&routerLevels, "router-concurrency", "1,16", "the router bench's --concurrency")
	f.StringVar(&cfg.Dir, "dir", "", "keep the replicas' data and logs here (default: a temp dir, removed)")
	return cmd
}

// routerOverStore runs `yarnfed bench router` over a running store (the
// replicas the scale bench started), with the yarnfed binary exe, and
// reads the router's and the direct calls' numbers back from its tables.
func routerOverStore(exe string, d time.Duration, levels []int) func(context.Context, []string, io.Writer) ([]bench.RouterCell, error) {
	return func(ctx context.Context, addrs []string, w io.Writer) ([]bench.RouterCell, error) {
		rc := routerbench.DefaultConfig()
		rc.Executable, rc.StoreAddrs, rc.Duration, rc.Concurrency = exe, addrs, d, levels
		var out bytes.Buffer
		if err := routerbench.Run(ctx, rc, io.MultiWriter(w, &out)); err != nil {
			return nil, err
		}
		cells, err := parseRouterTables(out.String())
		if err == nil && len(cells) != len(levels) {
			err = fmt.Errorf("router bench: %d tables for %d concurrency levels", len(cells), len(levels))
		}
		return cells, err
	}
}

// routerTableHead is the router bench's line before each table.
var routerTableHead = regexp.MustCompile(`^(\d+) clients, \S+ per target`)

// parseRouterTables reads the "yarnfed" and "direct" rows (ops/s, p50,
// p99) of each "N clients, ..." table the router bench printed.
func parseRouterTables(out string) ([]bench.RouterCell, error) {
	var cells []bench.RouterCell
	for _, line := range strings.Split(out, "\n") {
		if m := routerTableHead.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			cells = append(cells, bench.RouterCell{Clients: n})
			continue
		}
		f := strings.Fields(line)
		if len(cells) == 0 || len(f) < 4 || (f[0] != "yarnfed" && f[0] != "direct") {
			continue
		}
		ops, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("router bench row %q: %w", line, err)
		}
		p50, err1 := time.ParseDuration(f[2])
		p99, err2 := time.ParseDuration(f[3])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("router bench row %q: %w", line, errors.Join(err1, err2))
		}
		c := &cells[len(cells)-1]
		if f[0] == "direct" {
			c.DirectOpsPerSec = ops
		} else {
			c.OpsPerSec, c.P50, c.P99 = ops, p50, p99
		}
	}
	for _, c := range cells {
		if c.OpsPerSec <= 0 {
			return nil, fmt.Errorf("router bench: no yarnfed row at %d clients", c.Clients)
		}
	}
	return cells, nil
}
