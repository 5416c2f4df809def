package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/kuberm/launch"
	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
)

// exitError carries an exit code out of a subcommand that must exit with
// one (the launcher exits with its container's code).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// newKubermLaunchCmd is `yarnfed kuberm launch`: what runs inside every
// YARN container pod kuberm creates (kuberm/launch).
func newKubermLaunchCmd() *cobra.Command {
	var (
		install        string
		launchDir      string
		workDir        string
		killDelay      time.Duration
		terminationLog string
	)
	cmd := &cobra.Command{
		Use:   "launch",
		Short: "Run a YARN container inside its pod as a NodeManager would (kuberm's container pods run this)",
		Long: `launch reads the container's launch context from the launch Secret kuberm mounts (--launch-dir,
key ` + launch.ContextFile + `), localizes its local resources (file://, http://, https://, and hdfs:// through
` + fetchwire.BinaryName + ` installed beside it; archives unpacked) into
LOCAL_DIRS and links them into the working directory, writes the credentials to container_tokens
(HADOOP_TOKEN_FILE_LOCATION), writes launch_container.sh with the NodeManager's environment and
expansions ({{VAR}}, <CPS>, <LOG_DIR>) and runs it with /bin/bash in its own session. SIGTERM is
forwarded to the container's process group (SIGKILL follows --kill-delay later). It exits with the
container's exit code; ` + fmt.Sprint(launch.ExitLocalizationFailed) + ` if localization failed, ` + fmt.Sprint(launch.ExitLaunchFailed) + ` if the launch failed
(the reason goes to --termination-log).

With --install DIR it only copies its own executable to DIR/yarnfed, and ` + fetchwire.BinaryName + ` from beside
it to DIR/` + fetchwire.BinaryName + ` (the pod's init container).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if install != "" {
				installed, err := launch.Install(install)
				if err != nil {
					return err
				}
				for _, dst := range installed {
					fmt.Fprintln(cmd.OutOrStdout(), "installed", dst)
				}
				if len(installed) == 1 {
					fmt.Fprintln(cmd.OutOrStdout(), "no "+fetchwire.BinaryName+" beside this executable: hdfs:// resources will fail to localize")
				}
				return nil
			}
			code, err := launch.Run(cmd.Context(), launch.Config{
				LaunchDir: launchDir, WorkDir: workDir, Env: os.Environ(), KillDelay: killDelay,
				TerminationLog: terminationLog,
				Logger:         slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)).With("role", "kuberm-launch"),
			})
			if err != nil || code != 0 {
				if err == nil {
					err = fmt.Errorf("container exited with code %d", code)
				}
				return &exitError{code: code, err: err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&install, "install", "", "copy this executable to DIR/yarnfed and "+fetchwire.BinaryName+" beside it to DIR (mode 0755) and exit")
	f.StringVar(&launchDir, "launch-dir", launch.DefaultLaunchDir, "where the launch Secret is mounted")
	f.StringVar(&workDir, "work-dir", "", "the container's working directory (default: the current directory)")
	f.DurationVar(&killDelay, "kill-delay", 250*time.Millisecond, "SIGKILL this long after forwarding SIGTERM (yarn.nodemanager.sleep-delay-before-sigkill.ms)")
	f.StringVar(&terminationLog, "termination-log", "/dev/termination-log", "file receiving the reason of a launch failure (empty: none)")
	return cmd
}
