package peertest

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/colinmarc/hdfs/v2"

	"github.com/yarnfed/yarnfed/internal/gobuild"
)

const noSuchProtocol = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"

// startIPCServer builds and starts internal/ipctestserver; stop closes its
// stdin (graceful shutdown) and returns its metric lines.
func startIPCServer(t *testing.T) (addr string, stop func() map[string]string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ipctestserver")
	build := gobuild.Command(bin, "", "github.com/yarnfed/yarnfed/internal/hadoopipc/internal/ipctestserver")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build ipctestserver: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewScanner(stdout)
	if !out.Scan() {
		t.Fatalf("ipctestserver printed nothing: %v", out.Err())
	}
	addr, ok := strings.CutPrefix(out.Text(), "listening ")
	if !ok {
		t.Fatalf("ipctestserver said %q", out.Text())
	}
	return addr, func() map[string]string {
		stdin.Close()
		metrics := map[string]string{}
		for out.Scan() {
			line := out.Text()
			if line == "done" {
				break
			}
			name, value, _ := strings.Cut(line, " ")
			metrics[name] = value
		}
		io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			t.Errorf("ipctestserver: %v", err)
		}
		return metrics
	}
}

// TestHDFSClientUnknownProtocol: colinmarc/hdfs's namenode client (an
// independent Go implementation of Hadoop IPC, SIMPLE auth) connects to our
// server and calls ClientProtocol, which we do not serve. Each call gets
// ERROR_NO_SUCH_PROTOCOL with Hadoop's exception class, and the same
// connection keeps serving the following calls.
func TestHDFSClientUnknownProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server process")
	}
	addr, stop := startIPCServer(t)
	client, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{addr}, User: "peer"})
	if err != nil {
		t.Fatalf("hdfs.NewClient: %v", err)
	}
	for i := 0; i < 3; i++ {
		_, err := client.Stat("/")
		var remote hdfs.Error
		if !errors.As(err, &remote) {
			t.Fatalf("call %d: err = %v (%T), want a remote hdfs.Error", i, err, err)
		}
		if remote.Exception() != noSuchProtocol || remote.Desc() != "ERROR_NO_SUCH_PROTOCOL" {
			t.Fatalf("call %d: got %s / %s: %s", i, remote.Desc(), remote.Exception(), remote.Message())
		}
	}
	client.Close()
	m := stop()
	if got := m["yarnfed_ipc_connections_total{}"]; got != "1" {
		t.Errorf("server accepted %s connections, want 1 (ERROR must keep the connection): %v", got, m)
	}
	// The client's lease renewer may add calls of its own.
	if got, _ := strconv.ParseFloat(m["yarnfed_ipc_rejected_total{reason=no_such_protocol}"], 64); got < 3 {
		t.Errorf("no_such_protocol replies = %v, want >= 3", got)
	}
	if got := m["yarnfed_ipc_rejected_total{reason=fatal}"]; got != "" {
		t.Errorf("FATAL replies sent to the hdfs client: %s", got)
	}
}
