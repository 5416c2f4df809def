package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestNMContainerPids lays out a NodeManager's nmPrivate pid files for
// real processes: a live one whose environment names its container is
// listed; a live one that is someone else's (no CONTAINER_ID: a reused
// pid), one that has exited, a pid file outside nmPrivate and a garbage
// pid file are not.
func TestNMContainerPids(t *testing.T) {
	dir := t.TempDir()
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("/bin/sleep", "60")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	pidFile := func(rel string, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const app = "application_1_0001"
	live := "container_1_0001_01_000002"
	pidFile(filepath.Join("nmPrivate", app, live, live+".pid"), strconv.Itoa(start("CONTAINER_ID="+live).Process.Pid)+"\n")

	other := "container_1_0001_01_000003" // its pid now belongs to another process
	pidFile(filepath.Join("nmPrivate", app, other, other+".pid"), strconv.Itoa(start("CONTAINER_ID=container_9_0009_01_000009").Process.Pid))

	gone := "container_1_0001_01_000004"
	done := exec.Command("/bin/true")
	done.Env = []string{"CONTAINER_ID=" + gone}
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	pidFile(filepath.Join("nmPrivate", app, gone, gone+".pid"), strconv.Itoa(done.Process.Pid))

	outside := "container_1_0001_01_000005"
	pidFile(filepath.Join("usercache", app, outside, outside+".pid"), strconv.Itoa(start("CONTAINER_ID="+outside).Process.Pid))
	pidFile(filepath.Join("nmPrivate", app, "x", "x.pid"), "not a pid")

	got := NMContainerPids(dir)
	if len(got) != 1 || got[live] == 0 {
		t.Fatalf("NMContainerPids = %v, want only %s", got, live)
	}
}
