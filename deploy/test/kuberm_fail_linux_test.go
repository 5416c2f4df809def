package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm"
)

// The node's Koordinator batch resources, as koord-manager publishes them
// (Koordinator >= 1.4, REFERENCE §6): the origin batch total in the
// annotation, a third party (YARN's NodeManagers in a yarn-copilot setup)
// holding part of it, and allocatable = capacity = origin - third party.
// kuberm's capacity rule counts the origin (internal/kubebatch), the
// kubelet and kube-scheduler admit against allocatable: the two differ on
// purpose, so the capability seen says which figure kuberm read.
const (
	failOriginMilliCPU = 8000
	failOriginMemory   = 8 << 30
	failThirdMilliCPU  = 2000
	failThirdMemory    = 2 << 30
	failAllocMilliCPU  = failOriginMilliCPU - failThirdMilliCPU
	failAllocMemory    = failOriginMemory - failThirdMemory
)

// failRun is issue 24's failure paths of a Kubernetes sub-cluster
// (TestKubermOnNode's "failures"), one federation (startDSFed) and the
// stock Hadoop distributed shell:
//
//   - batch resources: the Node's status carries Koordinator's
//     kubernetes.io/batch-cpu and -memory (patched as koord-manager does,
//     before this scenario's kuberm starts); every pod kuberm makes
//     requests them and no cpu/memory, the kubelet admits and runs each,
//     and the capability the router reports for the node is the batch
//     figure;
//   - a container pod deleted through the API mid-application: its AM
//     gets it as a completed container, ABORTED with diagnostics saying
//     why, asks again, and the application SUCCEEDS with a replacement pod
//     that ran;
//   - `yarnfed kuberm` stopped mid-application (SIGTERM, then SIGKILL) and
//     started again with the same configuration: the AM re-registers (the
//     resync), the application SUCCEEDS on its original pods, none
//     duplicated, and the router still reports it;
//
// then nothing of any application is left (container pods, launch
// Secrets, AM pods still running). The patch stays on the Node (the
// scenario runs last).
func failRun(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime, hd hostDirs) {
	failPatchBatch(ctx, t, kc)
	f := failStartFederation(ctx, t, c, bin, kubeconfig, rt, hd)
	w := watchPods(ctx, t, kc)
	var apps []string

	t.Run("batch capability", func(t *testing.T) {
		failCheckCapability(ctx, t, f)
	})
	t.Run("pod deleted mid-app", func(t *testing.T) {
		if app := failPodDeleted(ctx, t, f, kc, w); app != "" {
			apps = append(apps, app)
		}
	})
	t.Run("kuberm restarted mid-app", func(t *testing.T) {
		if app := failRestarted(ctx, t, f, kc, w); app != "" {
			apps = append(apps, app)
		}
	})
	t.Run("no leak", func(t *testing.T) {
		for _, app := range apps {
			checkAppGone(ctx, t, kc, app, false)
		}
		failCheckNamespaceClean(ctx, t, kc)
		n, err := kc.CoreV1().Nodes().Get(ctx, kubenode.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		failCheckNodeBatch(t, n)
	})
}

// failPatchBatch publishes batch resources on the node as koord-manager's
// noderesource controller does: a merge patch of the Node's status
// subresource (capacity and allocatable, batch-cpu an integer of
// milli-cores, batch-memory bytes) and the origin and third-party
// annotations on the Node. The kubelet's own status updates keep them:
// it rewrites allocatable from capacity, and both carry the same figures.
func failPatchBatch(ctx context.Context, t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	batch := map[string]string{
		string(kubebatch.BatchCPU):    fmt.Sprint(failAllocMilliCPU),
		string(kubebatch.BatchMemory): fmt.Sprint(failAllocMemory),
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": batch, "allocatable": batch}})
	if _, err := kc.CoreV1().Nodes().Patch(ctx, kubenode.NodeName, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("PATCH nodes/%s/status with batch resources: %v", kubenode.NodeName, err)
	}
	third, _ := json.Marshal(map[string]any{"allocations": []any{map[string]any{"name": "hadoop-yarn", "priority": "koord-batch",
		"resources": map[string]any{string(kubebatch.BatchCPU): fmt.Sprint(failThirdMilliCPU), string(kubebatch.BatchMemory): fmt.Sprint(failThirdMemory)}}}})
	meta, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		kubebatch.AnnotationOriginBatch:             kubebatch.EncodeOriginBatch(kubebatch.Batch{MilliCPU: failOriginMilliCPU, Memory: failOriginMemory}),
		"node.koordinator.sh/thirdPartyAllocations": string(third),
	}}})
	if _, err := kc.CoreV1().Nodes().Patch(ctx, kubenode.NodeName, types.MergePatchType, meta, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate node %s: %v", kubenode.NodeName, err)
	}
	n, err := kc.CoreV1().Nodes().Get(ctx, kubenode.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failCheckNodeBatch(t, n)
	t.Logf("node %s: batch allocatable %v, origin %s", n.Name, n.Status.Allocatable, n.Annotations[kubebatch.AnnotationOriginBatch])
}

// failCheckNodeBatch: the node carries the batch figures failPatchBatch
// wrote, in capacity and allocatable. Checked again at the end: the
// kubelet rebuilds its status from machine information every few seconds
// and must keep them (it copies capacity into allocatable).
func failCheckNodeBatch(t *testing.T, n *corev1.Node) {
	t.Helper()
	for _, rl := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		cpu, mem := rl[kubebatch.BatchCPU], rl[kubebatch.BatchMemory]
		if cpu.Value() != failAllocMilliCPU || mem.Value() != failAllocMemory {
			t.Fatalf("node %s: batch capacity %v, allocatable %v, want %d milli-cores and %d bytes", n.Name, n.Status.Capacity, n.Status.Allocatable, failAllocMilliCPU, failAllocMemory)
		}
	}
}

// failFederation is the scenario's federation (kuberm restartable) with
// what its checks use: the distributed shell's jar and a client of the
// router's ApplicationClientProtocol.
type failFederation struct {
	*kubeFed
	rt    javaRuntime
	hd    hostDirs
	dsJar string
	yc    *hadoopipc.Client // ApplicationClientProtocol through the router
}

func failStartFederation(ctx context.Context, t *testing.T, c *kubenode.Cluster, bin, kubeconfig string, rt javaRuntime, hd hostDirs) *failFederation {
	t.Helper()
	fed := startDSFed(ctx, t, c, bin, kubeconfig, rt, hd)
	failWriteAMLog4j(t, hd)
	return &failFederation{kubeFed: fed, rt: rt, hd: hd, dsJar: hd.dsJar(t), yc: fed.routerClient(t)}
}

// failWriteAMLog4j is the AM's log configuration for these runs:
// am-log4j.properties's (errors to the termination message), plus the two
// lines this test reads back from the AM pod's termination message (the
// API server keeps its first 4 KiB after the pod ends): every container
// status the AM got (ApplicationMaster's "... container status for
// containerID=.., state=.., exitStatus=.., diagnostics=..") and
// AMRMClientImpl's resync warning.
func failWriteAMLog4j(t *testing.T, hd hostDirs) {
	t.Helper()
	body := "log4j.rootLogger=INFO,console,term,seen\n" +
		"log4j.appender.console=org.apache.log4j.ConsoleAppender\nlog4j.appender.console.target=System.err\n" +
		"log4j.appender.console.layout=org.apache.log4j.PatternLayout\nlog4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{2}: %m%n\n" +
		"log4j.appender.term=org.apache.log4j.FileAppender\nlog4j.appender.term.File=/dev/termination-log\n" +
		"log4j.appender.term.Threshold=ERROR\nlog4j.appender.term.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.term.layout.ConversionPattern=%p %c{2}: %m%n\n" +
		"log4j.appender.seen=org.apache.log4j.FileAppender\nlog4j.appender.seen.File=/dev/termination-log\n" +
		"log4j.appender.seen.layout=org.apache.log4j.PatternLayout\nlog4j.appender.seen.layout.ConversionPattern=%m%n\n" +
		"log4j.appender.seen.filter.1=org.apache.log4j.varia.StringMatchFilter\n" +
		"log4j.appender.seen.filter.1.StringToMatch=container status for containerID=\nlog4j.appender.seen.filter.1.AcceptOnMatch=true\n" +
		"log4j.appender.seen.filter.2=org.apache.log4j.varia.StringMatchFilter\n" +
		"log4j.appender.seen.filter.2.StringToMatch=out of sync with ResourceManager\nlog4j.appender.seen.filter.2.AcceptOnMatch=true\n" +
		"log4j.appender.seen.filter.3=org.apache.log4j.varia.DenyAllFilter\n"
	if err := os.WriteFile(filepath.Join(hd.conf, "fail-am-log4j.properties"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ds runs the stock distributed shell client through the router in the
// background: two containers of 1 vcore and 256 MB running the shell
// command, an AM of 512 MB.
func (f *failFederation) ds(ctx context.Context, name, shell string) <-chan clientResult {
	return runInBackground(func() (string, error) {
		return runJava(ctx, f.c, f.rt, f.hd, 15*time.Minute, dsClass,
			"-jar", f.dsJar, "-appname", name, "-queue", "default", "-log_properties", filepath.Join(f.hd.conf, "fail-am-log4j.properties"),
			"-shell_command", shell, "-num_containers", "2", "-container_memory", "256", "-container_vcores", "1",
			"-master_memory", "512", "-master_vcores", "1", "-timeout", "840000")
	})
}

// failWaitContainersRunning waits for n container pods of one application
// not in known (the applications run one at a time) whose main container
// runs (the shell command started), failing if the client ends first; it
// returns the application and those pods.
func failWaitContainersRunning(ctx context.Context, t *testing.T, w *podWatch, known map[string]bool, done <-chan clientResult, n int) (string, []*corev1.Pod) {
	t.Helper()
	var app string
	var running []*corev1.Pod
	wctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	waitFor(wctx, t, fmt.Sprintf("%d running container pods of a new application", n), func() (bool, string) {
		select {
		case r := <-done:
			t.Fatalf("the client ended before %d containers ran: %v\n%s", n, r.err, tail(r.out, 6000))
		default:
		}
		running = running[:0]
		for _, p := range w.pods() {
			a := p.Labels[kuberm.LabelApplication]
			if known[a] || p.Labels[kuberm.LabelRole] != kuberm.RoleContainer || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == kuberm.ContainerName && s.State.Running != nil {
					app = a
					running = append(running, p)
				}
			}
		}
		return len(running) >= n, fmt.Sprintf("%d running", len(running))
	})
	for _, p := range running {
		if p.Labels[kuberm.LabelApplication] != app {
			t.Fatalf("container pods of two new applications run at once: %s and %s", app, p.Labels[kuberm.LabelApplication])
		}
	}
	return app, running
}

// failPodDeleted: scenario 2. The shell command sleeps long enough for
// both containers to run; one container pod is deleted through the API
// (default grace: the kubelet sends SIGTERM, the command exits 143, the
// pod ends Failed). The AM must hear ABORTED with kuberm's reason, ask
// again, and finish SUCCEEDED with a third container pod that ran.
func failPodDeleted(ctx context.Context, t *testing.T, f *failFederation, kc kubernetes.Interface, w *podWatch) string {
	marker := fmt.Sprintf("kuberm-fail-del-%d", time.Now().UnixNano())
	known := w.apps()
	done := f.ds(ctx, "kuberm-fail-delete", "sleep 45; echo "+marker+" $CONTAINER_ID | tee /dev/termination-log")
	app, running := failWaitContainersRunning(ctx, t, w, known, done, 2)
	victim := running[0]
	victimID := victim.Labels[kuberm.LabelContainerID]
	if err := kc.CoreV1().Pods(kubermNS).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &victim.UID}}); err != nil {
		t.Fatalf("delete container pod %s: %v", victim.Name, err)
	}
	t.Logf("deleted container pod %s (%s) of %s while it ran", victim.Name, victimID, app)

	f.waitSucceeded(ctx, t, w, app, done, "after one of its container pods was deleted")

	// The pods: the two first and one replacement, each with batch
	// resources, bound by kube-scheduler and run by the kubelet; the
	// deleted one ended by the deletion, the others by the command.
	pods := failCheckBatchPods(t, w, app, 3)
	var replacement string
	for _, p := range pods {
		if p.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			continue
		}
		id := p.Labels[kuberm.LabelContainerID]
		msg := termination(p, kuberm.ContainerName)
		if id == victimID {
			if msg == marker+" "+id+"\n" {
				t.Errorf("the deleted container %s ran to its end: its deletion did not stop it", id)
			}
			continue
		}
		if msg != marker+" "+id+"\n" {
			t.Errorf("container pod %s: termination message %q, want the shell command's %q", p.Name, msg, marker+" "+id)
		}
		if id > victimID {
			replacement = id
		}
	}
	if replacement == "" {
		t.Errorf("no container after the deleted %s: the AM was not given a replacement", victimID)
	}

	// What the AM got: its own log lines (the AM pod's termination message).
	// kuberm reports the deletion from the pod while it terminates, or,
	// when the kubelet was quicker than the AM's next heartbeat, from its
	// absence ("is gone"): both are ABORTED with the reason.
	am := failAMTermination(t, w, app)
	want := regexp.MustCompile(`containerID=` + regexp.QuoteMeta(victimID) + `, state=COMPLETE, exitStatus=-100, diagnostics=Container aborted: its pod was deleted outside YARN, by neither the ResourceManager nor the ApplicationMaster: pod ` +
		regexp.QuoteMeta(victim.Name) + `(, deletion requested at \S+ with a grace period of 30s| is gone)`)
	if !want.MatchString(am) {
		t.Errorf("the AM did not get the deleted container as ABORTED with kuberm's reason; its container statuses:\n%s", am)
	}
	if n := strings.Count(am, "exitStatus=0,"); n != 2 {
		t.Errorf("the AM got %d containers completed with exit 0, want 2 (the survivor and the replacement):\n%s", n, am)
	}
	if !strings.Contains(f.rm.output(), "container completed") || !regexp.MustCompile(`container completed.*container=`+regexp.QuoteMeta(victimID)+` exit=-100`).MatchString(f.rm.output()) {
		t.Errorf("kuberm's log does not record the deleted container's completion as -100")
	}
	t.Logf("replacement container %s; the AM's container statuses:\n%s", replacement, am)
	return app
}

// failRestarted: scenario 3. While both containers run (a long sleep),
// kuberm is stopped with SIGTERM and started again, then (same
// application) killed with SIGKILL and started again. Each time the AM
// must re-register (its registration annotation is rewritten by the new
// process) and the application must SUCCEED on its original two container
// pods: adopted, not recreated.
func failRestarted(ctx context.Context, t *testing.T, f *failFederation, kc kubernetes.Interface, w *podWatch) string {
	marker := fmt.Sprintf("kuberm-fail-restart-%d", time.Now().UnixNano())
	known := w.apps()
	done := f.ds(ctx, "kuberm-fail-restart", "sleep 100; echo "+marker+" $CONTAINER_ID | tee /dev/termination-log")
	app, running := failWaitContainersRunning(ctx, t, w, known, done, 2)
	uids := map[string]types.UID{}
	for _, p := range running {
		uids[p.Name] = p.UID
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		before := failRegistration(ctx, t, kc, app)
		begin := time.Now()
		away := f.restartKuberm(ctx, t, sig)
		t.Logf("kuberm serving again %v after %v", away.Round(time.Millisecond), sig)
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
		waitFor(rctx, t, "the AM to register again with the new kuberm after "+sig.String(), func() (bool, string) {
			select {
			case r := <-done:
				t.Fatalf("the client ended before the AM re-registered: %v\n%s", r.err, tail(r.out, 6000))
			default:
			}
			now := failRegistration(ctx, t, kc, app)
			return now != before, "registration " + now
		})
		rcancel()
		t.Logf("AM re-registered %v after %v", time.Since(begin).Round(time.Millisecond), sig)
		for name, uid := range uids {
			p, err := kc.CoreV1().Pods(kubermNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.UID != uid || p.DeletionTimestamp != nil {
				t.Errorf("container pod %s after the restart: %v (uid %v, want %v)", name, err, p.GetUID(), uid)
			}
		}
	}

	f.waitSucceeded(ctx, t, w, app, done, "across two kuberm restarts")
	pods := failCheckBatchPods(t, w, app, 2)
	for _, p := range pods {
		if p.Labels[kuberm.LabelRole] != kuberm.RoleContainer {
			continue
		}
		if _, ok := uids[p.Name]; !ok {
			t.Errorf("container pod %s was made after the restarts: the running ones must be adopted, not duplicated", p.Name)
		}
		id := p.Labels[kuberm.LabelContainerID]
		if msg := termination(p, kuberm.ContainerName); msg != marker+" "+id+"\n" {
			t.Errorf("container pod %s: termination message %q, want the shell command's %q", p.Name, msg, marker+" "+id)
		}
	}
	am := failAMTermination(t, w, app)
	if n := strings.Count(am, "out of sync with ResourceManager"); n < 2 {
		t.Errorf("the AM resynced %d times, want one per restart (2):\n%s", n, am)
	}
	if n := strings.Count(am, "exitStatus=0,"); n != 2 {
		t.Errorf("the AM got %d containers completed with exit 0, want 2:\n%s", n, am)
	}
	t.Logf("the AM's log lines:\n%s", am)
	return app
}

// waitSucceeded waits for the client's end: it must say the application
// SUCCEEDED (why: what it had to survive), and so must the router.
func (f *failFederation) waitSucceeded(ctx context.Context, t *testing.T, w *podWatch, app string, done <-chan clientResult, why string) {
	t.Helper()
	r := <-done
	t.Logf("distributed shell client: %v after %v", r.err, r.took.Round(time.Millisecond))
	if r.err != nil || !strings.Contains(r.out, "Application completed successfully") {
		w.dump(t, app)
		t.Fatalf("the application must SUCCEED %s: %v\n%s\nkuberm log:\n%s", why, r.err, tail(r.out, 6000), f.rm.tail(8000))
	}
	failCheckReport(ctx, t, f, app)
}

// failRegistration is the AM registration kuberm recorded on app's AM pod
// (yarnfed.io/am-registration: host, port, URL and the time of the
// register call).
func failRegistration(ctx context.Context, t *testing.T, kc kubernetes.Interface, app string) string {
	t.Helper()
	pods, err := kc.CoreV1().Pods(kubermNS).List(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelApplication + "=" + app + "," + kuberm.LabelRole + "=" + kuberm.RoleAM})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("application %s has %d AM pods, want 1", app, len(pods.Items))
	}
	return pods.Items[0].Annotations[kuberm.AnnotationRegistration]
}

// failCheckReport: the router reports app FINISHED / SUCCEEDED (the home
// sub-cluster, through the federation).
func failCheckReport(ctx context.Context, t *testing.T, f *failFederation, app string) {
	t.Helper()
	id, err := yarnid.ParseAppID(app)
	if err != nil {
		t.Fatal(err)
	}
	resp := &yarnpb.GetApplicationReportResponseProto{}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := f.yc.Call(cctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: yarnid.AppPB(id)}, resp); err != nil {
		t.Fatalf("getApplicationReport %s through the router: %v", app, err)
	}
	rep := resp.GetApplicationReport()
	if rep.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_FINISHED || rep.GetFinalApplicationStatus() != yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED {
		t.Errorf("the router reports %s %v / %v (%q), want FINISHED / SUCCEEDED", app, rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), rep.GetDiagnostics())
	}
}

// failCheckCapability: the router's getClusterNodes (kuberm's NodeReports,
// through the federation) shows the node RUNNING with the batch origin as
// its capability, not its cpu/memory and not the batch allocatable.
func failCheckCapability(ctx context.Context, t *testing.T, f *failFederation) {
	resp := &yarnpb.GetClusterNodesResponseProto{}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := f.yc.Call(cctx, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, resp); err != nil {
		t.Fatalf("getClusterNodes through the router: %v", err)
	}
	if len(resp.GetNodeReports()) != 1 {
		t.Fatalf("%d node reports, want the one node: %v", len(resp.GetNodeReports()), resp.GetNodeReports())
	}
	n := resp.GetNodeReports()[0]
	wantMB, wantVC := int64(failOriginMemory>>20), int32(failOriginMilliCPU/1000)
	if n.GetCapability().GetMemory() != wantMB || n.GetCapability().GetVirtualCores() != wantVC || n.GetNodeState() != yarnpb.NodeStateProto_NS_RUNNING {
		t.Errorf("node %s:%d: %v, capability <memory:%d, vCores:%d>, want RUNNING <memory:%d, vCores:%d> (the origin batch total)",
			n.GetNodeId().GetHost(), n.GetNodeId().GetPort(), n.GetNodeState(), n.GetCapability().GetMemory(), n.GetCapability().GetVirtualCores(), wantMB, wantVC)
	}
	if n.GetNodeId().GetHost() != kubenode.NodeIP {
		t.Errorf("NodeId host %q, want the node's InternalIP %s", n.GetNodeId().GetHost(), kubenode.NodeIP)
	}
	t.Logf("router: node %s:%d %v capability <memory:%d, vCores:%d> used <memory:%d, vCores:%d>", n.GetNodeId().GetHost(), n.GetNodeId().GetPort(), n.GetNodeState(),
		n.GetCapability().GetMemory(), n.GetCapability().GetVirtualCores(), n.GetUsed().GetMemory(), n.GetUsed().GetVirtualCores())
}

// failCheckBatchPods: app ran one AM and n container pods (as the watch
// saw them), each created unbound and bound by kube-scheduler to the node,
// each run by the kubelet (Running seen), each container (the launcher's
// init container too) requesting batch-cpu (milli-cores) and batch-memory
// with limits equal and no cpu or memory, and labelled Koordinator BE. It
// returns the last version of each pod.
func failCheckBatchPods(t *testing.T, w *podWatch, app string, n int) []*corev1.Pod {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*corev1.Pod
	var ams, containers int
	for name, last := range w.last {
		if last.Labels[kuberm.LabelApplication] != app {
			continue
		}
		out = append(out, last)
		first := w.first[name]
		switch last.Labels[kuberm.LabelRole] {
		case kuberm.RoleAM:
			ams++
		case kuberm.RoleContainer:
			containers++
		}
		if first.Spec.NodeName != "" || last.Spec.NodeName != kubenode.NodeName || last.Spec.SchedulerName != corev1.DefaultSchedulerName {
			t.Errorf("pod %s: created on %q, then on %q by %q: want kube-scheduler to bind it to %s", name, first.Spec.NodeName, last.Spec.NodeName, last.Spec.SchedulerName, kubenode.NodeName)
		}
		ran := false
		for _, e := range w.events[name] {
			if strings.Contains(e, " "+string(corev1.PodRunning)+" ") {
				ran = true
			}
		}
		if !ran {
			t.Errorf("pod %s never ran: %s", name, strings.Join(w.events[name], " -> "))
		}
		if last.Labels[kuberm.LabelKoordQoS] != "BE" {
			t.Errorf("pod %s: label %s=%q, want BE", name, kuberm.LabelKoordQoS, last.Labels[kuberm.LabelKoordQoS])
		}
		for _, c := range append(append([]corev1.Container{}, last.Spec.InitContainers...), last.Spec.Containers...) {
			req, lim := c.Resources.Requests, c.Resources.Limits
			cpu, mem := req[kubebatch.BatchCPU], req[kubebatch.BatchMemory]
			_, hasCPU := req[corev1.ResourceCPU]
			_, hasMem := req[corev1.ResourceMemory]
			_, limCPU := lim[corev1.ResourceCPU]
			_, limMem := lim[corev1.ResourceMemory]
			if cpu.Value() <= 0 || cpu.Value()%1000 != 0 || mem.Value() <= 0 || mem.Value()%(1<<20) != 0 || hasCPU || hasMem || limCPU || limMem ||
				!cpu.Equal(lim[kubebatch.BatchCPU]) || !mem.Equal(lim[kubebatch.BatchMemory]) {
				t.Errorf("pod %s container %s: requests %v, limits %v: want batch-cpu (whole cores in milli) and batch-memory (MiB in bytes), limits equal, no cpu or memory", name, c.Name, req, lim)
			}
		}
	}
	if ams != 1 || containers != n {
		t.Errorf("application %s ran %d AM and %d container pods, want 1 and %d", app, ams, containers, n)
	}
	return out
}

// failAMTermination waits (up to 2 minutes: the AM's JVM may still be
// exiting after it unregistered) for app's AM pod to end and returns its
// termination message: the AM's log lines failWriteAMLog4j selects.
func failAMTermination(t *testing.T, w *podWatch, app string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		w.mu.Lock()
		var am *corev1.Pod
		for _, p := range w.last {
			if p.Labels[kuberm.LabelApplication] == app && p.Labels[kuberm.LabelRole] == kuberm.RoleAM {
				am = p
			}
		}
		w.mu.Unlock()
		if am != nil && (am.Status.Phase == corev1.PodSucceeded || am.Status.Phase == corev1.PodFailed) {
			if am.Status.Phase != corev1.PodSucceeded {
				t.Errorf("AM pod %s ended %s", am.Name, am.Status.Phase)
			}
			for _, s := range am.Status.ContainerStatuses {
				if s.State.Terminated != nil {
					return s.State.Terminated.Message
				}
			}
			return ""
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AM pod of %s did not end", app)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// failCheckNamespaceClean: nothing of any application is left in kuberm's
// namespace: no container pod, no launch Secret, no AM pod still running
// (ended AM pods stay: the attempts' records).
func failCheckNamespaceClean(ctx context.Context, t *testing.T, kc kubernetes.Interface) {
	t.Helper()
	pods, err := kc.CoreV1().Pods(kubermNS).List(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelSubCluster})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		over := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if p.Labels[kuberm.LabelRole] != kuberm.RoleAM || !over {
			t.Errorf("left behind: pod %s (%s %s)", p.Name, p.Labels[kuberm.LabelRole], p.Status.Phase)
		}
	}
	secrets, err := kc.CoreV1().Secrets(kubermNS).List(ctx, metav1.ListOptions{FieldSelector: "type=" + kuberm.LaunchSecretType})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		t.Errorf("left behind: launch Secret %s", s.Name)
	}
}
