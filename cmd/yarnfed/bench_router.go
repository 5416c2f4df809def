//go:build bench

package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/router/bench"
)

// newBenchRouterCmd is `yarnfed bench router`: throughput and latency of
// submitApplication + getApplicationReport through the router versus
// directly to the same simulated RM; the last line is the ratio.
func newBenchRouterCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var verbose bool
	cmd := &cobra.Command{
		Use:   "router",
		Short: "Router overhead: submit + report through the router vs straight to one simrm",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			return bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time per target (router, direct)")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "alternating rounds the duration is split into")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "client goroutines sharing one connection")
	f.DurationVar(&cfg.RMLatency, "rm-latency", 0, "service time simrm adds to every call (a real RM's is milliseconds); 0 = pure overhead")
	f.BoolVar(&verbose, "verbose", false, "log router and simrm activity to stderr")
	return cmd
}
