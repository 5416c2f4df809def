// Package nmpush pushes each NodeManager's usable Kubernetes batch capacity
// to its ResourceManager with the admin protocol's updateNodeResource, the
// job koord-yarn-operator does (but with exact units and the batch requests
// of Kubernetes pods subtracted). It is off by default: with it, the RM
// itself stops over-placing on a node whose batch capacity Kubernetes pods
// took; without it, only the GPG's weights steer.
//
// Pushes are debounced per NodeManager (a change of at least MinChange of
// either resource, or MaxAge since the last push) and batched: one call per
// RM per Interval carries every NodeManager due.
package nmpush

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// NodeSource supplies per-node results (kube.Source does).
type NodeSource interface {
	Nodes() map[string]kube.NodeResult
}

// Caller makes one admin-protocol call (a *hadoopipc.Client does).
type Caller interface {
	Call(ctx context.Context, method string, req, resp proto.Message) error
}

// RMs says where each sub-cluster's RM admin service is now. The GPG
// answers from the state store's membership (rmAdminServiceAddress, which
// the sub-cluster agent re-registers on every RM failover), so addresses
// follow HA failovers without configuration.
type RMs interface {
	// AdminAddresses maps a sub-cluster to its RM admin addresses
	// (yarn.resourcemanager.admin.address; several = try in order).
	AdminAddresses(ctx context.Context) (map[string][]string, error)
}

// RMsFunc adapts a function (such as (*gpg.GPG).RMAdminAddresses) to RMs.
type RMsFunc func(ctx context.Context) (map[string][]string, error)

// AdminAddresses calls f.
func (f RMsFunc) AdminAddresses(ctx context.Context) (map[string][]string, error) { return f(ctx) }

// Config tunes a Pusher. The settings come from the Kubernetes cluster's
// config section (kube.PushConfig; Enabled is the caller's business).
type Config struct {
	// Name is the Kubernetes cluster's name (kube.Config.Name), labelling
	// logs and metrics so one GPG can run a Pusher per cluster.
	Name string
	kube.PushConfig

	// RMs is asked for the RM admin addresses before every push; a
	// sub-cluster it does not name is left alone.
	RMs RMs
	// Active, if set, gates every push: only the GPG holding the lease
	// pushes, so two GPGs never both do. A standby forgets what it pushed,
	// so a new tenure starts by pushing every NodeManager once.
	Active func() bool
	// RMNodes, if set, is read once per round for each sub-cluster with
	// NodeManagers pushed before, to detect a second writer of their sizes
	// (koord-yarn-operator still running): a NodeManager whose RM total
	// differs from what it accepted from us, settled for an interval, is
	// pushed again once; differing again within otherWriterWindow (30
	// min), even after having matched in between, it is left to the other
	// writer for the rest of this tenure (a metric, a status line, a
	// warning), never fought over.
	RMNodes kube.RMNodeReader
	// Kerberos, if set, makes the RM admin clients log in with SASL
	// KERBEROS (Kerberized RMs) as the login's principal, whose short name
	// must be in the RMs' yarn.admin.acl; PushConfig.User is then not sent
	// (claiming another user would need proxy-user rights on the RMs).
	Kerberos *hadoopipc.KerberosClientConfig
	// Dial, if set, replaces the Hadoop IPC client (tests).
	Dial       func(subCluster string, addrs []string) (Caller, error)
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	Clock      clock.WithTicker
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.RMs == nil {
		errs = append(errs, errors.New("rms: required (where the RM admin services are)"))
	}
	if err := c.PushConfig.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// pushed is the last figure an RM accepted for one NodeManager.
type pushed struct {
	subCluster string
	usable     capacity.Resources
	at         time.Time
}

// Pusher sends NodeManager capacities to their RMs.
type Pusher struct {
	cfg   Config
	src   NodeSource
	log   *slog.Logger
	clock clock.WithTicker

	calls, pushedNMs, rounds *prometheus.CounterVec
	foreignGauge             prometheus.Gauge

	mu      sync.Mutex
	addrs   map[string][]string // sub-cluster -> admin addresses last read
	callers map[string]Caller   // sub-cluster -> admin client for addrs
	last    map[string]pushed   // NodeId -> last accepted push
	// diverged holds, per NodeId, when a check last found the RM's total
	// different from our last accepted push (forgotten after
	// otherWriterWindow); foreign holds the NodeManagers left to another
	// writer (until this tenure ends).
	diverged map[string]time.Time
	foreign  map[string]string // NodeId -> what the RM showed
}

// New validates cfg and builds a Pusher over src.
func New(cfg Config, src NodeSource) (*Pusher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nmpush: %w", err)
	}
	p := &Pusher{cfg: cfg, src: src, log: cfg.Logger, clock: cfg.Clock,
		addrs: map[string][]string{}, callers: map[string]Caller{}, last: map[string]pushed{},
		diverged: map[string]time.Time{}, foreign: map[string]string{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	p.log = p.log.With("kubernetes_cluster", cfg.Name)
	labels := prometheus.Labels{"kubernetes_cluster": cfg.Name}
	p.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_update_node_resource_calls_total", ConstLabels: labels,
		Help: "updateNodeResource calls to RMs, by sub-cluster and result (ok, error).",
	}, []string{"sub_cluster", "result"})
	p.pushedNMs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_node_resource_pushes_total", ConstLabels: labels,
		Help: "NodeManager capacities accepted by their RM, by sub-cluster.",
	}, []string{"sub_cluster"})
	p.rounds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_gpg_kube_node_resource_push_rounds_total", ConstLabels: labels,
		Help: "Node-resource push rounds, by result (pushed: this GPG holds the lease and pushed what was due; standby: another GPG acts; no_rms: the RM addresses could not be read).",
	}, []string{"result"})
	for _, r := range []string{"pushed", "standby", "no_rms"} {
		p.rounds.WithLabelValues(r)
	}
	p.foreignGauge = kube.NewForeignWritersGauge(cfg.Name, "node_resource")
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.calls, p.pushedNMs, p.rounds, p.foreignGauge)
	}
	return p, nil
}

// Run pushes every Interval until ctx ends, then returns ctx's error.
func (p *Pusher) Run(ctx context.Context) error {
	return kube.Every(ctx, p.clock, p.cfg.Interval.D(), func(ctx context.Context) { p.PushOnce(ctx) })
}

// changed reports whether a figure moved by at least frac of the old one in
// either resource (any move from or to 0 counts).
func changed(old, cur capacity.Resources, frac float64) bool {
	rel := func(a, b int64) bool {
		if a == b {
			return false
		}
		if a == 0 {
			return true
		}
		d := float64(b - a)
		if d < 0 {
			d = -d
		}
		return d >= frac*float64(a)
	}
	return rel(old.VCores, cur.VCores) || rel(old.MemoryMB, cur.MemoryMB)
}

type due struct {
	nodeID string
	host   string
	port   int32
	usable capacity.Resources
}

// PushOnce sends, per RM, one updateNodeResource with every NodeManager due.
// Only nodes with exactly one annotated NodeManager are pushed: contributing
// ones their usable capacity, reset ones (Koordinator withdrew the batch) 0
// with overCommitTimeout -1, a drain that kills nothing; a node the source
// cannot vouch for (stale, not ready, bad origin) keeps what its RM has, so
// losing the Kubernetes API does not zero a whole sub-cluster in YARN; the
// GPG's weights already count it as 0. NodeManagers another writer sizes
// (checkOtherWriters) are skipped. It returns
// the number of NodeManagers whose figure an RM accepted. It does nothing
// while Active says another GPG acts.
func (p *Pusher) PushOnce(ctx context.Context) int {
	if !p.active() {
		p.mu.Lock()
		clear(p.last)
		clear(p.diverged)
		clear(p.foreign)
		p.foreignGauge.Set(0)
		p.mu.Unlock()
		p.rounds.WithLabelValues("standby").Inc()
		return 0
	}
	rms, err := p.cfg.RMs.AdminAddresses(ctx)
	if err != nil {
		p.rounds.WithLabelValues("no_rms").Inc()
		if ctx.Err() == nil {
			p.log.Warn("node-resource push: cannot read the RM admin addresses; retrying next interval", "err", err)
		}
		return 0
	}
	p.rounds.WithLabelValues("pushed").Inc()
	now := p.clock.Now()
	p.mu.Lock()
	p.followAddresses(rms)
	p.mu.Unlock()
	p.checkOtherWriters(ctx, now)
	bySC := map[string][]due{}
	p.mu.Lock()
	for _, r := range p.src.Nodes() {
		usable := r.Usable
		switch {
		case r.Status.Contributes():
		case r.Status == kube.NodeBatchReset:
			// Koordinator withdrew the node's batch resources: drain it in
			// YARN (0, with overCommitTimeout -1: running containers finish,
			// none is killed, nothing new is placed there).
			usable = capacity.Resources{}
		default:
			continue
		}
		if r.NodeID == "" || len(p.addrs[r.SubCluster]) == 0 {
			continue
		}
		if _, ok := p.foreign[r.NodeID]; ok {
			continue
		}
		host, portStr, err := net.SplitHostPort(r.NodeID)
		port, perr := strconv.ParseInt(portStr, 10, 32)
		if err != nil || perr != nil || host == "" || port <= 0 {
			p.log.Warn("skipping a NodeManager with an unusable node-id annotation", "node_id", r.NodeID)
			continue
		}
		if l, ok := p.last[r.NodeID]; ok && l.subCluster == r.SubCluster &&
			!changed(l.usable, usable, p.cfg.MinChange) && now.Sub(l.at) < p.cfg.MaxAge.D() {
			continue
		}
		bySC[r.SubCluster] = append(bySC[r.SubCluster], due{r.NodeID, host, int32(port), usable})
	}
	p.mu.Unlock()

	accepted := 0
	for _, sc := range slices.Sorted(maps.Keys(bySC)) {
		batch := bySC[sc]
		slices.SortFunc(batch, func(a, b due) int { return cmp.Compare(a.nodeID, b.nodeID) })
		ok := p.sendBatch(ctx, sc, batch)
		p.mu.Lock()
		for _, d := range ok {
			p.last[d.nodeID] = pushed{subCluster: sc, usable: d.usable, at: now}
		}
		p.mu.Unlock()
		accepted += len(ok)
	}
	return accepted
}

func (p *Pusher) active() bool { return p.cfg.Active == nil || p.cfg.Active() }

// otherWriterWindow is how long a difference between the RM's total and
// our figure is remembered. A second difference within it means another
// writer. koord-yarn-operator writes a NodeManager's size on every event
// of its Node, and a Node has one at least every 5 min (the kubelet's
// nodeStatusReportFrequency; koord-manager's batch update every 300 s), so
// its second write falls well inside; a NodeManager that restarts twice
// within it is left at its own size for the tenure (logged).
const otherWriterWindow = 30 * time.Minute

// checkOtherWriters compares, for every NodeManager whose push its RM
// accepted at least an interval ago, the RM's total with that figure. A
// difference is first taken for a NodeManager restart (it re-registers
// with its configured size) and repaired by pushing again; a second
// difference within otherWriterWindow, whether or not the RM showed our
// figure in between, means another writer (koord-yarn-operator) sets the
// size too: the NodeManager is left to it for the rest of this tenure,
// never fought over. (Starting the count over on a match made a writer
// slower than our interval, i.e. the operator, be repaired after each of
// its writes forever.)
func (p *Pusher) checkOtherWriters(ctx context.Context, now time.Time) {
	if p.cfg.RMNodes == nil {
		return
	}
	settle := p.cfg.Interval.D()
	p.mu.Lock()
	bySC := map[string][]string{}
	for id, l := range p.last {
		if _, ok := p.foreign[id]; !ok && now.Sub(l.at) >= settle {
			bySC[l.subCluster] = append(bySC[l.subCluster], id)
		}
	}
	p.mu.Unlock()
	for _, sc := range slices.Sorted(maps.Keys(bySC)) {
		nodes, err := p.cfg.RMNodes.RMNodes(ctx, sc)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Warn("node-resource push: cannot read the RM's NodeManagers to check for another writer; checking next interval", "sub_cluster", sc, "err", err)
			}
			continue
		}
		p.mu.Lock()
		for _, id := range bySC[sc] {
			l, ok := p.last[id]
			n, known := nodes[id]
			if !ok || !known {
				continue // not registered (any more): nothing to compare
			}
			if at, ok := p.diverged[id]; ok && now.Sub(at) >= otherWriterWindow {
				delete(p.diverged, id)
			}
			if n.Total == l.usable {
				continue
			}
			_, before := p.diverged[id]
			p.diverged[id] = now
			delete(p.last, id) // due again now
			if !before {
				p.log.Info("node-resource push: the RM shows another size than it accepted from us (a NodeManager restart?); pushing again",
					"sub_cluster", sc, "node_id", id, "pushed", l.usable, "rm_total", n.Total)
				continue
			}
			p.foreign[id] = fmt.Sprintf("%d MiB, %d vcores", n.Total.MemoryMB, n.Total.VCores)
			p.log.Warn("node-resource push: another writer sets this NodeManager's size (koord-yarn-operator still running?); leaving it alone until this GPG's tenure ends",
				"sub_cluster", sc, "node_id", id, "pushed", l.usable, "rm_total", n.Total)
		}
		p.foreignGauge.Set(float64(len(p.foreign)))
		p.mu.Unlock()
	}
}

// ForeignNodeManagers lists the NodeManagers whose size another writer
// sets (NodeId -> the size their RM showed), which this Pusher leaves
// alone.
func (p *Pusher) ForeignNodeManagers() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.foreign)
}

// followAddresses adopts the current RM admin addresses. A sub-cluster
// whose addresses changed (an RM failover re-registered the new active RM)
// gets a new client, and its NodeManagers are pushed again at once: the
// new RM has only what the NodeManagers registered with. Call with p.mu
// held.
func (p *Pusher) followAddresses(rms map[string][]string) {
	for sc, addrs := range p.addrs {
		if cur, ok := rms[sc]; ok && slices.Equal(cur, addrs) {
			continue
		}
		if c, ok := p.callers[sc].(interface{ Close() error }); ok {
			_ = c.Close()
		}
		delete(p.callers, sc)
		delete(p.addrs, sc)
		maps.DeleteFunc(p.last, func(_ string, l pushed) bool { return l.subCluster == sc })
		p.log.Info("node-resource push: RM admin address changed", "sub_cluster", sc, "from", addrs, "to", rms[sc])
	}
	for sc, addrs := range rms {
		if len(addrs) > 0 {
			p.addrs[sc] = slices.Clone(addrs)
		}
	}
}

// sendBatch sends one batch and returns the entries the RM accepted. A
// Hadoop RM refuses a whole request when any node in it is unknown to it
// (AdminService: "Resource update get failed on all nodes ..."), so when
// the RM answered with an error, each NodeManager is retried alone: one
// NodeManager that has not registered yet, or a wrong node-id annotation,
// must not hold back every other NodeManager of its sub-cluster.
func (p *Pusher) sendBatch(ctx context.Context, sc string, batch []due) []due {
	if !p.active() {
		return nil // the lease lapsed during an earlier sub-cluster's call
	}
	err := p.send(ctx, sc, batch)
	p.count(sc, len(batch), err)
	if err == nil {
		return batch
	}
	var re *hadoopipc.RemoteError
	if len(batch) == 1 || !errors.As(err, &re) || hadoopipc.IsStandby(err) {
		p.log.Warn("updateNodeResource failed; retrying next interval", "sub_cluster", sc, "node_managers", len(batch), "err", err)
		return nil
	}
	var ok []due
	for _, d := range batch {
		if !p.active() {
			break
		}
		err := p.send(ctx, sc, []due{d})
		p.count(sc, 1, err)
		if err != nil {
			p.log.Warn("updateNodeResource refused for a NodeManager; retrying next interval", "sub_cluster", sc, "node_id", d.nodeID, "err", err)
			continue
		}
		ok = append(ok, d)
	}
	return ok
}

func (p *Pusher) count(sc string, n int, err error) {
	if err != nil {
		p.calls.WithLabelValues(sc, "error").Inc()
		return
	}
	p.calls.WithLabelValues(sc, "ok").Inc()
	p.pushedNMs.WithLabelValues(sc).Add(float64(n))
}

// overCommitNone is Hadoop's ResourceOption default (-1): if the new
// capacity is below what is allocated, running containers are not preempted.
const overCommitNone = -1

func (p *Pusher) send(ctx context.Context, sc string, batch []due) error {
	c, err := p.caller(sc)
	if err != nil {
		return err
	}
	req := &yarnpb.UpdateNodeResourceRequestProto{}
	for _, d := range batch {
		req.NodeResourceMap = append(req.NodeResourceMap, &yarnpb.NodeResourceMapProto{
			NodeId: &yarnpb.NodeIdProto{Host: proto.String(d.host), Port: proto.Int32(d.port)},
			ResourceOption: &yarnpb.ResourceOptionProto{
				Resource: &yarnpb.ResourceProto{
					Memory:       proto.Int64(d.usable.MemoryMB),
					VirtualCores: proto.Int32(clampInt32(d.usable.VCores)),
				},
				OverCommitTimeout: proto.Int32(overCommitNone),
			},
		})
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
	defer cancel()
	return c.Call(ctx, "updateNodeResource", req, &yarnpb.UpdateNodeResourceResponseProto{})
}

func clampInt32(v int64) int32 {
	if v > 1<<31-1 {
		return 1<<31 - 1
	}
	return int32(v)
}

func (p *Pusher) caller(sc string) (Caller, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.callers[sc]; c != nil {
		return c, nil
	}
	var c Caller
	var err error
	if p.cfg.Dial != nil {
		c, err = p.cfg.Dial(sc, p.addrs[sc])
	} else {
		user := p.cfg.User
		if p.cfg.Kerberos != nil {
			user = "" // act as the login itself
		}
		c, err = hadoopipc.NewClient(hadoopipc.ClientConfig{
			Addresses: p.addrs[sc],
			Protocol:  hadoopipc.ProtocolRMAdmin,
			User:      user,
			Logger:    p.log,
			Kerberos:  p.cfg.Kerberos,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("nmpush: RM admin client for %s: %w", sc, err)
	}
	p.callers[sc] = c
	return c, nil
}

// Close closes the RM admin clients it opened.
func (p *Pusher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, c := range p.callers {
		if cl, ok := c.(interface{ Close() error }); ok {
			errs = append(errs, cl.Close())
		}
	}
	clear(p.callers)
	return errors.Join(errs...)
}
