package test

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm"
)

// The spanning scenario (TestKubermOnNode's "spanning", issue 24's last
// proof): one application spans a real Hadoop sub-cluster and kuberm.
//
//   - SC-1: Hadoop 3.4's own ResourceManager and one NodeManager, each a
//     JVM of its main class with its own conf dir and directories, run as
//     processes of the node's network namespace on the node IP (ports
//     18xxx: kuberm has Hadoop's defaults), recovery on so the RM's epoch
//     (7) is in its container ids, room on the NodeManager for the AM and
//     one container at a time (so the application must span); its `yarnfed
//     subcluster-agent` registers it in the federation's store.
//   - SC-kube: `yarnfed kuberm` (startKubeFed), epoch 1007.
//   - `yarnfed amrmproxy` on the NodeManager's host; the NodeManager's
//     conf dir, its containers' HADOOP_CONF_DIR, names it as the
//     scheduler address (final), as an operator configures Hadoop's own
//     AMRMProxy.
//   - The queue policy: home SC-1, asks split SC-1:0.5, SC-kube:0.5.
//
// The stock distributed shell client submits through the router; its AM
// runs in a NodeManager container on SC-1 and dials the proxy, which
// forwards half of the asks to SC-1's RM and half to kuberm through an
// unmanaged AM (the same application id) on kuberm. The AM starts SC-1's
// containers on the NodeManager and kuberm's through kuberm's NodeManager
// face; the latter run as pods.
const (
	spanHome         = "SC-1"
	spanHomeEpoch    = 7
	spanKubeEpoch    = 1007
	spanProxyAddr    = kubenode.NodeIP + ":18049"
	spanProxyWeb     = kubenode.NodeIP + ":18070"
	spanPolicyString = "default;" + spanHome + ":1.0;" + spanHome + ":0.5," + kubermSubCluster + ":0.5;0.0"
	spanManager      = "WeightedLocality"
	// spanSleep (seconds) is how long each shell container runs.
	spanSleep = 15
)

// spanAddrs are SC-1's RM's and NodeManager's addresses (standaloneHadoop).
var spanAddrs = hadoopAddrsAt(10000)

// spanFed is the spanning federation: kubeFed (store, kuberm, router) plus
// SC-1's daemons, its agent and the AMRMProxy.
type spanFed struct {
	*kubeFed
	sc1          *standaloneHadoop
	agent, proxy *nodeProcess
	dir          string // SC-1's directories, the proxy's data dir
}

// spanRun is TestKubermOnNode's "spanning".
func spanRun(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime, hd hostDirs) {
	begin := time.Now()
	f := spanStart(ctx, t, c, bin, kubeconfig, rt, hd)
	t.Logf("spanning federation up in %v", time.Since(begin).Round(time.Millisecond))
	batch := spanNodeHasBatch(ctx, t, kc)
	w := watchPods(ctx, t, kc)
	dsJar := hd.dsJar(t)

	marker := fmt.Sprintf("kuberm-span-%d", time.Now().UnixNano())
	// Grouped: the distributed shell appends the stdout redirection to the
	// command line. A pod also writes its termination message (its stdout
	// goes with its emptyDir); a NodeManager container has no such file.
	// Each container sleeps first, so SC-1's one slot stays taken while
	// kuberm's pods are placed.
	command := fmt.Sprintf("{ sleep %[2]d; echo %[1]s $CONTAINER_ID; if [ -w /dev/termination-log ]; then echo %[1]s $CONTAINER_ID >/dev/termination-log; fi; }", marker, spanSleep)
	begin = time.Now()
	out, err := runJava(ctx, c, rt, hd, 10*time.Minute, dsClass,
		"-jar", dsJar, "-appname", "kuberm-span", "-queue", "default", "-shell_command", command,
		"-num_containers", "4", "-container_memory", "256", "-container_vcores", "1",
		"-master_memory", "512", "-master_vcores", "1", "-timeout", "540000")
	t.Logf("distributed shell client: %v after %v", err, time.Since(begin).Round(time.Millisecond))
	begin = time.Now()
	app := regexp.MustCompile(`application_\d+_\d+`).FindString(out)
	if err != nil || app == "" {
		t.Errorf("distributed shell through the router: %v (exit 0 means the application SUCCEEDED)\n%s", err, tail(out, 8000))
		f.dump(t, w, app)
		t.FailNow()
	}
	if !strings.Contains(out, "Application completed successfully") {
		t.Errorf("the client did not report success:\n%s", tail(out, 4000))
	}
	f.checkHomeApp(ctx, t, app, "FINISHED", "SUCCEEDED")
	// Nothing of it left on kuberm (no pod at all: an unmanaged AM has
	// none, and the ended containers' pods go), and the watch saw every
	// pod's end, before the pods are judged.
	checkAppGone(ctx, t, kc, app, true)
	spanWaitWatchedGone(ctx, t, w, app)
	home := f.homeEvidence(t, app, marker)
	kube := spanCheckKubePods(t, w, app, marker, hd.mountPaths(rt), batch)
	t.Logf("containers of %s: %d on %s %v, %d on %s %v", app, len(home), spanHome, home, len(kube), kubermSubCluster, kube)
	if len(home) == 0 || len(kube) == 0 || len(home)+len(kube) != 4 {
		t.Errorf("application %s ran %d containers on %s and %d on %s: want 4 in all, on both", app, len(home), spanHome, len(kube), kubermSubCluster)
	}
	uamCheckNoAMPod(t, w, app)
	f.checkKubeApp(ctx, t, app, false)
	f.checkNoLeaks(ctx, t)

	t.Logf("checks of %s: %v", app, time.Since(begin).Round(time.Millisecond))

	// Kill through the router while the application runs on both: the
	// router kills the UAM on kuberm, whose pods go, and the application at
	// its home (KILLED); the proxy then ends the attempt.
	t.Run("kill through the router", func(t *testing.T) {
		begin := time.Now()
		defer func() { t.Logf("kill subtest: %v", time.Since(begin).Round(time.Millisecond)) }()
		victim, r := killThroughRouter(ctx, t, c, kc, rt, hd, w, func(ctx context.Context) (string, error) {
			return runJava(ctx, c, rt, hd, 10*time.Minute, dsClass,
				"-jar", dsJar, "-appname", "kuberm-span-kill", "-queue", "default", "-shell_command", "sleep 600",
				"-num_containers", "4", "-container_memory", "256", "-master_memory", "512", "-timeout", "540000")
		})
		if r.err == nil {
			t.Errorf("the killed application's client exited 0:\n%s", tail(r.out, 4000))
		}
		uamCheckNoAMPod(t, w, victim)
		f.checkHomeApp(ctx, t, victim, "KILLED", "KILLED")
		// The router ended the UAM on kuberm with the kill (its
		// killUnmanagedAMs); the proxy, finding the AM silent and the
		// application over at its home, ends the attempt and its UAM
		// too (kuberm's kill of a KILLED application succeeds).
		attempt := "appattempt_" + strings.TrimPrefix(victim, "application_") + "_000001"
		pctx, pcancel := context.WithTimeout(ctx, time.Minute)
		defer pcancel()
		f.proxy.waitOutput(pctx, t, regexp.MustCompile(`msg=attempt-end .*attempt=`+attempt+` reason=killed .*uams=1 uams_ended=1`))
		f.checkKubeApp(ctx, t, victim, true)
		f.checkNoLeaks(ctx, t)
		if t.Failed() {
			f.dump(t, w, victim)
		}
	})
}

// spanStart starts the federation: startKubeFed's store, kuberm (epoch
// 1007) and router, certificates for SC-1's agent, the proxy and an admin
// (the store's CA is reused), SC-1's RM and NodeManager, the agent, the
// queue policy (yarnfedctl) and the proxy; it returns once the router sees
// both sub-clusters' nodes and the proxy is ready.
func spanStart(ctx context.Context, t *testing.T, c *kubenode.Cluster, bin, kubeconfig string, rt javaRuntime, hd hostDirs) *spanFed {
	t.Helper()
	writeHadoopConf(t, hd)
	kf := startKubeFed(ctx, t, c, bin, kubeconfig, hd.mountPaths(rt),
		map[string]string{"JAVA_HOME": rt.javaHome, "HADOOP_CONF_DIR": hd.conf}, map[string]any{"epoch": spanKubeEpoch})
	f := &spanFed{kubeFed: kf, dir: t.TempDir()}
	if out, err := exec.Command(bin, "certs", "--dir", f.pki, spanHome+"=agent", "nm-1=amrmproxy", "ops=admin").CombinedOutput(); err != nil {
		t.Fatalf("yarnfed certs: %v\n%s", err, out)
	}

	// SC-1's daemons: the JVMs take longest, so first.
	o := spanHadoopOptions()
	o.hostsFile, o.classpath = javaHostsFile(), []string{hd.jars + "/*"}
	f.sc1 = startStandaloneHadoop(t, c, rt.javaHome, f.dir, o)
	f.agent = startNodeProcess(t, c, "agent-"+spanHome, bin, append([]string{"subcluster-agent", "--subcluster-id", spanHome, "--store", storeAddr,
		"--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", spanAddrs.rmClient, spanAddrs.rmScheduler, spanAddrs.rmAdmin, spanAddrs.rmWeb),
		"--probe-interval", "500ms", "--heartbeat-interval", "2s"}, f.tlsFlags("store-", spanHome)...)...)

	ctl := filepath.Join(t.TempDir(), "yarnfedctl")
	build := gobuild.Command(ctl, "", "./cmd/yarnfedctl")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build yarnfedctl: %v\n%s", err, out)
	}
	save := c.Command(ctl, append([]string{"--store", storeAddr, "policy", "save", "--manager", spanManager, "-s", spanPolicyString}, f.tlsFlags("store-", "ops")...)...)
	if out, err := save.CombinedOutput(); err != nil {
		t.Fatalf("yarnfedctl policy save: %v\n%s", err, out)
	}

	f.proxy = startNodeProcess(t, c, "amrmproxy", bin, append([]string{"amrmproxy", "--store", storeAddr, "--subcluster-id", spanHome,
		"--amrm-address", spanProxyAddr, "--web-address", spanProxyWeb, "--data-dir", filepath.Join(f.dir, "amrmproxy")},
		f.tlsFlags("store-", "nm-1")...)...)

	f.sc1.waitReady(ctx, t, "", f.agent, f.proxy)
	waitFor(ctx, t, "the amrmproxy ready", func() (bool, string) {
		f.mustRun(t)
		resp, err := f.sc1.web.Get("http://" + spanProxyWeb + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, string(b)
	})
	yc := f.routerClient(t)
	waitFor(ctx, t, "the router to see SC-1's and kuberm's nodes", func() (bool, string) {
		f.mustRun(t)
		resp := &yarnpb.GetClusterNodesResponseProto{}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := yc.Call(cctx, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, resp); err != nil {
			return false, err.Error()
		}
		// SC-1's NodeManager and kuberm's NM face, by their ports.
		var ids []string
		ports := map[string]bool{}
		for _, n := range resp.GetNodeReports() {
			if n.GetNodeState() == yarnpb.NodeStateProto_NS_RUNNING {
				ids = append(ids, fmt.Sprintf("%s:%d", n.GetNodeId().GetHost(), n.GetNodeId().GetPort()))
				ports[fmt.Sprint(n.GetNodeId().GetPort())] = true
			}
		}
		_, nmPort, _ := strings.Cut(spanAddrs.nmAddr, ":")
		_, facePort, _ := strings.Cut(kubermPorts["nm_address"], ":")
		return ports[nmPort] && ports[facePort], fmt.Sprintf("running nodes %v", ids)
	})
	return f
}

// spanHadoopOptions are SC-1's: recovery on with its epoch, room on the
// NodeManager for the AM and one container at a time, the proxy as the
// scheduler of the NodeManager's containers; TestSpanHadoopConf checks
// them. spanStart adds the hosts file and the classpath.
func spanHadoopOptions() standaloneHadoopOptions {
	return standaloneHadoopOptions{
		name: "sc1", addrs: spanAddrs, clusterID: "kubenode-span-sc1",
		minAllocationMB: 128,
		// Room for the AM (512 MB) and one 256 MB container at a time:
		// the home cannot run the whole application at once, which is
		// why it spans. With room for all, the home's RM (a container per
		// NM heartbeat, 250 ms) handed out all four before kuberm's first
		// pod was bound, and the AM released kuberm's (seen); with room
		// for two, kuberm ran one or two of the four (3+1 once): one slot
		// leaves the home 4 x 15 s alone, kuberm's pods far less.
		nmMemoryMB: 768,
		rmHeap:     "512m", nmHeap: "384m",
		epoch: spanHomeEpoch,
		// AM-facing (final): the AMs on this host dial its proxy.
		amScheduler: spanProxyAddr,
		// The AM's JVM, in the node's network namespace, must resolve the
		// NodeIds' host from the hosts file as the daemons do.
		javaContainers: true,
		rmProps: map[string]string{
			"yarn.resourcemanager.am.max-attempts":                    "1",
			"yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": "250",
		},
		capacityProps: map[string]string{"yarn.scheduler.capacity.maximum-am-resource-percent": "1.0"},
		nmProps: map[string]string{
			"yarn.nodemanager.hostname":                         kubenode.NodeIP,
			"yarn.nodemanager.process-kill-wait.ms":             "500",
			"yarn.client.nodemanager-connect.max-wait-ms":       "30000",
			"yarn.client.nodemanager-connect.retry-interval-ms": "1000",
		},
	}
}

// mustRun fails the test if one of SC-1's processes or the proxy exited.
func (f *spanFed) mustRun(t *testing.T) {
	t.Helper()
	f.sc1.mustRun(t, f.agent, f.proxy)
}

// checkHomeApp: SC-1's RM has app in state/finalStatus (polled: a kill
// reaches the final state asynchronously).
func (f *spanFed) checkHomeApp(ctx context.Context, t *testing.T, app, state, final string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var r rmrest.AppResponse
		err := f.sc1.get(ctx, spanAddrs.rmWeb, "/ws/v1/cluster/apps/"+app, &r)
		if err == nil && r.App.State == state && r.App.FinalStatus == final {
			t.Logf("%s on %s: %s / %s", app, spanHome, r.App.State, r.App.FinalStatus)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Errorf("%s on %s: %+v (err %v), want %s / %s", app, spanHome, r.App, err, state, final)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkKubeApp: kuberm knows app (the proxy's unmanaged AM, the same id)
// as an unmanaged application that is over: FINISHED (the AM unregistered,
// its UAM with it) or, killed, KILLED or FINISHED; never still live.
func (f *spanFed) checkKubeApp(ctx context.Context, t *testing.T, app string, killed bool) {
	t.Helper()
	fw := forward(t, f.c.DialContext, func() (string, error) { return kubermPorts["client_address"], nil })
	yc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{fw.l.Addr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: "dsuser"})
	if err != nil {
		t.Fatal(err)
	}
	defer yc.Close()
	id, err := yarnid.ParseAppID(app)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp := &yarnpb.GetApplicationReportResponseProto{}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := yc.Call(cctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: yarnid.AppPB(id)}, resp)
		cancel()
		rep := resp.GetApplicationReport()
		st := rep.GetYarnApplicationState()
		over := st == yarnpb.YarnApplicationStateProto_FINISHED || (killed && st == yarnpb.YarnApplicationStateProto_KILLED)
		if err == nil && over && rep.GetUnmanagedApplication() {
			t.Logf("%s on %s: unmanaged, %v / %v", app, kubermSubCluster, st, rep.GetFinalApplicationStatus())
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Errorf("%s on kuberm: %v (unmanaged %v, %v / %v, %q), want an unmanaged application that is over", app, err,
				rep.GetUnmanagedApplication(), st, rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// spanContainerEpoch is the epoch in a container id (0 when it has none).
func spanContainerEpoch(t *testing.T, id string) int64 {
	t.Helper()
	c, err := yarnid.ParseContainerID(id)
	if err != nil {
		t.Errorf("container id %q: %v", id, err)
		return -1
	}
	return c.Epoch()
}

// homeEvidence lists the containers of app that printed marker on SC-1's
// NodeManager (its log dir holds each container's stdout), each with SC-1's
// epoch in its id.
func (f *spanFed) homeEvidence(t *testing.T, app, marker string) []string {
	t.Helper()
	var ids []string
	_ = filepath.WalkDir(filepath.Join(f.sc1.dirs.nmLogs, app), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "stdout" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, line := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(line); len(fs) == 2 && fs[0] == marker {
				if dir := filepath.Base(filepath.Dir(p)); dir != fs[1] {
					t.Errorf("%s printed container id %s in %s's directory", p, fs[1], dir)
				}
				if e := spanContainerEpoch(t, fs[1]); e != spanHomeEpoch {
					t.Errorf("container %s ran on %s's NodeManager with epoch %d, want %d", fs[1], spanHome, e, spanHomeEpoch)
				}
				ids = append(ids, fs[1])
			}
		}
		return nil
	})
	sort.Strings(ids)
	return ids
}

// spanNodeHasBatch reports whether the node publishes Koordinator batch
// resources (then kuberm's pods must request them).
func spanNodeHasBatch(ctx context.Context, t *testing.T, kc kubernetes.Interface) bool {
	t.Helper()
	n, err := kc.CoreV1().Nodes().Get(ctx, kubenode.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, ok := n.Status.Allocatable[kubebatch.BatchCPU]
	t.Logf("node %s: batch resources %v", n.Name, ok)
	return ok
}

// spanCheckKubePods: app's containers on kuberm ran as pods kube-scheduler
// bound (created unbound, on the node by the default scheduler with
// PodScheduled), each requesting its size with requests = limits (batch
// resources when the node has them), mounting the host paths, its
// termination message the marker and its own container id, with kuberm's
// epoch. It returns those container ids.
//
// A pod that never ran must have been deleted: the proxy splits each
// allocate's outstanding ANY ask by weight anew, so the sub-clusters
// together hand out more containers than the AM asked for, and the
// distributed shell AM releases the extra ones unstarted (as Hadoop's own
// LocalityMulticastAMRMProxyPolicy does; seen: 3 handed out on each side
// for 4 asked); kuberm deletes the pod of a released container.
func spanCheckKubePods(t *testing.T, w *podWatch, app, marker string, hostPaths []string, batch bool) []string {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids, released []string
	for name, last := range w.last {
		if last.Labels[kuberm.LabelApplication] != app || last.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			continue
		}
		first := w.first[name]
		if first.Spec.NodeName != "" {
			t.Errorf("pod %s was created bound to %q: kuberm must leave placement to kube-scheduler", name, first.Spec.NodeName)
		}
		main := last.Spec.Containers[0]
		if termination(last, main.Name) == "" && last.Status.Phase != corev1.PodSucceeded && last.Status.Phase != corev1.PodFailed {
			if !spanDeleted(w, name) {
				t.Errorf("container pod %s neither ran nor was deleted: %s", name, strings.Join(w.events[name], " -> "))
			}
			released = append(released, last.Labels[kuberm.LabelContainerID])
			continue
		}
		checkKubeScheduled(t, name, last)
		req, lim := main.Resources.Requests, main.Resources.Limits
		if batch {
			cpu, mem := req[kubebatch.BatchCPU], req[kubebatch.BatchMemory]
			if cpu.IsZero() || mem.IsZero() || !cpu.Equal(lim[kubebatch.BatchCPU]) || !mem.Equal(lim[kubebatch.BatchMemory]) {
				t.Errorf("pod %s: requests %v, limits %v: want batch-cpu and batch-memory with requests = limits", name, req, lim)
			}
		} else if req.Cpu().IsZero() || req.Memory().IsZero() || !req.Cpu().Equal(*lim.Cpu()) || !req.Memory().Equal(*lim.Memory()) {
			t.Errorf("pod %s: requests %v, limits %v: want a size with requests = limits", name, req, lim)
		}
		mounted := readOnlyMounts(main)
		for _, hp := range hostPaths {
			if !mounted[hp] {
				t.Errorf("pod %s does not mount host path %s", name, hp)
			}
		}
		if last.Status.Phase != corev1.PodSucceeded && last.DeletionTimestamp == nil {
			t.Errorf("container pod %s ended %s", name, last.Status.Phase)
		}
		id := last.Labels[kuberm.LabelContainerID]
		if got, want := termination(last, main.Name), marker+" "+id+"\n"; got != want {
			t.Errorf("container pod %s: termination message %q, want %q (the shell command's output)", name, got, want)
		}
		if e := spanContainerEpoch(t, id); e != spanKubeEpoch {
			t.Errorf("container %s ran on kuberm with epoch %d, want %d", id, e, spanKubeEpoch)
		}
		ids = append(ids, id)
	}
	sort.Strings(released)
	t.Logf("container pods of %s deleted unstarted (released by the AM): %v", app, released)
	sort.Strings(ids)
	return ids
}

// spanDeleted: the watch saw pod name deleted (w.mu held).
func spanDeleted(w *podWatch, name string) bool {
	if p := w.last[name]; p != nil && p.DeletionTimestamp != nil {
		return true
	}
	for _, e := range w.events[name] {
		if strings.HasPrefix(e, "DELETED ") {
			return true
		}
	}
	return false
}

// spanWaitWatchedGone waits (up to 30 s) until the watch has seen every pod
// of app deleted (checkAppGone saw them gone from the API server; the
// watch's events may trail it).
func spanWaitWatchedGone(ctx context.Context, t *testing.T, w *podWatch, app string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitFor(wctx, t, "the watch to see every pod of "+app+" deleted", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		var live []string
		for name, p := range w.last {
			if p.Labels[kuberm.LabelApplication] == app && !spanDeleted(w, name) {
				live = append(live, name)
			}
		}
		return len(live) == 0, fmt.Sprint(live)
	})
}

// checkNoLeaks: SC-1 holds nothing the test's applications left (the
// real RM's side of the leak check; checkAppGone is kuberm's): no
// unmanaged application still live, no final application with running
// containers, no container allocated, no live container on the
// NodeManager.
func (f *spanFed) checkNoLeaks(ctx context.Context, t *testing.T) {
	t.Helper()
	if !waitNothingLeft(ctx, t, time.Minute, "leak check: "+spanHome+" holds", func() []string {
		var left []string
		var apps rmrest.AppsResponse
		if err := f.sc1.get(ctx, spanAddrs.rmWeb, "/ws/v1/cluster/apps", &apps); err != nil {
			left = append(left, err.Error())
		}
		for _, a := range apps.Apps.App {
			live := a.State != "FINISHED" && a.State != "FAILED" && a.State != "KILLED"
			if live {
				left = append(left, fmt.Sprintf("%s (%s) is %s (unmanaged %v)", a.ID, a.Name, a.State, a.UnmanagedApplication))
			} else if a.RunningContainers > 0 {
				left = append(left, fmt.Sprintf("%s (%s) is %s with %d running containers", a.ID, a.Name, a.State, a.RunningContainers))
			}
		}
		var m rmrest.ClusterMetricsResponse
		if err := f.sc1.get(ctx, spanAddrs.rmWeb, "/ws/v1/cluster/metrics", &m); err != nil {
			left = append(left, err.Error())
		} else if m.ClusterMetrics.ContainersAllocated != 0 {
			left = append(left, fmt.Sprintf("%d containers allocated", m.ClusterMetrics.ContainersAllocated))
		}
		return append(left, f.sc1.nmLeft(ctx)...)
	}) {
		return
	}
	t.Logf("leak check: nothing left on %s", spanHome)
}

// dump logs what a failed run leaves to read: the pods of app, the tails
// of the proxy's, kuberm's and the router's logs, where SC-1's logs are.
func (f *spanFed) dump(t *testing.T, w *podWatch, app string) {
	t.Helper()
	w.dump(t, app)
	for _, p := range []*nodeProcess{f.proxy, f.kubeFed.rm, f.router, f.agent} {
		t.Logf("---- %s ----\n%s", p.name, p.tail(6000))
	}
	t.Logf("---- sc1-nm ----\n%s", f.sc1.nm.tail(4000))
	t.Logf("---- sc1-rm ----\n%s", f.sc1.rm.tail(4000))
	if app != "" {
		_ = filepath.WalkDir(filepath.Join(f.sc1.dirs.nmLogs, app), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (d.Name() == "AppMaster.stderr" || d.Name() == "stderr") {
				b, _ := os.ReadFile(p)
				t.Logf("---- %s ----\n%s", p, tail(string(b), 6000))
			}
			return nil
		})
	}
}

// TestSpanHadoopConf: SC-1's daemons keep every directory they write under
// their own dir (two RMs of one machine on Hadoop's default
// node-attribute store, /tmp/hadoop-yarn-<user>, kill each other's start),
// and the NodeManager's containers dial the proxy as their scheduler, a
// final setting (a job's own configuration cannot point its AM elsewhere).
func TestSpanHadoopConf(t *testing.T) {
	dir := t.TempDir()
	hc := spanHadoopOptions().writeConfs(t, dir)
	type prop struct{ value, final string }
	read := func(conf string) map[string]prop {
		raw, err := os.ReadFile(filepath.Join(conf, "yarn-site.xml"))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Props []struct {
				Name  string `xml:"name"`
				Value string `xml:"value"`
				Final string `xml:"final"`
			} `xml:"property"`
		}
		if err := xml.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		out := map[string]prop{}
		for _, p := range c.Props {
			out[p.Name] = prop{p.Value, p.Final}
		}
		return out
	}
	rm, nm := read(hc.rmConf), read(hc.nmConf)
	for _, c := range []struct {
		conf map[string]prop
		keys []string
		own  string
	}{
		{rm, []string{"hadoop.tmp.dir", "yarn.node-attribute.fs-store.root-dir", "yarn.resourcemanager.fs.state-store.uri"}, filepath.Join(dir, "rm")},
		{nm, []string{"hadoop.tmp.dir", "yarn.nodemanager.local-dirs", "yarn.nodemanager.log-dirs"}, filepath.Join(dir, "nm")},
	} {
		for _, k := range c.keys {
			v := strings.TrimPrefix(c.conf[k].value, "file://")
			if !strings.HasPrefix(v, c.own+string(os.PathSeparator)) {
				t.Errorf("%s = %q, want a path under %s", k, c.conf[k].value, c.own)
			}
		}
	}
	if p := nm["yarn.resourcemanager.scheduler.address"]; p.value != spanProxyAddr || p.final != "true" {
		t.Errorf("the NodeManager's scheduler address is %+v, want the proxy's %s, final", p, spanProxyAddr)
	}
	if p := rm["yarn.resourcemanager.epoch"]; p.value != fmt.Sprint(spanHomeEpoch) || rm["yarn.resourcemanager.recovery.enabled"].value != "true" {
		t.Errorf("the RM's epoch is %q with recovery %q: the epoch is in container ids only with recovery on", p.value, rm["yarn.resourcemanager.recovery.enabled"].value)
	}
}
