// Package kubebench measures gpg/kube's full recomputation on a synthetic
// co-location cluster (default: 10,000 nodes, 5 pods each, 50 sub-clusters)
// against the 100 ms target. The cluster is served by a static in-memory
// client, so the Source runs its real informers, transforms and indexes; no
// API server is involved. `yarnfed bench gpg` and the package benchmark use
// it.
package kubebench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/procstat"
)

// Target is the bound for one full recomputation.
const Target = 100 * time.Millisecond

// Config sizes the synthetic cluster.
type Config struct {
	Nodes       int // Kubernetes nodes, each running one NodeManager
	PodsPerNode int // including the NodeManager pod
	SubClusters int // NodeManagers are spread round-robin over these
	Rounds      int // timed full recomputations
}

// DefaultConfig is the scenario.
func DefaultConfig() Config {
	return Config{Nodes: 10_000, PodsPerNode: 5, SubClusters: 50, Rounds: 20}
}

func (c Config) validate() error {
	if c.Nodes < 1 || c.PodsPerNode < 1 || c.SubClusters < 1 || c.Rounds < 1 {
		return fmt.Errorf("kubebench: nodes, pods per node, sub-clusters and rounds must be >= 1: %+v", c)
	}
	return nil
}

// Per-node figures of the synthetic cluster, chosen so the truth is easy to
// compute by hand: 64 batch cores and 256 GiB of origin, pods of 1 core and
// 2 GiB each, the NodeManager pod's own request subtracted like any other
// (it is overhead taken from the batch pool).
const (
	originMilli = 64_000
	originBytes = 256 << 30
	podMilli    = 1000
	podBytes    = 2 << 30
)

func subClusterID(i int) string { return fmt.Sprintf("sc-%02d", i) }

// Objects builds the synthetic cluster's Nodes and Pods.
func Objects(cfg Config, now time.Time) ([]corev1.Node, []corev1.Pod) {
	nodes := make([]corev1.Node, cfg.Nodes)
	pods := make([]corev1.Pod, 0, cfg.Nodes*cfg.PodsPerNode)
	origin := kube.EncodeOriginBatch(kube.Batch{MilliCPU: originMilli, Memory: originBytes})
	for i := range nodes {
		name := "node-" + strconv.Itoa(i)
		nodes[i] = corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1",
				Annotations: map[string]string{kube.AnnotationOriginBatch: origin}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("384Gi"),
					kube.BatchCPU: resource.MustParse("10k"), kube.BatchMemory: resource.MustParse("100Gi"),
				},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(now)}},
			},
		}
		for j := range cfg.PodsPerNode {
			p := corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "batch", Name: name + "-" + strconv.Itoa(j), ResourceVersion: "1",
					Labels: map[string]string{"app": "spark"}},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{
					Name: "main", Image: "spark",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"),
						kube.BatchCPU:      *resource.NewQuantity(podMilli, resource.DecimalSI),
						kube.BatchMemory:   *resource.NewQuantity(podBytes, resource.BinarySI),
					}},
				}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			}
			if j == 0 {
				p.Namespace = "yarn"
				p.Labels = map[string]string{kube.LabelComponent: kube.ComponentNodeManager}
				p.Annotations = map[string]string{
					kube.AnnotationNodeID:    name + ":8041",
					kube.AnnotationClusterID: subClusterID(i % cfg.SubClusters),
				}
			}
			pods = append(pods, p)
		}
	}
	return nodes, pods
}

// Expected is the hand-computed snapshot of the synthetic cluster (without
// ObservedAt).
func Expected(cfg Config) map[string]capacity.SubCluster {
	batchPods := int64(cfg.PodsPerNode) // the NodeManager pod included
	perNode := capacity.Resources{
		VCores:   max(originMilli-batchPods*podMilli, 0) / 1000,
		MemoryMB: max(originBytes-batchPods*podBytes, 0) >> 20,
	}
	out := make(map[string]capacity.SubCluster, cfg.SubClusters)
	for i := range cfg.Nodes {
		id := subClusterID(i % cfg.SubClusters)
		s := out[id]
		s.ID = id
		s.Nodes++
		s.Usable.VCores += perNode.VCores
		s.Usable.MemoryMB += perNode.MemoryMB
		out[id] = s
	}
	return out
}

// Result is one run's measurements.
type Result struct {
	Config
	Pods             int
	InitialSync      time.Duration // informers' list + transform + first recompute
	HeapBytes        int64         // live heap the synced Source added (stored records, facts)
	Min, Median, Max time.Duration // per full recomputation
	// CPU is the process's CPU time per recomputation (the delaying
	// queue's goroutine included): on a shared machine, what the wall
	// times cannot show.
	CPU                 time.Duration
	RatioToTarget       float64 // Median / Target
	SubClustersReported int
}

// Measure builds the cluster, syncs a Source over it and times Rounds full
// recomputations. It fails if the Source's figures differ from Expected.
func Measure(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	nodes, pods := Objects(cfg, time.Now())
	before := liveHeap()
	scfg := kube.DefaultConfig()
	scfg.Name = "bench"
	scfg.DefaultSubCluster = subClusterID(0)
	scfg.ResyncPeriod = kube.Duration(time.Hour) // only the timed recomputations
	scfg.Client = NewStaticClient(nodes, pods)
	src, err := kube.New(scfg)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- src.Run(ctx, 1) }()
	for !src.HasSynced() {
		select {
		case err := <-done:
			return Result{}, fmt.Errorf("kubebench: source stopped before syncing: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
	res := Result{Config: cfg, Pods: len(pods), InitialSync: time.Since(start)}
	res.HeapBytes = int64(liveHeap()) - int64(before)
	times := make([]time.Duration, cfg.Rounds)
	cpu0 := procstat.Self()
	for i := range times {
		t0 := time.Now()
		src.Recompute()
		times[i] = time.Since(t0)
	}
	res.CPU = (procstat.Self() - cpu0) / time.Duration(cfg.Rounds)
	slices.Sort(times)
	res.Min, res.Median, res.Max = times[0], times[len(times)/2], times[len(times)-1]
	res.RatioToTarget = float64(res.Median) / float64(Target)

	got := src.Snapshot()
	want := Expected(cfg)
	res.SubClustersReported = len(got)
	for id, w := range want {
		g := got[id]
		if g.Usable != w.Usable || g.Nodes != w.Nodes {
			return res, fmt.Errorf("kubebench: %s = %+v, want %+v", id, g, w)
		}
	}
	if len(got) != len(want) {
		return res, fmt.Errorf("kubebench: %d sub-clusters reported, want %d", len(got), len(want))
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, nil
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// NewStaticClient serves fixed Nodes and Pods to list, and watches that
// never deliver an event.
func NewStaticClient(nodes []corev1.Node, pods []corev1.Pod) kube.Client {
	return &staticClient{nodes: nodes, pods: pods}
}

type staticClient struct {
	nodes []corev1.Node
	pods  []corev1.Pod
}

// IsWatchListSemanticsUnSupported makes the reflector list, then watch,
// instead of asking this client to stream the initial list.
func (*staticClient) IsWatchListSemanticsUnSupported() bool { return true }

func (c *staticClient) ListNodes(context.Context, metav1.ListOptions) (*corev1.NodeList, error) {
	return &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: slices.Clone(c.nodes)}, nil
}

func (c *staticClient) WatchNodes(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return newIdleWatch(ctx), nil
}

func (c *staticClient) ListPods(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: slices.Clone(c.pods)}, nil
}

func (c *staticClient) WatchPods(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return newIdleWatch(ctx), nil
}

// idleWatch delivers nothing until stopped or its context ends.
type idleWatch struct {
	ch   chan watch.Event
	once sync.Once
}

func newIdleWatch(ctx context.Context) *idleWatch {
	w := &idleWatch{ch: make(chan watch.Event)}
	context.AfterFunc(ctx, w.Stop)
	return w
}

func (w *idleWatch) Stop()                          { w.once.Do(func() { close(w.ch) }) }
func (w *idleWatch) ResultChan() <-chan watch.Event { return w.ch }
