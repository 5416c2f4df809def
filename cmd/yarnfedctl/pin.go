package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// A pinned queue's stored policy is the operator's: the GPG never
// rewrites it (the store skips pinned queues when it applies the GPG's
// write, so a pin that races a GPG round still wins). Saving new weights
// for a pinned queue keeps the pin.

func (c *ctl) newPolicyPinCmd(pin bool) *cobra.Command {
	use, short, long := "pin QUEUE...", "Keep the GPG from changing these queues' stored policies",
		`Mark stored queue policies as pinned: the Global Policy Generator leaves them alone, whatever
it measures. The policy must already be stored (save one first); 'policy save' and 'policy set' on a
pinned queue keep the pin. 'policy list' shows pinned queues.`
	if !pin {
		use, short, long = "unpin QUEUE...", "Let the GPG manage these queues' weights again",
			`Remove the pin of stored queue policies: the Global Policy Generator may rewrite their weights again
(queues whose manager takes weights).`
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Example: "  yarnfedctl policy " + map[bool]string{true: "pin", false: "unpin"}[pin] + " root.a '*'",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s: name at least one QUEUE", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				var errs []error
				for _, q := range args {
					p, err := cl.GetPolicy(ctx, q)
					if errors.Is(err, client.ErrNotFound) {
						errs = append(errs, fmt.Errorf("queue %s: no policy stored; save one first (a pin keeps a stored policy): %w", q, err))
						continue
					}
					if err != nil {
						errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
						continue
					}
					if p.GetPinned() == pin {
						fmt.Fprintf(c.out, "queue %s: already %s\n", q, pinWord(pin))
						continue
					}
					np := proto.Clone(p).(*pb.PolicyConfiguration)
					np.Pinned = pin
					if err := cl.SetPolicy(ctx, np); err != nil {
						errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
						continue
					}
					fmt.Fprintf(c.out, "queue %s: %s\n", q, pinWord(pin))
				}
				return errors.Join(errs...)
			})
		},
	}
}

func pinWord(pin bool) string {
	if pin {
		return "pinned"
	}
	return "unpinned"
}

// pinned reports whether queue's stored policy is pinned (false when none
// is stored), so a save can keep the pin.
func pinned(ctx context.Context, cl *client.Client, queue string) (bool, error) {
	p, err := cl.GetPolicy(ctx, queue)
	if errors.Is(err, client.ErrNotFound) {
		return false, nil
	}
	return p.GetPinned(), err
}
