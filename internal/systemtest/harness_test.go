package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
		// processes are the operator's binaries, and a race build would
		// double the CPU these tests need on a shared machine.
		build := exec.Command("go", "build", "-o", *b.dst, b.pkg)
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
			p.kill()
		}
		if t.Failed() {
			for _, p := range procs {
				t.Logf("---- %s (%s) log tail ----\n%s", p.name, p.logPath, p.tail(40))
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
type proc struct {
	name    string
	args    []string
	logPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// spawn starts `yarnfed args...` with stdout and stderr appended to a log
// file named after the process.
func (h *harness) spawn(name string, args ...string) *proc {
	h.t.Helper()
	// YARNFED_SYSTEMTEST_RAFT_LOG_STORE runs every replica the tests start
	// on that Raft log store (wal, bolt) instead of the default.
	if kind := os.Getenv("YARNFED_SYSTEMTEST_RAFT_LOG_STORE"); kind != "" && len(args) > 0 && args[0] == "statestore" {
		args = append(args[:len(args):len(args)], "--raft-log-store", kind)
	}
	p := &proc{name: name, args: args, logPath: filepath.Join(h.path("logs"), name+".log")}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	if err := p.start(); err != nil {
		h.t.Fatalf("start %s: %v", name, err)
	}
	return p
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.exitedLocked() {
		return fmt.Errorf("%s is still running", p.name)
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s: yarnfed %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(yarnfedBin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *proc) exitedLocked() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exited reports whether the process has ended, and how.
func (p *proc) exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return true, nil
	}
	if p.exitedLocked() {
		return true, p.err
	}
	return false, nil
}

// kill SIGKILLs the process (only this pid: yarnfed starts no children)
// and waits until it is reaped.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// terminate sends SIGTERM, as systemd or an operator's kill would, and
// returns how the process exited (an error if it did not within timeout).
func (p *proc) terminate(timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-done:
		_, err := p.exited()
		return err
	case <-time.After(timeout):
		return fmt.Errorf("still running %v after SIGTERM", timeout)
	}
}

// signal sends sig (SIGSTOP/SIGCONT freeze and thaw a process, as a
// paused VM or a stuck host would).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v to %s: %v", sig, p.name, err)
	}
}

// restart starts the process again with the same arguments; the old one
// must be dead.
func (h *harness) restart(p *proc) {
	h.t.Helper()
	if err := p.start(); err != nil {
		h.t.Fatalf("restart %s: %v", p.name, err)
	}
}

// tail returns the last n lines of the process log.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logContains reports whether the log of the current run mentions s.
func (p *proc) logContains(s string) bool {
	f, err := os.Open(p.logPath)
	if err != nil {
		return false
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "=== ") {
			found = false // a new run starts
		}
		found = found || strings.Contains(line, s)
	}
	return found
}

// bindFailed reports whether the process died because a port was taken
// (another test on the machine won the race for a port we picked).
func (p *proc) bindFailed() bool {
	dead, _ := p.exited()
	return dead && p.logContains("address already in use")
}

// freePorts returns n distinct loopback ports that were free a moment ago.
// The kernel may hand them to someone else before our process binds them;
// callers retry with new ports when a process reports a bind failure.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
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
				if p.bindFailed() {
					return false, "", errRetryPorts
				}
				if dead, err := p.exited(); dead {
					return false, "", fmt.Errorf("%s exited: %v", p.name, err)
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
				p.kill()
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, yarnfedctlBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The harness's replicas are plaintext; the operator says so.
	cmd.Env = append(os.Environ(), "YARNFED_STORE_INSECURE=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("yarnfedctl %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// ctxT is a context bounded well below the test timeout.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
