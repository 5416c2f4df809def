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

// Config tunes a Pusher.
type Config struct {
	// Name is the Kubernetes cluster's name (kube.Config.Name), labelling
	// logs and metrics so one GPG can run a Pusher per cluster.
	Name string `json:"name"`
	// RMs maps a sub-cluster to its RM admin addresses
	// (yarn.resourcemanager.admin.address; more than one = HA failover).
	// NodeManagers of other sub-clusters are left alone.
	RMs map[string][]string `json:"rms"`
	// User is the SIMPLE-auth user; it must be in the RM's yarn.admin.acl.
	User string `json:"user"`
	// MinChange is the relative change of vcores or memory that is pushed
	// at once (0.10: Koordinator's own threshold for batch node updates).
	MinChange float64 `json:"min_change"`
	// MaxAge re-pushes an unchanged figure (an RM restart forgets it).
	MaxAge kube.Duration `json:"max_age"`
	// Interval is how often due NodeManagers are collected and sent.
	Interval kube.Duration `json:"interval"`
	// CallTimeout bounds one updateNodeResource call.
	CallTimeout kube.Duration `json:"call_timeout"`

	// In-process wiring.
	// Dial, if set, replaces the Hadoop IPC client (tests).
	Dial       func(subCluster string, addrs []string) (Caller, error) `json:"-"`
	Logger     *slog.Logger                                            `json:"-"`
	Registerer prometheus.Registerer                                   `json:"-"`
	Clock      clock.WithTicker                                        `json:"-"`
}

// DefaultConfig returns the defaults (Koordinator's 10% / 300 s).
func DefaultConfig() Config {
	return Config{
		MinChange:   0.10,
		MaxAge:      kube.Duration(5 * time.Minute),
		Interval:    kube.Duration(10 * time.Second),
		CallTimeout: kube.Duration(30 * time.Second),
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if len(c.RMs) == 0 {
		errs = append(errs, errors.New("rms: at least one sub-cluster's RM admin address"))
	}
	for sc, addrs := range c.RMs {
		if len(addrs) == 0 {
			errs = append(errs, fmt.Errorf("rms[%s]: no address", sc))
		}
	}
	if c.User == "" {
		errs = append(errs, errors.New("user: required (an RM admin)"))
	}
	if c.MinChange < 0 || c.MinChange > 1 {
		errs = append(errs, fmt.Errorf("min_change: %v, must be in [0, 1]", c.MinChange))
	}
	for name, d := range map[string]kube.Duration{"max_age": c.MaxAge, "interval": c.Interval, "call_timeout": c.CallTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v, must be > 0", name, d.D()))
		}
	}
	return errors.Join(errs...)
}

// pushed is the last figure an RM accepted for one NodeManager.
type pushed struct {
	usable capacity.Resources
	at     time.Time
}

// Pusher sends NodeManager capacities to their RMs.
type Pusher struct {
	cfg   Config
	src   NodeSource
	log   *slog.Logger
	clock clock.WithTicker

	calls, pushedNMs *prometheus.CounterVec

	mu      sync.Mutex
	callers map[string]Caller // sub-cluster -> admin client
	last    map[string]pushed // NodeId -> last accepted push
}

// New validates cfg and builds a Pusher over src.
func New(cfg Config, src NodeSource) (*Pusher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nmpush: %w", err)
	}
	p := &Pusher{cfg: cfg, src: src, log: cfg.Logger, clock: cfg.Clock,
		callers: map[string]Caller{}, last: map[string]pushed{}}
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
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(p.calls, p.pushedNMs)
	}
	return p, nil
}

// Run pushes every Interval until ctx ends, then returns ctx's error.
func (p *Pusher) Run(ctx context.Context) error {
	t := p.clock.NewTicker(p.cfg.Interval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
			p.PushOnce(ctx)
		}
	}
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
// Only contributing nodes with exactly one annotated NodeManager are pushed:
// a node the source cannot vouch for (stale, reset, not ready) keeps what
// its RM has, so losing the Kubernetes API does not zero a whole
// sub-cluster in YARN; the GPG's weights already count it as 0. It returns
// the number of NodeManagers whose figure an RM accepted.
func (p *Pusher) PushOnce(ctx context.Context) int {
	now := p.clock.Now()
	bySC := map[string][]due{}
	p.mu.Lock()
	for _, r := range p.src.Nodes() {
		if r.Status != kube.NodeContributing || r.NodeID == "" || p.cfg.RMs[r.SubCluster] == nil {
			continue
		}
		host, portStr, err := net.SplitHostPort(r.NodeID)
		port, perr := strconv.ParseInt(portStr, 10, 32)
		if err != nil || perr != nil || host == "" || port <= 0 {
			p.log.Warn("skipping a NodeManager with an unusable node-id annotation", "node_id", r.NodeID)
			continue
		}
		if l, ok := p.last[r.NodeID]; ok && !changed(l.usable, r.Usable, p.cfg.MinChange) && now.Sub(l.at) < p.cfg.MaxAge.D() {
			continue
		}
		bySC[r.SubCluster] = append(bySC[r.SubCluster], due{r.NodeID, host, int32(port), r.Usable})
	}
	p.mu.Unlock()

	accepted := 0
	for _, sc := range slices.Sorted(maps.Keys(bySC)) {
		batch := bySC[sc]
		slices.SortFunc(batch, func(a, b due) int { return cmp.Compare(a.nodeID, b.nodeID) })
		if err := p.send(ctx, sc, batch); err != nil {
			p.calls.WithLabelValues(sc, "error").Inc()
			p.log.Warn("updateNodeResource failed; retrying next interval", "sub_cluster", sc, "node_managers", len(batch), "err", err)
			continue
		}
		p.calls.WithLabelValues(sc, "ok").Inc()
		p.pushedNMs.WithLabelValues(sc).Add(float64(len(batch)))
		p.mu.Lock()
		for _, d := range batch {
			p.last[d.nodeID] = pushed{usable: d.usable, at: now}
		}
		p.mu.Unlock()
		accepted += len(batch)
	}
	return accepted
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
		c, err = p.cfg.Dial(sc, p.cfg.RMs[sc])
	} else {
		c, err = hadoopipc.NewClient(hadoopipc.ClientConfig{
			Addresses: p.cfg.RMs[sc],
			Protocol:  hadoopipc.ProtocolRMAdmin,
			User:      p.cfg.User,
			Logger:    p.log,
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
