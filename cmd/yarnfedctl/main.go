// Command yarnfedctl is the operator's admin CLI for a yarnfed federation:
// queue policies, sub-cluster membership, application homes and the state
// store itself. It talks to the Raft state store directly (any replica) and
// reads and writes every policy in Hadoop's formats, so the strings and
// files operators already feed `yarn routeradmin` work unchanged.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// Exit codes: 1 for a failed operation, 2 for a command line that could not
// be understood (the convention of most Unix tools and of kubectl).
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// envStore names the environment variable holding the default --store.
const envStore = "YARNFED_STORE"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv, time.Now)
	stop()
	os.Exit(code)
}

type streams struct {
	in       io.Reader
	out, err io.Writer
}

// usageError marks a command line that could not be understood: exit 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// ctl is one invocation: its streams, its clock, the global flags and the
// lazily dialled store client.
type ctl struct {
	streams
	now func() time.Time
	reg *policies.Registry

	storeAddrs string
	storeSec   security.ClientFlags
	timeout    time.Duration
	output     string

	cl *client.Client
}

// run executes one command line and returns the process exit code. Tests
// call it in-process.
func run(ctx context.Context, args []string, s streams, getenv func(string) string, now func() time.Time) int {
	c := &ctl{streams: s, now: now, reg: policies.NewDefaultRegistry()}
	root := c.newRootCmd(getenv)
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	cmd, err := root.ExecuteContextC(ctx)
	if c.cl != nil {
		c.cl.Close()
	}
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(s.err, "yarnfedctl:", c.explain(err))
	var u usageError
	if errors.As(err, &u) {
		fmt.Fprintf(s.err, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return exitUsage
	}
	return exitError
}

// explain adds what the operator can do about the store's typed errors.
func (c *ctl) explain(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, client.ErrUnavailable):
		return fmt.Sprintf("%s\n(no state store replica at %s answered; check --store or $%s and that a leader is elected: yarnfedctl store status)", msg, c.storeAddrs, envStore)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s\n(gave up after --timeout %s)", msg, c.timeout)
	case errors.Is(err, client.ErrUnknownOutcome):
		return msg + "\n(the write may or may not have been applied: the store lost its leader, or the connection broke, while it was in flight; check with a read before retrying)"
	case errors.Is(err, client.ErrIncompatibleVersion):
		return msg + "\n(this yarnfedctl and the store disagree on the data version: use matching releases)"
	}
	return msg
}

func (c *ctl) newRootCmd(getenv func(string) string) *cobra.Command {
	defStore := getenv(envStore)
	if defStore == "" {
		defStore = node.DefaultConfig().GRPCAddress
	}
	root := &cobra.Command{
		Use:   "yarnfedctl",
		Short: "Administer a yarnfed federation: queue policies, sub-clusters, application homes, the state store",
		Long: `yarnfedctl administers a yarnfed (YARN Federation) control plane through its state store.

Policies are read and written in Hadoop's formats: 'policy save -s' takes the string of
'yarn routeradmin -policy -s', 'policy batch-save' the federation-weights.xml of '-policy -bs', and
what is stored is byte-for-byte the WeightedPolicyInfo JSON a Hadoop 3.4 router writes, so Hadoop
routers and yarnfed routers can share one configuration.

Exit status: 0 success, 1 the operation failed, 2 the command line was not understood.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		Args:              cobra.ArbitraryArgs,
		RunE:              groupRunE,
		PersistentPreRunE: c.checkGlobals,
		// cobra applies its default distance only on its own code path.
		SuggestionsMinimumDistance: 2,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&c.storeAddrs, "store", defStore, "state store replica gRPC addresses, host:port[,host:port...] (env "+envStore+")")
	// Transport security: --store-tls-cert/--store-tls-key/--store-tls-ca
	// (an admin certificate; env YARNFED_STORE_TLS_CERT, _KEY, _CA) or
	// --store-insecure (env YARNFED_STORE_INSECURE=1).
	c.storeSec.TLS = security.TLSInfo{CertFile: getenv(envStore + "_TLS_CERT"), KeyFile: getenv(envStore + "_TLS_KEY"), CAFile: getenv(envStore + "_TLS_CA")}
	c.storeSec.Insecure = getenv(envStore+"_INSECURE") == "1" || getenv(envStore+"_INSECURE") == "true"
	c.storeSec.BindFlags(pf)
	pf.DurationVar(&c.timeout, "timeout", 10*time.Second, "give up on the command after this long, retries across replicas included")
	pf.StringVarP(&c.output, "output", "o", "table", "output format: table or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(c.newPolicyCmd(getenv), c.newSubClusterCmd(), c.newAppCmd(), c.newStoreCmd(), c.newGPGCmd())
	root.CompletionOptions.HiddenDefaultCmd = true
	return root
}

// groupRunE makes a command that only groups others fail as a usage error
// on a missing or unknown subcommand (cobra would print help and exit 0).
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usagef("%s: missing subcommand (one of: %s)", cmd.CommandPath(), subNames(cmd))
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usagef("%s (commands: %s)", msg, subNames(cmd))
}

func subNames(cmd *cobra.Command) string {
	var names []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return strings.Join(names, ", ")
}

// newGroup returns a command that only holds subcommands.
func newGroup(use, short string, aliases ...string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Aliases: aliases, Args: cobra.ArbitraryArgs, RunE: groupRunE, SuggestionsMinimumDistance: 2}
}

// exactArgs is cobra.ExactArgs reporting a usage error, naming the
// arguments expected.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s: want %d argument(s) (%s), got %d", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		for i, a := range args {
			if strings.TrimSpace(a) == "" {
				return usagef("%s: argument %s is empty", cmd.CommandPath(), names[i])
			}
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// checkGlobals validates the global flags before any command runs.
func (c *ctl) checkGlobals(_ *cobra.Command, _ []string) error {
	switch c.output {
	case "table", "json":
	default:
		return usagef("--output %q: want table or json", c.output)
	}
	if c.timeout <= 0 {
		return usagef("--timeout %s: must be positive", c.timeout)
	}
	if _, err := parseStoreAddrs(c.storeAddrs); err != nil {
		return usageError{err}
	}
	return nil
}

// parseStoreAddrs splits and checks the --store list.
func parseStoreAddrs(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("--store: %q is not host:port", a)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--store: no address given")
	}
	return out, nil
}

// client dials the store on first use. The watch-backed cache is off: a
// one-shot command wants linearizable reads, not a stream.
func (c *ctl) client() (*client.Client, error) {
	if c.cl != nil {
		return c.cl, nil
	}
	addrs, err := parseStoreAddrs(c.storeAddrs)
	if err != nil {
		return nil, usageError{err}
	}
	tc, err := c.storeSec.TLSConfig(slog.New(slog.NewTextHandler(c.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if errors.Is(err, security.ErrPlaintext) {
		return nil, usageError{fmt.Errorf("%w (or env %s_TLS_CERT, _KEY and _CA; %s_INSECURE=1)", err, envStore, envStore)}
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("--store-tls: %w", err)}
	}
	callTimeout := min(5*time.Second, c.timeout)
	cl, err := client.New(client.Config{Addrs: addrs, DisableCache: true, CallTimeout: callTimeout, RetryTimeout: c.timeout, TLS: tc})
	if err != nil {
		return nil, err
	}
	c.cl = cl
	return cl, nil
}

// ctx bounds a command by --timeout.
func (c *ctl) ctx(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), c.timeout)
}

// withStore runs f, the part of a command that calls the store, with the
// client and a context bounded by --timeout.
func (c *ctl) withStore(cmd *cobra.Command, f func(ctx context.Context, cl *client.Client) error) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := c.ctx(cmd)
	defer cancel()
	return f(ctx, cl)
}
