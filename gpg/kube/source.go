// Package kube is the GPG's capacity source for Kubernetes co-location
// clusters: it watches Nodes and Pods with client-go informers and computes,
// per YARN sub-cluster, the Koordinator batch capacity YARN can really use
// (see DESIGN.md for the rule and why). A Source implements
// capacity.Source.
package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/gpg/capacity"
)

// Source is a capacity.Source for one Kubernetes cluster. Create it with
// New and start it (once) with Run; Snapshot is empty until the first full
// computation after the initial lists.
type Source struct {
	cfg   Config
	log   *slog.Logger
	clock clock.WithTicker
	rules nodeRules
	m     *metrics

	nodeInformer cache.SharedIndexInformer
	podInformer  cache.SharedIndexInformer
	// queue holds node names. sync never fails (it reads recorded facts, no
	// API calls), so there is no rate limiting, only staleness delays.
	queue workqueue.TypedDelayingInterface[string]

	changed chan struct{}

	// nodeSynced and podSynced report that the event handlers have seen
	// every object of the informers' initial lists.
	nodeSynced, podSynced cache.InformerSynced

	// mu guards the facts (written by the event handlers) and serialises
	// every computation with its application, so a result never overwrites
	// one computed from newer facts.
	mu sync.Mutex
	// The facts the rule needs, extracted once per event: recomputing a node
	// reads these small structs, not API objects or annotation JSON. One
	// entry per node name holds its facts, its pods' and its last result,
	// so a full recompute makes one map walk and no lookups (100,000 nodes).
	nodes    map[string]*nodeState
	numNodes int               // entries whose Node exists
	podNode  map[string]string // pod key -> node name
	// subClusterNames interns NodeManagers' cluster ids: a full recompute
	// sums each node into its sub-cluster by that string, and 100,000
	// copies of a handful of names scattered over the heap cost a cache
	// miss per node (a fifth of the recompute at 100,000 nodes).
	subClusterNames map[string]string
	synced          bool
	resyncAt        time.Time             // last Recompute
	agg             map[string]*aggregate // sub-cluster -> sum over its nodes
	counts          [numNodeStatus]int
}

// nodeState is one node name's facts, pods and last result. An entry
// exists while any of the three does: pods may be seen before their Node,
// and a deleted Node keeps its result until its sync removes it.
type nodeState struct {
	facts     nodeFacts
	present   bool // the Node exists (facts are its)
	pods      podList
	result    NodeResult
	hasResult bool
}

// stateLocked returns name's entry, created if missing.
func (s *Source) stateLocked(name string) *nodeState {
	st := s.nodes[name]
	if st == nil {
		st = &nodeState{}
		s.nodes[name] = st
	}
	return st
}

// dropIfEmptyLocked removes name's entry once nothing is left in it.
func (s *Source) dropIfEmptyLocked(name string, st *nodeState) {
	if !st.present && len(st.pods) == 0 && !st.hasResult {
		delete(s.nodes, name)
	}
}

type aggregate struct {
	usable     capacity.Resources
	nodes      int
	observedAt time.Time
}

var _ capacity.Source = (*Source)(nil)

// New validates cfg and builds a Source. It connects lazily: Run starts the
// watches.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kubernetes cluster %q: %w", cfg.Name, err)
	}
	client := cfg.Client
	if client == nil {
		rc, err := cfg.RESTConfig()
		if err != nil {
			return nil, err
		}
		if client, err = NewClient(rc); err != nil {
			return nil, fmt.Errorf("kubernetes cluster %q: %w", cfg.Name, err)
		}
	}
	s := &Source{
		cfg:     cfg,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		rules:   nodeRules{defaultSubCluster: cfg.DefaultSubCluster, staleAfter: cfg.StaleAfter.D()},
		m:       newMetrics(cfg.Registerer, cfg.Name),
		changed: make(chan struct{}, 1),
		nodes:   make(map[string]*nodeState),
		podNode: make(map[string]string),
		agg:     make(map[string]*aggregate),

		subClusterNames: make(map[string]string),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("kubernetes_cluster", cfg.Name)
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.queue = workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Clock: s.clock})

	s.nodeInformer = cache.NewSharedIndexInformerWithOptions(listWatch(client,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.ListNodes(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.WatchNodes(ctx, o)
		}), &corev1.Node{}, cache.SharedIndexInformerOptions{})
	s.podInformer = cache.NewSharedIndexInformerWithOptions(listWatch(client,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.ListPods(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.WatchPods(ctx, o)
		}), &corev1.Pod{}, cache.SharedIndexInformerOptions{})
	for resource, inf := range map[string]cache.SharedIndexInformer{"nodes": s.nodeInformer, "pods": s.podInformer} {
		if err := inf.SetTransform(transform); err != nil {
			return nil, err
		}
		if err := inf.SetWatchErrorHandlerWithContext(s.watchErrorHandler(resource)); err != nil {
			return nil, err
		}
	}
	reg, err := s.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onNode(obj, false) },
		UpdateFunc: func(_, obj any) { s.onNode(obj, false) },
		DeleteFunc: func(obj any) { s.onNode(obj, true) },
	})
	if err != nil {
		return nil, err
	}
	s.nodeSynced = reg.HasSynced
	if reg, err = s.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(obj, false) },
		UpdateFunc: func(_, obj any) { s.onPod(obj, false) },
		DeleteFunc: func(obj any) { s.onPod(obj, true) },
	}); err != nil {
		return nil, err
	}
	s.podSynced = reg.HasSynced
	return s, nil
}

// listWatch builds the informers' ListerWatcher. A client that says it
// cannot stream a watch-list (client-go's fakes) makes the reflector fall back
// to list-then-watch; a real API server streams.
func listWatch(client any, list cache.ListWithContextFunc, w cache.WatchFuncWithContext) cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: list, WatchFuncWithContext: w}, client)
}

// watchErrorHandler reports failed lists and watches (an RBAC denial, an
// unreachable API server) in our log and metrics; the informer retries with
// backoff either way. Routine watch ends stay quiet.
func (s *Source) watchErrorHandler(resource string) cache.WatchErrorHandlerWithContext {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		s.m.watchErrors.WithLabelValues(resource).Inc()
		s.log.Warn("list/watch failed; retrying", "resource", resource, "err", err)
	}
}

// onNode records a Node's facts and queues the node.
func (s *Source) onNode(obj any, deleted bool) {
	var name string
	var rec *nodeRecord
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		name, deleted = o.Key, true // nodes are cluster-scoped: the key is the name
	case *nodeRecord:
		name, rec = o.Name, o
	default:
		return
	}
	s.mu.Lock()
	st := s.stateLocked(name)
	if st.present {
		s.numNodes--
	}
	if deleted {
		st.facts, st.present = nodeFacts{}, false
		s.dropIfEmptyLocked(name, st)
	} else {
		st.facts, st.present = rec.facts, true
		s.numNodes++
	}
	s.mu.Unlock()
	s.queue.Add(name)
}

// onPod records a Pod's facts under its node and queues the node (and the
// node it left, should a pod ever move).
func (s *Source) onPod(obj any, deleted bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	var rec *podRecord
	switch o := obj.(type) {
	case cache.DeletedFinalStateUnknown:
		deleted = true
	case *podRecord:
		rec = o
	default:
		return
	}
	node := ""
	var facts podFacts
	if !deleted {
		node, facts = rec.node, rec.facts
	}
	s.mu.Lock()
	facts.clusterID = s.internLocked(facts.clusterID)
	prev := s.podNode[key]
	if prev == node && node != "" {
		if st := s.nodes[node]; st != nil {
			if i := st.pods.find(key); i >= 0 && st.pods[i].facts == facts {
				// Most pod updates (conditions, container statuses) change
				// nothing the rule reads: no work for the queue.
				s.mu.Unlock()
				return
			}
		}
	}
	if prev != "" && prev != node {
		if st := s.nodes[prev]; st != nil {
			st.pods = st.pods.without(key)
			s.dropIfEmptyLocked(prev, st)
		}
		delete(s.podNode, key)
	}
	if node != "" {
		st := s.stateLocked(node)
		st.pods = st.pods.with(key, facts)
		s.podNode[key] = node
	}
	s.mu.Unlock()
	if prev != "" && prev != node {
		s.queue.Add(prev)
	}
	if node != "" {
		s.queue.Add(node)
	}
}

// maxInternedNames bounds subClusterNames (one entry per distinct cluster-id
// annotation ever seen); past it names are kept as they come.
const maxInternedNames = 10_000

func (s *Source) internLocked(name string) string {
	if name == "" {
		return ""
	}
	if n, ok := s.subClusterNames[name]; ok {
		return n
	}
	if len(s.subClusterNames) < maxInternedNames {
		s.subClusterNames[name] = name
	}
	return name
}

// Close stops the work queue (its delaying goroutine starts in New). Run
// closes on return; a Source that is never run must be closed by its owner.
// Closing twice is harmless.
func (s *Source) Close() { s.queue.ShutDown() }

// Run watches until ctx ends, with workers goroutines applying node changes.
// It returns ctx's error once everything it started has stopped.
func (s *Source) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.Close()
	for _, inf := range []cache.SharedIndexInformer{s.nodeInformer, s.podInformer} {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	s.log.Info("waiting for the node and pod caches")
	if !s.waitForSync(ctx) {
		return ctx.Err()
	}
	s.Recompute()
	s.m.synced.Set(1)
	s.log.Info("caches synced", "nodes", len(s.nodeInformer.GetStore().ListKeys()), "pods", len(s.podInformer.GetStore().ListKeys()))
	for range workers {
		wg.Go(func() {
			for s.processNext() {
			}
		})
	}
	return Every(ctx, s.clock, s.cfg.ResyncPeriod.D(), func(context.Context) { s.Recompute() })
}

// SyncWarnEvery is how often Run warns while the initial lists have not
// arrived.
const SyncWarnEvery = 30 * time.Second

// waitForSync waits for the informers' initial lists, warning every
// SyncWarnEvery until they arrive. client-go's watch-list retries a refused
// connection or a 429 inside the reflector without calling the watch error
// handler, so without this an API server that is down would be silent; the
// warning covers every cause. It returns false if ctx ends first.
func (s *Source) waitForSync(ctx context.Context) bool {
	synced := make(chan bool, 1)
	go func() { synced <- cache.WaitForCacheSync(ctx.Done(), s.nodeSynced, s.podSynced) }()
	start := s.clock.Now()
	t := s.clock.NewTicker(SyncWarnEvery)
	defer t.Stop()
	for {
		select {
		case ok := <-synced:
			return ok
		case <-t.C():
			s.log.Warn("Kubernetes nodes and pods not listed yet: no capacity figure from this cluster (its sub-clusters are weighted by their RMs alone) until they are; check the API server address and the RBAC role",
				"waiting", s.clock.Since(start).Round(time.Second))
		}
	}
}

func (s *Source) processNext() bool {
	name, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(name)
	s.sync(name)
	return true
}

// podList is one node's pods' facts. A slice, not a map: a node runs tens
// of pods, and a full recompute reads every node's list, where walking a
// slice costs a fraction of iterating a map (issue 25: 100,000 nodes).
type podList []podEntry

type podEntry struct {
	key   string // namespace/name
	facts podFacts
}

func (l podList) find(key string) int {
	for i := range l {
		if l[i].key == key {
			return i
		}
	}
	return -1
}

// with returns l with key's facts set (added, or replaced in place).
func (l podList) with(key string, f podFacts) podList {
	if i := l.find(key); i >= 0 {
		l[i].facts = f
		return l
	}
	return append(l, podEntry{key, f})
}

// without returns l without key (the last entry takes its place).
func (l podList) without(key string) podList {
	i := l.find(key)
	if i < 0 {
		return l
	}
	last := len(l) - 1
	l[i] = l[last]
	l[last] = podEntry{} // drop the strings for the collector
	return l[:last]
}

// computeLocked evaluates one node from the recorded facts.
func (s *Source) computeLocked(st *nodeState, now time.Time) (NodeResult, bool) {
	if st == nil || !st.present {
		return NodeResult{}, false
	}
	return s.rules.evaluate(&st.facts, st.pods, now), true
}

// sync brings one node's contribution up to date with the facts recorded
// from the caches' events. It is idempotent and level-based: it looks at the
// node's and its pods' current facts, never at the event that queued it.
func (s *Source) sync(name string) {
	now := s.clock.Now()
	s.mu.Lock()
	st := s.nodes[name]
	res, exists := s.computeLocked(st, now)
	var prev NodeResult
	var had bool
	if st != nil {
		prev, had = st.result, st.hasResult
	}
	if s.applyLocked(name, st, res, exists, now) {
		s.notify() // before unlocking: see recompute
	}
	s.mu.Unlock()
	if exists && res.Status == NodeConflict && (!had || prev.Status != NodeConflict) {
		s.log.Warn("NodeManagers of two sub-clusters run on one node; it counts for neither", "node", name)
	}
	s.m.syncs.Inc()
	if exists && contributes(res) {
		// Level-based staleness: look again when the node would turn stale.
		s.queue.AddAfter(name, res.FreshUntil.Sub(now))
	}
}

func contributes(r NodeResult) bool { return r.Status.Contributes() }

// applyLocked records a node's result (st is its entry, nil if none) and
// reports whether any sub-cluster's figures changed.
func (s *Source) applyLocked(name string, st *nodeState, res NodeResult, exists bool, now time.Time) bool {
	var old NodeResult
	var had bool
	if st != nil {
		old, had = st.result, st.hasResult
	}
	if had {
		s.counts[old.Status]--
	}
	if exists {
		st.result, st.hasResult = res, true
		s.counts[res.Status]++
	} else if st != nil {
		st.result, st.hasResult = NodeResult{}, false
		s.dropIfEmptyLocked(name, st)
	}
	s.m.setNodeCounts(&s.counts)
	oldC, newC := had && contributes(old), exists && contributes(res)
	if oldC == newC && (!newC || (old.SubCluster == res.SubCluster && old.Usable == res.Usable)) {
		return false
	}
	if oldC {
		a := s.agg[old.SubCluster]
		a.usable.VCores -= old.Usable.VCores
		a.usable.MemoryMB -= old.Usable.MemoryMB
		a.nodes--
		a.observedAt = now
	}
	if newC {
		a := s.aggFor(res.SubCluster)
		a.usable.VCores += res.Usable.VCores
		a.usable.MemoryMB += res.Usable.MemoryMB
		a.nodes++
		a.observedAt = now
	}
	return true
}

func (s *Source) aggFor(sc string) *aggregate {
	a := s.agg[sc]
	if a == nil {
		a = &aggregate{}
		s.agg[sc] = a
	}
	return a
}

// Recompute evaluates every node from the caches and rebuilds the
// per-sub-cluster sums from scratch (the resync, and the benchmark's unit).
// It marks the source synced.
func (s *Source) Recompute() {
	start := time.Now()
	now := s.clock.Now()
	// Staleness deadlines for the contributing nodes, queued after
	// unlocking: only those not queued already. A node keeps one pending
	// look at its FreshUntil from whoever computed it last (sync, or an
	// earlier Recompute), so a node whose deadline did not move needs none;
	// re-queueing all of them cost more than the computation at 100,000
	// nodes (the queue's heap and its goroutine).
	type deadline struct {
		name string
		in   time.Duration
	}
	var deadlines []deadline
	s.mu.Lock()
	agg := make(map[string]*aggregate, len(s.agg))
	var counts [numNodeStatus]int
	// O(nodes + pods): each node reads its own pods' facts. The results
	// are updated in place (no second map of every node per resync).
	for name, st := range s.nodes {
		if !st.present {
			// Deleted since its last sync (which is queued), or only pods
			// seen so far: no result.
			if st.hasResult {
				st.result, st.hasResult = NodeResult{}, false
				s.dropIfEmptyLocked(name, st)
			}
			continue
		}
		res := s.rules.evaluate(&st.facts, st.pods, now)
		if contributes(res) && (!st.hasResult || !contributes(st.result) || !st.result.FreshUntil.Equal(res.FreshUntil)) {
			deadlines = append(deadlines, deadline{name, res.FreshUntil.Sub(now)})
		}
		st.result, st.hasResult = res, true
		counts[res.Status]++
		if contributes(res) {
			a := agg[res.SubCluster]
			if a == nil {
				a = &aggregate{}
				agg[res.SubCluster] = a
			}
			a.usable.VCores += res.Usable.VCores
			a.usable.MemoryMB += res.Usable.MemoryMB
			a.nodes++
		}
	}
	changed := !s.synced || len(agg) != len(s.agg)
	for sc, a := range agg {
		a.observedAt = now
		if o := s.agg[sc]; o == nil || o.usable != a.usable || o.nodes != a.nodes {
			changed = true
		}
	}
	// Sub-clusters seen before keep an entry (0, no nodes): "measured, nothing
	// usable" is different from "unknown".
	for sc := range s.agg {
		if agg[sc] == nil {
			agg[sc] = &aggregate{observedAt: now}
		}
	}
	s.agg, s.counts, s.synced, s.resyncAt = agg, counts, true, now
	s.m.setNodeCounts(&s.counts)
	// Signalled before unlocking (notify never blocks), so whoever sees
	// HasSynced or the new Snapshot also finds the Changed signal: after
	// the unlock, a caller could read synced and find no signal yet.
	if changed {
		s.notify()
	}
	s.mu.Unlock()
	s.m.recomputeSeconds.Observe(time.Since(start).Seconds())
	for _, d := range deadlines {
		s.queue.AddAfter(d.name, d.in)
	}
}

func (s *Source) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changed implements capacity.Source.
func (s *Source) Changed() <-chan struct{} { return s.changed }

// HasSynced reports whether the first full computation after the initial
// list has happened (before that, Snapshot is empty).
func (s *Source) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

// Snapshot implements capacity.Source. Before the caches have synced it is
// empty: a partial list would under-state capacity. After that it holds
// DefaultSubCluster, the configured SubClusters and every sub-cluster a
// NodeManager pod has named since start, with 0 where no node contributes.
func (s *Source) Snapshot() map[string]capacity.SubCluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.synced {
		return map[string]capacity.SubCluster{}
	}
	out := make(map[string]capacity.SubCluster, len(s.agg)+len(s.cfg.SubClusters)+1)
	for _, sc := range append([]string{s.cfg.DefaultSubCluster}, s.cfg.SubClusters...) {
		out[sc] = capacity.SubCluster{ID: sc, ObservedAt: s.resyncAt}
	}
	for sc, a := range s.agg {
		out[sc] = capacity.SubCluster{ID: sc, Usable: a.usable, Nodes: a.nodes, ObservedAt: a.observedAt}
	}
	return out
}

// NodeCounts returns how many nodes are in each NodeStatus.
func (s *Source) NodeCounts() map[NodeStatus]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[NodeStatus]int, numNodeStatus)
	for st, n := range s.counts {
		if n > 0 {
			out[NodeStatus(st)] = n
		}
	}
	return out
}

// Nodes returns every known node's last result, keyed by node name.
func (s *Source) Nodes() map[string]NodeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]NodeResult, s.numNodes)
	for name, st := range s.nodes {
		if st.hasResult {
			out[name] = st.result
		}
	}
	return out
}

// NodeAllocation is what the thirdPartyAllocations write-back
// (gpg/kube/writeback) needs to know of one Node, from the informer cache.
type NodeAllocation struct {
	Node            string
	ResourceVersion string
	// SubCluster and NodeID name the node's one running NodeManager ("" when
	// there is none, or several).
	SubCluster, NodeID string
	// NoNodeManager: no NodeManager runs there (YARN holds nothing).
	NoNodeManager bool
	// ThirdParty is the raw node.koordinator.sh/thirdPartyAllocations value;
	// Written the GPG's record of the hadoop-yarn entry it last wrote.
	ThirdParty, Written               string
	ThirdPartyPresent, WrittenPresent bool
}

// Allocations lists every known Node's write-back inputs.
func (s *Source) Allocations() []NodeAllocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeAllocation, 0, s.numNodes)
	for name, st := range s.nodes {
		if !st.present {
			continue
		}
		f, r := st.facts, st.result
		a := NodeAllocation{Node: name, ResourceVersion: f.resourceVersion,
			NoNodeManager: r.Status == NodeNoNodeManager,
			ThirdParty:    f.thirdParty, ThirdPartyPresent: f.thirdPartyPresent,
			Written: f.written, WrittenPresent: f.writtenPresent}
		if r.NodeID != "" {
			a.SubCluster, a.NodeID = r.SubCluster, r.NodeID
		}
		out = append(out, a)
	}
	return out
}
