package main

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestKubermThroughRouter wires what `yarnfed kuberm` wires, in process,
// beside a simrm sub-cluster: kuberm over a real kube-apiserver registers
// and heartbeats in a real state store, the store's policy sends every
// application to it, and a YARN client's submit through the router becomes
// an AM pod requesting batch resources; the report and the kill go
// through the router too.
func TestKubermThroughRouter(t *testing.T) {
	f := startFederation(t, fedOptions{SubClusters: []fedSubCluster{{ID: "SC-1"}}, LongRunning: true})
	kc := kubetest.Start(t, kubetest.Options{})
	admin, err := corev1client.NewForConfig(kc.RESTConfig(kc.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "yarn"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := admin.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "koord-1",
		Annotations: map[string]string{kubebatch.AnnotationOriginBatch: kubebatch.EncodeOriginBatch(kubebatch.Batch{MilliCPU: 8000, Memory: 16 << 30})}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc := corev1.ResourceList{kubebatch.BatchCPU: resource.MustParse("8000"), kubebatch.BatchMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status = corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
	if _, err := admin.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	startTestKuberm(ctx, cancel, t, f, kc)
	if err := f.SC.SetPolicy(ctx, &storepb.PolicyConfiguration{Queue: "*",
		Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0"},{"key":{"id":"SC-kube"},"value":"1"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-kube"},"value":"1"}]},"headroomAlpha":"1.0"}`)}); err != nil {
		t.Fatal(err)
	}
	yc := appClient(t, f.startRouter(t, nil, nil), "bob")
	call := func(m string, req, resp proto.Message) error {
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		return yc.Call(cctx, m, req, resp)
	}
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := call("getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		t.Fatal(err)
	}
	id := yarnid.AppFromPB(na.ApplicationId)
	sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.ApplicationId, ApplicationName: proto.String("via-router"), Queue: proto.String("default"),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep", "3600"}},
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(1)}}}
	if err := call("submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatalf("submit through the router: %v", err)
	}
	home, err := f.SC.GetApplicationHome(ctx, id.String(), false)
	if err != nil || home.GetHomeSubClusterId() != "SC-kube" {
		t.Fatalf("home %v (%v), want SC-kube", home, err)
	}
	pods, err := admin.Pods("yarn").List(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelApplication + "=" + id.String()})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("AM pods: %d (%v), want 1", len(pods.Items), err)
	}
	p := &pods.Items[0]
	if q := p.Spec.Containers[0].Resources.Requests[kubebatch.BatchMemory]; q.Value() != 2<<30 {
		t.Errorf("AM pod requests %v batch memory, want 2Gi", q.String())
	}
	rep := &yarnpb.GetApplicationReportResponseProto{}
	if err := call("getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.ApplicationId}, rep); err != nil {
		t.Fatal(err)
	}
	if rep.ApplicationReport.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_ACCEPTED || rep.ApplicationReport.GetUser() != "bob" {
		t.Errorf("report through the router %v", rep.ApplicationReport)
	}
	if err := call("forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: na.ApplicationId}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	pods, err = admin.Pods("yarn").List(ctx, metav1.ListOptions{LabelSelector: kuberm.LabelApplication + "=" + id.String()})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods after a kill through the router: %d (%v)", len(pods.Items), err)
	}
}

func TestKubermRoleConfig(t *testing.T) {
	def := kubermRoleDefaults()
	file := `{"subcluster_id":"SC-k","namespace":"yarn","image":"am:1","kubeconfig":"/etc/k.conf","resync_interval":"5s","store_insecure":true}`
	runRoleCases(t, newKubermCmd, []roleCase[kubermRole]{
		{name: "file over defaults", file: file, check: func(t *testing.T, c kubermRole) {
			expect(t, "subcluster_id", c.SubClusterID, "SC-k")
			expect(t, "namespace", c.Namespace, "yarn")
			expect(t, "kubeconfig", c.Kubeconfig, "/etc/k.conf")
			expect(t, "resync_interval", c.ResyncInterval, dur("5s"))
			expect(t, "client_address", c.ClientAddress, def.ClientAddress)
			expect(t, "max_allocation_mb", c.MaxAllocationMB, def.MaxAllocationMB)
		}},
		{name: "flags over file", file: file, args: []string{"--namespace", "batch", "--max-allocation-mb", "16384", "--no-store"},
			check: func(t *testing.T, c kubermRole) {
				expect(t, "namespace", c.Namespace, "batch")
				expect(t, "image (file)", c.Image, "am:1")
				expect(t, "max_allocation_mb", c.MaxAllocationMB, 16384)
				expect(t, "no_store", c.NoStore, true)
			}},
		{name: "image is required", args: []string{"--subcluster-id", "SC-k", "--no-store"}, wantErr: "image: required"},
		{name: "sub-cluster id must be a label value", args: []string{"--subcluster-id", "SC k", "--image", "x", "--no-store"}, wantErr: "label value"},
		{name: "a store transport is required unless --no-store", args: []string{"--subcluster-id", "SC-k", "--image", "x"}, wantErr: "store"},
		{name: "unknown key is named", file: `{"namespac":"x"}`, wantErr: `"namespac"`},
		{name: "the NM face's flags", file: file, args: []string{"--no-store", "--nm-address", "10.0.0.1:8041", "--advertise-nm-address", "10.0.0.1:18041"},
			check: func(t *testing.T, c kubermRole) {
				expect(t, "nm_address", c.NMAddress, "10.0.0.1:8041")
				expect(t, "advertise_nm_address", c.AdvertiseNMAddress, "10.0.0.1:18041")
			}},
		{name: "the advertised NM port is a real port", args: []string{"--subcluster-id", "SC-k", "--image", "x", "--no-store", "--advertise-nm-address", "10.0.0.1:0"},
			wantErr: "advertise_nm_address"},
	})
}

// startTestKuberm runs kuberm in-process as sub-cluster SC-kube of f, on
// the real API server kc (namespace "yarn"), until ctx ends (cancel stops
// it at cleanup), and waits until the store lists both SC-1 and SC-kube.
// It returns kuberm, whose Addrs a test dials.
func startTestKuberm(ctx context.Context, cancel context.CancelFunc, t *testing.T, f *testFederation, kc *kubetest.Cluster) *kuberm.RM {
	t.Helper()
	cfg := kuberm.DefaultConfig()
	cfg.SubClusterID, cfg.Namespace, cfg.Image = "SC-kube", "yarn", "registry.example/am:1"
	cfg.ClientAddress, cfg.SchedulerAddress, cfg.AdminAddress, cfg.WebAddress, cfg.NMAddress = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.ClusterTimestamp = 1_800_000_000_000
	cfg.REST = kc.RESTConfig(kc.AdminToken)
	cfg.Store = kuberm.NewClientStore(f.Store.Client())
	cfg.HeartbeatInterval, cfg.ResyncInterval = config.Duration(100*time.Millisecond), config.Duration(100*time.Millisecond)
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rm, err := kuberm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rm.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = rm.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; rm.Close() })
	storetest.Poll(t, 30*time.Second, func() bool {
		l, err := f.SC.ListSubClusters(ctx, true)
		return err == nil && len(l) == 2
	})
	return rm
}
