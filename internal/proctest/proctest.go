// Package proctest runs the federation's own binaries as child processes
// for the system tests (internal/systemtest) and the interop tests (e2e):
// output appended to a log file, killed with SIGKILL as a crash would,
// restarted with the same command line as an operator would. Test code
// only: nothing in a server binary imports it.
package proctest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Proc is one process: Bin run with Args, its stdout and stderr appended to
// LogPath. Start runs it again after it died (same ports, same data dir).
type Proc struct {
	Name    string
	Bin     string
	Args    []string
	LogPath string
	// Env is added to the test's environment.
	Env []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts the process; the previous run, if any, must have ended. A
// line "=== time: bin args" in the log marks where each run begins.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.done) {
		return fmt.Errorf("%s is still running", p.Name)
	}
	f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), filepath.Base(p.Bin), strings.Join(p.Args, " "))
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group: a ^C to the test does not reach it first.
	// SIGKILLed when the test binary dies (Pdeathsig): a killed `go test`
	// leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Exited reports whether the process has ended (or never started), and how.
func (p *Proc) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.done) {
		return true, p.err
	}
	return false, nil
}

// Pid is the current run's process id (0 before the first start).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Kill SIGKILLs the process (only this pid: the binaries start no
// children; no shutdown code runs) and waits up to 10 s until it is reaped.
func (p *Proc) Kill() {
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

// Terminate sends SIGTERM, as systemd or an operator's kill would, and
// returns how the process exited (an error if it did not within timeout).
func (p *Proc) Terminate(timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-done:
		_, err := p.Exited()
		return err
	case <-time.After(timeout):
		return fmt.Errorf("still running %v after SIGTERM", timeout)
	}
}

// Signal sends sig to the current run (SIGSTOP/SIGCONT freeze and thaw a
// process, as a paused VM or a stuck host would).
func (p *Proc) Signal(sig os.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Tail returns the last n lines of the log (every run's).
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogContains reports whether the log of the current run mentions s.
func (p *Proc) LogContains(s string) bool {
	f, err := os.Open(p.LogPath)
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

// BindFailed reports whether the process died because a port was taken
// (another test on the machine won the race for a port picked for it).
func (p *Proc) BindFailed() bool {
	dead, _ := p.Exited()
	return dead && p.LogContains("address already in use")
}

// RunCtl runs the CLI ctl (yarnfedctl) as an operator would and returns
// its stdout; stderr (warnings, such as the plaintext one) goes into the
// failure message only. It fails the test if the command fails or runs
// longer than 30 s. The test federations' stores are plaintext, and the
// operator says so (YARNFED_STORE_INSECURE=1).
func RunCtl(t testing.TB, ctl string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ctl, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "YARNFED_STORE_INSECURE=1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(ctl), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
