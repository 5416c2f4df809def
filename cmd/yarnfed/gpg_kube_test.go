package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestGPGKubernetesEndToEnd is the end-to-end claim with every part
// real: a kube-apiserver (kubetest) holding Koordinator-shaped Nodes,
// NodeManager pods and batch pods; a 3-replica Raft store; two simrm
// sub-clusters registered by their agents, one of them (SC-K8S) the
// co-location sub-cluster; the `yarnfed gpg` command itself, configured by a
// file with a "kubernetes" entry (interval 1 h, so only events drive
// rounds); and a router. It checks that
//  1. the capacity published in the store equals the hand-computed truth and
//     the stored weights are the capacity policy's target for it (the
//     role's /gpg/v1/status agrees; its /prom has the source's metrics);
//  2. replacing one batch pod with a larger request moves the published
//     capacity and the weights (the latency is logged, not asserted);
//  3. with no usable batch capacity left, SC-K8S's weight drains to 0 and the
//     router sends it no application;
//  4. given capacity again, the router sends it applications.
func TestGPGKubernetesEndToEnd(t *testing.T) {
	kc := kubetest.Start(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k := newKoordCluster(t, kc)
	admin := k.c
	// k1 and k2 run SC-K8S's NodeManagers (k1's names it, k2's relies on
	// default_sub_cluster); k3 has batch capacity but no NodeManager.
	k.node("k1", "16000", "32Gi")
	k.pod("yarn", "nm-k1", "k1", "", "", "SC-K8S") // (a NodeManager pod's own request is subtracted too: gpg/kube tests)
	k.pod("spark", "a", "k1", "2000", "4Gi", "")
	k.pod("spark", "b", "k1", "1000", "2Gi", "")
	k.node("k2", "8000", "16Gi")
	k.pod("yarn", "nm-k2", "k2", "", "", "-")
	k.pod("spark", "c", "k2", "500", "1Gi", "")
	k.node("k3", "32000", "64Gi")
	k.pod("spark", "d", "k3", "1000", "1Gi", "")
	// Hand-computed: k1 16000-2000-1000 = 13000 milli -> 13 vcores,
	// 32Gi-4Gi-2Gi = 26Gi -> 26624 MiB; k2 8000-500 -> 7 vcores,
	// 16Gi-1Gi = 15Gi -> 15360 MiB. SC-K8S: 20 vcores, 41984 MiB, 2 nodes.
	truth := capacity.SubCluster{ID: "SC-K8S", Usable: capacity.Resources{MemoryMB: 41984, VCores: 20}, Nodes: 2}

	// Two sub-clusters: SC-1 with 2 NodeManagers (16 GiB, 16 vcores),
	// SC-K8S with 8 (64 GiB, 64 vcores: the NodeManagers' configured size,
	// which Kubernetes batch capacity narrows).
	f := startFederation(t, fedOptions{Replicas: 3, SubClusters: []fedSubCluster{{"SC-1", 2}, {"SC-K8S", 8}}, Probe: 200 * time.Millisecond})
	cl, sc := f.Store, f.SC
	// Registered is not enough: the capacities must be in the store too.
	storetest.Poll(t, 30*time.Second, func() bool {
		l, err := sc.ListSubClusters(ctx, true)
		if err != nil || len(l) != 2 {
			return false
		}
		for _, s := range l {
			c, err := policies.ParseCapability([]byte(s.GetCapability()))
			if err != nil || c.TotalMB == 0 {
				return false
			}
		}
		return true
	})

	// The GPG: the `yarnfed gpg` command itself, in process, with a config
	// file naming the Kubernetes cluster (the kubeconfig an operator would
	// hand it) and a one-hour interval, so only events drive rounds.
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "gpg.json")
	kubeconfig := kc.WriteKubeconfig(t, kc.AdminToken)
	if err := os.WriteFile(cfgFile, []byte(`{"interval":"1h","kubernetes":[
		{"name":"k8s-test","kubeconfig":"`+kubeconfig+`","default_sub_cluster":"SC-K8S"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	webAddr := startGPGCmd(t, ctx, cl, cfgFile, "gpg-k8s").web

	// 1. Published capacity = truth; weights = the capacity policy's target:
	// each sub-cluster's share of the headroom in its scarcer resource.
	// SC-K8S: min(41984 MiB, 20 vcores) against SC-1's 16384 MiB, 16 vcores
	// (no application runs yet): shares min(41984/58368, 20/36) = 20/36 and
	// min(16384/58368, 16/36) = 16384/58368, normalized. (Should a round run
	// before the source's first sync, it weights by the RMs alone, 0.8/0.2,
	// and the next one moves the rest of the way: within max_step.)
	waitPublished(t, sc, truth)
	want := targetOf(20.0/36, 16384.0/58368)
	waitStoredWeights(t, sc, func(w map[string]float64) bool { return nearWeights(w, want, 1e-4) })
	var status gpg.Status
	getJSON(t, "http://"+webAddr+"/gpg/v1/status", &status)
	if !status.Holding || !nearWeights(status.Target, want, 1e-9) {
		t.Fatalf("status %+v, want holding and target %v", status, want)
	}
	// The Kubernetes source's metrics are on the role's registry.
	prom := getText(t, "http://"+webAddr+"/prom")
	for _, m := range []string{`yarnfed_gpg_kube_nodes{kubernetes_cluster="k8s-test",status="contributing"} 2`,
		`yarnfed_gpg_kube_nodes{kubernetes_cluster="k8s-test",status="no_node_manager"} 1`} {
		if !strings.Contains(prom, m) {
			t.Errorf("/prom lacks %s", m)
		}
	}
	before := storedWeights(t, sc)
	t.Logf("initial: published %+v, weights %v", truth.Usable, before)

	// 2. One batch pod's request grows (delete + recreate, as a controller
	// replaces a pod: extended resources cannot be resized in place).
	// k1: 16000-14000-1000 -> 1 vcore, 32Gi-28Gi-2Gi -> 2048 MiB; SC-K8S
	// 8 vcores, 17408 MiB. Target: min(17408/33792, 8/24) = 1/3 against
	// min(16384/33792, 16/24) = 16384/33792.
	changed := time.Now()
	k.replacePod("spark", "a", "k1", "14000", "28Gi")
	truth.Usable = capacity.Resources{MemoryMB: 17408, VCores: 8}
	waitPublished(t, sc, truth)
	published := time.Since(changed)
	waitStoredWeights(t, sc, func(w map[string]float64) bool { return math.Abs(w["SC-K8S"]-before["SC-K8S"]) > 1e-4 })
	moved := time.Since(changed)
	want = targetOf(1.0/3, 16384.0/33792)
	waitStoredWeights(t, sc, func(w map[string]float64) bool { return nearWeights(w, want, 1e-4) })
	settled := time.Since(changed)
	// Informational (no timing assertion; the bound is 60 s).
	t.Logf("pod replaced -> published capacity in the store %v, first weight change %v, weights at the new target %v (max_step glide)",
		published.Round(time.Millisecond), moved.Round(time.Millisecond), settled.Round(time.Millisecond))

	// The router, reading the same store through its own client.
	rc := cl.Client()
	rt := f.startRouter(t, rc, func(c *router.Config) { c.MembershipRefresh = router.Duration(100 * time.Millisecond) })
	submit := submitter(t, appClient(t, rt, "bob"), sc, "gpg-k8s")

	// 3. No usable batch capacity left on either node: SC-K8S's weight
	// drains to exactly 0 and the router sends it nothing.
	k.replacePod("spark", "a", "k1", "15000", "30Gi") // 16000-15000-1000 = 0, 32-30-2 = 0
	k.replacePod("spark", "c", "k2", "8000", "16Gi")  // 8000-8000 = 0, 16-16 = 0
	truth.Usable = capacity.Resources{}
	waitPublished(t, sc, truth)
	waitStoredWeights(t, rc, func(w map[string]float64) bool { return w["SC-K8S"] == 0 && w["SC-1"] == 1 })
	for i := range 10 {
		if home := submit(); home != "SC-1" {
			t.Fatalf("application %d went to %s with SC-K8S at weight 0", i, home)
		}
	}

	// 4. Batch capacity comes back (the big pods finish): k1 15 vcores,
	// 30720 MiB; k2 8 vcores, 16384 MiB. The weight glides back up; once
	// the router's view gives SC-K8S at least 0.6, most applications go
	// there (30 draws at p >= 0.6: fewer than 8 has probability ~1e-5).
	for _, p := range []string{"a", "c"} {
		if err := admin.Pods("spark").Delete(ctx, p, *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
	}
	truth.Usable = capacity.Resources{MemoryMB: 47104, VCores: 23}
	waitPublished(t, sc, truth)
	waitStoredWeights(t, rc, func(w map[string]float64) bool { return w["SC-K8S"] >= 0.6 })
	toK8S := 0
	for range 30 {
		if submit() == "SC-K8S" {
			toK8S++
		}
	}
	t.Logf("capacity back: %d of 30 applications went to SC-K8S (weights %v)", toK8S, storedWeights(t, rc))
	if toK8S < 8 {
		t.Fatalf("only %d of 30 applications went to SC-K8S", toK8S)
	}
}

// koordCluster writes objects as Koordinator, the scheduler and the kubelet
// would: objects first, then status through the status subresource.
type koordCluster struct {
	t *testing.T
	c corev1client.CoreV1Interface
}

// newKoordCluster connects to kc as its administrator and creates the
// "yarn" (NodeManager pods) and "spark" (batch pods) namespaces.
func newKoordCluster(t *testing.T, kc *kubetest.Cluster) *koordCluster {
	t.Helper()
	admin, err := corev1client.NewForConfig(kc.RESTConfig(kc.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"yarn", "spark"} {
		if _, err := admin.Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &koordCluster{t: t, c: admin}
}

// node creates a Ready node (fresh heartbeat) whose Koordinator batch
// resources are present and whose origin batch capacity is cpu milli-cores
// and mem bytes.
func (k *koordCluster) node(name, cpu, mem string) {
	k.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		kube.AnnotationOriginBatch: `{"resources":{"kubernetes.io/batch-cpu":"` + cpu + `","kubernetes.io/batch-memory":"` + mem + `"}}`,
	}}}
	created, err := k.c.Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		k.t.Fatalf("create node %s: %v", name, err)
	}
	created.Status = corev1.NodeStatus{
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			kube.BatchCPU: resource.MustParse(cpu), kube.BatchMemory: resource.MustParse(mem)},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
			kube.BatchCPU: resource.MustParse(cpu), kube.BatchMemory: resource.MustParse(mem)},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if _, err := k.c.Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		k.t.Fatalf("node %s status: %v", name, err)
	}
}

// pod creates a Running pod on node requesting cpu milli-cores and mem
// bytes of batch resources ("" = none). cluster != "" makes it a
// NodeManager: "-" without a cluster-id annotation, else of that
// sub-cluster.
func (k *koordCluster) pod(ns, name, node, cpu, mem, cluster string) {
	k.t.Helper()
	ctx := context.Background()
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if cpu != "" {
		req[kube.BatchCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[kube.BatchMemory] = resource.MustParse(mem)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
	if cluster != "" {
		p.Labels[kube.LabelComponent] = kube.ComponentNodeManager
		p.Annotations[kube.AnnotationNodeID] = node + ":8041"
		if cluster != "-" {
			p.Annotations[kube.AnnotationClusterID] = cluster
		}
	}
	created, err := k.c.Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		k.t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := k.c.Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		k.t.Fatalf("pod %s/%s status: %v", ns, name, err)
	}
}

// replacePod deletes a batch pod and creates it again with new requests.
func (k *koordCluster) replacePod(ns, name, node, cpu, mem string) {
	k.t.Helper()
	if err := k.c.Pods(ns).Delete(context.Background(), name, *metav1.NewDeleteOptions(0)); err != nil {
		k.t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
	k.pod(ns, name, node, cpu, mem, "")
}

// waitPublished polls the store until the sub-cluster's published capacity
// is want.
func waitPublished(t *testing.T, sc *client.Client, want capacity.SubCluster) {
	t.Helper()
	storetest.Poll(t, 60*time.Second, func() bool {
		info, err := sc.GetSubCluster(context.Background(), want.ID)
		p := info.GetPublishedCapacity()
		return err == nil && p != nil && p.GetMemoryMb() == want.Usable.MemoryMB && p.GetVcores() == want.Usable.VCores &&
			p.GetNodes() == int32(want.Nodes)
	})
}

// storedWeights reads the "*" policy's router weights (empty if none).
func storedWeights(t *testing.T, c *client.Client) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	p, err := c.GetPolicy(context.Background(), "*")
	if err != nil {
		return out
	}
	info, err := policies.ParseWeightedPolicyInfo(p.GetParams())
	if err != nil {
		return out
	}
	for _, w := range info.RouterWeights {
		out[string(w.ID)] = float64(w.Value)
	}
	amrm := map[string]float64{}
	for _, w := range info.AMRMWeights {
		amrm[string(w.ID)] = float64(w.Value)
	}
	if !nearWeights(amrm, out, 0) {
		t.Fatalf("router weights %v differ from AMRM weights %v", out, amrm)
	}
	return out
}

func waitStoredWeights(t *testing.T, c *client.Client, cond func(map[string]float64) bool) {
	t.Helper()
	storetest.Poll(t, 60*time.Second, func() bool { return cond(storedWeights(t, c)) })
}

// targetOf normalizes SC-K8S's and SC-1's shares.
func targetOf(k8s, sc1 float64) map[string]float64 {
	return map[string]float64{"SC-K8S": k8s / (k8s + sc1), "SC-1": sc1 / (k8s + sc1)}
}

func nearWeights(got, want map[string]float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok || math.Abs(g-w) > tol+1e-7 {
			return false
		}
	}
	return true
}

func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(getText(t, url)), v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// gpgCmd is a `yarnfed gpg` command running in process.
type gpgCmd struct {
	id, web string // web: the address its web server reported
	stop    func() // idempotent; also run at the test's cleanup
}

// startGPGCmd runs `yarnfed gpg` with cfgFile over the store cl (plaintext),
// its web server on a loopback port, and waits until it reports that port.
// The command must exit cleanly when stopped.
func startGPGCmd(t *testing.T, ctx context.Context, cl *storetest.Cluster, cfgFile, id string) *gpgCmd {
	t.Helper()
	cmd := newGPGCmd()
	var out logtest.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--config", cfgFile, "--store", strings.Join(cl.Addrs(), ","), "--store-insecure", "--web-address", "127.0.0.1:0",
		"--id", id, "--log-level", "warn"})
	gctx, gcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(gctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		gcancel()
		if err := <-done; err != nil {
			t.Errorf("yarnfed gpg %s: %v", id, err)
		}
	}
	t.Cleanup(stop)
	web := regexp.MustCompile(`web (127\.0\.0\.1:\d+)`)
	p := &gpgCmd{id: id, stop: stop}
	storetest.Poll(t, 30*time.Second, func() bool {
		if m := web.FindStringSubmatch(out.String()); m != nil {
			p.web = m[1]
		}
		return p.web != ""
	})
	return p
}
