// Package writeback tells Koordinator what YARN holds: every Interval it
// reads each NodeManager's allocated memory and vcores from its RM (REST
// /ws/v1/cluster/nodes usedMemoryMB/usedVirtualCores) and writes them into
// its Node's node.koordinator.sh/thirdPartyAllocations, in exactly the
// shape koord-yarn-operator (yarn-copilot) writes, so koord-manager sets the
// Kubernetes batch allocatable to max(origin - what YARN holds, 0) and
// Kubernetes stops placing batch pods onto capacity YARN already uses. It
// is the second half of the loop whose first half is the GPG's capacity
// figure (origin - Kubernetes batch requests) and the optional
// node-resource push (gpg/kube/nmpush).
//
// Only the GPG holding the lease writes. Next to the entry it records what
// it wrote (annotation yarnfed.io/hadoop-yarn-allocation-written, in the
// same patch), so any entry it did not write, from koord-yarn-operator or
// anyone else, is recognised and left alone: a metric, a status line and a
// warning, never a fight.
package writeback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/gpg/kube"
)

// NodeSource supplies the Nodes' write-back inputs (kube.Source does).
type NodeSource interface {
	Allocations() []kube.NodeAllocation
}

// Config tunes a Writer.
type Config struct {
	// Name is the Kubernetes cluster's name (labels logs and metrics).
	Name string
	kube.WriteBackConfig

	// RMNodes reads each sub-cluster's NodeManagers from its active RM.
	RMNodes kube.RMNodeReader
	// Nodes reads and patches Nodes (kube.NewNodeWriter).
	Nodes kube.NodeWriter
	// Active gates every round: only the lease holder writes.
	Active func() bool

	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Clock      clock.WithTicker
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.RMNodes == nil {
		errs = append(errs, errors.New("rm_nodes: required"))
	}
	if c.Nodes == nil {
		errs = append(errs, errors.New("nodes: required (a Kubernetes client allowed to patch nodes)"))
	}
	if err := c.WriteBackConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Writer writes YARN's per-node allocation into the Nodes.
type Writer struct {
	cfg   Config
	src   NodeSource
	log   *slog.Logger
	clock clock.WithTicker

	rounds, patches *prometheus.CounterVec
	foreignGauge    prometheus.Gauge

	mu sync.Mutex
	// foreign: Nodes left to another writer for this tenure (node -> why).
	foreign map[string]string
	// reads: each Node's annotations as the last round read them (parsed,
	// and who owns the entry), reused while both are byte for byte the
	// same. Parsing every Node's JSON each round cost ~2 s of CPU and
	// 4.8 million allocations per round at 100,000 Nodes
	// (BenchmarkWriteOnceSteady), every 2 s by default.
	reads map[string]nodeRead
	// lastRound is when the last active round finished.
	lastRound time.Time
}

// New validates cfg and builds a Writer over src.
func New(cfg Config, src NodeSource) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("writeback: %w", err)
	}
	w := &Writer{cfg: cfg, src: src, log: cfg.Logger, clock: cfg.Clock, foreign: map[string]string{}}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	w.log = w.log.With("kubernetes_cluster", cfg.Name)
	labels := prometheus.Labels{"kubernetes_cluster": cfg.Name}
	w.rounds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_third_party_allocation_rounds_total", ConstLabels: labels,
		Help: "thirdPartyAllocations write-back rounds, by result (done: every sub-cluster's RM answered; partial: some did not, their Nodes were left as they were; standby: another GPG acts).",
	}, []string{"result"})
	w.patches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_third_party_allocation_patches_total", ConstLabels: labels,
		Help: "Node patches writing YARN's allocation into thirdPartyAllocations, by result (ok, conflict: the Node changed meanwhile and was read again, error).",
	}, []string{"result"})
	for _, r := range []string{"done", "partial", "standby"} {
		w.rounds.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "conflict", "error"} {
		w.patches.WithLabelValues(r)
	}
	w.foreignGauge = kube.NewForeignWritersGauge(cfg.Name, "third_party_allocations")
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(w.rounds, w.patches, w.foreignGauge)
	}
	return w, nil
}

// Run writes every Interval until ctx ends, then returns ctx's error.
func (w *Writer) Run(ctx context.Context) error {
	return kube.Every(ctx, w.clock, w.cfg.Interval.D(), func(ctx context.Context) { w.WriteOnce(ctx) })
}

func (w *Writer) active() bool { return w.cfg.Active == nil || w.cfg.Active() }

// nodeRead is one Node's annotations and what the round made of them.
type nodeRead struct {
	thirdParty, written               string
	thirdPartyPresent, writtenPresent bool
	p                                 parsed // read only: with() copies
	own                               ownership
	why                               string
}

// readLocked returns a's parse and ownership, reusing the last round's when
// its annotations are unchanged, and records it in next (which becomes the
// cache, so Nodes gone drop out).
func (w *Writer) readLocked(a kube.NodeAllocation, next map[string]nodeRead) nodeRead {
	r, ok := w.reads[a.Node]
	if !ok || r.thirdParty != a.ThirdParty || r.thirdPartyPresent != a.ThirdPartyPresent ||
		r.written != a.Written || r.writtenPresent != a.WrittenPresent {
		p, perr := parseAllocations(a.ThirdParty, a.ThirdPartyPresent)
		own, why := owner(p, perr, a.Written, a.WrittenPresent)
		r = nodeRead{thirdParty: a.ThirdParty, written: a.Written, thirdPartyPresent: a.ThirdPartyPresent,
			writtenPresent: a.WrittenPresent, p: p, own: own, why: why}
	}
	next[a.Node] = r
	return r
}

// todo is one Node to patch.
type todo struct {
	node   string
	rv     string
	want   kube.Batch
	parsed parsed
}

// WriteOnce reads every sub-cluster's RM once and patches each Node whose
// hadoop-yarn entry differs from what YARN holds there: the NodeManager's
// used resources, 0 if its RM does not know it (nothing allocated), 0 on a
// Node whose NodeManager is gone and whose entry is ours. A sub-cluster
// whose RM does not answer is skipped (its Nodes keep their entries: an
// unknown figure is not 0). Nodes with several NodeManagers are skipped
// (which one holds what is unclear). It returns how many Nodes it patched.
func (w *Writer) WriteOnce(ctx context.Context) int {
	if !w.active() {
		w.mu.Lock()
		clear(w.foreign) // a new tenure looks again
		w.foreignGauge.Set(0)
		w.mu.Unlock()
		w.rounds.WithLabelValues("standby").Inc()
		return 0
	}
	allocs := w.src.Allocations()
	scs := map[string]bool{}
	for _, a := range allocs {
		if a.NodeID != "" {
			scs[a.SubCluster] = true
		}
	}
	used := map[string]map[string]kube.RMNode{}
	partial := false
	for _, sc := range slices.Sorted(maps.Keys(scs)) {
		cctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout.D())
		nodes, err := w.cfg.RMNodes.RMNodes(cctx, sc)
		cancel()
		if err != nil {
			partial = true
			if ctx.Err() == nil {
				w.log.Warn("thirdPartyAllocations write-back: cannot read the RM's NodeManagers; their Nodes keep their entries until it answers", "sub_cluster", sc, "err", err)
			}
			continue
		}
		used[sc] = nodes
	}

	var work []todo
	w.mu.Lock()
	next := make(map[string]nodeRead, len(allocs))
	for _, a := range allocs {
		r := w.readLocked(a, next)
		p, own, why := r.p, r.own, r.why
		if _, ok := w.foreign[a.Node]; ok {
			if own != free {
				continue
			}
			// Only a removal of the other writer's entry (the migration's
			// last step) frees a Node: koord-yarn-operator never removes its
			// entry, so this cannot flap.
			delete(w.foreign, a.Node)
			w.foreignGauge.Set(float64(len(w.foreign)))
			w.log.Info("thirdPartyAllocations write-back: the other writer's entry was removed; writing this Node again", "node", a.Node)
		}
		var want kube.Batch
		switch {
		case a.NodeID != "":
			nodes, ok := used[a.SubCluster]
			if !ok {
				continue // RM did not answer
			}
			want = ToBatch(nodes[a.NodeID].Used) // unknown to the RM: holds nothing
		case a.NoNodeManager && a.WrittenPresent:
			// Our entry on a Node whose NodeManager is gone: YARN holds
			// nothing there any more.
		default:
			continue
		}
		switch own {
		case foreign:
			w.markForeignLocked(a.Node, why)
			continue
		case free:
			if want == (kube.Batch{}) && !a.WrittenPresent {
				continue // absent already means "YARN holds nothing"
			}
		case ours:
			if want == p.oursVal {
				continue
			}
		}
		work = append(work, todo{node: a.Node, rv: a.ResourceVersion, want: want, parsed: p})
	}
	w.reads = next
	w.mu.Unlock()

	sort.Slice(work, func(i, j int) bool { return work[i].node < work[j].node })
	var (
		wg      sync.WaitGroup
		sem     = make(chan struct{}, w.cfg.Parallel)
		mu      sync.Mutex
		patched int
	)
	for _, t := range work {
		if !w.active() {
			break // the lease lapsed during this round
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if w.patch(ctx, t) {
				mu.Lock()
				patched++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if partial {
		w.rounds.WithLabelValues("partial").Inc()
	} else {
		w.rounds.WithLabelValues("done").Inc()
	}
	w.mu.Lock()
	w.lastRound = w.clock.Now()
	w.mu.Unlock()
	return patched
}

// markForeignLocked leaves a Node to another writer for this tenure.
func (w *Writer) markForeignLocked(node, why string) {
	if _, ok := w.foreign[node]; ok {
		return
	}
	w.foreign[node] = why
	w.foreignGauge.Set(float64(len(w.foreign)))
	w.log.Warn("thirdPartyAllocations write-back: another writer owns this Node's hadoop-yarn entry (koord-yarn-operator still running?); leaving it alone until this GPG's tenure ends (deploy/README.md: migration)",
		"node", node, "why", why)
}

// patch writes one Node, with its resource version as a precondition: the
// entry and our record change together or not at all, and an entry someone
// else wrote meanwhile is never overwritten. On a conflict the Node is read
// again and decided afresh, once; after that the next round retries.
func (w *Writer) patch(ctx context.Context, t todo) bool {
	for attempt := 0; ; attempt++ {
		err := w.patchOnce(ctx, t)
		switch {
		case err == nil:
			w.patches.WithLabelValues("ok").Inc()
			return true
		case apierrors.IsConflict(err) && attempt == 0:
			w.patches.WithLabelValues("conflict").Inc()
			fresh, ok := w.reread(ctx, t)
			if !ok {
				return false
			}
			t = fresh
			continue
		default:
			w.patches.WithLabelValues("error").Inc()
			if ctx.Err() == nil {
				w.log.Warn("thirdPartyAllocations write-back: patching the Node failed; retrying next round", "node", t.node, "err", err)
			}
			return false
		}
	}
}

func (w *Writer) patchOnce(ctx context.Context, t todo) error {
	value, err := t.parsed.with(t.want)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": t.rv,
		"annotations": map[string]string{
			kube.AnnotationThirdPartyAllocations: value,
			kube.AnnotationAllocationWritten:     encodeWritten(t.want),
		},
	}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout.D())
	defer cancel()
	_, err = w.cfg.Nodes.PatchNode(ctx, t.node, body)
	return err
}

// reread decides a Node again from its current version after a conflict.
func (w *Writer) reread(ctx context.Context, t todo) (todo, bool) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout.D())
	n, err := w.cfg.Nodes.GetNode(cctx, t.node)
	cancel()
	if err != nil {
		w.log.Warn("thirdPartyAllocations write-back: reading the Node after a conflict failed; retrying next round", "node", t.node, "err", err)
		return t, false
	}
	raw, present := n.Annotations[kube.AnnotationThirdPartyAllocations]
	written, wPresent := n.Annotations[kube.AnnotationAllocationWritten]
	p, perr := parseAllocations(raw, present)
	switch own, why := owner(p, perr, written, wPresent); {
	case own == foreign:
		w.mu.Lock()
		w.markForeignLocked(t.node, why)
		w.mu.Unlock()
		return t, false
	case own == ours && p.oursVal == t.want, own == free && t.want == (kube.Batch{}):
		return t, false // already right (our own earlier patch, seen late)
	}
	return todo{node: t.node, rv: n.ResourceVersion, want: t.want, parsed: p}, true
}

// Status is the write-back's state for /gpg/v1/status.
type Status struct {
	LastRound time.Time `json:"lastRound,omitzero"`
	// ForeignNodes are Nodes whose hadoop-yarn entry another writer owns
	// (node -> why), left alone.
	ForeignNodes map[string]string `json:"foreignNodes,omitempty"`
}

// Status reports the last round and the Nodes left to another writer.
func (w *Writer) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Status{LastRound: w.lastRound, ForeignNodes: maps.Clone(w.foreign)}
}
