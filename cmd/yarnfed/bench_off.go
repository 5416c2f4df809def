//go:build !bench

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newBenchCmd, in the server binary, only says where the benchmarks are:
// they start simulated RMs, test fakes and a ZooKeeper client, none of
// which belongs in the binary operators deploy. `make build` also writes
// bin/yarnfed-bench, the same program built with -tags bench.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench",
		Short:              "Benchmarks live in bin/yarnfed-bench (make build), not in the server binary",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("this yarnfed binary is built without benchmarks: run bin/yarnfed-bench bench (built by make build) " +
				"or go run -tags bench ./cmd/yarnfed bench")
		},
	}
}
