package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/kuberm"
)

// The bench scenario's real Hadoop (standaloneHadoop) is at ports 28xxx.
var kbenchAddrs = hadoopAddrsAt(20000)

const (
	// The smoke's counts: two rounds of two containers on each side (two
	// 1-vcore pods are what the 2-core node runs at once).
	kbenchContainers = 2
	kbenchRounds     = 2
	// kbenchRoundsEnv overrides the rounds for a measured run (the table
	// recorded in kuberm/DESIGN.md): the cluster lives only as long as the
	// test, so the bench is run here.
	kbenchRoundsEnv = "YARNFED_KBENCH_ROUNDS"
	// kbenchArgsEnv adds flags to the bench (space-separated), e.g.
	// "--heartbeat 1s --status-poll 1s" for a measured run at other rates.
	kbenchArgsEnv = "YARNFED_KBENCH_ARGS"
)

// kbenchRun is TestKubermOnNode's "bench": the CI smoke of `yarnfed bench
// kuberm`. A federation with kuberm (startKubeFed: its pods mount the host's
// system paths, enough for bash and sleep) and, beside it, a standalone
// Hadoop RM + NM; then bin/yarnfed-bench (built with -tags bench) runs in
// the node's network namespace with small counts. The bench must complete
// (both applications FINISHED/SUCCEEDED, every container handed out
// reported completed, the ratio printed last) and both sides' containers
// must have run: on kuberm, container pods bound by kube-scheduler whose
// main container started, and no AM pod (an unmanaged AM); on Hadoop, each
// container's stdout in the NodeManager's log dir. Then nothing is left:
// no container pod or launch Secret of kuberm's application, no live
// container on the NodeManager, the RM's application FINISHED with no
// running container. How fast either side is, is not checked: the table is
// logged.
func kbenchRun(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime) {
	benchBin := kbenchBuild(t)
	h := kbenchStartHadoop(t, c, rt)
	var mounts []string
	for _, m := range systemMounts(rt.javaHome) {
		mounts = append(mounts, m.Path)
	}
	startKubeFed(ctx, t, c, bin, kubeconfig, mounts, nil, nil)
	h.waitReady(ctx, t, kbenchAddrs.nmAddr)
	w := watchPods(ctx, t, kc)

	rounds := kbenchRounds
	if v := os.Getenv(kbenchRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", kbenchRoundsEnv, v)
		}
		rounds = n
	}
	args := []string{"bench", "kuberm",
		"--kuberm", "clientrm=" + kubermPorts["client_address"] + ",amrm=" + kubermPorts["scheduler_address"],
		"--hadoop", "clientrm=" + kbenchAddrs.rmClient + ",amrm=" + kbenchAddrs.rmScheduler,
		"--containers", strconv.Itoa(kbenchContainers), "--rounds", strconv.Itoa(rounds),
		"--command", "echo kbench-ran $CONTAINER_ID; exec sleep 30", "--round-timeout", "4m"}
	args = append(args, strings.Fields(os.Getenv(kbenchArgsEnv))...)
	begin := time.Now()
	cmd := c.Command(benchBin, args...)
	out, err := runClient(ctx, cmd, "yarnfed bench kuberm")
	t.Logf("yarnfed bench kuberm (%v, %v):\n%s", time.Since(begin).Round(time.Millisecond), err, out)
	if err != nil {
		w.dump(t, "")
		t.Fatalf("yarnfed bench kuberm failed: %v", err)
	}
	n := kbenchContainers * rounds
	apps := kbenchCheckOutput(t, out, n)

	// kuberm: the pods ran, no AM pod, nothing left.
	if app := apps["kuberm"]; app != "" {
		uamCheckNoAMPod(t, w, app)
		kbenchCheckPods(t, w, app, n)
		checkAppGone(ctx, t, kc, app, false)
	}
	// Hadoop: each container ran its command; nothing left.
	if app := apps["hadoop"]; app != "" {
		kbenchCheckRan(t, h, app, n)
		kbenchCheckGone(ctx, t, h, app)
	}
}

// kbenchBuild builds bin/yarnfed-bench as `make build` does (the server
// binary with -tags bench) into the test's temp dir.
func kbenchBuild(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "yarnfed-bench")
	begin := time.Now()
	cmd := gobuild.Command(out, "bench", "./cmd/yarnfed")
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags bench ./cmd/yarnfed: %v\n%s", err, b)
	}
	t.Logf("go build -tags bench: %v", time.Since(begin).Round(time.Millisecond))
	return out
}

// kbenchOutcome matches the bench's per-target outcome line.
var kbenchOutcome = regexp.MustCompile(`(?m)^(kuberm|hadoop): (application_\d+_\d+), (\d+) containers asked, (\d+) allocated, (\d+) running, (\d+) completed, (\S+) (\S+)$`)

// kbenchCheckOutput: both outcome lines say n asked, running and
// completed, at least n allocated, FINISHED/SUCCEEDED; the ratio is the
// last line. It returns each target's application.
func kbenchCheckOutput(t *testing.T, out string, n int) map[string]string {
	t.Helper()
	apps := map[string]string{}
	for _, m := range kbenchOutcome.FindAllStringSubmatch(out, -1) {
		apps[m[1]] = m[2]
		asked, _ := strconv.Atoi(m[3])
		allocated, _ := strconv.Atoi(m[4])
		running, _ := strconv.Atoi(m[5])
		completed, _ := strconv.Atoi(m[6])
		if asked != n || running != n || allocated < n || completed != allocated {
			t.Errorf("%s: %d asked, %d allocated, %d running, %d completed; want %d asked and running, every allocated one completed", m[1], asked, allocated, running, completed, n)
		}
		if m[7] != "FINISHED" || m[8] != "APP_SUCCEEDED" {
			t.Errorf("%s: application %s ended %s %s, want FINISHED APP_SUCCEEDED", m[1], m[2], m[7], m[8])
		}
	}
	if apps["kuberm"] == "" || apps["hadoop"] == "" {
		t.Errorf("the bench printed no outcome line for each target (got %v)", apps)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^ratio kuberm / hadoop, request -> running p50: \d+\.\d\dx `).MatchString(last) {
		t.Errorf("the last line is not the ratio: %q", last)
	}
	return apps
}

// kbenchCheckPods: kuberm's application had n container pods, each created
// unbound, bound by kube-scheduler to the node, and its main container
// started (running when last seen, or ended after having started: the
// bench stops each once it runs).
func kbenchCheckPods(t *testing.T, w *podWatch, app string, n int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := 0
	for name, last := range w.last {
		if last.Labels[kuberm.LabelApplication] != app || last.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			continue
		}
		pods++
		if w.first[name].Spec.NodeName != "" || last.Spec.NodeName != kubenode.NodeName || last.Spec.SchedulerName != corev1.DefaultSchedulerName {
			t.Errorf("pod %s: created on %q, ended on %q by %q; want created unbound and placed on %s by kube-scheduler",
				name, w.first[name].Spec.NodeName, last.Spec.NodeName, last.Spec.SchedulerName, kubenode.NodeName)
		}
		ran := false
		for _, s := range last.Status.ContainerStatuses {
			if s.Name == last.Spec.Containers[0].Name && (s.State.Running != nil || s.State.Terminated != nil && !s.State.Terminated.StartedAt.IsZero()) {
				ran = true
			}
		}
		if !ran {
			t.Errorf("container pod %s: its main container never started (%s)", name, strings.Join(w.events[name], " -> "))
		}
	}
	if pods != n {
		t.Errorf("application %s had %d container pods, want %d", app, pods, n)
	}
}

// kbenchStartHadoop starts the standalone RM + NM (startStandaloneHadoop)
// under a directory of its own, kept when the test fails. The JVMs resolve
// names from a hosts file naming only this machine (jdk.net.hosts.file: the
// namespace cannot reach the host's name server, javaHostsFile): the node
// IP then has no name, so the NodeManager's NodeId is the IP itself, which
// the bench dials.
func kbenchStartHadoop(t *testing.T, c *kubenode.Cluster, rt javaRuntime) *standaloneHadoop {
	t.Helper()
	dir, err := os.MkdirTemp("", "kbench-hadoop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("standalone Hadoop files kept in %s", dir)
		}
	})
	host, _ := os.Hostname()
	hosts := filepath.Join(dir, "java-hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost "+host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return startStandaloneHadoop(t, c, rt.javaHome, dir, standaloneHadoopOptions{
		name: "kbench", addrs: kbenchAddrs, clusterID: "kbench",
		// kuberm's smallest allocation here (startKubeFed), so both sides
		// hand out the same size.
		minAllocationMB: 256,
		nmMemoryMB:      4096,
		rmHeap:          "768m", nmHeap: "512m",
		hostsFile: hosts,
		classpath: rt.classpath,
	})
}

// kbenchCheckRan: the NodeManager's log dir holds, for n containers of app,
// the stdout their command wrote ("kbench-ran <container id>").
func kbenchCheckRan(t *testing.T, h *standaloneHadoop, app string, n int) {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(h.dirs.nmLogs, app))
	if err != nil {
		t.Errorf("NodeManager log dir of %s: %v", app, err)
		return
	}
	ran := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(h.dirs.nmLogs, app, d.Name(), "stdout"))
		if err != nil {
			t.Errorf("container %s: %v", d.Name(), err)
			continue
		}
		if want := "kbench-ran " + d.Name() + "\n"; string(b) != want {
			t.Errorf("container %s wrote %q, want %q", d.Name(), b, want)
			continue
		}
		ran++
	}
	if ran != n {
		t.Errorf("the NodeManager ran %d containers of %s, want %d", ran, app, n)
	}
}

// kbenchCheckGone waits (up to 2 minutes) until the RM reports app FINISHED
// with no running container and the NodeManager holds no live container
// (its REST list, and no container process under its local dirs).
func kbenchCheckGone(ctx context.Context, t *testing.T, h *standaloneHadoop, app string) {
	t.Helper()
	waitNothingLeft(ctx, t, 2*time.Minute, "the standalone Hadoop kept "+app, func() []string {
		var left []string
		var a rmrest.AppResponse
		if err := h.get(ctx, kbenchAddrs.rmWeb, "/ws/v1/cluster/apps/"+app, &a); err != nil {
			left = append(left, err.Error())
		} else if a.App.State != "FINISHED" || a.App.FinalStatus != "SUCCEEDED" || a.App.RunningContainers > 0 {
			left = append(left, fmt.Sprintf("RM: %s is %s/%s with %d running containers", app, a.App.State, a.App.FinalStatus, a.App.RunningContainers))
		}
		return append(left, h.nmLeft(ctx)...)
	})
}
