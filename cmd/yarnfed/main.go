// Command yarnfed is the one yarnfed server binary: each server role is a
// subcommand, and `yarnfed dev` runs an embedded federation on loopback.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// version is stamped by the build (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "yarnfed:", err)
		code := 1
		if ee := (*exitError)(nil); errors.As(err, &ee) { // kuberm launch: the container's code
			code = ee.code
		}
		os.Exit(code)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "yarnfed",
		Short:         "YARN Federation control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), version) },
	})
	// Role subcommands: one file per role in this directory, one line each here.
	// roles:begin
	root.AddCommand(newSimrmCmd())
	root.AddCommand(newRouterCmd())
	root.AddCommand(newSubclusterAgentCmd())
	root.AddCommand(newStatestoreCmd())
	root.AddCommand(newAMRMProxyCmd())
	root.AddCommand(newGPGCmd())
	root.AddCommand(newKubermCmd())
	// roles:end
	root.AddCommand(newBenchCmd())
	root.AddCommand(newDevCmd())
	root.AddCommand(newCertsCmd())
	root.Long = root.Short + ": " + strings.Join(roleNames(root), ", ")
	return root
}

// roleNames lists the registered subcommands that run something, so the
// help names exactly the roles this binary has (it once listed roles that
// did not exist yet).
func roleNames(root *cobra.Command) []string {
	var out []string
	for _, c := range root.Commands() {
		switch c.Name() {
		case "version", "help", "completion":
			continue
		}
		out = append(out, c.Name())
	}
	return out
}
