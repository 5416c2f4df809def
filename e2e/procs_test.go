//go:build interop

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/proctest"
)

// The federation's own processes (state store, sub-cluster agents, router,
// AMRMProxy) run as the operator runs them: the built binaries, real Raft
// store, real ports. The builds happen once per test binary.

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// yarnfedBinaries builds cmd/yarnfed and cmd/yarnfedctl (without -race:
// they are the operator's binaries) and returns their paths; YARNFED_BIN and
// YARNFEDCTL_BIN name prebuilt ones instead (as in internal/systemtest).
func yarnfedBinaries(t testing.TB) (yarnfed, yarnfedctl string) {
	t.Helper()
	if b, c := os.Getenv("YARNFED_BIN"), os.Getenv("YARNFEDCTL_BIN"); b != "" && c != "" {
		return b, c
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "yarnfed-e2e-bin-")
		if binErr != nil {
			return
		}
		for _, pkg := range []string{"./cmd/yarnfed", "./cmd/yarnfedctl"} {
			cmd := gobuild.Command(binDir+string(os.PathSeparator), "", pkg)
			cmd.Dir = ".." // the module root
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatalf("interop: %v", binErr)
	}
	return filepath.Join(binDir, "yarnfed"), filepath.Join(binDir, "yarnfedctl")
}

// proc is one federation process; Start runs the same command line again
// (same ports, same data dir), as an operator would.
type proc = proctest.Proc

// startProc starts bin args... with its output appended to a log file in
// dir; the process is SIGKILLed at cleanup, and its log tail printed if the
// test failed.
func startProc(t testing.TB, dir, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{Name: name, Bin: bin, Args: args, LogPath: filepath.Join(dir, name+".log")}
	if err := p.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("---- %s (%s) log tail ----\n%s", name, p.LogPath, p.Tail(40))
		}
	})
	return p
}

// freeAddr returns a loopback address that was free a moment ago (for
// processes that take their listen address as a flag).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitUntil polls cond every 100 ms until it holds, failing the test after
// timeout with cond's last detail; p (optional) must stay alive meanwhile.
func waitUntil(t testing.TB, timeout time.Duration, what string, p *proc, cond func() (bool, string)) {
	t.Helper()
	pollAlive(t, timeout, 100*time.Millisecond, what, func() string {
		if p == nil {
			return ""
		}
		if dead, err := p.Exited(); dead {
			return fmt.Sprintf("%s exited (%v):\n%s", p.Name, err, p.Tail(30))
		}
		return ""
	}, cond)
}

// pollAlive calls cond every period until it holds, failing the test after
// timeout with cond's last detail, or at once when died says what died.
func pollAlive(t testing.TB, timeout, period time.Duration, what string, died func() string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if d := died(); d != "" {
			t.Fatalf("waiting for %s: %s", what, d)
		}
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not done after %v: %s", what, timeout, detail)
		}
		time.Sleep(period)
	}
}

var shortHTTP = &http.Client{Timeout: 3 * time.Second}

// httpOK reports whether GET url answers 200, with a detail for timeouts.
func httpOK(url string) (bool, string) {
	resp, err := shortHTTP.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
}

// runCtl runs yarnfedctl as an operator would and returns its stdout,
// failing the test on error.
func runCtl(t testing.TB, ctl string, args ...string) string {
	t.Helper()
	return proctest.RunCtl(t, ctl, args...)
}
