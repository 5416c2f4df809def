package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
)

// testPoll waits for cond, failing after a generous bound: correctness, not
// speed, is under test.
func testPoll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testpoll.Within(t, 30*time.Second, what, cond)
}

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	src    *Source
}

// fakeCore adapts client-go's fake CoreV1 client to Client, marked (as the
// fake Clientset is) as unable to stream watch-lists.
type fakeCore struct{ c corev1client.CoreV1Interface }

func (fakeCore) IsWatchListSemanticsUnSupported() bool { return true }

func (f fakeCore) ListNodes(ctx context.Context, o metav1.ListOptions) (*corev1.NodeList, error) {
	return f.c.Nodes().List(ctx, o)
}

func (f fakeCore) WatchNodes(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f.c.Nodes().Watch(ctx, o)
}

func (f fakeCore) ListPods(ctx context.Context, o metav1.ListOptions) (*corev1.PodList, error) {
	return f.c.Pods(metav1.NamespaceAll).List(ctx, o)
}

func (f fakeCore) WatchPods(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f.c.Pods(metav1.NamespaceAll).Watch(ctx, o)
}

// newFixture runs a Source over a fake clientset seeded with objs, on a fake
// clock at testNow.
func newFixture(t *testing.T, mutate func(*Config), objs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, mutate, nil, objs...)
}

// newFixtureWith is newFixture with beforeRun called on the Source before
// it runs.
func newFixtureWith(t *testing.T, mutate func(*Config), beforeRun func(*Source), objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{t: t, client: fake.NewClientset(objs...), clock: clocktesting.NewFakeClock(testNow)}
	cfg := DefaultConfig()
	cfg.Name = "test"
	cfg.DefaultSubCluster = "sc-a"
	cfg.Client = fakeCore{f.client.CoreV1()}
	cfg.Clock = f.clock
	if mutate != nil {
		mutate(&cfg)
	}
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	f.src = src
	if beforeRun != nil {
		beforeRun(src)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	testPoll(t, "initial sync", src.HasSynced)
	return f
}

// usable strips ObservedAt so snapshots compare by figures.
func usable(m map[string]capacity.SubCluster) map[string]capacity.SubCluster {
	out := make(map[string]capacity.SubCluster, len(m))
	for k, v := range m {
		v.ObservedAt = time.Time{}
		out[k] = v
	}
	return out
}

func sc(id string, vcores, mb int64, nodes int) capacity.SubCluster {
	return capacity.SubCluster{ID: id, Usable: capacity.Resources{VCores: vcores, MemoryMB: mb}, Nodes: nodes}
}

func (f *fixture) waitSnapshot(want map[string]capacity.SubCluster) {
	f.t.Helper()
	var last map[string]capacity.SubCluster
	testPoll(f.t, fmt.Sprintf("snapshot %v", want), func() bool {
		last = usable(f.src.Snapshot())
		return fmt.Sprint(last) == fmt.Sprint(want)
	})
}

func equalSnapshots(a, b map[string]capacity.SubCluster) bool {
	return fmt.Sprint(usable(a)) == fmt.Sprint(usable(b))
}

func TestSourceFollowsEvents(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(c *Config) { c.SubClusters = []string{"sc-idle"} },
		mkNode("n1", origin("10000", "10Gi")),
		mkNode("n2", origin("20000", "20Gi")),
		mkNode("n3", origin("30000", "30Gi")), // no NodeManager
		mkPod("yarn", "nm1", "n1", "", "", nodeManager("")),
		mkPod("yarn", "nm2", "n2", "", "", nodeManager("sc-b")),
		mkPod("spark", "a", "n1", "2500", "1Gi"),
		mkPod("spark", "b", "n2", "1000", "4Gi"),
		mkPod("spark", "c", "n3", "1000", "4Gi"),
		mkPod("spark", "unbound", "", "1000", "4Gi", phase(corev1.PodPending)),
	)
	want := map[string]capacity.SubCluster{
		"sc-a":    sc("sc-a", 7, 9*1024, 1),   // 10000-2500, 10Gi-1Gi
		"sc-b":    sc("sc-b", 19, 16*1024, 1), // 20000-1000, 20Gi-4Gi
		"sc-idle": sc("sc-idle", 0, 0, 0),
	}
	if got := usable(f.src.Snapshot()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("snapshot after sync = %v, want %v", got, want)
	}
	select {
	case <-f.src.Changed():
	default:
		t.Fatal("no Changed signal after the first sync")
	}

	// A pod's request changes (delete and recreate, as for a real pod).
	if err := f.client.CoreV1().Pods("spark").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.CoreV1().Pods("spark").Create(ctx, mkPod("spark", "a", "n1", "4000", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-a"] = sc("sc-a", 6, 9*1024, 1) // 10000-4000
	f.waitSnapshot(want)
	select {
	case <-f.src.Changed():
	case <-time.After(30 * time.Second):
		t.Fatal("no Changed signal after a pod change")
	}

	// The unbound pod is scheduled onto n2.
	bound := mkPod("spark", "unbound", "n2", "1000", "4Gi")
	if _, err := f.client.CoreV1().Pods("spark").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-b"] = sc("sc-b", 18, 12*1024, 1)
	f.waitSnapshot(want)

	// A pod finishes: its request no longer counts.
	done := mkPod("spark", "b", "n2", "1000", "4Gi", phase(corev1.PodSucceeded))
	if _, err := f.client.CoreV1().Pods("spark").UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-b"] = sc("sc-b", 19, 16*1024, 1)
	f.waitSnapshot(want)

	// Koordinator raises n1's origin.
	n1 := mkNode("n1", origin("16000", "10Gi"))
	if _, err := f.client.CoreV1().Nodes().Update(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-a"] = sc("sc-a", 12, 9*1024, 1)
	f.waitSnapshot(want)

	// The sc-b NodeManager goes away: sc-b stays known, with nothing usable.
	if err := f.client.CoreV1().Pods("yarn").Delete(ctx, "nm2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-b"] = sc("sc-b", 0, 0, 0)
	f.waitSnapshot(want)

	// A NodeManager starts on n3.
	if _, err := f.client.CoreV1().Pods("yarn").Create(ctx, mkPod("yarn", "nm3", "n3", "", "", nodeManager("")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-a"] = sc("sc-a", 12+29, 9*1024+26*1024, 2)
	f.waitSnapshot(want)

	// A node is deleted.
	if err := f.client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want["sc-a"] = sc("sc-a", 29, 26*1024, 1)
	f.waitSnapshot(want)
	if got := f.src.NodeCounts(); got[NodeContributing] != 1 || got[NodeNoNodeManager] != 1 || len(got) != 2 {
		t.Errorf("NodeCounts = %v", got)
	}
}

// A node's entry (facts, pods, result) lives while any of them does: pods
// seen before their Node count once it arrives, and a deleted Node whose
// pods are gone leaves nothing behind (a cluster replacing nodes for months
// must not grow the Source).
func TestNodeEntriesComeAndGo(t *testing.T) {
	ctx := context.Background()
	cs := func(f *fixture) corev1client.CoreV1Interface { return f.client.CoreV1() }
	f := newFixture(t, nil, mkNode("n1", origin("4000", "4Gi")), mkPod("yarn", "nm1", "n1", "", "", nodeManager("")))
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 4, 4096, 1)})
	entries := func() int {
		f.src.mu.Lock()
		defer f.src.mu.Unlock()
		return len(f.src.nodes)
	}
	// Pods before their Node: counted once the Node arrives.
	if _, err := cs(f).Pods("yarn").Create(ctx, mkPod("yarn", "nm2", "n2", "", "", nodeManager("")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs(f).Pods("spark").Create(ctx, mkPod("spark", "a", "n2", "1000", "1Gi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testPoll(t, "n2's pods recorded", func() bool { return entries() == 2 })
	f.src.Recompute() // a Node-less entry gets no result
	if got := f.src.Nodes(); len(got) != 1 {
		t.Fatalf("Nodes() = %v, want n1 only", got)
	}
	if _, err := cs(f).Nodes().Create(ctx, mkNode("n2", origin("4000", "4Gi")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 7, 7168, 2)})
	// n2 goes, then its pods: nothing of it is left; a resync in between
	// drops its result.
	if err := cs(f).Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.src.Recompute()
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 4, 4096, 1)})
	for _, p := range [][2]string{{"yarn", "nm2"}, {"spark", "a"}} {
		if err := cs(f).Pods(p[0]).Delete(ctx, p[1], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testPoll(t, "n2's entry gone", func() bool { return entries() == 1 })
	if got := f.src.Nodes(); len(got) != 1 || len(f.src.Allocations()) != 1 {
		t.Fatalf("Nodes() = %v, Allocations() = %v, want n1 only", got, f.src.Allocations())
	}
}

// The Source reads, and only lists and watches nodes and pods: what the
// read-only ClusterRole grants (the real API server test proves it with RBAC).
func TestSourceOnlyListsAndWatches(t *testing.T) {
	f := newFixture(t, nil, mkNode("n1", origin("1000", "1Gi")), mkPod("yarn", "nm", "n1", "", "", nodeManager("")))
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 1, 1024, 1)})
	seen := map[string]bool{}
	for _, a := range f.client.Actions() {
		key := a.GetVerb() + " " + a.GetResource().Resource
		seen[key] = true
		switch key {
		case "list nodes", "watch nodes", "list pods", "watch pods":
		default:
			t.Errorf("unexpected API action %q", key)
		}
	}
	if !seen["list nodes"] || !seen["watch pods"] {
		t.Errorf("actions %v: expected list and watch of nodes and pods", seen)
	}
}

func TestSnapshotEmptyUntilSynced(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DefaultSubCluster = "sc-a"
	cfg.Client = fakeCore{fake.NewClientset(mkNode("n1", origin("1000", "1Gi"))).CoreV1()}
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	if src.HasSynced() || len(src.Snapshot()) != 0 {
		t.Errorf("before Run: HasSynced %v, Snapshot %v; want false, empty", src.HasSynced(), src.Snapshot())
	}
}

// A node whose Ready condition is not refreshed turns to 0 when the bound
// passes, with no event: the Source schedules a look at the deadline.
func TestStaleNodeDropsToZero(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		c.StaleAfter = Duration(10 * time.Minute)
		c.ResyncPeriod = Duration(24 * time.Hour) // the deadline, not a resync, must do it
	},
		mkNode("n1", origin("4000", "4Gi")),
		mkNode("n2", origin("4000", "4Gi"), ready(corev1.ConditionTrue, testNow.Add(5*time.Minute))),
		mkPod("yarn", "nm1", "n1", "", "", nodeManager("")),
		mkPod("yarn", "nm2", "n2", "", "", nodeManager("")),
	)
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 8, 8192, 2)})
	<-f.src.Changed()
	// Let the workers finish the initial queue so their deadlines are armed.
	testPoll(t, "deadlines armed", func() bool { return f.clock.HasWaiters() })
	f.clock.Step(10 * time.Minute) // n1 turns stale; n2 has 5 minutes left
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 4, 4096, 1)})
	f.clock.Step(5 * time.Minute)
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 0, 0, 0)})
	if got := f.src.NodeCounts()[NodeStale]; got != 2 {
		t.Errorf("stale nodes = %d, want 2", got)
	}
	// The kubelet reports again: n1 is back.
	n1 := mkNode("n1", origin("4000", "4Gi"), ready(corev1.ConditionTrue, f.clock.Now()))
	if _, err := f.client.CoreV1().Nodes().UpdateStatus(context.Background(), n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 4, 4096, 1)})
}

// deadlineRecorder counts the staleness looks queued per node (AddAfter).
type deadlineRecorder struct {
	workqueue.TypedDelayingInterface[string]
	mu    sync.Mutex
	after map[string]int
}

func (r *deadlineRecorder) AddAfter(name string, d time.Duration) {
	r.mu.Lock()
	r.after[name]++
	r.mu.Unlock()
	r.TypedDelayingInterface.AddAfter(name, d)
}

func (r *deadlineRecorder) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.after)
}

// A resync re-queues no staleness look whose deadline did not move (each
// node has one pending from its last computation; at 100,000 nodes
// re-queueing all of them cost more than the recompute), and the looks
// queued before still turn a silent node stale on time.
func TestRecomputeQueuesOnlyMovedDeadlines(t *testing.T) {
	rec := &deadlineRecorder{after: map[string]int{}}
	f := newFixtureWith(t, func(c *Config) {
		c.StaleAfter = Duration(10 * time.Minute)
		c.ResyncPeriod = Duration(24 * time.Hour) // only the Recomputes below
	}, func(s *Source) { rec.TypedDelayingInterface, s.queue = s.queue, rec },
		mkNode("n1", origin("4000", "4Gi")),
		mkNode("n2", origin("4000", "4Gi"), ready(corev1.ConditionTrue, testNow.Add(5*time.Minute))),
		mkPod("yarn", "nm1", "n1", "", "", nodeManager("")),
		mkPod("yarn", "nm2", "n2", "", "", nodeManager("")),
	)
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 8, 8192, 2)})
	// The initial Recompute and the workers' syncs have queued their looks.
	testPoll(t, "initial syncs done", func() bool {
		c := rec.counts()
		return c["n1"] >= 2 && c["n2"] >= 2 && rec.Len() == 0 && f.clock.HasWaiters()
	})
	before := rec.counts()
	for range 3 {
		f.src.Recompute()
	}
	if after := rec.counts(); !maps.Equal(after, before) {
		t.Fatalf("resyncs with no deadline moved queued looks: %v, before %v", after, before)
	}
	f.clock.Step(10 * time.Minute) // n1 turns stale; n2 has 5 minutes left
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 4, 4096, 1)})
	f.clock.Step(5 * time.Minute)
	f.waitSnapshot(map[string]capacity.SubCluster{"sc-a": sc("sc-a", 0, 0, 0)})
}

// Random changes through the API: once the queue drains, the incrementally
// maintained figures equal a from-scratch computation over the same objects,
// and a full Recompute changes nothing.
func TestIncrementalMatchesRecompute(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const nodes = 12
	var objs []runtime.Object
	for i := range nodes {
		objs = append(objs, mkNode(fmt.Sprintf("n%d", i), origin(fmt.Sprint(8000+1000*i), fmt.Sprintf("%dGi", 8+i))))
	}
	f := newFixture(t, nil, objs...)
	cs := f.client.CoreV1()
	// Resyncs run while events are applied (a regression: Recompute read its
	// published results after unlocking, racing the workers).
	stop := make(chan struct{})
	resyncs := make(chan struct{})
	go func() {
		defer close(resyncs)
		for {
			select {
			case <-stop:
				return
			default:
				f.src.Recompute()
			}
		}
	}()
	for step := range 300 {
		node := fmt.Sprintf("n%d", rng.IntN(nodes))
		name := fmt.Sprintf("p%d", rng.IntN(40))
		var err error
		switch rng.IntN(5) {
		case 0, 1: // (re)create a batch pod or NodeManager somewhere
			_ = cs.Pods("x").Delete(ctx, name, metav1.DeleteOptions{})
			var opts []podOpt
			if rng.IntN(4) == 0 {
				opts = append(opts, nodeManager([]string{"", "sc-b", "sc-c"}[rng.IntN(3)]))
			}
			_, err = cs.Pods("x").Create(ctx, mkPod("x", name, node, fmt.Sprint(rng.IntN(3000)), fmt.Sprintf("%dMi", rng.IntN(3000)), opts...), metav1.CreateOptions{})
		case 2:
			err = cs.Pods("x").Delete(ctx, name, metav1.DeleteOptions{})
		case 3: // a phase change
			p, gerr := cs.Pods("x").Get(ctx, name, metav1.GetOptions{})
			if gerr != nil {
				continue
			}
			p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodSucceeded}[rng.IntN(3)]
			_, err = cs.Pods("x").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		case 4: // Koordinator moves a node's origin or resets it
			n := mkNode(node, origin(fmt.Sprint(rng.IntN(20000)), fmt.Sprintf("%dMi", rng.IntN(20000))))
			if rng.IntN(5) == 0 {
				delete(n.Status.Allocatable, BatchCPU)
			}
			_, err = cs.Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) { // deleting a missing pod is fine
			t.Fatalf("step %d: %v", step, err)
		}
	}
	close(stop)
	<-resyncs
	want := truth(t, f)
	var got map[string]capacity.SubCluster
	testPoll(t, "incremental figures to match the objects", func() bool {
		got = f.src.Snapshot()
		return equalSnapshots(got, want)
	})
	f.src.Recompute()
	if again := f.src.Snapshot(); !equalSnapshots(again, got) {
		t.Errorf("Recompute changed the figures:\nincremental %v\nrecomputed  %v", usable(got), usable(again))
	}
}

// truth computes the expected snapshot straight from the API objects.
func truth(t *testing.T, f *fixture) map[string]capacity.SubCluster {
	t.Helper()
	ctx := context.Background()
	nodes, err := f.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rules := f.src.rules
	out := map[string]capacity.SubCluster{}
	for _, id := range append([]string{f.src.cfg.DefaultSubCluster}, f.src.cfg.SubClusters...) {
		out[id] = capacity.SubCluster{ID: id}
	}
	for k, v := range f.src.Snapshot() { // sub-clusters seen before stay, at 0
		out[k] = capacity.SubCluster{ID: v.ID}
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var on []*corev1.Pod
		for j := range pods.Items {
			if pods.Items[j].Spec.NodeName == n.Name {
				on = append(on, &pods.Items[j])
			}
		}
		r := rules.compute(n, on, f.clock.Now())
		if r.Status != NodeContributing {
			continue
		}
		s := out[r.SubCluster]
		s.ID = r.SubCluster
		s.Usable.VCores += r.Usable.VCores
		s.Usable.MemoryMB += r.Usable.MemoryMB
		s.Nodes++
		out[r.SubCluster] = s
	}
	return out
}

func TestConfigFromJSON(t *testing.T) {
	cfg := DefaultConfig()
	in := `{"name":"east","kubeconfig":"/etc/k.conf","context":"c1","default_sub_cluster":"sc-1",
		"sub_clusters":["sc-2"],"resync_period":"1m","stale_after":"20m"}`
	if err := json.Unmarshal([]byte(in), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "east" || cfg.Kubeconfig != "/etc/k.conf" || cfg.Context != "c1" || cfg.DefaultSubCluster != "sc-1" ||
		len(cfg.SubClusters) != 1 || cfg.ResyncPeriod.D() != time.Minute || cfg.StaleAfter.D() != 20*time.Minute {
		t.Errorf("decoded %+v", cfg)
	}
	if err := json.Unmarshal([]byte(`{"stale_after":15}`), &cfg); err == nil {
		t.Error("a number for a duration was accepted")
	}
	// Two clusters' Sources share one metrics registry.
	reg := prometheus.NewRegistry()
	for _, name := range []string{"a", "b"} {
		c := DefaultConfig()
		c.Name, c.DefaultSubCluster, c.Registerer = name, "sc", reg
		c.Client = fakeCore{fake.NewClientset().CoreV1()}
		src, err := New(c)
		if err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		src.Close()
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err == nil {
		t.Error("default config without default_sub_cluster validated")
	}
	cfg.DefaultSubCluster = "sc"
	if err := cfg.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	cfg.StaleAfter = Duration(time.Second)
	cfg.ResyncPeriod = 0
	cfg.SubClusters = []string{""}
	if err := cfg.Validate(); err == nil {
		t.Error("bad config validated")
	} else {
		t.Log(err)
	}
}

// neverListing is a Client whose lists block until their context ends, as
// when client-go keeps retrying an API server that refuses connections.
type neverListing struct{ fakeCore }

func (neverListing) ListNodes(ctx context.Context, _ metav1.ListOptions) (*corev1.NodeList, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (neverListing) ListPods(ctx context.Context, _ metav1.ListOptions) (*corev1.PodList, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWarnsWhileNotSynced: a source whose lists never arrive says so every
// SyncWarnEvery (whatever the cause) and reports synced=0, then 1 once
// lists arrive (TestRealAPIServer and the fixture cover the arriving part).
func TestWarnsWhileNotSynced(t *testing.T) {
	var logs logtest.Buffer
	clk := clocktesting.NewFakeClock(testNow)
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Name, cfg.DefaultSubCluster = "down", "sc-a"
	cfg.Client = neverListing{fakeCore{fake.NewClientset().CoreV1()}}
	cfg.Clock, cfg.Registerer = clk, reg
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()
	// The workqueue waits on the fake clock too, so step until the warning
	// shows rather than waiting for "a" waiter.
	testPoll(t, "a not-synced warning", func() bool {
		clk.Step(SyncWarnEvery)
		return strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "not listed yet") &&
			strings.Contains(logs.String(), "kubernetes_cluster=down")
	})
	var m dto.Metric
	if err := src.m.synced.Write(&m); err != nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("synced gauge %v, %v; want 0", m.GetGauge().GetValue(), err)
	}
	if src.HasSynced() || len(src.Snapshot()) != 0 {
		t.Error("a source that never listed synced or reported")
	}
}

func TestSyncedGauge(t *testing.T) {
	f := newFixture(t, nil, mkNode("n1", origin("1000", "1Gi")))
	testPoll(t, "synced=1", func() bool {
		var m dto.Metric
		return f.src.m.synced.Write(&m) == nil && m.GetGauge().GetValue() == 1
	})
}

// NodeManagers' cluster ids are interned (one copy per name, so a full
// recompute's per-node sum reads hot memory), up to maxInternedNames
// distinct names: a flood of distinct annotations is kept as it comes,
// not remembered.
func TestClusterIDsInternedBounded(t *testing.T) {
	s := &Source{subClusterNames: map[string]string{}}
	a := s.internLocked(strings.Clone("sc-a"))
	b := s.internLocked(strings.Clone("sc-a"))
	if a != "sc-a" || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatalf("sc-a not interned: %q %q", a, b)
	}
	if s.internLocked("") != "" {
		t.Fatal("empty id changed")
	}
	for i := range maxInternedNames + 5 {
		name := fmt.Sprintf("flood-%d", i)
		if got := s.internLocked(name); got != name {
			t.Fatalf("internLocked(%q) = %q", name, got)
		}
	}
	if len(s.subClusterNames) != maxInternedNames {
		t.Fatalf("%d names kept, want the bound %d", len(s.subClusterNames), maxInternedNames)
	}
}
