package systemtest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/proctest"
	"github.com/yarnfed/yarnfed/internal/testenv"
)

// yarnfedBin and yarnfedctlBin are the binaries under test: built once by
// TestMain, or YARNFED_BIN and YARNFEDCTL_BIN.
var yarnfedBin, yarnfedctlBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips itself
	}
	dir, err := os.MkdirTemp("", "yarnfed-systemtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		os.Exit(1)
	}
	for _, b := range []struct {
		dst *string
		env string
		pkg string
	}{
		{&yarnfedBin, "YARNFED_BIN", "github.com/yarnfed/yarnfed/cmd/yarnfed"},
		{&yarnfedctlBin, "YARNFEDCTL_BIN", "github.com/yarnfed/yarnfed/cmd/yarnfedctl"},
	} {
		if *b.dst = os.Getenv(b.env); *b.dst != "" {
			continue
		}
		*b.dst = filepath.Join(dir, filepath.Base(b.pkg))
		// Built without -race even when the test runs with it: the
		// processes are the operator's binaries (built as the image's),
		// and a race build would double the CPU these tests need on a
		// shared machine.
		build := gobuild.Command(*b.dst, "", b.pkg)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "systemtest: go build %s: %v\n%s", b.pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("system test: builds yarnfed and runs real processes on loopback; skipped under -short")
	}
}

// harness owns every process a test starts: their logs, and their death.
type harness struct {
	t     *testing.T
	dir   string // data dirs and logs; removed after every process is dead
	mu    sync.Mutex
	procs []*proc
}

func newHarness(t *testing.T) *harness {
	skipShort(t)
	// One temp dir registered before the kill-all cleanup, so (cleanups
	// run last-in first-out) processes die before their dirs are removed.
	h := &harness{t: t, dir: t.TempDir()}
	t.Cleanup(func() {
		h.mu.Lock()
		procs := append([]*proc(nil), h.procs...)
		h.mu.Unlock()
		for _, p := range procs {
			p.Kill()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("---- %s (%s) log tail ----\n%s", p.Name, p.LogPath, p.Tail(40))
			}
		}
	})
	return h
}

// path returns a directory under the harness dir, created.
func (h *harness) path(name string) string {
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// proc is one yarnfed process; restart runs it again with the same
// arguments (same ports, same data dir), as an operator would.
type proc = proctest.Proc

// spawn starts `yarnfed args...` with stdout and stderr appended to a log
// file named after the process.
func (h *harness) spawn(name string, args ...string) *proc {
	h.t.Helper()
	// YARNFED_SYSTEMTEST_RAFT_LOG_STORE runs every replica the tests start
	// on that Raft log store (wal, bolt) instead of the default.
	if kind := os.Getenv("YARNFED_SYSTEMTEST_RAFT_LOG_STORE"); kind != "" && len(args) > 0 && args[0] == "statestore" {
		args = append(args[:len(args):len(args)], "--raft-log-store", kind)
	}
	p := &proc{Name: name, Bin: yarnfedBin, Args: args, LogPath: filepath.Join(h.path("logs"), name+".log")}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	if err := p.Start(); err != nil {
		h.t.Fatalf("start %s: %v", name, err)
	}
	return p
}

// signal sends sig to p, failing the test if it cannot.
func signal(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("%v to %s: %v", sig, p.Name, err)
	}
}

// restart starts the process again with the same arguments; the old one
// must be dead.
func (h *harness) restart(p *proc) {
	h.t.Helper()
	if err := p.Start(); err != nil {
		h.t.Fatalf("restart %s: %v", p.Name, err)
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago,
// drawn below the kernel's ephemeral range so that no outgoing connection
// takes one before our process binds it. Another test picking ports the
// same way still could: launch retries with new ports when a process
// reports a bind failure, and the tests that cannot retry fail.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	return testenv.FreeLoopbackAddrs(t, n)
}

// errRetryPorts tells launch to pick new ports and try again.
var errRetryPorts = errors.New("port taken, retrying with new ports")

// launch starts processes on fresh ports with start, then waits for ready;
// if a process died on a taken port it kills them all and tries again with
// new ports (at most 4 times).
func (h *harness) launch(what string, nports int, timeout time.Duration, start func(ports []string) []*proc, ready func() (bool, string)) []string {
	h.t.Helper()
	for attempt := 1; ; attempt++ {
		ports := freePorts(h.t, nports)
		ps := start(ports)
		err := poll(timeout, func() (bool, string, error) {
			for _, p := range ps {
				if p.BindFailed() {
					return false, "", errRetryPorts
				}
				if dead, err := p.Exited(); dead {
					return false, "", fmt.Errorf("%s exited: %v", p.Name, err)
				}
			}
			ok, detail := ready()
			return ok, detail, nil
		})
		if err == nil {
			return ports
		}
		if errors.Is(err, errRetryPorts) && attempt < 4 {
			for _, p := range ps {
				p.Kill()
			}
			h.t.Logf("%s: %v (attempt %d)", what, err, attempt)
			continue
		}
		h.t.Fatalf("%s: %v", what, err)
	}
}

// poll calls cond every 50 ms until it reports done, returns an error, or
// timeout passes; the timeout error carries cond's last detail.
func poll(timeout time.Duration, cond func() (done bool, detail string, err error)) error {
	deadline := time.Now().Add(timeout)
	var detail string
	for {
		done, d, err := cond()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		detail = d
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %v: %s", timeout, detail)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor fails the test unless cond holds within timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if err := poll(timeout, func() (bool, string, error) { ok, d := cond(); return ok, d, nil }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

var httpClient = &http.Client{Timeout: 2 * time.Second}

// httpGet returns the status and body of GET url.
func httpGet(url string) (int, string, error) {
	resp, err := httpClient.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(bytes.TrimSpace(b)), err
}

// ctl runs yarnfedctl as an operator would and returns its stdout; it
// fails the test if the command fails or runs longer than 30 s.
func ctl(t *testing.T, args ...string) string {
	t.Helper()
	return proctest.RunCtl(t, yarnfedctlBin, args...)
}

// stopAtCleanup returns a function that cancels workers started with
// cancel's context and waits for wg, once however often it is called; the
// test's cleanup calls it too.
func stopAtCleanup(t *testing.T, cancel context.CancelFunc, wg *sync.WaitGroup) func() {
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// ctxT is a context bounded well below the test timeout.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
