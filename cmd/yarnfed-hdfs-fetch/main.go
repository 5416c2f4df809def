// Command yarnfed-hdfs-fetch fetches one hdfs:// local resource for the
// kuberm container launcher (`yarnfed kuberm launch`), which runs it as a
// process: it is a binary of its own because the HDFS client it links
// (colinmarc/hdfs) cannot share a binary with yarnfed's YARN protos
// (kuberm/DESIGN.md, "Launcher"). The init container installs it beside
// the launcher.
//
//	yarnfed-hdfs-fetch --user alice --timestamp 1700000000000 --max-bytes 8589934592 \
//	    --max-entries 1048576 --timeout 30m hdfs://nn:8020/user/alice/app.jar /tmp/app.jar
//
// It prints one JSON report on stdout (kuberm/launch/fetchwire) and exits
// 0 (fetched), 1 (failed), 2 (bad arguments) or 3 (the source changed since
// the launch context recorded it). HADOOP_CONF_DIR, when set, is read for HA
// nameservices.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/yarnfed/yarnfed/kuberm/launch/fetchwire"
	"github.com/yarnfed/yarnfed/kuberm/launch/hdfsfetch"
)

// watchdogSlack: past the timeout by this much, the process reports the
// timeout and exits even if a client call ignored its deadline.
const watchdogSlack = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Getenv("HADOOP_CONF_DIR"), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, hadoopConfDir string, stdout, stderr io.Writer) int {
	req, err := fetchwire.ParseArgs(args, stderr)
	if err != nil {
		return report(stdout, stderr, fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindUsage, Message: err.Error()})
	}
	watchdog := time.AfterFunc(req.Timeout+watchdogSlack, func() {
		os.Exit(report(stdout, stderr, fetchwire.Report{Status: fetchwire.StatusFailed, Kind: fetchwire.KindTimeout,
			Message: fmt.Sprintf("%s: not done after %v", req.URL, req.Timeout)}))
	})
	defer watchdog.Stop()
	return report(stdout, stderr, hdfsfetch.Fetch(ctx, req, hadoopConfDir))
}

// report prints rep as JSON on stdout and, when it is not ok, as one line
// for a human on stderr; it returns the exit status.
func report(stdout, stderr io.Writer, rep fetchwire.Report) int {
	stdout.Write(rep.Encode())
	switch rep.Status {
	case fetchwire.StatusChanged:
		fmt.Fprintf(stderr, "%s: the source changed since it was recorded: %s expected %d, found %d\n", fetchwire.BinaryName, rep.What, rep.Expected, rep.Found)
	case fetchwire.StatusFailed:
		fmt.Fprintf(stderr, "%s: %s: %s\n", fetchwire.BinaryName, rep.Kind, rep.Message)
	}
	return rep.ExitCode()
}
