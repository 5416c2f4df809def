package proctest

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcLifecycle runs a real shell: its output reaches the log, Kill
// ends it, Start runs it again with a new run marker, and LogContains
// looks at the current run only.
func TestProcLifecycle(t *testing.T) {
	p := &Proc{Name: "sh", Bin: "/bin/sh", Args: []string{"-c", `echo "up $$"; exec sleep 60`}, LogPath: filepath.Join(t.TempDir(), "sh.log")}
	if dead, err := p.Exited(); !dead || err != nil || p.Pid() != 0 {
		t.Fatalf("before start: exited %v %v, pid %d", dead, err, p.Pid())
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.Start(); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("second start while running: %v", err)
	}
	waitLog(t, p, "up ")
	p.Kill()
	if dead, err := p.Exited(); !dead || err == nil {
		t.Fatalf("after SIGKILL: exited %v, err %v", dead, err)
	}
	// The second run's script exits at once on its own, having said
	// "address already in use": a bind failure for BindFailed.
	p.Args = []string{"-c", "echo listen: address already in use; exit 1"}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.BindFailed() {
		if time.Now().After(deadline) {
			t.Fatalf("no bind failure seen:\n%s", p.Tail(10))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.LogContains("up ") {
		t.Error("LogContains looked past the current run's marker")
	}
	if got := strings.Count(p.Tail(10), "=== "); got != 2 {
		t.Errorf("%d run markers in the log, want 2:\n%s", got, p.Tail(10))
	}
	if err := p.Signal(syscall.SIGCONT); err == nil {
		t.Error("a signal to an exited process succeeded")
	}
}

// TestProcTerminate: SIGTERM ends a process that does not catch it, and
// Terminate reports how it exited.
func TestProcTerminate(t *testing.T) {
	p := &Proc{Name: "sleep", Bin: "/bin/sleep", Args: []string{"60"}, LogPath: filepath.Join(t.TempDir(), "sleep.log")}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.Terminate(10 * time.Second); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Fatalf("Terminate: %v, want the signal exit", err)
	}
}

func waitLog(t *testing.T, p *Proc, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !p.LogContains(s) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", s, p.Tail(10))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunCtl: stdout comes back, and the plaintext store is declared.
func TestRunCtl(t *testing.T) {
	if got := RunCtl(t, "/bin/sh", "-c", `echo "insecure=$YARNFED_STORE_INSECURE"; echo warning >&2`); got != "insecure=1\n" {
		t.Fatalf("stdout %q", got)
	}
}
