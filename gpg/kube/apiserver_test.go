package kube

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/kubetest"
)

// realCluster drives a real kube-apiserver as Koordinator, the scheduler and
// the kubelet would: objects are created, then their status is written
// through the status subresource.
type realCluster struct {
	t     *testing.T
	admin corev1client.CoreV1Interface
}

func (r *realCluster) node(n *corev1.Node) {
	r.t.Helper()
	ctx := context.Background()
	status := n.Status
	created, err := r.admin.Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		r.t.Fatalf("create node %s: %v", n.Name, err)
	}
	created.Status = status
	if _, err := r.admin.Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		r.t.Fatalf("node %s status: %v", n.Name, err)
	}
}

func (r *realCluster) pod(p *corev1.Pod) {
	r.t.Helper()
	ctx := context.Background()
	ph := p.Status.Phase
	p.Status = corev1.PodStatus{}
	created, err := r.admin.Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		r.t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	created.Status.Phase = ph
	if _, err := r.admin.Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		r.t.Fatalf("pod %s/%s status: %v", p.Namespace, p.Name, err)
	}
}

// grantReadOnly creates rbac.yaml's ClusterRole and binds it, and nothing
// else, to user.
func grantReadOnly(t *testing.T, c *kubetest.Cluster, user string) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile("rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&role); err != nil {
		t.Fatalf("rbac.yaml: %v", err)
	}
	rc, err := rbacv1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := rc.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding: %v", err)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestRealAPIServer: a real kube-apiserver and etcd, Koordinator-shaped
// Nodes, NodeManager and batch pods; the Source, running with a token bound
// only to rbac.yaml's role, reports exactly the hand-computed capacity and
// follows a change of one pod's request.
func TestRealAPIServer(t *testing.T) {
	const gpgUser = "yarnfed-gpg"
	c := kubetest.Start(t, kubetest.Options{Users: []kubetest.User{{Name: gpgUser}, {Name: "unbound"}}})
	ctx := context.Background()
	admin, err := corev1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	grantReadOnly(t, c, gpgUser)
	for _, ns := range []string{"yarn", "spark"} {
		if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	fresh := ready(corev1.ConditionTrue, now)
	r := &realCluster{t: t, admin: admin}

	// n1: REFERENCE's node; sub-cluster sc-a by default.
	r.node(mkNode("n1", refOrigin, fresh))
	// yarn-copilot's chart: the NM daemon and an hdfs-dn sidecar container,
	// 1k/1Gi each, taken from the batch pool.
	r.pod(mkPod("yarn", "nm-n1", "n1", "1k", "1Gi", nodeManager(""), container("1k", "1Gi")))
	r.pod(mkPod("spark", "a", "n1", "2000", "4Gi"))
	r.pod(mkPod("spark", "b", "n1", "1500", "1Gi"))
	r.pod(mkPod("spark", "done", "n1", "9000", "9Gi", phase(corev1.PodSucceeded)))
	// n2: origin in Koordinator's canonical form ("12k"); sc-b; a pod with a
	// sidecar, an init container and a main container; a request the API
	// server canonicalises ("3000" reads back as "3k").
	r.node(mkNode("n2", EncodeOriginBatch(Batch{MilliCPU: 12000, Memory: 64 << 30}), fresh))
	r.pod(mkPod("yarn", "nm-n2", "n2", "", "", nodeManager("sc-b")))
	r.pod(mkPod("spark", "side", "n2", "1000", "1Gi", initContainer("500", "512Mi", true), initContainer("3000", "1Gi", false)))
	r.pod(mkPod("spark", "pending", "n2", "2000", "2Gi", phase(corev1.PodPending)))
	// n3: batch capacity but no NodeManager.
	r.node(mkNode("n3", origin("8000", "8Gi"), fresh))
	r.pod(mkPod("spark", "c", "n3", "1000", "1Gi"))
	// n4: Koordinator reset the batch resources (stale NodeMetric).
	r.node(mkNode("n4", origin("8000", "8Gi"), fresh, allocatable(corev1.ResourceList{corev1.ResourceCPU: mustQ("8")})))
	r.pod(mkPod("yarn", "nm-n4", "n4", "", "", nodeManager("sc-b")))
	// n5: NotReady.
	r.node(mkNode("n5", origin("8000", "8Gi"), ready(corev1.ConditionFalse, now)))
	r.pod(mkPod("yarn", "nm-n5", "n5", "", "", nodeManager("")))

	// Hand-computed:
	// n1: cpu 60646-2000(NM pod)-2000-1500 = 55146 -> 55; memory
	//     245976973438-2*2^30(NM pod)-5*2^30 = 238460780670 -> 227413 MiB
	//     (227413.92).
	// n2: "side" = max(1000+500, 3000+500) = 3500 milli, max(1Gi+512Mi,
	//     1Gi+512Mi) = 1.5Gi; "pending" 2000, 2Gi. cpu 12000-5500 = 6500 -> 6;
	//     memory 64Gi-3.5Gi = 60.5Gi -> 61952 MiB.
	want := map[string]capacity.SubCluster{
		"sc-a": sc("sc-a", 55, 227413, 1),
		"sc-b": sc("sc-b", 6, 61952, 1),
	}

	cfg := DefaultConfig()
	cfg.Name = "real"
	cfg.Kubeconfig = c.WriteKubeconfig(t, c.Users[gpgUser].Token)
	cfg.DefaultSubCluster = "sc-a"
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx, 2) }()
	defer func() {
		cancel()
		<-done
	}()
	testPoll(t, "the source's initial sync", src.HasSynced)
	got := src.Snapshot()
	if !equalSnapshots(got, want) {
		t.Fatalf("snapshot = %v\nwant       %v", usable(got), want)
	}
	for id, s := range got {
		if s.ObservedAt.IsZero() {
			t.Errorf("%s: zero ObservedAt", id)
		}
	}
	counts := src.NodeCounts()
	if counts[NodeContributing] != 2 || counts[NodeNoNodeManager] != 1 || counts[NodeBatchReset] != 1 || counts[NodeNotReady] != 1 {
		t.Errorf("node counts = %v", counts)
	}
	<-src.Changed() // the first sync's signal

	// One pod's request changes. Extended resources cannot be resized in
	// place, so the pod is replaced, as a controller would do it. Asserted:
	// the change is signalled on Changed() and reaches the snapshot (the
	// event happens; its latency is measured in the e2e loop test and
	// written in gpg/DESIGN.md, never asserted here).
	if err := admin.Pods("spark").Delete(ctx, "a", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	r.pod(mkPod("spark", "a", "n1", "6000", "4Gi"))
	want["sc-a"] = sc("sc-a", 51, 227413, 1) // 60646-2000-6000-1500 = 51146
	testPoll(t, "a Changed signal after the pod change", func() bool {
		select {
		case <-src.Changed():
			return true
		default:
			return false
		}
	})
	testPoll(t, "the new capacity", func() bool { return equalSnapshots(src.Snapshot(), want) })

	// Without the role, the source never syncs (an empty snapshot, not a
	// wrong one) and says why.
	reg := prometheus.NewRegistry()
	denied := DefaultConfig()
	denied.Name = "denied"
	denied.Kubeconfig = c.WriteKubeconfig(t, c.Users["unbound"].Token)
	denied.DefaultSubCluster = "sc-a"
	denied.Registerer = reg
	dsrc, err := New(denied)
	if err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithCancel(ctx)
	ddone := make(chan error, 1)
	go func() { ddone <- dsrc.Run(dctx, 1) }()
	testPoll(t, "forbidden lists to be counted", func() bool {
		return counterValue(t, dsrc.m.watchErrors.WithLabelValues("nodes")) > 0 &&
			counterValue(t, dsrc.m.watchErrors.WithLabelValues("pods")) > 0
	})
	if dsrc.HasSynced() || len(dsrc.Snapshot()) != 0 {
		t.Errorf("a source without RBAC synced or reported: %v", dsrc.Snapshot())
	}
	dcancel()
	<-ddone

	// The GPG's identity can read nodes and pods and do nothing else.
	gpg, err := corev1client.NewForConfig(c.RESTConfig(c.Users[gpgUser].Token))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpg.Secrets("yarn").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets as the GPG: %v, want Forbidden", err)
	}
	n1, err := gpg.Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node as the GPG: %v", err)
	}
	if _, err := gpg.Nodes().Update(ctx, n1, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("update node as the GPG: %v, want Forbidden", err)
	}
	if err := gpg.Pods("spark").Delete(ctx, "b", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete pod as the GPG: %v, want Forbidden", err)
	}
}
