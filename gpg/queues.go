package gpg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Per-queue inputs (DESIGN.md, "Per-queue weights"): each eligible
// sub-cluster's RM is asked for /ws/v1/cluster/scheduler, its
// CapacityScheduler leaf queues are flattened, and a managed queue's
// weights are computed from that queue's own headroom in every
// sub-cluster instead of the sub-cluster's free capacity as a whole.

// ErrSchedulerInfo is returned for a /ws/v1/cluster/scheduler document the
// GPG cannot read.
var ErrSchedulerInfo = errors.New("gpg: unreadable /ws/v1/cluster/scheduler answer")

// maxLeafQueues bounds the leaves read from one RM's answer.
const maxLeafQueues = 100_000

// Hadoop's SchedulerTypeInfo "type" of the CapacityScheduler root.
const capacitySchedulerType = "capacityScheduler"

// Why a managed queue got the cluster-wide vector instead of its own
// (yarnfed_gpg_queue_inputs_total{input}).
const (
	inputPerQueue       = "per_queue"              // its own headroom in every sub-cluster
	inputDefaultQueue   = "default_queue"          // "*": no single queue's headroom fits it
	inputLoadBased      = "load_based"             // Hadoop's LoadBasedGlobalPolicy: one vector for all
	inputDisabled       = "disabled"               // generator.queue_inputs.enabled false
	inputNoAnswer       = "no_answer"              // a sub-cluster's RM gave no answer young enough
	inputNotCapacity    = "not_capacity_scheduler" // a sub-cluster runs another scheduler
	inputQueueNotFound  = "queue_not_found"        // no leaf (or an ambiguous name) in a sub-cluster
	inputNoEffectiveCap = "no_effective_capacity"  // the leaf has no maxEffectiveCapacity (RM < 3.1)
)

// schedulerDoc is the part of the RM's /ws/v1/cluster/scheduler JSON
// (SchedulerTypeInfo > CapacitySchedulerInfo > CapacitySchedulerQueueInfo /
// CapacitySchedulerLeafQueueInfo > ResourceInfo) the GPG reads; every
// other field is ignored.
type schedulerDoc struct {
	Scheduler *struct {
		SchedulerInfo *struct {
			Type      string       `json:"type"`
			QueueName string       `json:"queueName"`
			Queues    *schedQueues `json:"queues"`
		} `json:"schedulerInfo"`
	} `json:"scheduler"`
}

// schedQueues is CapacitySchedulerQueueInfoList: {"queue": [...]}.
type schedQueues struct {
	Queue oneOrMany[schedQueue] `json:"queue"`
}

type schedQueue struct {
	Type                   string         `json:"type"`
	QueuePath              string         `json:"queuePath"`
	QueueName              string         `json:"queueName"`
	State                  string         `json:"state"`
	Queues                 *schedQueues   `json:"queues"`
	ResourcesUsed          *schedResource `json:"resourcesUsed"`
	MaxEffectiveCapacity   *schedResource `json:"maxEffectiveCapacity"`
	NumPendingApplications int64          `json:"numPendingApplications"`
}

// schedResource is ResourceInfo's memory (MiB) and vCores.
type schedResource struct {
	Memory int64 `json:"memory"`
	VCores int64 `json:"vCores"`
}

// oneOrMany is a JSON list that also accepts a lone object for a
// one-element list: Jersey 1's JSON notations render a single-element
// collection that way unless the DAO class is registered for natural
// arrays, so both shapes are read (null and absent are empty).
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*o = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		var many []T
		if err := json.Unmarshal(b, &many); err != nil {
			return err
		}
		*o = many
		return nil
	default:
		var one T
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*o = oneOrMany[T]{one}
		return nil
	}
}

// leafQueue is one leaf queue's figures in one sub-cluster.
type leafQueue struct {
	Path  string
	Name  string
	State string
	// Effective: the RM reported maxEffectiveCapacity (Hadoop 3.1+).
	Effective bool
	// AvailableMB and AvailableVCores are what the queue may still take
	// up to its maximum capacity: maxEffectiveCapacity - resourcesUsed,
	// never negative (the cluster's own free capacity bounds it later).
	AvailableMB     int64
	AvailableVCores int64
	Pending         int64
}

// queueView is one sub-cluster's answer.
type queueView struct {
	At        time.Time // when it was read (the GPG's clock)
	Scheduler string    // the scheduler "type"
	Leaves    map[string]leafQueue
	byName    map[string][]string // short name -> leaf paths
}

// parseScheduler reads an RM's /ws/v1/cluster/scheduler JSON.
func parseScheduler(data []byte, at time.Time) (*queueView, error) {
	var doc schedulerDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchedulerInfo, err)
	}
	if doc.Scheduler == nil || doc.Scheduler.SchedulerInfo == nil {
		return nil, fmt.Errorf("%w: no scheduler.schedulerInfo", ErrSchedulerInfo)
	}
	root := doc.Scheduler.SchedulerInfo
	v := &queueView{At: at, Scheduler: root.Type, Leaves: map[string]leafQueue{}, byName: map[string][]string{}}
	if root.Type != capacitySchedulerType {
		return v, nil // another scheduler: no queues the GPG reads
	}
	if root.Queues == nil {
		return v, nil
	}
	var walk func(qs []schedQueue, parent string) error
	walk = func(qs []schedQueue, parent string) error {
		for _, q := range qs {
			path := q.QueuePath
			if path == "" { // before Hadoop 3.2 the path is not rendered
				path = parent + "." + q.QueueName
			}
			if q.Queues != nil && len(q.Queues.Queue) > 0 {
				if err := walk(q.Queues.Queue, path); err != nil {
					return err
				}
				continue
			}
			if len(v.Leaves) >= maxLeafQueues {
				return fmt.Errorf("%w: more than %d leaf queues", ErrSchedulerInfo, maxLeafQueues)
			}
			l := leafQueue{Path: path, Name: q.QueueName, State: q.State, Pending: max(0, q.NumPendingApplications)}
			if q.MaxEffectiveCapacity != nil {
				l.Effective = true
				var used schedResource
				if q.ResourcesUsed != nil {
					used = *q.ResourcesUsed
				}
				l.AvailableMB = max(0, q.MaxEffectiveCapacity.Memory-used.Memory)
				l.AvailableVCores = max(0, q.MaxEffectiveCapacity.VCores-used.VCores)
			}
			v.Leaves[path] = l
			if l.Name != "" {
				v.byName[l.Name] = append(v.byName[l.Name], path)
			}
		}
		return nil
	}
	name := root.QueueName
	if name == "" {
		name = "root"
	}
	if err := walk(root.Queues.Queue, name); err != nil {
		return nil, err
	}
	return v, nil
}

// leaf finds the leaf a policy's queue key names: its full path
// ("root.a.b"), the path without "root.", or its short name when that is
// unique in the sub-cluster (the CapacityScheduler refuses an ambiguous
// short name at submission too).
func (v *queueView) leaf(queue string) (leafQueue, bool) {
	if l, ok := v.Leaves[queue]; ok {
		return l, true
	}
	if l, ok := v.Leaves["root."+queue]; ok {
		return l, true
	}
	if paths := v.byName[queue]; len(paths) == 1 {
		return v.Leaves[paths[0]], true
	}
	return leafQueue{}, false
}

// queueReader keeps the last answer of each sub-cluster's scheduler.
type queueReader struct {
	mu     sync.Mutex
	views  map[string]*queueView
	failed map[string]bool // last read failed (logged once per failure streak)
}

// RefreshQueueInputs reads every eligible sub-cluster's
// /ws/v1/cluster/scheduler once, concurrently, if this GPG holds the lease
// and per-queue inputs are on (Run calls it every
// generator.queue_inputs.interval). A sub-cluster that does not answer
// keeps its previous answer, which rounds use until it is older than
// queue_inputs.max_age. A changed answer asks for a round.
func (g *GPG) RefreshQueueInputs(ctx context.Context) {
	qc := g.cfg.Generator.QueueInputs
	if !qc.Enabled || !g.cfg.Generator.Enabled || g.cfg.Generator.Policy != PolicyCapacity || !g.lease.holding() {
		return
	}
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		g.log.Warn("gpg queue inputs: list sub-clusters", "err", err)
		return
	}
	now := g.now()
	eligible := map[string]*pb.SubClusterInfo{}
	for _, sc := range scs {
		if g.eligible(sc, now) {
			eligible[sc.GetSubClusterId()] = sc
		}
	}
	type answer struct {
		view *queueView
		err  error
	}
	answers := make(map[string]answer, len(eligible))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, sc := range eligible {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.readScheduler(ctx, sc)
			mu.Lock()
			answers[id] = answer{v, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	qr := &g.queueReader
	qr.mu.Lock()
	defer qr.mu.Unlock()
	if qr.views == nil {
		qr.views, qr.failed = map[string]*queueView{}, map[string]bool{}
	}
	changed := false
	for id := range qr.views {
		if _, ok := eligible[id]; !ok {
			delete(qr.views, id)
			delete(qr.failed, id)
		}
	}
	for id, a := range answers {
		if a.err != nil {
			g.metrics.schedulerReads.WithLabelValues(id, "error").Inc()
			if !qr.failed[id] && ctx.Err() == nil {
				g.log.Warn("gpg queue inputs: scheduler read failed; its last answer is used until queue_inputs.max_age, then every queue gets the cluster-wide weights",
					"subcluster", id, "err", a.err)
			}
			qr.failed[id] = true
			continue
		}
		g.metrics.schedulerReads.WithLabelValues(id, "ok").Inc()
		qr.failed[id] = false
		old := qr.views[id]
		if old == nil || old.Scheduler != a.view.Scheduler || !maps.Equal(old.Leaves, a.view.Leaves) {
			changed = true
		}
		qr.views[id] = a.view
	}
	if changed {
		g.Kick()
	}
}

// readScheduler asks sc's RM (an HA list of web addresses is tried in
// order) for its scheduler, with the queue inputs' timeout and body bound,
// the cleaner's user.name and, under Kerberos, SPNEGO as the GPG.
func (g *GPG) readScheduler(ctx context.Context, sc *pb.SubClusterInfo) (*queueView, error) {
	qc := g.cfg.Generator.QueueInputs
	var errs []error
	for _, addr := range strings.Split(sc.GetRmWebServiceAddress(), ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		c := rmrest.NewClient(addr)
		c.HTTP, c.User, c.SPNEGO, c.MaxBody = g.queueHTTP, g.cfg.Cleaner.RMUser, g.rmREST.spnego, qc.MaxBytes
		var raw json.RawMessage
		if err := c.GetJSON(ctx, "/scheduler", nil, &raw); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		v, err := parseScheduler(raw, g.now())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		return v, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoRMWeb, sc.GetSubClusterId())
	}
	return nil, errors.Join(errs...)
}

// queueViews returns the current answers (each immutable once stored).
func (g *GPG) queueViews() map[string]*queueView {
	qr := &g.queueReader
	qr.mu.Lock()
	defer qr.mu.Unlock()
	return maps.Clone(qr.views)
}

// queueInputs builds a queue's inputs from the eligible sub-clusters'
// cluster-wide inputs: each sub-cluster's availability becomes the
// queue's own headroom there, bounded by what the sub-cluster has free
// (which a capacity.Source already narrowed), and its pending
// applications the queue's. Every eligible sub-cluster must have a
// young enough CapacityScheduler answer naming the queue; otherwise it
// returns the reason and the sub-cluster, and the queue keeps the
// cluster-wide vector: one queue's headroom in one place compared with
// all the free capacity of another would weigh different quantities.
func (g *GPG) queueInputs(queue string, in []loadInput, views map[string]*queueView, now time.Time) (out []loadInput, reason, subCluster string) {
	maxAge := g.cfg.Generator.QueueInputs.MaxAge.D()
	out = make([]loadInput, 0, len(in))
	for _, x := range in {
		v := views[x.ID]
		switch {
		case v == nil || now.Sub(v.At) > maxAge:
			return nil, inputNoAnswer, x.ID
		case v.Scheduler != capacitySchedulerType:
			return nil, inputNotCapacity, x.ID
		}
		l, ok := v.leaf(queue)
		if !ok {
			return nil, inputQueueNotFound, x.ID
		}
		if !l.Effective {
			return nil, inputNoEffectiveCap, x.ID
		}
		c := x.Capability
		if l.State == "RUNNING" {
			c.AvailableMB = min(max(0, c.AvailableMB), l.AvailableMB)
			c.AvailableVCores = min(max(0, c.AvailableVCores), l.AvailableVCores)
		} else {
			// STOPPED or DRAINING: the RM refuses new applications there.
			c.AvailableMB, c.AvailableVCores = 0, 0
		}
		c.AppsPending = l.Pending
		out = append(out, loadInput{ID: x.ID, Capability: c})
	}
	return out, inputPerQueue, ""
}

// eligible: RUNNING with a heartbeat fresher than the liveness expiry
// (the sub-clusters a round weighs).
func (g *GPG) eligible(sc *pb.SubClusterInfo, now time.Time) bool {
	return sc.GetState() == pb.SubClusterState_SC_RUNNING &&
		now.Sub(time.UnixMilli(sc.GetLastHeartbeatMs())) <= g.cfg.Liveness.Expiry.D()
}

// newQueueHTTP is the HTTP client of the scheduler reads.
func newQueueHTTP(cfg QueueInputsConfig) *http.Client {
	return &http.Client{Timeout: cfg.RMTimeout.D()}
}
