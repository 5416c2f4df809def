// Package gpg is the Global Policy Generator: it keeps the federation
// healthy while routers and AMRMProxies keep working without it.
//
//   - liveness: sub-clusters whose heartbeat is older than the expiry
//     become SC_LOST;
//   - cleaner: application homes that no RM knows (or that finished long
//     ago) are deleted, only on complete information (never YARN-11387);
//   - UAM reaper (opt-in): unmanaged AMs left running in other
//     sub-clusters after their federated application ended are killed;
//   - generator: router and AMRMProxy weights per queue from measured
//     load, each queue's own headroom in the RMs' CapacityScheduler and,
//     through a capacity.Source, the capacity YARN can really use on
//     Kubernetes nodes; published capacities for routers.
//
// One GPG acts at a time: the holder of a store lease, whose writes are
// fenced by the lease epoch. See DESIGN.md.
package gpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	utilclock "k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/policies"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// GPG runs the rounds. Create it with New, run it with Run.
type GPG struct {
	cfg      Config
	store    Store
	src      capacity.Source
	apps     AppLister
	log      *slog.Logger
	metrics  *metrics
	registry *policies.Registry
	lease    *lease
	now      func() time.Time
	webLn    net.Listener
	kick     chan struct{}
	login    *krbclient.Client // nil without Kerberos
	reapRMs  reapRMs
	uams     UAMRegistry // nil unless the UAM reaper is enabled
	// rmREST reads the RMs' REST API for gpg/kube (RMNodes): the cleaner's
	// timeout and user, SPNEGO with the GPG's login.
	rmREST struct {
		http   *http.Client
		spnego *rmrest.SPNEGO
	}
	// queueHTTP and queueReader: per-queue inputs (queues.go).
	queueHTTP   *http.Client
	queueReader queueReader

	mu          sync.Mutex
	kubeStatus  func() any // SetKubeStatus
	last        RoundResult
	lastErr     error
	lastRound   time.Time
	lastClean   time.Time
	cleanResult cleanResult
	lastReap    time.Time
	reapResult  reapResult
	reapErr     error
	ready       bool
	// warnedUnknown: capacity-source sub-clusters the store does not know,
	// already warned about.
	warnedUnknown map[string]bool

	// parsed: what the last round parsed from the store's JSON (queues'
	// weights, capabilities; generator.go, parsedRound).
	parsedMu sync.Mutex
	parsed   parsedRound

	reapMu            sync.Mutex
	pendingUAMDeletes map[uamKey]struct{} // killed UAMs whose registry row is still to delete
}

// New validates cfg and wires a GPG. src may be nil (no capacity source:
// weights from the RMs' own figures only); the Kubernetes source of
// package gpg/kube is passed here. The web listener is bound now so its
// address is known before Run.
func New(cfg Config, src capacity.Source) (*GPG, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gpg config: %w", err)
	}
	reg := policies.NewDefaultRegistry()
	class, err := reg.ManagerClass(cfg.Generator.Manager)
	if err != nil || !reg.SupportsWeights(class) {
		return nil, fmt.Errorf("gpg config: generator.manager %q is not a policy manager that takes weights (WeightedLocality, WeightedHome, PriorityBroadcast)", cfg.Generator.Manager)
	}
	cfg.Generator.Manager = class
	g := &GPG{cfg: cfg, store: cfg.Store, src: src, apps: cfg.Apps, log: cfg.Logger, registry: reg, now: cfg.Now, kick: make(chan struct{}, 1)}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.metrics = newMetrics(cfg.Registerer)
	if cfg.Kerberos.Enabled() {
		if g.login, err = cfg.Kerberos.Login(g.log); err != nil {
			return nil, fmt.Errorf("gpg: %w", err)
		}
		g.log.Info("Kerberos login for the RMs", "principal", cfg.Kerberos.Principal, "rm_principal", cfg.Kerberos.RMPrincipal)
	}
	// One SPNEGO per GPG (the RMs' cookies are kept across rounds), shared
	// by the cleaner, the UAM reaper and gpg/kube's RM reads.
	var spnego *rmrest.SPNEGO
	if g.login != nil {
		spnego = rmrest.NewSPNEGO(g.login, cfg.Kerberos.RMHTTPPrincipal)
	}
	g.rmREST.http = &http.Client{Timeout: cfg.Cleaner.RMTimeout.D()}
	g.rmREST.spnego = spnego
	g.queueHTTP = newQueueHTTP(cfg.Generator.QueueInputs)
	if g.apps == nil {
		g.apps = &restLister{http: &http.Client{Timeout: cfg.Cleaner.RMTimeout.D()}, user: cfg.Cleaner.RMUser,
			minUptime: cfg.Cleaner.MinRMUptime.D(), now: g.now, spnego: spnego}
	}
	g.reapRMs = reapRMs{&restLister{http: &http.Client{Timeout: cfg.UAMReaper.RMTimeout.D()}, user: cfg.UAMReaper.RMUser,
		minUptime: cfg.UAMReaper.MinRMUptime.D(), now: g.now, spnego: spnego}}
	g.pendingUAMDeletes = map[uamKey]struct{}{}
	if cfg.UAMReaper.Enabled {
		if g.uams = cfg.UAMs; g.uams == nil {
			g.uams, _ = cfg.Store.(UAMRegistry) // Validate checked it
		}
	}
	g.lease = &lease{store: g.store, name: cfg.LeaseName, holder: cfg.ID, ttl: cfg.LeaseTTL.D(), log: g.log, now: g.now,
		onHeld: func(held bool) {
			v := 0.0
			if held {
				v = 1
				g.Kick() // act at once on taking over
			}
			g.metrics.leader.Set(v)
		}}
	if g.webLn = cfg.WebListener; g.webLn == nil && cfg.WebAddress != "" {
		if g.webLn, err = net.Listen("tcp", cfg.WebAddress); err != nil {
			g.closeLogin()
			return nil, fmt.Errorf("gpg web listen: %w", err)
		}
	}
	return g, nil
}

// WebAddr is the bound web address (nil when disabled).
func (g *GPG) WebAddr() net.Addr {
	if g.webLn == nil {
		return nil
	}
	return g.webLn.Addr()
}

// Close releases what New opened (the web listener) when Run is not going
// to run; after Run returns there is nothing left to close.
func (g *GPG) Close() error {
	g.closeLogin()
	if g.webLn == nil {
		return nil
	}
	if err := g.webLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func (g *GPG) closeLogin() {
	if g.login != nil {
		g.login.Destroy()
	}
}

// RMKerberos is how the GPG's RM admin (Hadoop IPC) clients log in: SASL
// KERBEROS as the GPG's principal, expecting kerberos.rm_principal. Nil
// without Kerberos or without an RM principal (SIMPLE).
func (g *GPG) RMKerberos() *hadoopipc.KerberosClientConfig {
	if g.login == nil || g.cfg.Kerberos.RMPrincipal == "" {
		return nil
	}
	return &hadoopipc.KerberosClientConfig{Login: g.login, ServerPrincipal: g.cfg.Kerberos.RMPrincipal}
}

// Kick asks for a round soon (after the debounce).
func (g *GPG) Kick() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// Holding reports whether this GPG holds the lease and acts.
func (g *GPG) Holding() bool { return g.lease.holding() }

// TryLease acquires or renews the lease once and reports whether this GPG
// holds it. Run does this itself; tools and benchmarks that drive rounds
// by hand call it.
func (g *GPG) TryLease(ctx context.Context) bool {
	g.lease.tryOnce(ctx)
	return g.lease.holding()
}

// PolicyRound runs the policy generator once (if this GPG holds the lease)
// and returns what it computed and wrote.
func (g *GPG) PolicyRound(ctx context.Context) (RoundResult, error) {
	fence := g.lease.fence()
	if fence == nil {
		return RoundResult{}, errNotLeader
	}
	return g.policyRound(ctx, fence)
}

// Run keeps the lease, runs rounds every interval and soon after any
// capacity change or membership event, and serves the web endpoints,
// until ctx ends. It returns nil on a clean stop.
func (g *GPG) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var srv *http.Server
	if g.webLn != nil {
		srv = &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(g.webLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				g.log.Error("gpg web server", "err", err)
			}
		}()
	}
	wg.Add(6)
	go func() { defer wg.Done(); g.lease.run(ctx) }()
	go func() { defer wg.Done(); g.watchEvents(ctx) }()
	go func() { defer wg.Done(); g.loop(ctx) }()
	// The cleaner and the UAM reaper each in their own loop, apart from the
	// policy rounds: an RM slow to list its applications must not delay
	// weights.
	go func() { defer wg.Done(); every(ctx, g.cfg.Cleaner.Enabled, g.cfg.Cleaner.Interval.D(), g.CleanOnce) }()
	go func() { defer wg.Done(); every(ctx, g.cfg.UAMReaper.Enabled, g.cfg.UAMReaper.Interval.D(), g.ReapOnce) }()
	// Per-queue inputs too: a slow RM delays only its own next answer.
	go func() {
		defer wg.Done()
		every(ctx, g.cfg.Generator.Enabled && g.cfg.Generator.QueueInputs.Enabled, g.cfg.Generator.QueueInputs.Interval.D(), g.RefreshQueueInputs)
	}()
	<-ctx.Done()
	if srv != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(sctx)
		scancel()
	}
	wg.Wait()
	return nil
}

// watchEvents turns capacity changes and membership events into kicks.
func (g *GPG) watchEvents(ctx context.Context) {
	var changed <-chan struct{}
	if g.src != nil {
		changed = g.src.Changed()
	}
	var events <-chan *pb.WatchEvent
	open := func() {
		ch, err := g.store.WatchEvents(ctx, &pb.WatchRequest{Membership: true, Policies: true})
		if err != nil {
			g.log.Debug("gpg: membership watch unavailable; the interval still runs rounds", "err", err)
			return
		}
		events = ch
	}
	open()
	retry := time.NewTicker(5 * time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			g.Kick()
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// Heartbeats change capability; an operator may unpin or add
			// a queue; our own writes echo back too. Each is worth a
			// (debounced, mostly write-free) round.
			if e.GetKind() != pb.WatchEvent_PROGRESS && e.GetKind() != pb.WatchEvent_SYNCED {
				g.Kick()
			}
		case <-retry.C:
			if events == nil {
				open()
			}
		}
	}
}

// loop runs rounds on the interval and on kicks (debounced).
func (g *GPG) loop(ctx context.Context) {
	t := time.NewTicker(g.cfg.Interval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.kick:
			// Gather a burst of events into one round.
			if d := g.cfg.Debounce.D(); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
				select {
				case <-g.kick:
				default:
				}
			}
		}
		g.Round(ctx)
	}
}

// every runs round every interval until ctx ends, if enabled.
func every(ctx context.Context, enabled bool, interval time.Duration, round func(context.Context)) {
	if !enabled {
		return
	}
	_ = kube.Every(ctx, utilclock.RealClock{}, interval, round) // ends only with ctx
}

// Round runs one round now if this GPG holds the lease: liveness and the
// policy generator. Errors are logged and counted; the next round tries
// again.
func (g *GPG) Round(ctx context.Context) {
	fence := g.lease.fence()
	g.mu.Lock()
	g.ready = true
	g.mu.Unlock()
	if fence == nil {
		// Also covers a lease that lapsed without a renewal answer.
		g.metrics.leader.Set(0)
		g.metrics.rounds.WithLabelValues("standby").Inc()
		return
	}
	g.metrics.leader.Set(1)
	start := time.Now()
	var errs []error
	if g.cfg.Liveness.Enabled {
		if _, err := g.markLost(ctx, fence); err != nil {
			errs = append(errs, err)
		}
	}
	if g.cfg.Generator.Enabled {
		res, err := g.policyRound(ctx, fence)
		result := "unchanged"
		switch {
		case err != nil:
			result = "error"
			errs = append(errs, err)
		case g.cfg.Generator.ReadOnly:
			result = "read_only"
		case res.Writes > 0:
			result = "wrote"
		}
		g.metrics.rounds.WithLabelValues(result).Inc()
		g.metrics.roundTime.Observe(time.Since(start).Seconds())
		g.mu.Lock()
		g.last, g.lastRound = res, g.now()
		g.mu.Unlock()
	}
	err := errors.Join(errs...)
	if err != nil && ctx.Err() == nil {
		g.log.Warn("gpg round failed; retrying next round", "err", err)
	}
	g.mu.Lock()
	g.lastErr = err
	g.mu.Unlock()
}

// CleanOnce runs one cleaner round now (if this GPG holds the lease).
func (g *GPG) CleanOnce(ctx context.Context) {
	fence := g.lease.fence()
	if fence == nil {
		return
	}
	res, err := g.cleanApps(ctx, fence)
	g.mu.Lock()
	g.lastClean, g.cleanResult = g.now(), res
	g.mu.Unlock()
	switch {
	case err != nil:
		g.metrics.cleaner.WithLabelValues("error").Inc()
		if ctx.Err() == nil {
			g.log.Warn("gpg cleaner round failed", "err", err)
		}
	case !res.Complete:
		g.metrics.cleaner.WithLabelValues("incomplete").Inc()
		g.log.Warn("gpg cleaner: incomplete information; deleting nothing this round", "reason", res.Reason)
	default:
		g.metrics.cleaner.WithLabelValues("complete").Inc()
		if g.cfg.Cleaner.DryRun {
			g.metrics.wouldDelete.Add(float64(len(res.Deleted)))
		} else {
			g.metrics.deleted.Add(float64(len(res.Deleted)))
		}
		g.log.Info("gpg cleaner round", "candidates", res.Candidates, "deleted", len(res.Deleted), "dry_run", g.cfg.Cleaner.DryRun)
	}
}

// Handler serves /healthz, /readyz (the store was reached and a round
// decided whether to act), /prom and /gpg/v1/status.
func (g *GPG) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		g.lease.mu.Lock()
		reached := g.lease.reached
		g.lease.mu.Unlock()
		g.mu.Lock()
		ready := g.ready
		g.mu.Unlock()
		if !reached || !ready {
			http.Error(w, "starting: state store not reached yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /gpg/v1/status", g.serveStatus)
	if g.cfg.Gatherer != nil {
		mux.Handle("GET /prom", promhttp.HandlerFor(g.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}
