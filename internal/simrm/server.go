package simrm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// RM is one simulated ResourceManager: the core state machine plus its
// Hadoop IPC servers (client, scheduler, admin) and REST server.
type RM struct {
	cfg Config
	st  *shared

	standby atomic.Bool
	faults  atomic.Pointer[FaultConfig]

	stallMu sync.Mutex
	stall   chan struct{} // closed when not stalled

	mu      sync.Mutex
	running bool
	servers []*hadoopipc.Server
	web     *http.Server
	addrs   Addrs
	webAddr string
	stop    context.CancelFunc
	wg      sync.WaitGroup

	metrics *rmMetrics
}

// shared is the state an HA pair shares (Hadoop shares it through the RM
// state store): both RMs of a pair point at one core.
type shared struct {
	mu sync.RWMutex
	c  *core
	// pair are the RMs sharing this state (one, or an HA pair): a standby's
	// web pages redirect to the active one, as Hadoop's RMWebAppFilter does.
	pair []*RM
}

// activeWeb is the web address of an active RM of the pair, or "".
func (s *shared) activeWeb() string {
	s.mu.RLock()
	pair := s.pair
	s.mu.RUnlock()
	for _, rm := range pair {
		if a := rm.Addrs().Web; !rm.Standby() && a != "" {
			return a
		}
	}
	return ""
}

// Addrs are the bound listen addresses ("" for a disabled endpoint).
type Addrs struct {
	Client    string // ApplicationClientProtocol (yarn.resourcemanager.address)
	Scheduler string // ApplicationMasterProtocol (yarn.resourcemanager.scheduler.address)
	Admin     string // ResourceManagerAdministrationProtocol (yarn.resourcemanager.admin.address)
	Web       string // REST (yarn.resourcemanager.webapp.address)
}

type rmMetrics struct {
	calls  *prometheus.CounterVec
	faults prometheus.Counter
}

// New validates cfg and builds a simulated RM. It does not listen: call
// Start.
func New(cfg Config) (*RM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &RM{cfg: cfg, st: &shared{c: newCore(cfg)}}
	r.st.pair = []*RM{r}
	r.init()
	return r, nil
}

// NewStandby builds the second RM of an HA pair: it shares active's state,
// starts as standby, and answers StandbyException until TransitionToActive.
// cfg supplies its own listen addresses, logger and Registerer (which must
// not be active's: the metric names are the same); cluster identity and
// everything else come from active.
func NewStandby(active *RM, cfg Config) (*RM, error) {
	c := active.cfg
	c.ClientAddr, c.SchedulerAddr, c.AdminAddr, c.WebAddr = cfg.ClientAddr, cfg.SchedulerAddr, cfg.AdminAddr, cfg.WebAddr
	c.Registerer = cfg.Registerer
	if cfg.Logger != nil {
		c.Logger = cfg.Logger
	}
	r := &RM{cfg: c, st: active.st}
	r.st.mu.Lock()
	r.st.pair = append(append([]*RM(nil), r.st.pair...), r)
	r.st.mu.Unlock()
	r.init()
	r.standby.Store(true)
	return r, nil
}

func (r *RM) init() {
	r.faults.Store(&r.cfg.Faults)
	r.stall = make(chan struct{})
	close(r.stall)
	if r.cfg.Faults.Stalled {
		r.stall = make(chan struct{})
	}
	r.standby.Store(r.cfg.Standby)
	r.metrics = &rmMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_simrm_calls_total", Help: "RPC and REST calls served by the simulated RM, by endpoint.",
		}, []string{"endpoint"}),
		faults: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yarnfed_simrm_injected_faults_total", Help: "Calls failed on purpose by fault injection.",
		}),
	}
	if r.cfg.Registerer != nil {
		r.cfg.Registerer.MustRegister(r.metrics.calls, r.metrics.faults)
		r.cfg.Registerer.MustRegister(r.stateCollectors()...)
	}
}

func (r *RM) core() *core {
	r.st.mu.RLock()
	defer r.st.mu.RUnlock()
	return r.st.c
}

// Config returns the validated configuration (cluster timestamp and epoch
// filled in).
func (r *RM) Config() Config { return r.cfg }

// Epoch is the current RM epoch (it grows by one per restart or failover).
func (r *RM) Epoch() int64 {
	c := r.core()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// Start binds every configured address and serves until Close. Listening
// errors are returned at once; the bound addresses are then in Addrs.
func (r *RM) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return errors.New("simrm: already running")
	}
	return r.startLocked(ctx, r.cfg.ClientAddr, r.cfg.SchedulerAddr, r.cfg.AdminAddr, r.cfg.WebAddr)
}

func (r *RM) startLocked(ctx context.Context, client, sched, admin, web string) (err error) {
	var lns []net.Listener
	defer func() {
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
		}
	}()
	listen := func(name, addr string) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("simrm: %s address: %w", name, err)
		}
		lns = append(lns, ln)
		return ln, nil
	}
	clientLn, err := listen("client", client)
	if err != nil {
		return err
	}
	schedLn, err := listen("scheduler", sched)
	if err != nil {
		return err
	}
	adminLn, err := listen("admin", admin)
	if err != nil {
		return err
	}
	webLn, err := listen("web", web)
	if err != nil {
		return err
	}
	addrOf := func(ln net.Listener) string {
		if ln == nil {
			return ""
		}
		return ln.Addr().String()
	}
	r.addrs = Addrs{Client: addrOf(clientLn), Scheduler: addrOf(schedLn), Admin: addrOf(adminLn), Web: addrOf(webLn)}
	r.webAddr = r.addrs.Web
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = cancel
	r.servers = nil
	serve := func(ln net.Listener, secrets hadoopipc.SecretManager, allowSimple bool, protos ...hadoopipc.Protocol) {
		if ln == nil {
			return
		}
		sc := hadoopipc.DefaultServerConfig()
		sc.Logger = r.cfg.Logger
		sc.Secrets = secrets
		sc.AllowSimple = allowSimple
		sc.Interceptors = []hadoopipc.Interceptor{r.faultInterceptor()}
		// A Hadoop RM has no per-address cap, and every router, proxy and
		// agent in a loopback federation dials from 127.0.0.1 (one connection
		// per user): only the total cap applies, as on a real RM.
		sc.MaxConnsPerAddr = sc.MaxConns
		srv := hadoopipc.NewServer(sc)
		for _, p := range protos {
			if err := srv.Register(p); err != nil {
				panic(err) // static protocol tables; a duplicate is a programming error
			}
		}
		r.servers = append(r.servers, srv)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, hadoopipc.ErrServerClosed) {
				r.cfg.Logger.Error("simrm: IPC server stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
	}
	serve(clientLn, nil, true, r.clientProtocol())
	// Real AMs always log in with their AMRMToken; Hadoop's scheduler port
	// does not offer SIMPLE.
	serve(schedLn, amrmSecrets{r}, false, r.masterProtocol())
	serve(adminLn, nil, true, r.adminProtocol())
	if webLn != nil {
		web := &http.Server{Handler: r.restHandler(), ReadHeaderTimeout: 10 * time.Second}
		r.web = web
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			if err := web.Serve(webLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.cfg.Logger.Error("simrm: REST server stopped", "err", err)
			}
		}()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.run(runCtx)
	}()
	r.running = true
	r.cfg.Logger.Info("simrm started", "cluster", r.cfg.ClusterID, "epoch", r.Epoch(),
		"client", r.addrs.Client, "scheduler", r.addrs.Scheduler, "admin", r.addrs.Admin, "web", r.addrs.Web)
	return nil
}

// run drives the simulation: one tick per TickInterval, and one soon after
// a kick (new asks, new applications). Only the active RM of a pair ticks.
func (r *RM) run(ctx context.Context) {
	t := time.NewTicker(r.cfg.TickInterval.D())
	defer t.Stop()
	for {
		c := r.core()
		// A standby must not swallow kicks meant for the active RM it
		// shares the core with.
		kick := c.kick
		if r.standby.Load() {
			kick = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		if !r.standby.Load() {
			c.tick()
		}
	}
}

// Tick advances the simulation once, synchronously (for tests that do not
// Start the RM, or want determinism).
func (r *RM) Tick() { r.core().tick() }

// AMRMToken returns the current attempt of app and its AMRMToken, as an
// AM container finds it in its credentials: for tests and tools that run
// a managed application's AM outside simrm (SimAM.Off).
func (r *RM) AMRMToken(app AppID) (AttemptID, *commonpb.TokenProto, error) {
	id, t, err := r.core().CurrentAMRMToken(app)
	if err != nil {
		return AttemptID{}, nil, err
	}
	return id, tokenPB(&t), nil
}

// FailAttempt fails attempt id as an AM crash would (the RM starts the
// next attempt if the application has attempts left).
func (r *RM) FailAttempt(id AttemptID, diagnostics string) error {
	return r.core().FailAttempt(id, diagnostics)
}

// Addrs returns the bound addresses (valid after Start).
func (r *RM) Addrs() Addrs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addrs
}

// Close stops every server at once and the simulation loop.
func (r *RM) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeLocked()
}

func (r *RM) closeLocked() error {
	if !r.running {
		return nil
	}
	r.running = false
	r.stop()
	for _, s := range r.servers {
		s.Close()
	}
	if r.web != nil {
		r.web.Close()
		r.web = nil
	}
	r.servers = nil
	r.wg.Wait()
	return nil
}

// Crash stops the RM abruptly: listeners and connections close, in-flight
// calls fail. State survives for Restart.
func (r *RM) Crash() error { return r.Close() }

// Restart brings a crashed (or running) RM back on the same addresses with
// the epoch raised by one. keepState models work-preserving recovery:
// applications survive and every AM must re-register (its next allocate
// gets ApplicationMasterNotRegisteredException). Without it the RM comes
// back empty, as one without a state store.
func (r *RM) Restart(ctx context.Context, keepState bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.closeLocked(); err != nil {
		return err
	}
	old := r.core()
	if keepState {
		old.ForgetRegistrations()
	} else {
		cfg := r.cfg
		old.mu.Lock()
		cfg.Epoch = old.epoch + 1
		old.mu.Unlock()
		cfg.ClusterTimestamp = cfg.Now().UnixMilli()
		if cfg.ClusterTimestamp <= old.clusterTS {
			cfg.ClusterTimestamp = old.clusterTS + 1
		}
		cfg.MasterKey = nil
		r.st.mu.Lock()
		r.st.c = newCore(cfg)
		r.st.mu.Unlock()
	}
	a := r.addrs
	return r.startLocked(ctx, a.Client, a.Scheduler, a.Admin, a.Web)
}

// Standby reports whether this RM is the standby of a pair.
func (r *RM) Standby() bool { return r.standby.Load() }

// TransitionToActive makes this RM active; as on a Hadoop failover the
// epoch rises and AMs must re-register. TransitionToStandby is its inverse.
func (r *RM) TransitionToActive() {
	if r.standby.CompareAndSwap(true, false) {
		r.core().ForgetRegistrations()
	}
}

// TransitionToStandby makes this RM answer StandbyException.
func (r *RM) TransitionToStandby() { r.standby.Store(true) }

// SetFaults replaces the fault injection settings at run time.
func (r *RM) SetFaults(f FaultConfig) {
	r.faults.Store(&f)
	r.stallMu.Lock()
	defer r.stallMu.Unlock()
	select {
	case <-r.stall: // not stalled
		if f.Stalled {
			r.stall = make(chan struct{})
		}
	default:
		if !f.Stalled {
			close(r.stall)
		}
	}
}

// Faults returns the fault injection settings in effect.
func (r *RM) Faults() FaultConfig { return *r.faults.Load() }

// inject applies the configured faults to one call: stall, added latency,
// random failure. It returns ErrInjected for a failed call.
func (r *RM) inject(ctx context.Context, endpoint string) error {
	r.metrics.calls.WithLabelValues(endpoint).Inc()
	f := r.faults.Load()
	if f.Stalled {
		r.stallMu.Lock()
		ch := r.stall
		r.stallMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency.D())
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if f.ErrorRate > 0 && rand.Float64() < f.ErrorRate {
		r.metrics.faults.Inc()
		return errorf(ErrInjected, "simrm: injected fault (error rate %.2f)", f.ErrorRate)
	}
	if r.standby.Load() {
		return errorf(ErrStandby, "Operation category READ is not supported in state standby")
	}
	return nil
}

func (r *RM) faultInterceptor() hadoopipc.Interceptor {
	return func(ctx context.Context, info *hadoopipc.CallInfo, req proto.Message, next hadoopipc.Handler) (proto.Message, error) {
		if err := r.inject(ctx, "ipc"); err != nil {
			return nil, errorClasses.Remote(err)
		}
		return next(ctx, req)
	}
}

// adminProtocol serves the refresh calls of `yarn rmadmin` as successful
// no-ops (simrm's configuration is fixed at start), updateNodeResource (the
// nodes' capability changes) and getGroupsForUser with the user as its only
// group. Other admin methods are not registered, so
// they answer RpcNoSuchMethodException.
func (r *RM) adminProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolRMAdmin,
		Version: 1,
		Errors:  errorClasses,
		Methods: []hadoopipc.Method{
			noop[*yarnpb.RefreshQueuesRequestProto, *yarnpb.RefreshQueuesResponseProto]("refreshQueues", hadoopipc.NewOf[yarnpb.RefreshQueuesRequestProto](), hadoopipc.NewOf[yarnpb.RefreshQueuesResponseProto]()),
			noop[*yarnpb.RefreshNodesRequestProto, *yarnpb.RefreshNodesResponseProto]("refreshNodes", hadoopipc.NewOf[yarnpb.RefreshNodesRequestProto](), hadoopipc.NewOf[yarnpb.RefreshNodesResponseProto]()),
			noop[*yarnpb.RefreshSuperUserGroupsConfigurationRequestProto, *yarnpb.RefreshSuperUserGroupsConfigurationResponseProto]("refreshSuperUserGroupsConfiguration", hadoopipc.NewOf[yarnpb.RefreshSuperUserGroupsConfigurationRequestProto](), hadoopipc.NewOf[yarnpb.RefreshSuperUserGroupsConfigurationResponseProto]()),
			noop[*yarnpb.RefreshUserToGroupsMappingsRequestProto, *yarnpb.RefreshUserToGroupsMappingsResponseProto]("refreshUserToGroupsMappings", hadoopipc.NewOf[yarnpb.RefreshUserToGroupsMappingsRequestProto](), hadoopipc.NewOf[yarnpb.RefreshUserToGroupsMappingsResponseProto]()),
			noop[*yarnpb.RefreshAdminAclsRequestProto, *yarnpb.RefreshAdminAclsResponseProto]("refreshAdminAcls", hadoopipc.NewOf[yarnpb.RefreshAdminAclsRequestProto](), hadoopipc.NewOf[yarnpb.RefreshAdminAclsResponseProto]()),
			noop[*yarnpb.RefreshServiceAclsRequestProto, *yarnpb.RefreshServiceAclsResponseProto]("refreshServiceAcls", hadoopipc.NewOf[yarnpb.RefreshServiceAclsRequestProto](), hadoopipc.NewOf[yarnpb.RefreshServiceAclsResponseProto]()),
			hadoopipc.NewMethod("updateNodeResource", hadoopipc.NewOf[yarnpb.UpdateNodeResourceRequestProto](), r.updateNodeResource),
			hadoopipc.NewMethod("getGroupsForUser", hadoopipc.NewOf[yarnpb.GetGroupsForUserRequestProto](), func(_ context.Context, req *yarnpb.GetGroupsForUserRequestProto) (*yarnpb.GetGroupsForUserResponseProto, error) {
				return &yarnpb.GetGroupsForUserResponseProto{Groups: []string{req.GetUser()}}, nil
			}),
		},
	}
}

// updateNodeResource sets the named nodes' total capability (the GPG's
// node-resource push, `yarn rmadmin -updateNodeResource`).
func (r *RM) updateNodeResource(_ context.Context, req *yarnpb.UpdateNodeResourceRequestProto) (*yarnpb.UpdateNodeResourceResponseProto, error) {
	updates := make(map[NodeID]Resource, len(req.GetNodeResourceMap()))
	for _, e := range req.GetNodeResourceMap() {
		res := e.GetResourceOption().GetResource()
		if e.GetNodeId() == nil || res == nil {
			return nil, errorf(ErrInvalidRequest, "updateNodeResource: an entry without node id or resource")
		}
		updates[NodeID{Host: e.GetNodeId().GetHost(), Port: e.GetNodeId().GetPort()}] = Resource{MemoryMB: res.GetMemory(), VCores: res.GetVirtualCores()}
	}
	if err := r.core().UpdateNodeResource(updates); err != nil {
		return nil, err
	}
	return &yarnpb.UpdateNodeResourceResponseProto{}, nil
}

func noop[Req, Resp proto.Message](name string, newReq func() Req, newResp func() Resp) hadoopipc.Method {
	return hadoopipc.NewMethod(name, newReq, func(context.Context, Req) (Resp, error) { return newResp(), nil })
}

// stateCollectors export the simulated cluster's own figures (the ones
// /ws/v1/cluster/metrics reports), read at scrape time.
func (r *RM) stateCollectors() []prometheus.Collector {
	m := func() ClusterMetrics { return r.core().Metrics() }
	counter := func(name, help string, f func(ClusterMetrics) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return f(m()) })
	}
	gauge := func(name, help string, f func(ClusterMetrics) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return f(m()) })
	}
	return []prometheus.Collector{
		counter("yarnfed_simrm_apps_submitted_total", "Applications submitted.", func(c ClusterMetrics) float64 { return float64(c.AppsSubmitted) }),
		counter("yarnfed_simrm_apps_completed_total", "Applications FINISHED.", func(c ClusterMetrics) float64 { return float64(c.AppsCompleted) }),
		counter("yarnfed_simrm_apps_failed_total", "Applications FAILED.", func(c ClusterMetrics) float64 { return float64(c.AppsFailed) }),
		counter("yarnfed_simrm_apps_killed_total", "Applications KILLED.", func(c ClusterMetrics) float64 { return float64(c.AppsKilled) }),
		counter("yarnfed_simrm_containers_allocated_total", "Containers allocated, AM containers included.", func(c ClusterMetrics) float64 { return float64(c.ContainersAllocated) }),
		gauge("yarnfed_simrm_apps_running", "Applications RUNNING.", func(c ClusterMetrics) float64 { return float64(c.AppsRunning) }),
		gauge("yarnfed_simrm_apps_pending", "Applications accepted but not running.", func(c ClusterMetrics) float64 { return float64(c.AppsPending) }),
		gauge("yarnfed_simrm_containers_pending", "Containers asked for and not yet allocated.", func(c ClusterMetrics) float64 { return float64(c.ContainersPending) }),
		gauge("yarnfed_simrm_allocated_mb", "Memory allocated to containers, MB.", func(c ClusterMetrics) float64 { return float64(c.Allocated.MemoryMB) }),
		gauge("yarnfed_simrm_available_mb", "Memory free on the simulated nodes, MB.", func(c ClusterMetrics) float64 { return float64(c.Available.MemoryMB) }),
	}
}

// SetNodeLost loses a simulated NodeManager (its containers end ABORTED,
// AMs on it fail, AMs hear of it in updated_nodes) or brings it back.
func (r *RM) SetNodeLost(host string, lost bool) error { return r.core().SetNodeLost(host, lost) }

// RollNMTokenKey activates a new NM-token master key: every attempt gets a
// node's NM token again with its next container there.
func (r *RM) RollNMTokenKey() { r.core().RollNMTokenKey() }

// NodeHosts lists the simulated NodeManagers' host names.
func (r *RM) NodeHosts() []string {
	c := r.core()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n.id.Host)
	}
	return out
}
