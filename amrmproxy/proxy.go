// Package amrmproxy is the per-node AMRMProxy: it serves unmodified AMs
// over ApplicationMasterProtocolPB and spans each application over the
// federation's sub-clusters with unmanaged AMs (Hadoop's
// FederationInterceptor semantics). See DESIGN.md.
package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/state"
	"github.com/yarnfed/yarnfed/internal/closer"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/rmbreaker"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/policies"
)

// Proxy is one AMRMProxy. Open it, Run it, Close it.
type Proxy struct {
	cfg      Config
	log      *slog.Logger
	audit    *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	state    *state.Store
	members  *membership
	learner  *nodeLearner
	resolver policies.SubClusterResolver
	facade   *policies.Facade
	homes    HomeConnector
	identity Identity
	brk      *breakers
	metrics  *metrics
	srv      *hadoopipc.Server
	amrmLn   net.Listener
	web      *http.Server
	webLn    net.Listener
	krb      *hadoopipc.KerberosClientConfig // nil: SIMPLE to the RMs
	registry uamRegistry                     // nil: no UAM registry (warned at Open)
	proxyID  string                          // this proxy in the registry's proxy column

	mu       sync.Mutex
	attempts map[AttemptID]*attempt
	// finished remembers recently finished attempts (bounded, FIFO) so
	// their late calls get the RM's answers, not a new registration.
	homeTurn  atomic.Uint32 // rotates relayed logins over a home HA list
	closeOnce sync.Once
	closeErr  error
	finished  map[AttemptID]struct{}
	finishedQ []AttemptID
	wg        sync.WaitGroup
}

// maxFinished bounds the finished-attempt memory.
const maxFinished = 10000

func (p *Proxy) rememberFinished(id AttemptID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.finished[id]; ok {
		return
	}
	p.finished[id] = struct{}{}
	p.finishedQ = append(p.finishedQ, id)
	if len(p.finishedQ) > maxFinished {
		delete(p.finished, p.finishedQ[0])
		p.finishedQ = p.finishedQ[1:]
	}
}

// Open validates cfg, opens the state, recovers attempts left by a
// previous run and binds the listeners. Nothing is served until Run.
func Open(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Proxy{cfg: cfg, log: cfg.Logger, identity: cfg.Identity, homes: cfg.Home, attempts: map[AttemptID]*attempt{}, finished: map[AttemptID]struct{}{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.audit = p.log.With("audit", "amrmproxy")
	if err := p.login(); err != nil {
		return nil, err
	}
	if p.identity == nil {
		p.identity = TokenIdentity
	}
	// Production: no SecretManager and no connector given. Each AM's
	// DIGEST-MD5 login is relayed to the home RM, which alone can check it,
	// and the relayed connection carries the proxy's home calls for that AM.
	relay := cfg.Secrets == nil && cfg.Home == nil
	switch {
	case relay:
		p.homes = relayHomeConnector
	case p.homes == nil:
		p.homes = &TokenHomeConnector{Passwords: cfg.Passwords, DialTimeout: cfg.DialTimeout.D(), Logger: p.log}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	var err error
	if p.metrics, err = newMetrics(cfg.Registerer); err != nil {
		return nil, fmt.Errorf("amrmproxy metrics: %w", err)
	}
	p.brk = newBreakers(cfg.Breaker, func(sc string, to gobreaker.State) {
		p.metrics.breaker.WithLabelValues(sc).Set(rmbreaker.StateValue(to))
		p.log.Warn("sub-cluster circuit breaker changed", "subcluster", sc, "state", to.String())
	})
	p.members = newMembership(cfg.Store, p.log)
	switch {
	case cfg.Resolver != nil:
		p.resolver = cfg.Resolver
	case cfg.MachineList != "":
		ml, err := policies.LoadMachineList(cfg.MachineList)
		if err != nil {
			return nil, fmt.Errorf("machine_list: %w", err)
		}
		p.resolver = ml
	default:
		ml := policies.NewMachineList(nil)
		p.learner = &nodeLearner{ml: ml, log: p.log, dial: p.clientRM}
		p.resolver = ml
	}
	p.facade, err = policies.NewFacade(policies.FacadeConfig{Source: queueAliases{cfg.Store}, Default: policies.PolicyConfig{Type: cfg.DefaultPolicy},
		Env: policies.Env{Resolver: p.resolver}, Logger: p.log, Registerer: cfg.Registerer})
	if err != nil {
		return nil, err
	}
	if p.state, err = state.Open(cfg.DataDir, cfg.NoSync); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	ictx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	if err := p.members.refresh(ictx); err != nil {
		p.log.Warn("membership not loaded yet; will retry", "err", err)
	}
	cancel()
	if p.amrmLn = cfg.AMRMListener; p.amrmLn == nil {
		if p.amrmLn, err = net.Listen("tcp", cfg.AMRMAddress); err != nil {
			return nil, fmt.Errorf("amrm_address: %w", err)
		}
	}
	p.proxyID = cfg.ProxyID
	if p.proxyID == "" {
		host, _ := os.Hostname()
		_, port, _ := net.SplitHostPort(p.amrmLn.Addr().String())
		p.proxyID = net.JoinHostPort(host, port)
	}
	p.registry = cfg.Registry
	if cs, ok := cfg.Store.(ClientStore); ok && p.registry == nil && cs.C != nil {
		p.registry = cs.C
	}
	if p.registry == nil {
		p.log.Warn("no UAM registry: UAMs are known to this proxy only (a later AM attempt on another host cannot re-attach them, a kill through the router cannot reach them)")
	}
	if err := p.recover(); err != nil {
		return nil, err
	}
	scfg := hadoopipc.DefaultServerConfig()
	scfg.Logger, scfg.Registerer, scfg.Secrets, scfg.AllowSimple = p.log, cfg.Registerer, cfg.Secrets, false
	if relay {
		scfg.TokenRelay = hadoopipc.NewDialingRelay(p.HomeAMRMAddress,
			hadoopipc.RelayConfig{Protocol: hadoopipc.ProtocolApplicationMaster, Logger: p.log})
		scfg.RelayUser = RelayUser
	}
	if err := scfg.Validate(); err != nil {
		return nil, fmt.Errorf("amrmproxy: AM-facing server: %w ", err)
	}
	p.srv = hadoopipc.NewServer(scfg)
	if err := p.srv.Register(hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationMaster, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("registerApplicationMaster", newOf[yarnpb.RegisterApplicationMasterRequestProto], p.handleRegister),
		hadoopipc.NewMethod("allocate", newOf[yarnpb.AllocateRequestProto], p.handleAllocate),
		hadoopipc.NewMethod("finishApplicationMaster", newOf[yarnpb.FinishApplicationMasterRequestProto], p.handleFinish),
	}}); err != nil {
		return nil, err
	}
	if p.webLn = cfg.WebListener; p.webLn == nil && cfg.WebAddress != "" {
		if p.webLn, err = net.Listen("tcp", cfg.WebAddress); err != nil {
			return nil, fmt.Errorf("web_address: %w", err)
		}
	}
	ok = true
	return p, nil
}

func newOf[T any]() *T { return new(T) }

// AMRMAddr is the bound AM-facing address.
func (p *Proxy) AMRMAddr() string { return p.amrmLn.Addr().String() }

// WebAddr is the bound web address, or "" if disabled.
func (p *Proxy) WebAddr() string {
	if p.webLn == nil {
		return ""
	}
	return p.webLn.Addr().String()
}

// Run serves until ctx ends, then shuts down.
func (p *Proxy) Run(ctx context.Context) error {
	errc := make(chan error, 2)
	go func() { errc <- p.srv.Serve(p.amrmLn) }()
	if p.webLn != nil {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if err := p.Ready(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ready")
		})
		if p.cfg.Gatherer != nil {
			mux.Handle("/prom", promhttp.HandlerFor(p.cfg.Gatherer, promhttp.HandlerOpts{}))
		}
		p.web = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := p.web.Serve(p.webLn); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.refreshLoop(p.ctx) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	p.Close()
	if errors.Is(err, hadoopipc.ErrServerClosed) {
		err = nil
	}
	return err
}

// Ready says whether the proxy can serve AMs: membership loaded and its
// home sub-cluster known.
func (p *Proxy) Ready() error {
	if !p.members.ready() {
		return errors.New("membership not loaded from the state store")
	}
	if _, ok := p.members.get(p.cfg.SubClusterID); !ok {
		return fmt.Errorf("home sub-cluster %s is not in the membership", p.cfg.SubClusterID)
	}
	return nil
}

func (p *Proxy) refreshLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.MembershipRefresh.D())
	defer t.Stop()
	nodesEvery := 0
	for {
		if err := p.members.refresh(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("membership refresh failed; using the last good view", "err", err)
		}
		if p.learner != nil && nodesEvery%10 == 0 {
			p.learner.learn(ctx, p.members.all())
		}
		p.expire(time.Now())
		p.checkSilent(time.Now())
		p.saveHeld()
		nodesEvery++
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// expire forgets attempts whose AM has not called for AttemptExpiry: an
// AM that crashed or whose next attempt runs elsewhere never finishes
// here, and its state must not live forever.
func (p *Proxy) expire(now time.Time) {
	limit := now.Add(-p.cfg.AttemptExpiry.D()).UnixNano()
	var gone []*attempt
	p.mu.Lock()
	for id, a := range p.attempts {
		if a.lastCall.Load() < limit {
			delete(p.attempts, id)
			gone = append(gone, a)
		}
	}
	p.mu.Unlock()
	for _, a := range gone {
		a.mu.Lock() // wait out a call in progress
		a.close()
		a.mu.Unlock()
		p.dropAttempt(a)
		p.metrics.attemptsEnded.WithLabelValues(endExpired).Inc()
		p.audit.Info("attempt-end", "attempt", a.id.String(), "reason", endExpired, "idle_for", p.cfg.AttemptExpiry.D().String())
	}
}

// RefreshNow re-reads membership and the node map (tests, dev).
func (p *Proxy) RefreshNow(ctx context.Context) error {
	if err := p.members.refresh(ctx); err != nil {
		return err
	}
	if p.learner != nil {
		p.learner.learn(ctx, p.members.all())
	}
	return nil
}

// Close stops serving and releases everything. Per-attempt state stays on
// disk for the next run. It may be called more than once.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() { p.closeErr = p.close() })
	return p.closeErr
}

func (p *Proxy) close() error {
	p.cancel()
	// webLn too: web closes it only once it serves.
	_ = closer.All(p.srv, p.amrmLn, p.web, p.webLn)
	p.wg.Wait()
	p.mu.Lock()
	for _, a := range p.attempts {
		a.close()
	}
	p.mu.Unlock()
	if c, ok := p.homes.(interface{ Close() }); ok {
		c.Close()
	}
	if p.learner != nil {
		p.learner.close()
	}
	if p.krb != nil {
		p.krb.Login.Destroy()
	}
	if p.state != nil {
		return p.state.Close()
	}
	return nil
}

// recover rebuilds attempts from disk. Each answers ApplicationMaster-
// NotRegisteredException until its AM registers again; UAMs are
// re-attached with their stored tokens, never submitted again.
func (p *Proxy) recover() error {
	recs, err := p.state.Load()
	if err != nil {
		return err
	}
	for _, r := range recs {
		id, err := parseAttemptID(r.Attempt.Attempt)
		if err != nil || r.Attempt.Register == nil {
			p.log.Warn("dropping unusable attempt record", "attempt", r.Attempt.Attempt, "err", err)
			_ = p.state.DeleteAttempt(r.Attempt.Attempt)
			continue
		}
		a := newAttempt(p, id, r.Attempt.Home)
		a.queue, a.user = r.Attempt.Queue, r.Attempt.User
		a.regReq = &yarnpb.RegisterApplicationMasterRequestProto{}
		a.regResp = &yarnpb.RegisterApplicationMasterResponseProto{}
		if err := proto.Unmarshal(r.Attempt.Register, a.regReq); err != nil {
			return fmt.Errorf("attempt %s: register request: %w", id, err)
		}
		if err := proto.Unmarshal(r.Attempt.Response, a.regResp); err != nil {
			return fmt.Errorf("attempt %s: register response: %w", id, err)
		}
		a.delivery = r.Delivery
		for k, sc := range r.Containers {
			ck, err := parseContainerKey(k)
			if err != nil {
				return fmt.Errorf("attempt %s: %w", id, err)
			}
			a.containers[ck] = sc
		}
		lost := map[string][]*yarnpb.ContainerIdProto{}
		for k, sc := range r.Aborted {
			ck, err := parseContainerKey(k)
			if err != nil {
				return fmt.Errorf("attempt %s: %w", id, err)
			}
			a.aborted[ck] = sc
			lost[sc] = append(lost[sc], ck.proto())
		}
		for _, ur := range r.UAMs {
			tok := &commonpb.TokenProto{}
			if err := proto.Unmarshal(ur.Token, tok); err != nil {
				return fmt.Errorf("attempt %s UAM %s: token: %w", id, ur.SubCluster, err)
			}
			u := newUAMConn(a, ur.SubCluster)
			nm, bad := unmarshalNMTokens(ur.NMTokens)
			if bad > 0 {
				p.log.Warn("stored NM tokens do not decode; skipping them", "attempt", id, "subcluster", ur.SubCluster, "bad", bad)
			}
			u.nm.putAll(nm)
			a.uams[ur.SubCluster] = u
			// Whether their release reached the RM before the restart is
			// unknown; releasing twice is harmless (the RM ignores it).
			u.release(lost[ur.SubCluster])
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				u.reattach(p, tok, ur.Registered)
			}()
		}
		p.attempts[id] = a
		p.metrics.attempts.Inc()
		p.metrics.recoveries.Inc()
		p.audit.Info("recover", "attempt", id.String(), "uams", len(r.UAMs), "containers", len(r.Containers))
	}
	return nil
}

// reattach connects a recovered UAM with its stored token; one whose
// registration never completed registers now.
func (u *uamConn) reattach(p *Proxy, tok *commonpb.TokenProto, registered bool) {
	u.callStarted(time.Now())
	err := u.attach(p, tok, false)
	if err == nil {
		u.rel.setRegister(u.a.regReq)
		u.mu.Lock()
		u.registered = registered
		u.mu.Unlock()
		if !registered {
			err = u.register(p.ctx, p) // writes the registry row too
		} else {
			// The RM's last answer to this attempt's UAM may have been on its
			// way when the proxy died: the first heartbeat fetches it again.
			u.rel.replayLost()
			// Not used until its registry row names this proxy and attempt.
			err = u.putRow(p.ctx, true)
		}
	}
	u.callEnded(err)
	if err != nil {
		p.log.Warn("UAM re-attach failed", "attempt", u.a.id, "subcluster", u.sc, "err", err)
	}
	u.up(p, err)
}

func parseAttemptID(s string) (AttemptID, error) {
	var id AttemptID
	if _, err := fmt.Sscanf(s, "appattempt_%d_%d_%d", &id.ClusterTimestamp, &id.App, &id.Attempt); err != nil {
		return AttemptID{}, fmt.Errorf("bad attempt id %q: %w", s, err)
	}
	return id, nil
}

// appUser asks the home RM whose application this is: UAMs are submitted
// as that user (the RM hands a UAM's token to its owner only).
func (p *Proxy) appUser(ctx context.Context, home SubCluster, id AttemptID) string {
	// As the proxy itself: the submitter is what is being asked. An RM
	// gives the user in the report even to callers without VIEW_APP.
	c, err := p.clientRM(hostport.SplitList(home.ClientRMServiceAddress), "")
	if err == nil {
		defer c.Close()
		resp := &yarnpb.GetApplicationReportResponseProto{}
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
		err = c.Call(cctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id.ApplicationIDProto()}, resp)
		cancel()
		if err == nil && resp.GetApplicationReport().GetUser() != "" {
			return resp.GetApplicationReport().GetUser()
		}
	}
	p.log.Warn("cannot learn the application's user from its home RM; UAMs run as the AM's login name", "attempt", id, "err", err)
	u, _ := hadoopipc.UserFromContext(ctx)
	return u.Name
}

// ---- IPC handlers ----

// finishedError marks a call of an attempt that finished through this
// proxy; it carries the attempt so each handler can word the RM's answer.
type finishedError struct{ id AttemptID }

func (e *finishedError) Error() string { return "application attempt " + e.id.String() + " finished" }

func (p *Proxy) lookup(ctx context.Context, create bool) (*attempt, error) {
	id, err := p.identity(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, done := p.finished[id]; done {
		return nil, &finishedError{id}
	}
	a := p.attempts[id]
	if a == nil {
		if !create {
			return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationMasterNotRegistered,
				"AM is not registered for known application attempt: %s or the AMRMProxy restarted after AM registered. AM should re-register.", id)
		}
		a = newAttempt(p, id, p.cfg.SubClusterID)
		p.attempts[id] = a
		p.metrics.attempts.Inc()
	}
	a.touch()
	return a, nil
}

func (p *Proxy) handleRegister(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	a, err := p.lookup(ctx, true)
	if fe := (*finishedError)(nil); errors.As(err, &fe) {
		return nil, hadoopipc.Errorf(hadoopipc.ClassInvalidApplicationMasterRequest, "Application doesn't exist in cache %s", fe.id)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.register(ctx, req)
	p.audit.Info("register", "attempt", a.id.String(), "home", a.home, "ok", err == nil)
	if err == nil {
		p.metrics.registers.Inc()
	}
	return resp, toRemote(err)
}

func (p *Proxy) handleAllocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	start := time.Now()
	a, err := p.lookup(ctx, false)
	if fe := (*finishedError)(nil); errors.As(err, &fe) {
		return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationAttemptNotFound, "Application attempt %s doesn't exist in ApplicationMasterService cache.", fe.id)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.allocate(ctx, req)
	p.metrics.allocate.Observe(time.Since(start).Seconds())
	return resp, toRemote(err)
}

func (p *Proxy) handleFinish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	a, err := p.lookup(ctx, false)
	if fe := (*finishedError)(nil); errors.As(err, &fe) {
		// A retried finish after success: the RM answers true too.
		return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
	}
	if err != nil {
		return nil, err
	}
	resp, done, err := a.finish(ctx, req)
	p.audit.Info("finish", "attempt", a.id.String(), "status", req.GetFinalApplicationStatus().String(), "unregistered", done, "ok", err == nil)
	if err != nil {
		return nil, toRemote(err)
	}
	if done {
		p.mu.Lock()
		mine := p.attempts[a.id] == a // not ended meanwhile (silent check, expiry)
		delete(p.attempts, a.id)
		p.mu.Unlock()
		p.rememberFinished(a.id)
		a.close()
		if mine {
			p.dropAttempt(a)
		}
		p.metrics.finishes.Inc()
	}
	return resp, nil
}
