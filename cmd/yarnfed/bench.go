//go:build bench

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newBenchCmd is `yarnfed bench`: each subcommand starts what it measures on
// loopback (or points at a running deployment), prints a table and exits.
// Benchmarks report ratios against a baseline measured in the same run.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a component against a baseline in the same run",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchRouterCmd(), newBenchStatestoreCmd(), newBenchStatestoreScaleCmd(), newBenchAMRMProxyCmd(), newBenchGPGCmd(), newBenchFederationCmd(), newBenchKubermCmd())
	return cmd
}

// parseLevels reads a comma-separated list of positive numbers (concurrency
// levels); flag names the option in errors.
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
