package writeback_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	nodev1client "k8s.io/client-go/kubernetes/typed/node/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/gpg/kube/nmpush"
	"github.com/yarnfed/yarnfed/gpg/kube/writeback"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"google.golang.org/protobuf/proto"
)

const gpgUser, readerOnly = "yarnfed-gpg", "reader-only"

func q(s string) resource.Quantity { return resource.MustParse(s) }

// batch is a batch request/limit list as Koordinator's webhook leaves it.
func batch(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{kube.BatchCPU: q(cpu), kube.BatchMemory: q(mem)}
}

// cluster writes objects the way their owners do: spec by create, status
// through the status subresource.
type cluster struct {
	t     *testing.T
	admin corev1client.CoreV1Interface
}

func (c *cluster) node(name string, annotations map[string]string, alloc corev1.ResourceList) {
	c.t.Helper()
	ctx := context.Background()
	n, err := c.admin.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	n.Status.Capacity, n.Status.Allocatable = alloc, alloc
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := c.admin.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) pod(p *corev1.Pod, phase corev1.PodPhase) {
	c.t.Helper()
	ctx := context.Background()
	created, err := c.admin.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	created.Status.Phase = phase
	if _, err := c.admin.Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// nmPod is a NodeManager pod as yarn-copilot's chart (hadoop-yarn,
// yarn-nm-statefulset.yaml, useBatchResource and hdfs.enabled) renders it:
// the yarn-nm container requests 1k batch-cpu / 1Gi (limits 2k / 2Gi), the
// hdfs-dn sidecar container 1k / 1Gi (limits the same); label
// app.kubernetes.io/component=node-manager, koordinator.sh/qosClass=BE;
// the node-id annotation koord-yarn-operator reads.
func nmPod(name, node, nodeID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hadoop-yarn", Name: name,
			Labels:      map[string]string{"app.kubernetes.io/name": "hadoop-yarn", kube.LabelComponent: kube.ComponentNodeManager, "koordinator.sh/qosClass": "BE"},
			Annotations: map[string]string{kube.AnnotationNodeID: nodeID}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "yarn-nm", Image: "apache-hadoop:3.3.2", Resources: corev1.ResourceRequirements{Requests: batch("1k", "1Gi"), Limits: batch("2k", "2Gi")}},
			{Name: "hdfs-dn", Image: "apache-hadoop:3.3.2", Resources: corev1.ResourceRequirements{Requests: batch("1k", "1Gi"), Limits: batch("1k", "1Gi")}},
		}},
	}
}

// batchPod is a pod after Koordinator's webhook: cpu/memory rewritten to
// batch-cpu (milli) / batch-memory, in containers, init containers and
// overhead; a limit without a request copied into the request.
func batchPod(name, node string, containers, inits []corev1.Container, runtimeClass string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "spark", Name: name, Labels: map[string]string{"koordinator.sh/qosClass": "BE"}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: containers, InitContainers: inits},
	}
	if runtimeClass != "" {
		p.Spec.RuntimeClassName = &runtimeClass
	}
	return p
}

func ctr(name, cpu, mem string) corev1.Container {
	return corev1.Container{Name: name, Image: "spark:3.5", Resources: corev1.ResourceRequirements{Requests: batch(cpu, mem), Limits: batch(cpu, mem)}}
}

func sidecar(name, cpu, mem string) corev1.Container {
	c := ctr(name, cpu, mem)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// poll waits for cond: a minute, for a real API server on a shared machine.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testpoll.Within(t, time.Minute, what, cond)
}

// rmNodes reads the simrm's REST /ws/v1/cluster/nodes, as the GPG does.
func rmNodes(rm *simrm.RM) kube.RMNodesFromREST {
	return func(ctx context.Context, _ string) ([]rmrest.Node, error) {
		return rmrest.NewClient(rm.Addrs().Web).GetNodes(ctx, "")
	}
}

func nodesByID(t *testing.T, rm *simrm.RM) map[string]rmrest.Node {
	t.Helper()
	ns, err := rmrest.NewClient(rm.Addrs().Web).GetNodes(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rmrest.Node{}
	for _, n := range ns {
		out[n.ID] = n
	}
	return out
}

// TestKoordinatorLoop: a real kube-apiserver with Nodes and Pods in
// Koordinator's and yarn-copilot's shapes, a simulated RM running
// containers, and the three parts of the loop: the capacity source
// (published capacity = a hand-computed truth), the node-resource push (the
// RM's totalResource per NodeManager = that truth; a reset node drained to
// 0 with its containers still running) and the thirdPartyAllocations
// write-back (each Node's entry = the RM's used resources after one round,
// as containers start and stop; a second writer of either detected and
// left alone). The GPG's identity is bound to exactly gpg/kube's two roles.
func TestKoordinatorLoop(t *testing.T) {
	c := kubetest.Start(t, kubetest.Options{Users: []kubetest.User{{Name: gpgUser}, {Name: readerOnly}}})
	ctx := context.Background()
	c.GrantClusterRole(t, "../rbac.yaml", gpgUser)
	c.GrantClusterRole(t, "../rbac-writeback.yaml", gpgUser)
	c.GrantClusterRole(t, "../rbac.yaml", readerOnly)
	admin, err := corev1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"hadoop-yarn", "spark"} {
		if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	nodeClient, err := nodev1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	// A RuntimeClass whose overhead is in batch resources: the API server's
	// RuntimeClass admission copies it into the pod's spec.overhead.
	if _, err := nodeClient.RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "kata-batch"}, Handler: "kata",
		Overhead: &nodev1.Overhead{PodFixed: batch("250", "256Mi")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The RM: 4 NodeManagers registered at 8 vcores / 8192 MB; each managed
	// application runs an AM and 2 containers of 1 vcore / 1024 MB for an
	// hour (until killed).
	rm := simrmtest.Start(t, "sc-k", func(cfg *simrm.Config) {
		cfg.Nodes, cfg.NodeVCores, cfg.NodeMemoryMB = 4, 8, 8192
		cfg.SimAM.Containers = 2
		cfg.SimAM.Resource = simrm.Resource{MemoryMB: 1024, VCores: 1}
		cfg.SimAM.ContainerRuntime = config.Duration(time.Hour)
	})
	var ids []string
	for id := range nodesByID(t, rm) {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Containers on every NodeManager before anything is pushed (round-robin
	// placement): 2 applications, 6 containers over 4 nodes.
	apps := submitApps(t, rm, 2)
	poll(t, "containers on every NodeManager", func() bool {
		for _, n := range nodesByID(t, rm) {
			if n.NumContainers == 0 {
				return false
			}
		}
		return true
	})

	k := &cluster{t: t, admin: admin}
	// n1: Koordinator >= 1.4 (origin annotation, batch allocatable =
	// origin - what YARN holds).
	k.node("n1", map[string]string{kube.AnnotationOriginBatch: `{"resources":{"kubernetes.io/batch-cpu":"40k","kubernetes.io/batch-memory":"100Gi"}}`},
		corev1.ResourceList{corev1.ResourceCPU: q("64"), corev1.ResourceMemory: q("256Gi"), kube.BatchCPU: q("36k"), kube.BatchMemory: q("96Gi")})
	k.pod(nmPod("nm-n1", "n1", ids[0]), corev1.PodRunning)
	// A Spark executor: an ordinary init container after a restartable
	// (sidecar) one, and the main container.
	k.pod(batchPod("exec-1", "n1", []corev1.Container{ctr("main", "2000", "4Gi")},
		[]corev1.Container{sidecar("log-agent", "500", "512Mi"), ctr("fetch", "3000", "1Gi")}, ""), corev1.PodRunning)
	// Limits only in the user's spec: the webhook copied them into requests
	// (ctr sets both, as the admitted pod has them).
	k.pod(batchPod("limits-only", "n1", []corev1.Container{ctr("main", "1500", "2Gi")}, nil, ""), corev1.PodRunning)
	// Pod overhead from its RuntimeClass.
	k.pod(batchPod("with-overhead", "n1", []corev1.Container{ctr("main", "1000", "1Gi")}, nil, "kata-batch"), corev1.PodRunning)
	// Terminated: counts nothing.
	k.pod(batchPod("done", "n1", []corev1.Container{ctr("main", "8000", "8Gi")}, nil, ""), corev1.PodSucceeded)
	// n2: Koordinator <= 1.3 (no origin annotation): the batch allocatable is
	// the total.
	k.node("n2", nil, corev1.ResourceList{corev1.ResourceCPU: q("32"), kube.BatchCPU: q("20k"), kube.BatchMemory: q("50Gi")})
	k.pod(nmPod("nm-n2", "n2", ids[1]), corev1.PodRunning)
	k.pod(batchPod("exec-2", "n2", []corev1.Container{ctr("main", "3000", "3Gi")}, nil, ""), corev1.PodRunning)
	// n3: reset by koord-manager (stale NodeMetric): batch keys deleted from
	// the status, origin 0.
	k.node("n3", map[string]string{kube.AnnotationOriginBatch: `{"resources":{"kubernetes.io/batch-cpu":"0","kubernetes.io/batch-memory":"0"}}`},
		corev1.ResourceList{corev1.ResourceCPU: q("32")})
	k.pod(nmPod("nm-n3", "n3", ids[2]), corev1.PodRunning)
	// n4: its NodeManager pod is still Pending.
	k.node("n4", map[string]string{kube.AnnotationOriginBatch: `{"resources":{"kubernetes.io/batch-cpu":"10k","kubernetes.io/batch-memory":"10Gi"}}`},
		corev1.ResourceList{corev1.ResourceCPU: q("32"), kube.BatchCPU: q("10k"), kube.BatchMemory: q("10Gi")})
	k.pod(nmPod("nm-n4", "n4", ids[3]), corev1.PodPending)

	// The truth, by hand:
	// n1: NM pod 1000+1000 milli, 1Gi+1Gi. exec-1: max(2000+500,
	//     3000+500) = 3500 milli, max(4Gi+512Mi, 1Gi+512Mi) = 4.5Gi.
	//     limits-only 1500, 2Gi. with-overhead 1000+250, 1Gi+256Mi. done: 0.
	//     cpu 40000-2000-3500-1500-1250 = 31750 -> 31 vcores;
	//     memory 100Gi-2Gi-4.5Gi-2Gi-1.25Gi = 90.25Gi = 92416 MiB.
	// n2: 20000-2000-3000 = 15000 -> 15; 50Gi-2Gi-3Gi = 45Gi = 46080 MiB.
	// n3: reset -> 0 (and drained in YARN). n4: no running NodeManager.
	// sc-k: 46 vcores, 138496 MiB, 2 nodes.
	truth := map[string]capacity.Resources{ids[0]: {VCores: 31, MemoryMB: 92416}, ids[1]: {VCores: 15, MemoryMB: 46080}, ids[2]: {}}
	wantSnap := capacity.Resources{VCores: 46, MemoryMB: 138496}

	src, err := kube.New(func() kube.Config {
		cfg := kube.DefaultConfig()
		cfg.Name = "koord"
		cfg.Kubeconfig = c.WriteKubeconfig(t, c.Users[gpgUser].Token)
		cfg.DefaultSubCluster = "sc-k"
		return cfg
	}())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx, 2) }()
	defer func() { cancel(); <-done }()
	poll(t, "the source's sync", src.HasSynced)
	poll(t, "every pod seen", func() bool { return src.Snapshot()["sc-k"].Usable == wantSnap })
	if got := src.Snapshot()["sc-k"]; got.Usable != wantSnap || got.Nodes != 2 {
		t.Fatalf("published capacity %+v, want %+v on 2 nodes", got, wantSnap)
	}
	counts := src.NodeCounts()
	if counts[kube.NodeContributing] != 1 || counts[kube.NodeContributingAllocatable] != 1 || counts[kube.NodeBatchReset] != 1 || counts[kube.NodeNoNodeManager] != 1 {
		t.Errorf("node statuses %v, want 1 contributing, 1 contributing_allocatable (<= 1.3), 1 batch_reset, 1 no_node_manager", counts)
	}

	// 1. The push: the RM's totalResource per NodeManager equals the truth;
	//    the reset node drains to 0 and its containers keep running.
	before := nodesByID(t, rm)
	clk := clocktesting.NewFakeClock(time.Now())
	pcfg := nmpush.Config{PushConfig: kube.DefaultPushConfig()}
	pcfg.Name, pcfg.User, pcfg.Clock = "koord", "yarn", clk
	pcfg.RMs = nmpush.RMsFunc(func(context.Context) (map[string][]string, error) {
		return map[string][]string{"sc-k": {rm.Addrs().Admin}}, nil
	})
	pcfg.RMNodes = rmNodes(rm)
	pcfg.Registerer = prometheus.NewRegistry()
	pusher, err := nmpush.New(pcfg, src)
	if err != nil {
		t.Fatal(err)
	}
	defer pusher.Close()
	if n := pusher.PushOnce(ctx); n != 3 {
		t.Errorf("pushed %d NodeManagers, want 3 (n4's NodeManager is Pending)", n)
	}
	after := nodesByID(t, rm)
	for id, want := range truth {
		got := after[id].TotalResource
		if got.Memory != want.MemoryMB || int64(got.VCores) != want.VCores {
			t.Errorf("RM totalResource of %s = %d MiB/%d vcores, want %d/%d", id, got.Memory, got.VCores, want.MemoryMB, want.VCores)
		}
	}
	if got := after[ids[3]].TotalResource; got.Memory != 8192 || got.VCores != 8 {
		t.Errorf("n4's NodeManager (pod Pending) was resized: %+v", got)
	}
	drained := after[ids[2]]
	if drained.NumContainers != before[ids[2]].NumContainers || drained.UsedMemoryMB != before[ids[2]].UsedMemoryMB || drained.NumContainers == 0 {
		t.Errorf("the drained node lost containers: before %d (%d MB), after %d (%d MB)",
			before[ids[2]].NumContainers, before[ids[2]].UsedMemoryMB, drained.NumContainers, drained.UsedMemoryMB)
	}

	// 2. The write-back, one round at a time: after each round every Node's
	//    hadoop-yarn entry equals its NodeManager's used resources in the RM.
	wreg := prometheus.NewRegistry()
	wcfg := writeback.Config{Name: "koord", WriteBackConfig: kube.DefaultWriteBackConfig(), RMNodes: rmNodes(rm), Registerer: wreg}
	if wcfg.Nodes, err = kube.NewNodeWriter(c.RESTConfig(c.Users[gpgUser].Token)); err != nil {
		t.Fatal(err)
	}
	w, err := writeback.New(wcfg, src)
	if err != nil {
		t.Fatal(err)
	}
	nodeOf := map[string]string{ids[0]: "n1", ids[1]: "n2", ids[2]: "n3"}
	checkEntries := func(step string, skip string) {
		t.Helper()
		rmn := nodesByID(t, rm)
		for id, node := range nodeOf {
			if node == skip {
				continue
			}
			n, err := admin.Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":%q,"kubernetes.io/batch-memory":%q}}]}`,
				resource.NewQuantity(rmn[id].UsedVirtualCores*1000, resource.DecimalSI).String(),
				resource.NewQuantity(rmn[id].UsedMemoryMB<<20, resource.BinarySI).String())
			got := n.Annotations[kube.AnnotationThirdPartyAllocations]
			if rmn[id].UsedMemoryMB == 0 && got == "" {
				continue // YARN holds nothing there and nothing was written: the same to koord-manager
			}
			if got != want {
				t.Errorf("%s: %s: thirdPartyAllocations\n got %s\nwant %s (RM used %d MB, %d vcores)", step, node, got, want, rmn[id].UsedMemoryMB, rmn[id].UsedVirtualCores)
			}
		}
		if n4, _ := admin.Nodes().Get(ctx, "n4", metav1.GetOptions{}); n4.Annotations[kube.AnnotationThirdPartyAllocations] != "" {
			t.Errorf("%s: n4 (no running NodeManager, nothing written before) got an entry", step)
		}
	}
	if n := w.WriteOnce(ctx); n != 3 {
		t.Errorf("first round patched %d Nodes, want 3", n)
	}
	checkEntries("containers running", "")

	// Containers start: a third application.
	apps = append(apps, submitApps(t, rm, 1)...)
	poll(t, "the new containers", func() bool { return usedTotal(t, rm) == 9*1024 })
	w.WriteOnce(ctx)
	checkEntries("containers started", "")
	// Containers stop: the first application is killed.
	killApp(t, rm, apps[0])
	poll(t, "the killed containers gone", func() bool { return usedTotal(t, rm) == 6*1024 })
	w.WriteOnce(ctx)
	checkEntries("containers stopped", "")

	// 3. A second writer of thirdPartyAllocations (koord-yarn-operator,
	//    still running during a migration) writes n2: detected, and n2 is
	//    left alone from then on; the other Nodes are still written.
	operator := `{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"7k","kubernetes.io/batch-memory":"7Gi"}}]}`
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kube.AnnotationThirdPartyAllocations: operator}}})
	if _, err := admin.Nodes().Patch(ctx, "n2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the source to see the operator's write", func() bool {
		for _, a := range src.Allocations() {
			if a.Node == "n2" {
				return a.ThirdParty == operator
			}
		}
		return false
	})
	submitApps(t, rm, 1)
	poll(t, "the new containers", func() bool { return usedTotal(t, rm) == 9*1024 })
	for range 3 {
		w.WriteOnce(ctx)
	}
	if n2, _ := admin.Nodes().Get(ctx, "n2", metav1.GetOptions{}); n2.Annotations[kube.AnnotationThirdPartyAllocations] != operator {
		t.Errorf("the GPG overwrote the other writer's entry: %s", n2.Annotations[kube.AnnotationThirdPartyAllocations])
	}
	if f := w.Status().ForeignNodes; len(f) != 1 || f["n2"] == "" {
		t.Errorf("Status().ForeignNodes = %v, want n2", f)
	}
	if v := gatherValue(t, wreg, kube.ForeignWritersMetric); v != 1 {
		t.Errorf("%s = %v, want 1", kube.ForeignWritersMetric, v)
	}
	checkEntries("with a second writer on n2", "n2")

	// The migration's last step: the other writer is stopped and its entry
	// removed; the next round takes n2 over.
	remove, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{kube.AnnotationThirdPartyAllocations: nil}}})
	if _, err := admin.Nodes().Patch(ctx, "n2", types.MergePatchType, remove, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the source to see the removal", func() bool {
		for _, a := range src.Allocations() {
			if a.Node == "n2" {
				return !a.ThirdPartyPresent
			}
		}
		return false
	})
	w.WriteOnce(ctx)
	checkEntries("after the other writer's entry was removed", "")
	if f := w.Status().ForeignNodes; len(f) != 0 {
		t.Errorf("Status().ForeignNodes = %v after the removal, want none", f)
	}

	// 4. A second writer of n1's size in the RM (the operator's
	//    updateNodeResource with the origin batch): after one repair, left
	//    alone.
	rmAdmin, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Admin}, Protocol: hadoopipc.ProtocolRMAdmin, User: "yarn"})
	if err != nil {
		t.Fatal(err)
	}
	defer rmAdmin.Close()
	operatorPush := func() {
		t.Helper()
		host, port := splitID(t, ids[0])
		if err := rmAdmin.Call(ctx, "updateNodeResource", &yarnpb.UpdateNodeResourceRequestProto{NodeResourceMap: []*yarnpb.NodeResourceMapProto{{
			NodeId:         &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)},
			ResourceOption: &yarnpb.ResourceOptionProto{Resource: &yarnpb.ResourceProto{Memory: proto.Int64(107375), VirtualCores: proto.Int32(40)}},
		}}}, &yarnpb.UpdateNodeResourceResponseProto{}); err != nil {
			t.Fatal(err)
		}
	}
	operatorPush()
	clk.Step(pcfg.Interval.D())
	pusher.PushOnce(ctx) // taken for a restart: repaired
	if got := nodesByID(t, rm)[ids[0]].TotalResource; got.Memory != 92416 {
		t.Fatalf("after the first difference n1 = %+v, want repaired to 92416", got)
	}
	operatorPush()
	clk.Step(pcfg.Interval.D())
	pusher.PushOnce(ctx) // again: another writer
	for range 3 {
		clk.Step(pcfg.MaxAge.D())
		pusher.PushOnce(ctx)
	}
	if got := nodesByID(t, rm)[ids[0]].TotalResource; got.Memory != 107375 || got.VCores != 40 {
		t.Errorf("the GPG fought the other writer over n1's size: %+v", got)
	}
	if f := pusher.ForeignNodeManagers(); len(f) != 1 || f[ids[0]] == "" {
		t.Errorf("ForeignNodeManagers = %v, want %s", f, ids[0])
	}

	// 5. RBAC: the reader role alone cannot patch Nodes; the write-back
	//    needs rbac-writeback.yaml.
	reader, err := corev1client.NewForConfig(c.RESTConfig(c.Users[readerOnly].Token))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Nodes().Patch(ctx, "n1", types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("patch as the reader: %v, want Forbidden", err)
	}
	gpgClient, err := corev1client.NewForConfig(c.RESTConfig(c.Users[gpgUser].Token))
	if err != nil {
		t.Fatal(err)
	}
	if err := gpgClient.Pods("spark").Delete(ctx, "exec-1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete a pod as the GPG: %v, want Forbidden", err)
	}
}

// submitApps submits n managed applications (AM 1 vcore / 1024 MB, then
// the simulated AM's containers) and waits for them to run.
func submitApps(t *testing.T, rm *simrm.RM, n int) []*yarnpb.ApplicationIdProto {
	t.Helper()
	ctx := context.Background()
	acp := clientProtocol(t, rm)
	var out []*yarnpb.ApplicationIdProto
	for range n {
		var na yarnpb.GetNewApplicationResponseProto
		if err := acp.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &na); err != nil {
			t.Fatal(err)
		}
		sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: na.ApplicationId, ApplicationType: proto.String("SPARK"),
			AmContainerResourceRequest: []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"),
				Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}},
		}}
		if err := acp.Call(ctx, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		out = append(out, na.ApplicationId)
	}
	return out
}

func clientProtocol(t *testing.T, rm *simrm.RM) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func killApp(t *testing.T, rm *simrm.RM, id *yarnpb.ApplicationIdProto) {
	t.Helper()
	if err := clientProtocol(t, rm).Call(context.Background(), "forceKillApplication",
		&yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
}

// usedTotal is the memory YARN has allocated over every NodeManager.
func usedTotal(t *testing.T, rm *simrm.RM) int64 {
	t.Helper()
	var sum int64
	for _, n := range nodesByID(t, rm) {
		sum += n.UsedMemoryMB
	}
	return sum
}

func splitID(t *testing.T, id string) (string, int32) {
	t.Helper()
	var host string
	var port int32
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == ':' {
			host = id[:i]
			if _, err := fmt.Sscan(id[i+1:], &port); err != nil {
				t.Fatal(err)
			}
			return host, port
		}
	}
	t.Fatalf("node id %q", id)
	return "", 0
}

// gatherValue sums a gauge family's values in reg.
func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetGauge().GetValue()
			}
		}
	}
	return v
}
