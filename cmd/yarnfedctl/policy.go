package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// envPolicyManager overrides the default manager of `policy save` and
// `policy batch-save`, as yarn.federation.policy-manager in the client's
// yarn-site.xml does for `yarn routeradmin`.
const envPolicyManager = "YARNFED_POLICY_MANAGER"

// defaultWeightsManager is the manager weights are saved under when neither
// --manager nor $YARNFED_POLICY_MANAGER says otherwise. Hadoop's routeradmin
// sends yarn.federation.policy-manager, whose built-in default
// (UniformBroadcast) its router refuses for weights; Hadoop's Federation.md
// configures WeightedLocalityPolicyManager, so that is the one that works.
const defaultWeightsManager = "WeightedLocality"

func (c *ctl) newPolicyCmd(getenv func(string) string) *cobra.Command {
	g := newGroup("policy", "Queue policies (yarn routeradmin -policy)", "policies")
	defManager := getenv(envPolicyManager)
	if defManager == "" {
		defManager = defaultWeightsManager
	}
	g.AddCommand(c.newPolicySaveCmd(defManager), c.newPolicyBatchSaveCmd(defManager), c.newPolicyListCmd(),
		c.newPolicyGetCmd(), c.newPolicySetCmd(), c.newPolicyDeleteCmd(), c.newPolicyExportCmd(),
		c.newPolicyPinCmd(true), c.newPolicyPinCmd(false))
	return g
}

func (c *ctl) newPolicySaveCmd(defManager string) *cobra.Command {
	var save, manager string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "save -s \"QUEUE;ROUTER_WEIGHTS;AMRM_WEIGHTS;HEADROOM_ALPHA\"",
		Short: "Save one queue's weights (yarn routeradmin -policy -s)",
		Long: `Save one queue's weights, given in the string form of 'yarn routeradmin -policy -s':
queue;router weights;amrm weights;headroomAlpha, each weight list "SC-1:0.7,SC-2:0.3" summing to 1.

What is stored is the WeightedPolicyInfo JSON a Hadoop 3.4 router stores for the same string, under
the manager's Java class name. The manager must take weights (WeightedLocality, PriorityBroadcast,
WeightedHome); the default is $` + envPolicyManager + ` or ` + defaultWeightsManager + `.
Sub-cluster ids that are not registered are allowed (with a warning): a sub-cluster may join later.`,
		Example: `  yarnfedctl policy save -s "root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0"
  yarnfedctl policy save -s "root.b;SC-1:1.0;SC-1:0.5,SC-2:0.5;0.5" --manager PriorityBroadcast`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usagef("%s: want one policy string, got %d arguments", cmd.CommandPath(), len(args))
			case len(args) == 1 && save != "":
				return usagef("%s: give the policy string with -s or as the argument, not both", cmd.CommandPath())
			case len(args) == 0 && save == "":
				return usagef("%s: missing the policy string (-s \"queue;router weights;amrm weights;headroomAlpha\")", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if save == "" {
				save = args[0]
			}
			q, err := policies.ParsePolicySaveString(save)
			if err != nil {
				return err
			}
			return c.saveQueuePolicies(cmd, []policies.QueuePolicy{q}, manager, dryRun)
		},
	}
	cmd.Flags().StringVarP(&save, "save", "s", "", "the policy: queue;router weights;amrm weights;headroomAlpha")
	cmd.Flags().StringVar(&manager, "manager", defManager, "policy manager to store the weights under (short or Java class name)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and print what would be stored, write nothing")
	return cmd
}

func (c *ctl) newPolicyBatchSaveCmd(defManager string) *cobra.Command {
	var format, file, manager string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "batch-save --format xml -f FILE",
		Short: "Save many queues' weights from a federation-weights.xml file (yarn routeradmin -policy -bs)",
		Long: `Save the weights of every queue in a federation-weights.xml file, the format of
'yarn routeradmin -policy -bs --format xml -f FILE'. Every queue is validated before anything is
written: one bad queue refuses the whole file. -f - reads standard input.`,
		Example: `  yarnfedctl policy batch-save --format xml -f federation-weights.xml`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !strings.EqualFold(format, "xml") {
				return usagef("--format %q: only xml is supported (as in Hadoop)", format)
			}
			if file == "" {
				return usagef("%s: missing -f FILE", cmd.CommandPath())
			}
			data, err := c.readInput(file)
			if err != nil {
				return err
			}
			qs, err := policies.ParseBatchXML(strings.NewReader(string(data)))
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			return c.saveQueuePolicies(cmd, qs, manager, dryRun)
		},
	}
	cmd.Flags().StringVar(&format, "format", "xml", "input format (xml)")
	cmd.Flags().StringVarP(&file, "input-file", "f", "", "federation-weights.xml file, - for standard input")
	cmd.Flags().StringVar(&manager, "manager", defManager, "policy manager to store the weights under (short or Java class name)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and print what would be stored, write nothing")
	return cmd
}

// readInput reads a file argument, "-" meaning standard input.
func (c *ctl) readInput(name string) ([]byte, error) {
	// 16 MB is far beyond any policy file and keeps a wrong file argument
	// (a log, a device) from eating memory.
	const limit = 16 << 20
	var r io.Reader
	if name == "-" {
		r = c.in
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, nil
}

// saveQueuePolicies validates every queue's configuration first (so a bad
// one refuses the lot and nothing is written), then writes them in order.
func (c *ctl) saveQueuePolicies(cmd *cobra.Command, qs []policies.QueuePolicy, manager string, dryRun bool) error {
	cfgs := make([]policies.PolicyConfig, 0, len(qs))
	for _, q := range qs {
		cfg, err := c.reg.QueuePolicyConfig(q, manager, policies.Env{})
		if err != nil {
			return fmt.Errorf("queue %q: %w", q.Queue, err)
		}
		cfgs = append(cfgs, cfg)
	}
	if dryRun {
		for _, cfg := range cfgs {
			fmt.Fprintf(c.out, "%s\t%s\t%s\n", cfg.Queue, cfg.Type, cfg.Params)
		}
		return nil
	}
	return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
		if err := c.warnUnknownSubClusters(ctx, cl, qs); err != nil {
			return err
		}
		for i, cfg := range cfgs {
			pin, err := pinned(ctx, cl, cfg.Queue)
			if err == nil {
				err = cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: cfg.Queue, Type: cfg.Type, Params: cfg.Params, Pinned: pin})
			}
			if err != nil {
				if i > 0 {
					return fmt.Errorf("queue %q: %w (saved before the failure: %s; not saved: %s)", cfg.Queue, err, queueNames(cfgs[:i]), queueNames(cfgs[i:]))
				}
				return fmt.Errorf("queue %q: %w", cfg.Queue, err)
			}
			fmt.Fprintf(c.out, "saved policy for queue %s (%s)\n", cfg.Queue, c.managerShort(cfg.Type))
		}
		return nil
	})
}

func queueNames(cfgs []policies.PolicyConfig) string {
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Queue
	}
	return strings.Join(names, ", ")
}

// warnUnknownSubClusters warns about weights for sub-clusters the store
// does not know: usually a typo, sometimes a sub-cluster not yet joined, so
// it is not an error. A store that cannot list cannot take the write
// either: its error is returned before anything is written.
func (c *ctl) warnUnknownSubClusters(ctx context.Context, cl *client.Client, qs []policies.QueuePolicy) error {
	scs, err := cl.ListSubClusters(ctx, false)
	if err != nil {
		return err
	}
	known := map[policies.SubClusterID]bool{}
	for _, sc := range scs {
		known[policies.SubClusterID(sc.GetSubClusterId())] = true
	}
	for _, q := range qs {
		for _, l := range [][]policies.Weight{q.Info.RouterWeights, q.Info.AMRMWeights} {
			for _, w := range l {
				if !known[w.ID] {
					fmt.Fprintf(c.err, "warning: queue %s: sub-cluster %s is not registered in the state store\n", q.Queue, w.ID)
					known[w.ID] = true // once per id
				}
			}
		}
	}
	return nil
}

// managerShort returns our short name for a stored manager type, or the
// type itself when the registry does not know it.
func (c *ctl) managerShort(typ string) string {
	cls, err := c.reg.ManagerClass(typ)
	if err != nil {
		return typ
	}
	for _, n := range c.reg.ManagerNames() {
		if nc, _ := c.reg.ManagerClass(n); nc == cls {
			return n
		}
	}
	return typ
}

// policyRow is one listed policy, named like the fields of Hadoop's
// FederationQueueWeight record that `routeradmin -policy -l` prints.
type policyRow struct {
	Queue                  string `json:"queue"`
	PolicyManagerClassName string `json:"policyManagerClassName"`
	RouterWeight           string `json:"routerWeight"`
	AmrmWeight             string `json:"amrmWeight"`
	HeadRoomAlpha          string `json:"headRoomAlpha"`
	// ParamsError says why stored params could not be read as weights.
	ParamsError string `json:"paramsError,omitempty"`
	// Pinned: the GPG leaves this queue alone (yarnfed extension).
	Pinned bool `json:"pinned,omitempty"`
}

func (c *ctl) policyRowOf(p *pb.PolicyConfiguration) policyRow {
	r := policyRow{Queue: p.GetQueue(), PolicyManagerClassName: p.GetType(), Pinned: p.GetPinned()}
	if len(p.GetParams()) == 0 {
		return r
	}
	w, err := policies.QueueWeightOf(policies.PolicyConfig{Queue: p.GetQueue(), Type: p.GetType(), Params: p.GetParams()})
	if err != nil {
		r.ParamsError = err.Error()
		return r
	}
	r.RouterWeight, r.AmrmWeight, r.HeadRoomAlpha = w.RouterWeight, w.AmrmWeight, w.HeadRoomAlpha
	return r
}

func (c *ctl) newPolicyListCmd() *cobra.Command {
	var queue string
	var queues []string
	cmd := &cobra.Command{
		Use:     "list [--queue Q | --queues A,B]",
		Aliases: []string{"ls"},
		Short:   "List stored queue policies (yarn routeradmin -policy -l)",
		Long: `List stored queue policies with their manager, router and AMRM weights and headroomAlpha.
Weights are shown as 'routeradmin -policy -l' shows them (Hadoop's map order). -o json prints the
fields of Hadoop's FederationQueueWeight record. PINNED marks queues the GPG leaves alone
('policy pin').`,
		Example: `  yarnfedctl policy list
  yarnfedctl policy list --queues root.a,root.b -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if queue != "" && len(queues) > 0 {
				return usagef("--queue and --queues are mutually exclusive")
			}
			all, err := c.storedPolicies(cmd, append([]string{queue}, queues...))
			if err != nil {
				return err
			}
			rows := []policyRow{}
			for _, p := range all {
				rows = append(rows, c.policyRowOf(p))
			}
			slices.SortFunc(rows, func(a, b policyRow) int { return strings.Compare(a.Queue, b.Queue) })
			if c.output == "json" {
				return writeJSON(c.out, rows)
			}
			t := newTable(c.out, "QUEUE", "MANAGER", "ROUTER WEIGHTS", "AMRM WEIGHTS", "HEADROOM ALPHA", "PINNED")
			for _, r := range rows {
				router := r.RouterWeight
				if r.ParamsError != "" {
					router = "(unreadable params: see -o json)"
				}
				pin := ""
				if r.Pinned {
					pin = "yes"
				}
				t.row(r.Queue, c.managerShort(r.PolicyManagerClassName), router, r.AmrmWeight, r.HeadRoomAlpha, pin)
			}
			return t.flush()
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "show only this queue")
	cmd.Flags().StringSliceVar(&queues, "queues", nil, "show only these queues (comma-separated)")
	return cmd
}

func (c *ctl) newPolicyGetCmd() *cobra.Command {
	var effective bool
	cmd := &cobra.Command{
		Use:   "get QUEUE",
		Short: "Print a queue's stored policy params (WeightedPolicyInfo JSON) as stored",
		Long: `Print a queue's stored params byte for byte (the WeightedPolicyInfo JSON Hadoop routers read).
-o json prints queue, manager type and params together. --effective resolves the queue the way
routers do: its own entry, else the '*' entry.`,
		Example: `  yarnfedctl policy get root.a
  yarnfedctl policy get root.x --effective -o json`,
		Args: exactArgs("QUEUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				var p *pb.PolicyConfiguration
				var err error
				if effective {
					p, err = cl.PolicyFor(ctx, args[0])
				} else {
					p, err = cl.GetPolicy(ctx, args[0])
				}
				if errors.Is(err, client.ErrNotFound) {
					if effective {
						return fmt.Errorf("queue %s: no policy of its own and no '*' policy; routers use their configured default manager: %w", args[0], err)
					}
					return fmt.Errorf("queue %s: no policy stored (try --effective for the '*' fallback): %w", args[0], err)
				}
				if err != nil {
					return err
				}
				if effective && p.GetQueue() != args[0] {
					fmt.Fprintf(c.err, "queue %s has no policy of its own; showing the %q policy\n", args[0], p.GetQueue())
				}
				if c.output == "json" {
					var params json.RawMessage
					if len(p.GetParams()) > 0 && json.Valid(p.GetParams()) {
						params = p.GetParams()
					}
					return writeJSON(c.out, struct {
						Queue  string          `json:"queue"`
						Type   string          `json:"type"`
						Params json.RawMessage `json:"params"`
					}{p.GetQueue(), p.GetType(), params})
				}
				if len(p.GetParams()) == 0 {
					fmt.Fprintf(c.err, "queue %s: manager %s, no params stored\n", p.GetQueue(), p.GetType())
					return nil
				}
				_, err = c.out.Write(append(slices.Clone(p.GetParams()), '\n'))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&effective, "effective", false, "fall back to the '*' policy as routers do")
	return cmd
}

func (c *ctl) newPolicySetCmd() *cobra.Command {
	var typ, paramsFile, params string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "set QUEUE --type MANAGER [--params-file FILE | --params JSON]",
		Short: "Store a policy of any manager type with WeightedPolicyInfo params",
		Long: `Store a queue's policy for any manager (` + "UniformBroadcast, HashBroadcast, PriorityBroadcast, WeightedLocality," + `
WeightedHome, Home, RejectAll; short or Java class names). Use '*' as the queue for the default of
queues without their own policy. Params are WeightedPolicyInfo JSON (Hadoop's, or any form its
parser accepts); they are stored re-encoded exactly as Hadoop writes them. The manager is built
from the configuration before anything is written: a configuration no router could use is refused
with the offending field named, and the stored policy stays as it was.`,
		Example: `  yarnfedctl policy set root.b --type HashBroadcast
  yarnfedctl policy set '*' --type WeightedHome --params-file weights.json
  yarnfedctl policy set root.c --type org.apache.hadoop.yarn.server.federation.policies.manager.RejectAllPolicyManager`,
		Args: exactArgs("QUEUE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if typ == "" {
				return usagef("%s: missing --type MANAGER (one of %s)", cmd.CommandPath(), strings.Join(c.reg.ManagerNames(), ", "))
			}
			if paramsFile != "" && params != "" {
				return usagef("--params and --params-file are mutually exclusive")
			}
			raw := []byte(params)
			if paramsFile != "" {
				var err error
				if raw, err = c.readInput(paramsFile); err != nil {
					return err
				}
			}
			cfg, info, err := c.policyConfig(args[0], typ, raw)
			if err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintf(c.out, "%s\t%s\t%s\n", cfg.Queue, cfg.Type, cfg.Params)
				return nil
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				if info != nil {
					if err := c.warnUnknownSubClusters(ctx, cl, []policies.QueuePolicy{{Queue: cfg.Queue, Info: *info}}); err != nil {
						return err
					}
				}
				pin, err := pinned(ctx, cl, cfg.Queue)
				if err == nil {
					err = cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: cfg.Queue, Type: cfg.Type, Params: cfg.Params, Pinned: pin})
				}
				if err != nil {
					return fmt.Errorf("queue %q: %w", cfg.Queue, err)
				}
				fmt.Fprintf(c.out, "saved policy for queue %s (%s)\n", cfg.Queue, c.managerShort(cfg.Type))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "policy manager (short or Java class name)")
	cmd.Flags().StringVar(&paramsFile, "params-file", "", "WeightedPolicyInfo JSON file, - for standard input")
	cmd.Flags().StringVar(&params, "params", "", "WeightedPolicyInfo JSON")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate and print what would be stored, write nothing")
	return cmd
}

// policyConfig builds the configuration `policy set` stores: the manager's
// Java class name (what Hadoop routers load) and params in Hadoop's exact
// encoding, after building the manager from it. info is the parsed params
// (nil without params).
func (c *ctl) policyConfig(queue, typ string, raw []byte) (cfg policies.PolicyConfig, info *policies.WeightedPolicyInfo, err error) {
	class, err := c.reg.ManagerClass(typ)
	if err != nil {
		return cfg, nil, err
	}
	cfg = policies.PolicyConfig{Queue: queue, Type: class}
	if len(strings.TrimSpace(string(raw))) > 0 {
		if info, err = policies.ParseWeightedPolicyInfo(raw); err != nil {
			return cfg, nil, fmt.Errorf("queue %q: %w", queue, err)
		}
		cfg.Params = info.MarshalHadoopJSON()
	}
	if _, err := c.reg.NewManager(cfg, policies.Env{}); err != nil {
		return cfg, nil, err
	}
	return cfg, info, nil
}

func (c *ctl) newPolicyDeleteCmd() *cobra.Command {
	var all, yes bool
	var queueFlags []string
	cmd := &cobra.Command{
		Use:     "delete QUEUE... | --all --yes",
		Aliases: []string{"rm"},
		Short:   "Delete queue policies (yarn routeradmin -policy -d)",
		Args:    cobra.ArbitraryArgs,
		Long: `Delete the named queues' policies; those queues then follow the '*' policy, or the routers'
configured default manager. A queue without a policy is reported and the command exits 1 after
deleting the others. --all deletes every policy, '*' included, and needs --yes.`,
		Example: `  yarnfedctl policy delete root.a root.b
  yarnfedctl policy delete --all --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			args = append(args, queueFlags...)
			switch {
			case all && len(args) > 0:
				return usagef("give queues or --all, not both")
			case !all && len(args) == 0:
				return usagef("%s: name the queues to delete, or --all", cmd.CommandPath())
			case all && !yes:
				return usagef("refusing to delete every queue policy without --yes")
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				if all {
					if err := cl.DeleteAllPolicies(ctx); err != nil {
						return err
					}
					fmt.Fprintln(c.out, "deleted all queue policies")
					return nil
				}
				// The store ignores missing queues; look first so a typo is
				// reported instead of silently doing nothing.
				stored, err := cl.ListPolicies(ctx)
				if err != nil {
					return err
				}
				have := map[string]bool{}
				for _, p := range stored {
					have[p.GetQueue()] = true
				}
				var del, missing []string
				seen := map[string]bool{}
				for _, q := range args {
					if seen[q] {
						continue
					}
					seen[q] = true
					if have[q] {
						del = append(del, q)
					} else {
						missing = append(missing, q)
					}
				}
				if len(del) > 0 {
					if err := cl.DeletePolicies(ctx, del...); err != nil {
						return err
					}
					for _, q := range del {
						fmt.Fprintf(c.out, "deleted policy for queue %s\n", q)
					}
				}
				if len(missing) > 0 {
					return fmt.Errorf("%w: no policy stored for queue(s) %s", client.ErrNotFound, strings.Join(missing, ", "))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "delete every queue policy")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm --all")
	// Hadoop spells it -policy -d --queue root.a.
	cmd.Flags().StringSliceVar(&queueFlags, "queue", nil, "queue to delete (repeatable; same as naming it as an argument)")
	return cmd
}

func (c *ctl) newPolicyExportCmd() *cobra.Command {
	var queues []string
	cmd := &cobra.Command{
		Use:   "export [--queues A,B]",
		Short: "Print stored queue weights as a federation-weights.xml batch file",
		Long: `Print the stored weighted queue policies as a federation-weights.xml file that 'policy batch-save'
and Hadoop's 'yarn routeradmin -policy -bs --format xml' read back, for backups, reviews and moving
weights between federations. The file has no manager type: batch-save applies one --manager to all.
Queues whose params are not weights (e.g. HashBroadcast without params) are skipped with a note.`,
		Example: `  yarnfedctl policy export > federation-weights.xml`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := c.storedPolicies(cmd, queues)
			if err != nil {
				return err
			}
			slices.SortFunc(all, func(a, b *pb.PolicyConfiguration) int { return strings.Compare(a.GetQueue(), b.GetQueue()) })
			var qs []policies.QueuePolicy
			for _, p := range all {
				if len(p.GetParams()) == 0 {
					fmt.Fprintf(c.err, "skipping queue %s: %s has no weights\n", p.GetQueue(), c.managerShort(p.GetType()))
					continue
				}
				info, err := policies.ParseWeightedPolicyInfo(p.GetParams())
				if err != nil {
					fmt.Fprintf(c.err, "skipping queue %s: %v\n", p.GetQueue(), err)
					continue
				}
				qs = append(qs, policies.QueuePolicy{Queue: p.GetQueue(), Info: *info})
			}
			_, err = c.out.Write(policies.MarshalBatchXML(qs))
			return err
		},
	}
	cmd.Flags().StringSliceVar(&queues, "queues", nil, "export only these queues (comma-separated)")
	return cmd
}

// storedPolicies lists the stored policies of the named queues (blank names
// are ignored), or of every queue when none is named.
func (c *ctl) storedPolicies(cmd *cobra.Command, queues []string) ([]*pb.PolicyConfiguration, error) {
	want := map[string]bool{}
	for _, q := range queues {
		if q = strings.TrimSpace(q); q != "" {
			want[q] = true
		}
	}
	var all []*pb.PolicyConfiguration
	err := c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
		var err error
		all, err = cl.ListPolicies(ctx)
		return err
	})
	if err != nil || len(want) == 0 {
		return all, err
	}
	return slices.DeleteFunc(all, func(p *pb.PolicyConfiguration) bool { return !want[p.GetQueue()] }), nil
}
