package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

// envInterruptChild, set to a file name, makes TestKubenodeInterruptedChild
// run: it is TestOneNodeClusterInterrupted's child process.
const envInterruptChild = "YARNFED_KUBENODE_INTERRUPT_CHILD"

// interruptReady is what the child writes once its cluster runs a pod.
type interruptReady struct {
	Traces   clusterTraces
	Sysctls  map[string]string
	Absent   []string
	Nft      string
	Iptables string
}

// TestOneNodeClusterInterrupted: a test binary interrupted with SIGINT
// (Ctrl-C) while its cluster runs a pod tears the cluster down before it
// exits, although t.Cleanup never runs: afterwards the same leftover checks
// as the other node tests hold (directory, mounts, cgroups, processes,
// network namespace, host directories, the kubelet's kernel settings, the
// host's firewall rules), and the process exits with 130 (128+SIGINT).
// The cluster runs in a child: this test binary, re-run with
// -test.run=TestKubenodeInterruptedChild.
func TestOneNodeClusterInterrupted(t *testing.T) {
	dir := t.TempDir()
	readyFile := filepath.Join(dir, "ready.json")
	var out syncBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestKubenodeInterruptedChild$", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), envInterruptChild+"="+readyFile)
	cmd.Stdout, cmd.Stderr = &out, &out
	// Should this process die, the child gets SIGTERM: its handler then
	// tears its cluster down too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Start may wait for another cluster on this machine (the lock).
	var ready interruptReady
	deadline := time.After(15 * time.Minute)
	for ready.Traces.Dir == "" {
		if b, err := os.ReadFile(readyFile); err == nil {
			if err := json.Unmarshal(b, &ready); err != nil {
				t.Fatalf("child's %s: %v", readyFile, err)
			}
			break
		}
		select {
		case err := <-exited:
			if strings.Contains(out.String(), "--- SKIP: TestKubenodeInterruptedChild") {
				t.Skipf("the child skipped:\n%s", out.String())
			}
			t.Fatalf("the child exited (%v) before its cluster was ready:\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the child's cluster not ready after 15 minutes:\n%s", out.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Logf("child %d: cluster in %s runs a pod; sending SIGINT", cmd.Process.Pid, ready.Traces.Dir)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(5 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the child did not exit within 5 minutes of SIGINT:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("the child exited with %v, want exit status 130 (128+SIGINT, after its teardown)", err)
	}
	if !strings.Contains(out.String(), "kubenode: cluster in "+ready.Traces.Dir+" torn down") {
		t.Errorf("the child did not report its teardown")
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "kubenode: ") || strings.HasPrefix(line, "ERROR: kubenode: ") {
			t.Logf("child: %s", line)
		}
	}

	// The checks compare with the child's picture of the host: hold the
	// lock so no other cluster runs meanwhile (one that ran between the
	// child's exit and now has restored what it changed).
	lock, err := os.OpenFile(kubenode.LockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	checkNoLeftovers(t, ready.Traces, hostSnapshot{sysctls: ready.Sysctls, absent: ready.Absent, nft: ready.Nft, iptables: ready.Iptables})
	if t.Failed() {
		t.Logf("child's output:\n%s", out.String())
		// The next cluster on this machine would take the kubelet's values
		// for the host's and "restore" them: put the host's back.
		for s, v := range ready.Sysctls {
			if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) != v {
				if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
					t.Errorf("restore %s=%s: %v", s, v, err)
				}
			}
		}
	}
}

// TestKubenodeInterruptedChild is TestOneNodeClusterInterrupted's child
// (skipped unless run as that): it starts a cluster with one pod running,
// says so, and waits for the signal.
func TestKubenodeInterruptedChild(t *testing.T) {
	readyFile := os.Getenv(envInterruptChild)
	if readyFile == "" {
		t.Skip("TestOneNodeClusterInterrupted's child process")
	}
	var snap hostSnapshot
	c := kubenode.Start(t, kubenode.Options{Locked: func() { snap = takeHostSnapshot(t) }})
	// One pod on the bridge, so there are a sandbox, a container, their
	// mounts, shims and cgroups to tear down.
	kc := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "pause", Image: kubenode.PauseImage, ImagePullPolicy: corev1.PullNever,
		}}},
	}
	mustCreate(t, func() error {
		_, err := kc.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	waitPod(ctx, t, c, kc, "default", "sleeper", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	b, err := json.Marshal(interruptReady{Traces: tracesOf(c), Sysctls: snap.sysctls, Absent: snap.absent, Nft: snap.nft, Iptables: snap.iptables})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readyFile+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(readyFile+".tmp", readyFile); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Minute)
	t.Fatal("no signal came within 5 minutes")
}

// syncBuffer is a bytes.Buffer safe for os/exec's copying goroutine and
// the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
