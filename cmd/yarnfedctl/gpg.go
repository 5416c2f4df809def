package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/statestore/client"
)

// newGPGCmd: what the store says about the Global Policy Generators (the
// GPG's own view is at its /gpg/v1/status).
func (c *ctl) newGPGCmd() *cobra.Command {
	g := newGroup("gpg", "The Global Policy Generator's lease (which GPG acts)")
	var lease string
	cmd := &cobra.Command{
		Use:   "lease [--name gpg]",
		Short: "Show which GPG holds the lease (acts), its epoch and when the lease expires",
		Long: `Show the GPG lease as the store holds it: the holder (the GPG that acts), the epoch (incremented
each time the lease changes hands; writes of an older epoch are refused) and the expiry. A lease past
its expiry is free: no GPG acts until one takes it (the federation keeps routing meanwhile).`,
		Example: `  yarnfedctl gpg lease
  yarnfedctl gpg lease -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				l, err := cl.GetLease(ctx, lease)
				if errors.Is(err, client.ErrNotFound) {
					return fmt.Errorf("lease %s: no GPG ever acquired it: %w", lease, err)
				}
				if err != nil {
					return err
				}
				expires := time.UnixMilli(l.GetExpiresMs())
				held := c.now().Before(expires)
				if c.output == "json" {
					return writeJSON(c.out, struct {
						Name    string `json:"name"`
						Holder  string `json:"holder"`
						Epoch   uint64 `json:"epoch"`
						Expires string `json:"expires"`
						Held    bool   `json:"held"`
					}{l.GetName(), l.GetHolder(), l.GetEpoch(), formatMs(l.GetExpiresMs()), held})
				}
				t := newTable(c.out, "Lease", l.GetName())
				t.row("Holder", l.GetHolder())
				t.row("Epoch", fmt.Sprint(l.GetEpoch()))
				if held {
					t.row("Expires", fmt.Sprintf("%s (in %s)", formatMs(l.GetExpiresMs()), formatAge(expires.Sub(c.now()))))
				} else {
					t.row("Expires", fmt.Sprintf("%s (expired %s ago: no GPG acts)", formatMs(l.GetExpiresMs()), formatAge(c.now().Sub(expires))))
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVar(&lease, "name", "gpg", "lease name (the GPGs' lease_name)")
	g.AddCommand(cmd)
	return g
}
