//go:build bench

package main

import "github.com/spf13/cobra"

// newBenchCmd is `yarnfed bench`: each subcommand starts what it measures on
// loopback (or points at a running deployment), prints a table and exits.
// Benchmarks report ratios against a baseline measured in the same run.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a component against a baseline in the same run",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchRouterCmd(), newBenchStatestoreCmd(), newBenchStatestoreScaleCmd(), newBenchAMRMProxyCmd(), newBenchGPGCmd())
	return cmd
}
