// Package router is the YARN Federation Router: it serves
// ApplicationClientProtocol (Hadoop IPC) and the RM REST API to unmodified
// YARN clients and routes every call to the right sub-cluster RM(s).
// DESIGN.md explains the decisions.
package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sony/gobreaker/v2"
	"golang.org/x/net/netutil"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/closer"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/router/rest"
	"github.com/yarnfed/yarnfed/router/spnego"
)

// Router is one stateless router instance; run any number side by side.
type Router struct {
	cfg       Config
	log       *slog.Logger
	store     StateStore
	members   *membership
	homes     *homeCache
	policies  *queuePolicies
	pool      *pool
	adminPool *pool // RM admin protocol clients
	brk       *breakers
	metrics   *metrics
	uam       *uamMetrics // kill fan-out and UAM registry (uam.go)
	call      RMCaller    // breaker -> metrics -> pool

	ipc      *hadoopipc.Server
	clientLn net.Listener
	admin    *hadoopipc.Server // nil: admin port off
	adminLn  net.Listener
	adminACL appacl.ACL
	groupsOf func(user string) []string
	authz    *authz
	appACLs  *appacl.Table // nil: application ACLs off
	webAuth  *spnego.Auth  // nil: pseudo auth (?user.name=)
	web      *http.Server
	webLn    net.Listener
	ready    chan struct{}
	started  time.Time
	http     *http.Client // to RM REST APIs
	restAPI  *rest.API    // the RM REST API room (rooms.go)

	proxyOnce sync.Once
	proxyHTTP *http.Client // to home RMs' web proxies (proxy.go): streams, no overall timeout

	tokens   *dtoken.Manager // nil: the store keeps no delegation tokens
	krb      *kerberosSetup  // nil: Kerberos off
	scSeries sync.Map        // sub-cluster + NUL + method -> *scSeries

	closeOnce sync.Once
	readyOnce sync.Once

	// crashAt, when set (tests), aborts a submission at the named step to
	// model a router dying between steps.
	crashAt func(step string) bool
}

// Submission steps at which a test may inject a crash.
const (
	stepPolicy = "after-policy"      // home chosen, nothing stored
	stepHome   = "after-home-stored" // home stored, RM not called
	stepSubmit = "after-submit"      // RM accepted, client not answered
)

// New validates cfg, binds the listeners (so addresses are known before Run)
// and wires the router. Close releases what New opened if Run never runs.
func New(cfg Config) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("router config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg, log: log, store: cfg.Store, ready: make(chan struct{}), started: time.Now(),
		http: cfg.rmHTTPClient()}
	var err error
	if r.authz, err = buildAuthz(cfg.Authz, cfg.AdminACL); err != nil {
		return nil, fmt.Errorf("router authz: %w", err)
	}
	r.appACLs, r.groupsOf = r.authz.appACLs, r.authz.groups.Groups
	if ss, ok := cfg.Store.(appacl.SubmissionStore); ok && r.appACLs != nil {
		r.appACLs.LoadFrom(ss) // appacl/store.go
	}
	if cfg.SPNEGO.Keytab != "" {
		if r.webAuth, err = spnego.New(cfg.SPNEGO, log); err != nil {
			return nil, fmt.Errorf("router spnego: %w", err)
		}
	}
	r.metrics = newMetrics(cfg.Registerer)
	r.uam = newUAMMetrics(cfg.Registerer)
	r.brk = newBreakers(cfg.Breaker, func(sc SubClusterID, to gobreaker.State) {
		r.metrics.breakerState(sc, to)
		r.log.Warn("sub-cluster circuit breaker changed", "subcluster", sc, "state", to.String())
	})
	r.members = newMembership(cfg.Store, r.brk, log)
	r.members.expiry = cfg.SubClusterHeartbeatExpiry.D()
	if cfg.Kerberos.Enabled() {
		ks, err := cfg.Kerberos.setup(log)
		if err != nil {
			return nil, fmt.Errorf("router: %w", err)
		}
		r.krb = ks
	}
	r.pool = newPool(r.rmDialer(cfg, cfg.Dial, hadoopipc.ProtocolApplicationClient, clientAddr), clientAddr, cfg.MaxRMClients)
	r.pool.evictions = r.metrics.evictions.WithLabelValues("client").Inc
	r.adminPool = newPool(r.rmDialer(cfg, cfg.AdminDial, hadoopipc.ProtocolRMAdmin, adminAddr), adminAddr, cfg.MaxRMClients)
	r.adminPool.evictions = r.metrics.evictions.WithLabelValues("admin").Inc
	r.members.onFetch = func(rows map[SubClusterID]SubClusterInfo) {
		r.brk.retain(rows) // before anyone routes on the new rows
		r.pool.retain(rows)
		r.adminPool.retain(rows)
		n := 0
		for _, sc := range rows {
			if r.members.routable(sc) {
				n++
			}
		}
		r.metrics.routable.Set(float64(n))
	}
	r.homes = newHomeCache(cfg.HomeCacheTTL.D(), cfg.HomeCacheSize)
	factory := cfg.Policies
	if factory == nil {
		factory = &PoliciesFactory{Registry: policies.NewDefaultRegistry(), PublishedTTL: cfg.PublishedCapacityTTL.D()}
	}
	r.policies = &queuePolicies{store: cfg.Store, factory: factory, def: cfg.DefaultPolicy, log: log, cache: map[string]policyEntry{}}
	r.call = r.brk.intercept(r.measure(r.pool.call))

	if r.clientLn = cfg.ClientListener; r.clientLn == nil {
		if r.clientLn, err = net.Listen("tcp", cfg.ClientRMAddress); err != nil {
			return nil, fmt.Errorf("router clientrm listen: %w", err)
		}
	}
	if r.webLn = cfg.WebListener; r.webLn == nil && cfg.WebAddress != "" {
		if r.webLn, err = net.Listen("tcp", cfg.WebAddress); err != nil {
			_ = r.clientLn.Close()
			return nil, fmt.Errorf("router web listen: %w", err)
		}
	}

	ipcCfg := hadoopipc.DefaultServerConfig()
	cfg.IPC.apply(&ipcCfg)
	ipcCfg.AuthorizeConnection = r.authorizeConnection()
	ipcCfg.Logger = log
	ipcCfg.Registerer = cfg.Registerer
	r.secure(&ipcCfg)
	if ts, ok := cfg.Store.(dtoken.Store); ok {
		service := cfg.TokenService
		if service == "" {
			service = r.clientLn.Addr().String()
		}
		r.tokens = dtoken.New(ts, service)
		ipcCfg.Secrets = r.tokens // SASL TOKEN logins with router-issued tokens
	}
	r.ipc = hadoopipc.NewServer(ipcCfg)
	if err := r.ipc.Register(r.clientProtocol()); err != nil {
		r.Close()
		return nil, err
	}
	r.restAPI = r.newREST()
	if r.webLn != nil {
		// Per address outside the global cap, so a refused connection
		// gives its global slot straight back.
		r.webLn = limitPerAddr(netutil.LimitListener(r.webLn, cfg.Web.MaxConns), cfg.Web.MaxConnsPerAddr,
			r.metrics.webRefused.Inc)
		r.web = &http.Server{
			Handler:           r.Handler(),
			ReadHeaderTimeout: cfg.Web.ReadHeaderTimeout.D(),
			ReadTimeout:       cfg.Web.ReadTimeout.D(),
			WriteTimeout:      cfg.Web.WriteTimeout.D(),
			IdleTimeout:       cfg.Web.IdleTimeout.D(),
			MaxHeaderBytes:    cfg.Web.MaxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		}
	}
	if err := r.openAdmin(cfg, log); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// rmDialer is how the router dials one RM protocol: the configured DialFunc
// when there is one, else Hadoop IPC to the address addrOf picks, logged in
// with Kerberos when the router has a Kerberos login.
func (r *Router) rmDialer(cfg Config, given DialFunc, protocol string, addrOf func(SubClusterInfo) string) DialFunc {
	if given != nil {
		return given
	}
	if r.krb != nil && r.krb.login != nil {
		return HadoopKerberosDialer(protocol, addrOf, r.krb.login, cfg.Kerberos.RMPrincipal, cfg.DialTimeout.D(), r.log)
	}
	return hadoopDialer(protocol, addrOf, cfg.DialTimeout.D(), r.log)
}

// openAdmin binds the admin port and builds its IPC server: its own
// server, so that only ResourceManagerAdministrationProtocol is served
// there and router-issued delegation tokens do not log in to it (an RM's
// admin port does not take them either).
func (r *Router) openAdmin(cfg Config, log *slog.Logger) error {
	if cfg.AdminListener == nil && cfg.AdminAddress == "" {
		return nil
	}
	acl, err := appacl.ParseACL(cfg.AdminACL)
	if err != nil {
		return fmt.Errorf("router admin_acl: %w", err)
	}
	r.adminACL = acl
	if r.adminLn = cfg.AdminListener; r.adminLn == nil {
		if r.adminLn, err = net.Listen("tcp", cfg.AdminAddress); err != nil {
			return fmt.Errorf("router admin listen: %w", err)
		}
	}
	acfg := hadoopipc.DefaultServerConfig()
	cfg.IPC.apply(&acfg)
	acfg.AuthorizeConnection = r.authorizeConnection()
	acfg.Logger = log
	r.secure(&acfg)
	r.admin = hadoopipc.NewServer(acfg)
	return r.admin.Register(r.adminProtocol())
}

// secure adds Kerberos to an IPC port's config when it is on: SASL
// KERBEROS offered, SIMPLE refused (unless kerberos.allow_simple).
func (r *Router) secure(c *hadoopipc.ServerConfig) {
	if r.krb == nil {
		return
	}
	c.Kerberos = r.krb.server
	c.AllowSimple = r.cfg.Kerberos.AllowSimple
	c.Authorize = r.authorizeProxy
}

// AdminAddr is the bound admin address, or nil when the admin port is off.
func (r *Router) AdminAddr() net.Addr {
	if r.adminLn == nil {
		return nil
	}
	return r.adminLn.Addr()
}

// ClientRMAddr is the bound ApplicationClientProtocol address.
func (r *Router) ClientRMAddr() net.Addr { return r.clientLn.Addr() }

// WebAddr is the bound REST address, or nil when REST is off.
func (r *Router) WebAddr() net.Addr {
	if r.webLn == nil {
		return nil
	}
	return r.webLn.Addr()
}

// Run serves until ctx ends, then drains in-flight calls (up to 10 s).
func (r *Router) Run(ctx context.Context) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Serve first: /healthz must answer while the store is still out of
	// reach (a liveness probe would otherwise restart a router that is only
	// waiting for it); /readyz says "starting" until the first membership
	// read, and calls wait for a routable sub-cluster meanwhile.
	errc := make(chan error, 3)
	go func() { errc <- r.ipc.Serve(r.clientLn) }()
	if r.web != nil {
		go func() { errc <- r.web.Serve(r.webLn) }()
	}
	if r.admin != nil {
		go func() { errc <- r.admin.Serve(r.adminLn) }()
	}
	r.log.Info("router serving", "clientrm", r.ClientRMAddr().String(), "web", fmt.Sprint(r.WebAddr()), "admin", fmt.Sprint(r.AdminAddr()))
	go func() {
		if err := r.members.refresh(runCtx); err != nil {
			// Not fatal: the store may come up after the router.
			r.log.Warn("initial membership read failed", "err", err)
		}
		r.readyOnce.Do(func() { close(r.ready) })
		r.members.run(runCtx, r.cfg.MembershipRefresh.D())
	}()

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	_ = r.ipc.Shutdown(sctx)
	if r.web != nil {
		_ = r.web.Shutdown(sctx)
	}
	if r.admin != nil {
		_ = r.admin.Shutdown(sctx)
	}
	r.pool.close()
	r.adminPool.close()
	if r.krb != nil && r.krb.login != nil {
		r.krb.login.Destroy() // ends its TGT renewal goroutine; Close may repeat it
	}
	if errors.Is(err, hadoopipc.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Close stops everything at once (Run's graceful path is preferred).
func (r *Router) Close() error {
	r.closeOnce.Do(func() {
		_ = closer.All(r.ipc, r.clientLn, r.web, r.webLn, r.admin, r.adminLn)
		r.pool.close()
		r.adminPool.close()
		if r.krb != nil && r.krb.login != nil {
			r.krb.login.Destroy()
		}
	})
	return nil
}

// scSeries are the resolved per-(sub-cluster, method) metric series.
type scSeries struct {
	ok, appErr, down prometheus.Counter
	lat              prometheus.Observer
}

func (r *Router) series(sc SubClusterID, method string) *scSeries {
	k := string(sc) + "\x00" + method
	if s, ok := r.scSeries.Load(k); ok {
		return s.(*scSeries)
	}
	s := &scSeries{
		ok:     r.metrics.scCalls.WithLabelValues(string(sc), method, "ok"),
		appErr: r.metrics.scCalls.WithLabelValues(string(sc), method, "app_error"),
		down:   r.metrics.scCalls.WithLabelValues(string(sc), method, "down"),
		lat:    r.metrics.scLatency.WithLabelValues(string(sc)),
	}
	v, _ := r.scSeries.LoadOrStore(k, s)
	return v.(*scSeries)
}

// measure records per-sub-cluster call metrics around next.
func (r *Router) measure(next RMCaller) RMCaller {
	return func(ctx context.Context, sc SubClusterInfo, user, method string, req, resp proto.Message) error {
		start := time.Now()
		err := next(ctx, sc, user, method, req, resp)
		s := r.series(sc.ID, method)
		switch {
		case err == nil:
			s.ok.Inc()
		case rmDown(err):
			s.down.Inc()
		default:
			s.appErr.Inc()
		}
		s.lat.Observe(time.Since(start).Seconds())
		return err
	}
}

// callSC makes one call to one sub-cluster as the calling user, bounded by
// CallTimeout, and names the sub-cluster in any error.
func (r *Router) callSC(ctx context.Context, sc SubClusterInfo, method string, req, resp proto.Message) error {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout.D())
	defer cancel()
	err := r.call(cctx, sc, hadoopipc.UserName(ctx), method, req, resp)
	if err != nil {
		if errors.Is(err, ErrSubClusterUnavailable) {
			r.metrics.scCalls.WithLabelValues(string(sc.ID), method, "circuit_open").Inc()
		}
		return &SubClusterError{SubCluster: sc.ID, Method: method, Err: err}
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
