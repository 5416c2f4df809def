//go:build bench

package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/amrmproxy/bench"
)

// newBenchAMRMProxyCmd is `yarnfed bench amrmproxy`: allocate throughput
// and latency through the proxy versus straight to the same simulated RM,
// and the fan-out to three sub-clusters versus the slowest RM alone; the
// last line is the ratio.
func newBenchAMRMProxyCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var verbose, noFanout bool
	cmd := &cobra.Command{
		Use:   "amrmproxy",
		Short: "AMRMProxy overhead: AM heartbeats through the proxy vs straight to simrm; fan-out to 3 sub-clusters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if noFanout {
				cfg.FanoutLatency = nil
			}
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per target")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "alternating rounds the duration is split into")
	f.IntVar(&cfg.AMs, "ams", cfg.AMs, "concurrent application masters (one heartbeat in flight each)")
	f.DurationSliceVar(&cfg.FanoutLatency, "fanout-latency", cfg.FanoutLatency, "service times of the fan-out part's RMs (home first)")
	f.BoolVar(&noFanout, "no-fanout", false, "skip the fan-out part")
	f.BoolVar(&verbose, "verbose", false, "log proxy and simrm activity to stderr")
	return cmd
}
