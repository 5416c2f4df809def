package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/kuberm"
)

// The bench scenario's real Hadoop: a ResourceManager and a NodeManager,
// Hadoop 3.4's own main classes, each a JVM of the node's network
// namespace with its own conf dir, bound on the node IP at ports of their
// own (kuberm has Hadoop's defaults there).
const (
	kbenchRMClient    = kubenode.NodeIP + ":28032"
	kbenchRMScheduler = kubenode.NodeIP + ":28030"
	kbenchRMTracker   = kubenode.NodeIP + ":28031"
	kbenchRMAdmin     = kubenode.NodeIP + ":28033"
	kbenchRMWeb       = kubenode.NodeIP + ":28088"
	kbenchNMAddr      = kubenode.NodeIP + ":28041"
	kbenchNMLocalizer = kubenode.NodeIP + ":28040"
	kbenchNMWeb       = kubenode.NodeIP + ":28042"

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
	h.waitReady(ctx, t)
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
		"--hadoop", "clientrm=" + kbenchRMClient + ",amrm=" + kbenchRMScheduler,
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
		h.checkRan(t, app, n)
		h.checkGone(ctx, t, app)
	}
}

// kbenchBuild builds bin/yarnfed-bench as `make build` does (the server
// binary with -tags bench) into the test's temp dir.
func kbenchBuild(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "yarnfed-bench")
	begin := time.Now()
	cmd := exec.Command("go", "build", "-tags", "bench", "-o", out, "./cmd/yarnfed")
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

// kbenchHadoop is the standalone RM + NM.
type kbenchHadoop struct {
	c              *kubenode.Cluster
	dir            string
	nmLogs, nmLocs string
	rm, nm         *nodeProcess
}

// kbenchStartHadoop writes each daemon's conf dir and starts both JVMs in
// the node's network namespace. Every location a daemon writes is under
// its own directory (hadoop.tmp.dir, the node-attribute store, local and
// log dirs). The JVMs resolve names from a hosts file naming only this
// machine (jdk.net.hosts.file: the namespace cannot reach the host's name
// server, javaHostsFile): the node IP then has no name, so the NodeManager's
// NodeId is the IP itself, which the bench dials.
func kbenchStartHadoop(t *testing.T, c *kubenode.Cluster, rt javaRuntime) *kbenchHadoop {
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
	h := &kbenchHadoop{c: c, dir: dir, nmLogs: filepath.Join(dir, "nm", "logs"), nmLocs: filepath.Join(dir, "nm", "local")}
	host, _ := os.Hostname()
	hosts := filepath.Join(dir, "java-hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost "+host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := map[string]string{
		"yarn.resourcemanager.hostname":                 kubenode.NodeIP,
		"yarn.resourcemanager.address":                  kbenchRMClient,
		"yarn.resourcemanager.scheduler.address":        kbenchRMScheduler,
		"yarn.resourcemanager.resource-tracker.address": kbenchRMTracker,
		"yarn.resourcemanager.admin.address":            kbenchRMAdmin,
		"yarn.resourcemanager.webapp.address":           kbenchRMWeb,
		"yarn.timeline-service.enabled":                 "false",
	}
	rm := map[string]string{
		"yarn.resourcemanager.cluster-id":                       "kbench",
		"yarn.resourcemanager.system-metrics-publisher.enabled": "false",
		// kuberm's smallest allocation here (startKubeFed), so both sides
		// hand out the same size.
		"yarn.scheduler.minimum-allocation-mb":  "256",
		"hadoop.tmp.dir":                        filepath.Join(dir, "rm", "tmp"),
		"yarn.node-attribute.fs-store.root-dir": filepath.Join(dir, "rm", "node-attribute"),
	}
	nm := map[string]string{
		"yarn.nodemanager.address":                                                      kbenchNMAddr,
		"yarn.nodemanager.localizer.address":                                            kbenchNMLocalizer,
		"yarn.nodemanager.webapp.address":                                               kbenchNMWeb,
		"yarn.nodemanager.local-dirs":                                                   h.nmLocs,
		"yarn.nodemanager.log-dirs":                                                     h.nmLogs,
		"yarn.nodemanager.resource.memory-mb":                                           "4096",
		"yarn.nodemanager.resource.cpu-vcores":                                          "4",
		"yarn.nodemanager.pmem-check-enabled":                                           "false",
		"yarn.nodemanager.vmem-check-enabled":                                           "false",
		"yarn.nodemanager.container-executor.class":                                     "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
		"yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99",
		"hadoop.tmp.dir":                                                                filepath.Join(dir, "nm", "tmp"),
	}
	start := func(name, class, heap string, props map[string]string) *nodeProcess {
		conf := filepath.Join(dir, name, "conf")
		if err := os.MkdirAll(conf, 0o755); err != nil {
			t.Fatal(err)
		}
		all := map[string]string{}
		for _, m := range []map[string]string{common, props} {
			for k, v := range m {
				all[k] = v
			}
		}
		kbenchWriteConf(t, filepath.Join(conf, "yarn-site.xml"), all)
		kbenchWriteConf(t, filepath.Join(conf, "capacity-scheduler.xml"), map[string]string{
			"yarn.scheduler.capacity.root.queues":                   "default",
			"yarn.scheduler.capacity.root.default.capacity":         "100",
			"yarn.scheduler.capacity.root.default.maximum-capacity": "100",
		})
		log4j := "log4j.rootLogger=INFO,console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\n" +
			"log4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n\n" +
			"log4j.logger.org.eclipse.jetty=WARN\nlog4j.logger.com.sun.jersey=WARN\n"
		if err := os.WriteFile(filepath.Join(conf, "log4j.properties"), []byte(log4j), 0o644); err != nil {
			t.Fatal(err)
		}
		var opts []string
		for _, o := range javaOptions() {
			if !strings.HasPrefix(o, "-Djdk.net.hosts.file=") {
				opts = append(opts, o)
			}
		}
		args := append(opts, "-Djdk.net.hosts.file="+hosts, heap, "-cp", conf+string(os.PathListSeparator)+strings.Join(rt.classpath, string(os.PathListSeparator)), class)
		return startNodeProcess(t, c, "kbench-"+name, filepath.Join(rt.javaHome, "bin", "java"), args...)
	}
	h.rm = start("rm", "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager", "-Xmx768m", rm)
	h.nm = start("nm", "org.apache.hadoop.yarn.server.nodemanager.NodeManager", "-Xmx512m", nm)
	return h
}

// kbenchWriteConf writes a Hadoop XML configuration file.
func kbenchWriteConf(t *testing.T, path string, props map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<configuration>\n")
	for k, v := range props {
		fmt.Fprintf(&b, "  <property><name>%s</name><value>%s</value></property>\n", k, v)
	}
	b.WriteString("</configuration>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rest GETs a path of a daemon's web port inside the node's network
// namespace and decodes its JSON into v.
func (h *kbenchHadoop) rest(ctx context.Context, addr, path string, v any) error {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: h.c.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s%s: %s %s", addr, path, resp.Status, tail(string(b), 300))
	}
	return json.Unmarshal(b, v)
}

// waitReady waits until the RM lists the NodeManager RUNNING at the IP
// NodeId the bench will dial.
func (h *kbenchHadoop) waitReady(ctx context.Context, t *testing.T) {
	t.Helper()
	begin := time.Now()
	waitFor(ctx, t, "the standalone RM with its NodeManager RUNNING", func() (bool, string) {
		for _, p := range []*nodeProcess{h.rm, h.nm} {
			if p.exited() {
				t.Fatalf("%s exited (%v):\n%s", p.name, p.err, p.tail(8000))
			}
		}
		var nodes struct {
			Nodes struct {
				Node []struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"node"`
			} `json:"nodes"`
		}
		if err := h.rest(ctx, kbenchRMWeb, "/ws/v1/cluster/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, n := range nodes.Nodes.Node {
			if n.ID == kbenchNMAddr && n.State == "RUNNING" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("nodes %+v", nodes.Nodes.Node)
	})
	t.Logf("standalone RM + NM ready after %v", time.Since(begin).Round(time.Millisecond))
}

// checkRan: the NodeManager's log dir holds, for n containers of app, the
// stdout their command wrote ("kbench-ran <container id>").
func (h *kbenchHadoop) checkRan(t *testing.T, app string, n int) {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join(h.nmLogs, app))
	if err != nil {
		t.Errorf("NodeManager log dir of %s: %v", app, err)
		return
	}
	ran := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(h.nmLogs, app, d.Name(), "stdout"))
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

// checkGone waits (up to 2 minutes) until the RM reports app FINISHED with
// no running container and the NodeManager holds no live container of it
// (its REST list, and no container process under its local dirs).
func (h *kbenchHadoop) checkGone(ctx context.Context, t *testing.T, app string) {
	t.Helper()
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var left []string
	for {
		left = left[:0]
		var a struct {
			App struct {
				State             string `json:"state"`
				FinalStatus       string `json:"finalStatus"`
				RunningContainers int    `json:"runningContainers"`
			} `json:"app"`
		}
		if err := h.rest(gctx, kbenchRMWeb, "/ws/v1/cluster/apps/"+app, &a); err != nil {
			left = append(left, err.Error())
		} else if a.App.State != "FINISHED" || a.App.FinalStatus != "SUCCEEDED" || a.App.RunningContainers > 0 {
			left = append(left, fmt.Sprintf("RM: %s is %s/%s with %d running containers", app, a.App.State, a.App.FinalStatus, a.App.RunningContainers))
		}
		var cs struct {
			Containers struct {
				Container []struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"container"`
			} `json:"containers"`
		}
		if err := h.rest(gctx, kbenchNMWeb, "/ws/v1/node/containers", &cs); err != nil {
			left = append(left, err.Error())
		} else {
			for _, c := range cs.Containers.Container {
				switch c.State {
				case "DONE", "COMPLETE", "EXITED_WITH_SUCCESS", "EXITED_WITH_FAILURE", "CONTAINER_CLEANEDUP_AFTER_KILL":
				default:
					left = append(left, fmt.Sprintf("NM: container %s is %s", c.ID, c.State))
				}
			}
		}
		left = append(left, kbenchLivePids(h.nmLocs)...)
		if len(left) == 0 {
			return
		}
		select {
		case <-gctx.Done():
			t.Errorf("the standalone Hadoop kept %s: %s", app, strings.Join(left, "; "))
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kbenchLivePids lists the containers under an NM's local dirs whose pid
// file (nmPrivate/<app>/<container>/<container>.pid) names a live process.
func kbenchLivePids(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), ".pid") || !strings.Contains(p, "nmPrivate") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return nil
		}
		if syscall.Kill(pid, 0) == nil {
			out = append(out, fmt.Sprintf("NM: container %s's process %d still runs", strings.TrimSuffix(d.Name(), ".pid"), pid))
		}
		return nil
	})
	return out
}
