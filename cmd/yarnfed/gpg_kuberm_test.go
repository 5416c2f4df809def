package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestGPGWeightsKubermByBatchCapacity puts kuberm (over a real
// kube-apiserver whose Node carries Koordinator's batch resources as
// koord-manager writes them) beside a simrm sub-cluster in one real state
// store, and runs the `yarnfed gpg` command over both, with a Kubernetes
// entry for the same API server and the node-resource push on. It checks
// that
//  1. the GPG weights kuberm by its batch capacity (8 vcores, 16 GiB against
//     SC-1's 16 vcores, 16 GiB: shares 1/3 and 1/2, so 0.4 and 0.6);
//  2. Koordinator doubling the node's batch moves the weight to 0.6;
//  3. a pod kuberm created (an application's AM, bound and Running) is
//     kuberm's allocation and nothing else: total unchanged, 2 GiB and 1
//     vcore allocated, the weight the hand-computed 0.5818 (subtracted from
//     the total as well, it would be 0.5621);
//  4. the push ran its rounds but never called kuberm's admin service (the
//     pusher sizes only nodes that run NodeManager pods), and the GPG
//     publishes no Kubernetes capacity for kuberm.
func TestGPGWeightsKubermByBatchCapacity(t *testing.T) {
	kc := kubetest.Start(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, fedOptions{SubClusters: []fedSubCluster{{"SC-1", 2}}, LongRunning: true})
	k := newKoordCluster(t, kc) // namespaces "yarn" (kuberm's) and "spark"
	k.node("koord-1", "8000", "16Gi")

	rm := startTestKuberm(ctx, cancel, t, f, kc)
	// SC-1's RM: 2 NodeManagers of 8 GiB and 8 vcores, nothing running.
	if c := storedCapability(t, f.SC, "SC-1"); c.AvailableMB != 16384 || c.AvailableVCores != 16 {
		t.Fatalf("SC-1 capability %+v, want 16384 MiB and 16 vcores available", c)
	}

	// The GPG: rounds every 200 ms, every change written (threshold 0.001,
	// max_step 1), pending applications not damping (kuberm's AM waits in
	// ACCEPTED), and a Kubernetes entry for kuberm's own API server with the
	// node-resource push on. Its default_sub_cluster names no registered
	// sub-cluster: no NodeManager runs there.
	cfgFile := filepath.Join(t.TempDir(), "gpg.json")
	kubeconfig := kc.WriteKubeconfig(t, kc.AdminToken)
	if err := os.WriteFile(cfgFile, []byte(`{"interval":"200ms","generator":{"threshold":0.001,"max_step":1,"pending_scale":1e9,
		"queue_inputs":{"enabled":false}},"kubernetes":[{"name":"k8s-test","kubeconfig":"`+kubeconfig+`","default_sub_cluster":"SC-nm",
		"node_resource_push":{"enabled":true,"user":"yarn","interval":"200ms"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	gpgWeb := startGPGCmd(t, ctx, f.Store, cfgFile, "gpg-kuberm").web
	target := func(kube float64) map[string]float64 { return map[string]float64{"SC-kube": kube, "SC-1": 1 - kube} }

	// 1. kuberm: 8 vcores, 16384 MiB; shares min(16384/32768, 8/24) = 1/3
	// and min(16384/32768, 16/24) = 1/2.
	waitStoredWeights(t, f.SC, func(w map[string]float64) bool { return nearWeights(w, target(0.4), 1e-3) })

	// 2. koord-manager doubles the node's batch (origin annotation and
	// allocatable, as it writes them): 16 vcores, 32768 MiB; shares
	// min(2/3, 1/2) and min(1/3, 1/2).
	setNodeBatch(t, k, "koord-1", "16000", "32Gi")
	waitStoredWeights(t, f.SC, func(w map[string]float64) bool { return nearWeights(w, target(0.6), 1e-3) })

	// 3. An application submitted to kuberm: its AM pod (2 GiB, 1 vcore of
	// batch) is bound to the node and Running, as kube-scheduler and the
	// kubelet (this API server has neither) would make it.
	yc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = yc.Close() })
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := yc.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		t.Fatal(err)
	}
	sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.ApplicationId, ApplicationName: proto.String("am"), Queue: proto.String("default"),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep", "3600"}},
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)}}}
	if err := yc.Call(ctx, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	id := yarnid.AppFromPB(na.ApplicationId).String()
	pods, err := k.c.Pods("yarn").List(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelApplication + "=" + id})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("AM pods: %d (%v), want 1", len(pods.Items), err)
	}
	am := pods.Items[0].Name
	if err := k.c.Pods("yarn").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: am, Namespace: "yarn"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "koord-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := k.c.Pods("yarn").Get(ctx, am, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	if _, err := k.c.Pods("yarn").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kuberm's heartbeat: the AM pod is allocation, the total unchanged.
	storetest.Poll(t, 30*time.Second, func() bool {
		c := storedCapability(t, f.SC, "SC-kube")
		return c.AllocatedMB == 2048 && c.AllocatedVCores == 1
	})
	if c := storedCapability(t, f.SC, "SC-kube"); c.TotalMB != 32768 || c.TotalVCores != 16 || c.AvailableMB != 30720 || c.AvailableVCores != 15 {
		t.Fatalf("kuberm capability %+v, want total 32768 MiB/16 vcores, available 30720/15", c)
	}
	// Shares min(30720/47104, 15/31) and min(16384/47104, 16/31).
	kubeShare, sc1Share := 15.0/31, 16384.0/47104
	waitStoredWeights(t, f.SC, func(w map[string]float64) bool {
		return nearWeights(w, target(kubeShare/(kubeShare+sc1Share)), 1e-3)
	})

	// 4. The push ran, and never toward kuberm; nor is a Kubernetes figure
	// published for it (its capability is already the batch rule).
	storetest.Poll(t, 30*time.Second, func() bool {
		return promValue(t, gpgWeb, `yarnfed_gpg_kube_node_resource_push_rounds_total{kubernetes_cluster="k8s-test",result="pushed"}`) >= 3
	})
	if lines := grepLines(getText(t, "http://"+gpgWeb+"/prom"), "node_resource"); strings.Contains(lines, `sub_cluster="SC-kube"`) {
		t.Fatalf("the GPG pushed node resources to kuberm:\n%s", lines)
	}
	info, err := f.SC.GetSubCluster(ctx, "SC-kube")
	if err != nil {
		t.Fatal(err)
	}
	if info.GetPublishedCapacity() != nil {
		t.Fatalf("the GPG published %v for kuberm", info.GetPublishedCapacity())
	}
}

// storedCapability reads a sub-cluster's capability from the store as the
// GPG and the routers parse it (zero, logged, if it does not parse).
func storedCapability(t *testing.T, sc *client.Client, id string) policies.Capability {
	t.Helper()
	info, err := sc.GetSubCluster(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	c, err := policies.ParseCapability([]byte(info.GetCapability()))
	if err != nil {
		t.Logf("%s's capability does not parse: %v (%s)", id, err, info.GetCapability())
	}
	return c
}

// setNodeBatch changes a node's Koordinator batch as koord-manager does on
// a new NodeMetric: the origin annotation and the batch allocatable.
func setNodeBatch(t *testing.T, k *koordCluster, name, cpu, mem string) {
	t.Helper()
	ctx := context.Background()
	n, err := k.c.Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations[kube.AnnotationOriginBatch] = `{"resources":{"kubernetes.io/batch-cpu":"` + cpu + `","kubernetes.io/batch-memory":"` + mem + `"}}`
	if n, err = k.c.Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []corev1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
		l[kube.BatchCPU], l[kube.BatchMemory] = resource.MustParse(cpu), resource.MustParse(mem)
	}
	if _, err := k.c.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
