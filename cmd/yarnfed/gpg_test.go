package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestGPGWithRealStore wires what `yarnfed gpg`, `yarnfed router` and
// `yarnfed subcluster-agent` wire, in process, over a 3-replica Raft store:
// two GPGs run and only the lease holder acts (weights from the capacity a
// fake Kubernetes source reports, published capacity, a failed
// submission's home cleaned); the holder stops and the standby takes
// over; with every GPG down the router still routes.
func TestGPGWithRealStore(t *testing.T) {
	f := startFederation(t, fedOptions{Replicas: 3, LongRunning: true})
	cl, sc := f.Store, f.SC
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A failed submission left a home behind (the client got an error).
	if _, _, err := sc.AddApplicationHome(ctx, &storepb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1"}); err != nil {
		t.Fatal(err)
	}

	// Kubernetes says SC-2's nodes can give YARN 1 GB and 1 vcore.
	src := gpgtest.NewFakeSource()
	src.Set(capacity.SubCluster{ID: "SC-2", Usable: capacity.Resources{MemoryMB: 1024, VCores: 1}, Nodes: 2, ObservedAt: time.Now()})
	type running struct {
		g    *gpg.GPG
		stop context.CancelFunc
		done chan struct{}
	}
	start := func(id string) running {
		cfg := gpg.DefaultConfig()
		cfg.ID, cfg.WebAddress, cfg.Store = id, "", cl.Client()
		cfg.Registerer = prometheus.NewRegistry()
		cfg.Interval, cfg.Debounce, cfg.LeaseTTL = gpg.Duration(100*time.Millisecond), gpg.Duration(10*time.Millisecond), gpg.Duration(time.Second)
		cfg.Cleaner.Interval, cfg.Cleaner.Grace, cfg.Cleaner.MinRMUptime = gpg.Duration(200*time.Millisecond), gpg.Duration(2*time.Second), 0
		g, err := gpg.New(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		gctx, gcancel := context.WithCancel(ctx)
		r := running{g: g, stop: gcancel, done: make(chan struct{})}
		go func() { _ = g.Run(gctx); close(r.done) }()
		t.Cleanup(func() { gcancel(); <-r.done })
		return r
	}
	a, b := start("gpg-a"), start("gpg-b")
	storetest.Poll(t, 10*time.Second, func() bool { return a.g.Holding() || b.g.Holding() })
	leader, standby := a, b
	if b.g.Holding() {
		leader, standby = b, a
	}
	for range 10 { // many rounds: never two actors
		if a.g.Holding() && b.g.Holding() {
			t.Fatal("both GPGs hold the lease")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var weights map[string]float32
	storetest.Poll(t, 10*time.Second, func() bool {
		p, err := sc.GetPolicy(ctx, "*")
		if err != nil {
			return false
		}
		info, err := policies.ParseWeightedPolicyInfo(p.GetParams())
		if err != nil {
			return false
		}
		weights = map[string]float32{}
		for _, w := range info.RouterWeights {
			weights[string(w.ID)] = w.Value
		}
		return weights["SC-1"] > 0.9
	})
	storetest.Poll(t, 10*time.Second, func() bool {
		info, err := sc.GetSubCluster(ctx, "SC-2")
		return err == nil && info.GetPublishedCapacity().GetMemoryMb() == 1024
	})
	// The failed submission's home is cleaned once past the grace period.
	storetest.Poll(t, 15*time.Second, func() bool {
		_, err := sc.GetApplicationHome(ctx, "application_1_0001", false)
		return err != nil
	})

	// The router routes by the GPG's weights.
	submit := submitter(t, appClient(t, f.startRouter(t, cl.Client(), nil), "bob"), sc, "gpg-it")
	toSC1 := 0
	for range 10 {
		if submit() == "SC-1" {
			toSC1++
		}
	}
	if toSC1 < 7 {
		t.Fatalf("%d of 10 applications went to SC-1 (weight %v)", toSC1, weights["SC-1"])
	}

	// The acting GPG stops; the standby takes over.
	leader.stop()
	<-leader.done
	storetest.Poll(t, 10*time.Second, standby.g.Holding)
	l, err := sc.GetLease(ctx, "gpg")
	if err != nil || l.GetHolder() != standby.g.Status().ID {
		t.Fatalf("lease %v, %v", l, err)
	}

	// Every GPG down: the federation keeps routing.
	standby.stop()
	<-standby.done
	for range 3 {
		submit()
	}
	// Homes of running applications were never cleaned.
	homes, _, err := sc.ListApplicationHomes(ctx, client.ListQuery{})
	if err != nil || len(homes) != 13 {
		t.Fatalf("%d homes, want 13: %v", len(homes), err)
	}
}

// TestGPGKubeSectionFailsStart: a Kubernetes section is never silently
// ignored: a cluster that cannot be configured stops the role at start-up,
// naming it.
func TestGPGKubeSectionFailsStart(t *testing.T) {
	cfg := gpg.DefaultConfig()
	k := kube.DefaultConfig()
	k.Name, k.DefaultSubCluster, k.Kubeconfig = "k8s-east", "SC-K8S", filepath.Join(t.TempDir(), "missing.kubeconfig")
	cfg.Kubernetes = []kube.Config{k}
	if src, _, wait, err := newCapacitySource(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "k8s-east") {
		t.Fatalf("a kubernetes section with a missing kubeconfig: source %v, err %v", src, err)
	} else {
		wait()
	}
}

// TestGPGKubernetesLogging: the role's logger receives both the Kubernetes
// source's own messages (tagged with the cluster's name) and client-go's
// klog output, tagged component=client-go. The API server is unreachable:
// the source never reports a figure.
func TestGPGKubernetesLogging(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: connection refused at once.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := gpg.DefaultConfig()
	k := kube.DefaultConfig()
	k.Name, k.DefaultSubCluster, k.Kubeconfig = "unreachable", "SC-K8S", kubeconfig
	cfg.Kubernetes = []kube.Config{k}
	cfg.Registerer = prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	src, _, wait, err := newCapacitySource(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); wait() }()
	storetest.Poll(t, 30*time.Second, func() bool {
		return strings.Contains(logs.String(), "waiting for the node and pod caches") && strings.Contains(logs.String(), "kubernetes_cluster=unreachable")
	})
	if len(src.Snapshot()) != 0 {
		t.Errorf("a source that never listed reported %v", src.Snapshot())
	}
	klog.InfoS("klog probe", "x", 1)
	klog.Flush()
	if !strings.Contains(logs.String(), "component=client-go") || !strings.Contains(logs.String(), "klog probe") {
		t.Errorf("klog output not routed to the role's logger:\n%s", logs.String())
	}
}
