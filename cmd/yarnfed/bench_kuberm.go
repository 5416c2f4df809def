//go:build bench

package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/kuberm/bench"
)

// newBenchKubermCmd is `yarnfed bench kuberm`: container request to running
// through kuberm versus a real Hadoop RM and NodeManager, one run, the
// ratio last. It talks YARN only, so it needs the two targets' addresses
// and a user, no kubeconfig.
func newBenchKubermCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var subject, peer string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "kuberm",
		Short: "kuberm: container request -> running, through kuberm vs a real Hadoop RM + NodeManager",
		Long: `The bench is an unmanaged ApplicationMaster in Go, the same code against both targets: it submits
an unmanaged application (ApplicationClientProtocol), takes its AMRMToken from the report, registers,
asks for --containers containers at once, starts each through its NodeManager (startContainers with the
NM and container tokens; kuberm's NM face for kuberm) as soon as it is handed out, and polls
getContainerStatuses until it runs (RUNNING/RUNNING). --hold later it stops them and waits until the RM
reports each completed. --rounds rounds per target, alternating between the targets. At the end both
applications unregister SUCCEEDED and must report FINISHED/SUCCEEDED, and every container handed out
must have been reported completed.

Prints p50/p99/max of request -> allocated, allocated -> started (the startContainers call),
allocated -> running and request -> running per target, the load average, and last the
kuberm/hadoop ratio of the request -> running median.

The kuberm side needs a real cluster (kube-scheduler, a kubelet) whose pods can run --command; the
hadoop side a ResourceManager with a NodeManager. The AM heartbeat (--heartbeat) and the status poll
(--status-poll) bound each phase's resolution, and every call is load on what is measured (each of
kuberm's is Kubernetes API requests); a Hadoop RM also allocates only on NodeManager heartbeats
(yarn.resourcemanager.nodemanagers.heartbeat-interval-ms).`,
		Example: `  yarnfed bench kuberm --kuberm clientrm=10.0.0.2:8032,amrm=10.0.0.2:8030 \
      --hadoop clientrm=10.0.0.2:18032,amrm=10.0.0.2:18030 --containers 2 --rounds 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Subject, err = bench.ParseTarget("kuberm", subject); err != nil {
				return err
			}
			if cfg.Peer, err = bench.ParseTarget("hadoop", peer); err != nil {
				return err
			}
			if verbose {
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			_, err = bench.Run(cmd.Context(), cfg, cmd.OutOrStdout())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&subject, "kuberm", "", "kuberm's addresses: clientrm=host:port,amrm=host:port (required)")
	f.StringVar(&peer, "hadoop", "", "the Hadoop RM's addresses: clientrm=host:port,amrm=host:port (required)")
	f.StringVar(&cfg.User, "user", cfg.User, "the applications' user (SIMPLE login)")
	f.StringVar(&cfg.Queue, "queue", cfg.Queue, "the applications' queue")
	f.IntVar(&cfg.Containers, "containers", cfg.Containers, "containers asked at once per round")
	f.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per target")
	f.Int64Var(&cfg.MemoryMB, "memory-mb", cfg.MemoryMB, "memory per container (MB)")
	f.Int32Var(&cfg.VCores, "vcores", cfg.VCores, "vcores per container")
	f.StringVar(&cfg.Command, "command", cfg.Command, "what each container runs (still running when observed: it is stopped then)")
	f.DurationVar(&cfg.Heartbeat, "heartbeat", cfg.Heartbeat, "pause between the AM's allocate calls")
	f.DurationVar(&cfg.StatusPoll, "status-poll", cfg.StatusPoll, "pause between getContainerStatuses calls")
	f.DurationVar(&cfg.Hold, "hold", cfg.Hold, "how long the containers keep running once all run, before the stop")
	f.DurationVar(&cfg.RoundTimeout, "round-timeout", cfg.RoundTimeout, "bound on one round")
	f.DurationVar(&cfg.Setup, "setup-timeout", cfg.Setup, "bound on each AM's submission and registration, and on its finish")
	f.BoolVar(&verbose, "verbose", false, "log the AMs' steps to stderr")
	_ = cmd.MarkFlagRequired("kuberm")
	_ = cmd.MarkFlagRequired("hadoop")
	return cmd
}
