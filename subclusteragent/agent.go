// Package subclusteragent keeps an unmodified ResourceManager (or RM HA
// pair) registered in the federation state store: it probes the RMs' REST
// API, registers the active one's addresses, heartbeats its
// clusterMetrics as the capability, follows HA failover at once and marks
// the sub-cluster unhealthy while no RM is active. DESIGN.md says why.
package subclusteragent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// State is a sub-cluster state, numbered as Hadoop's SubClusterStateProto.
type State int

// The states the agent reports.
const (
	StateNew       State = 1
	StateRunning   State = 2
	StateUnhealthy State = 3
)

func (s State) String() string {
	switch s {
	case StateNew:
		return "SC_NEW"
	case StateRunning:
		return "SC_RUNNING"
	case StateUnhealthy:
		return "SC_UNHEALTHY"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// RMEndpoint is one RM of the sub-cluster: its four service addresses.
type RMEndpoint struct {
	ClientRM string `json:"clientrm"` // yarn.resourcemanager.address (8032)
	AMRM     string `json:"amrm"`     // yarn.resourcemanager.scheduler.address (8030)
	Admin    string `json:"admin"`    // yarn.resourcemanager.admin.address (8033)
	Web      string `json:"web"`      // yarn.resourcemanager.webapp.address (8088)
}

// Registration is the membership row the agent writes (Hadoop
// SubClusterInfo).
type Registration struct {
	SubClusterID           string
	AMRMServiceAddress     string
	ClientRMServiceAddress string
	RMAdminServiceAddress  string
	RMWebServiceAddress    string
	State                  State
	LastStartTime          time.Time
	Capability             string
}

// ErrNotRegistered is what a Store returns for a heartbeat of a row it does
// not have; the agent then registers again.
var ErrNotRegistered = errors.New("sub-cluster not registered")

// Store is what the agent needs from the federation state store.
type Store interface {
	// RegisterSubCluster writes the whole row (addresses, state,
	// capability) and stamps the heartbeat time.
	RegisterSubCluster(ctx context.Context, r Registration) error
	// SubClusterHeartbeat updates state and capability of a registered row
	// (both are overwritten), or returns an error wrapping ErrNotRegistered.
	SubClusterHeartbeat(ctx context.Context, id string, state State, capability string) error
}

// ProbeResult is what one probe of one RM learned.
type ProbeResult struct {
	Active     bool
	StartedOn  time.Time
	Capability string // JSON of the RM's clusterMetrics object
}

// Prober asks one RM whether it is the active RM and for its metrics.
type Prober interface {
	Probe(ctx context.Context, rm RMEndpoint) (ProbeResult, error)
}

// Config configures an Agent. `yarnfed subcluster-agent` reads it from a
// JSON file (the keys below) and flags.
type Config struct {
	SubClusterID string `json:"subcluster_id"`
	// RMs of the sub-cluster: one, or the members of an HA pair.
	RMs   RMList `json:"rms"`
	Store Store  `json:"-"`
	// ProbeInterval is how often every RM is probed; a failover is noticed
	// within one interval and re-registered at once.
	ProbeInterval config.Duration `json:"probe_interval"`
	// ProbeTimeout bounds one probe.
	ProbeTimeout config.Duration `json:"probe_timeout"`
	// HeartbeatInterval is how often an unchanged state is re-sent (Hadoop:
	// 60 s; the state store's expiry must be longer).
	HeartbeatInterval config.Duration `json:"heartbeat_interval"`
	// Kerberos is the agent's own login for Kerberized RMs: their REST API
	// is called with SPNEGO (the agent makes no IPC calls, so no
	// rm_principal). Off while kerberos.principal is empty.
	Kerberos krblogin.Config `json:"kerberos"`
	// Prober defaults to the RM REST API (/ws/v1/cluster/info + /metrics),
	// with SPNEGO when Kerberos is on.
	Prober     Prober                `json:"-"`
	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"`
}

// DefaultConfig returns the agent defaults.
func DefaultConfig() Config {
	return Config{
		ProbeInterval:     config.Duration(time.Second),
		ProbeTimeout:      config.Duration(2 * time.Second),
		HeartbeatInterval: config.Duration(10 * time.Second),
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.SubClusterID == "" {
		errs = append(errs, errors.New("subcluster_id: required"))
	}
	if len(c.RMs) == 0 {
		errs = append(errs, errors.New("rms: at least one RM is required"))
	}
	for i, rm := range c.RMs {
		if rm.ClientRM == "" || rm.AMRM == "" || rm.Web == "" {
			errs = append(errs, fmt.Errorf("rms[%d]: clientrm, amrm and web addresses are required", i))
		}
	}
	if c.Store == nil {
		errs = append(errs, errors.New("store: required"))
	}
	if c.ProbeInterval <= 0 || c.ProbeTimeout <= 0 || c.HeartbeatInterval <= 0 {
		errs = append(errs, errors.New("probe_interval, probe_timeout and heartbeat_interval must be > 0"))
	}
	if err := c.Kerberos.Validate(false); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Status is the agent's view after its last store write; Step decides
// from it what to write next.
type Status struct {
	State      State
	Active     int // index into Config.RMs of the active RM, -1 if none
	Registered bool
	LastError  string
}

// Agent runs beside one sub-cluster's RM(s).
type Agent struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu       sync.Mutex
	status   Status
	lastBeat time.Time
	lastCap  string // last capability seen, kept through an outage

	login *krbclient.Client // nil without Kerberos
}

// New validates cfg, logs in to Kerberos if configured, and returns an
// agent; Run starts it, Close ends its Kerberos login.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("subcluster agent config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Agent{cfg: cfg, log: log.With("subcluster", cfg.SubClusterID), metrics: newMetrics(cfg.Registerer, cfg.SubClusterID),
		status: Status{Active: -1, State: StateNew}}
	if cfg.Prober == nil {
		p := &RESTProber{HTTP: &http.Client{}}
		if cfg.Kerberos.Enabled() {
			login, err := cfg.Kerberos.Login(log)
			if err != nil {
				return nil, fmt.Errorf("subcluster agent: %w", err)
			}
			a.login = login
			p.SPNEGO = rmrest.NewSPNEGO(login, cfg.Kerberos.RMHTTPPrincipal)
			a.log.Info("calling the RMs' REST API with SPNEGO", "principal", cfg.Kerberos.Principal)
		}
		a.cfg.Prober = p
	}
	return a, nil
}

// Close ends the agent's Kerberos login (its ticket renewal); Run must
// have returned.
func (a *Agent) Close() {
	if a.login != nil {
		a.login.Destroy()
	}
}

// Run probes and heartbeats until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.ProbeInterval.D())
	defer t.Stop()
	for {
		a.Step(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step runs one probe round and writes to the store if something changed
// or a heartbeat is due. Exported so tests drive the agent without clocks.
func (a *Agent) Step(ctx context.Context) {
	results := make([]ProbeResult, len(a.cfg.RMs))
	errs := make([]error, len(a.cfg.RMs))
	var wg sync.WaitGroup
	for i, rm := range a.cfg.RMs {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, a.cfg.ProbeTimeout.D())
			defer cancel()
			results[i], errs[i] = a.cfg.Prober.Probe(pctx, rm)
			a.metrics.probe(i, errs[i])
		})
	}
	wg.Wait()
	active := -1
	for i := range results {
		if errs[i] == nil && results[i].Active {
			active = i
			break
		}
	}

	a.mu.Lock()
	prev := a.status
	due := time.Since(a.lastBeat) >= a.cfg.HeartbeatInterval.D()
	if active >= 0 && results[active].Capability != "" {
		a.lastCap = results[active].Capability
	}
	lastCap := a.lastCap
	a.mu.Unlock()

	var err error
	switch {
	case active >= 0 && (!prev.Registered || prev.Active != active):
		// First sight or failover: re-register the new active's addresses
		// right now so routers can route within a membership refresh.
		rm, res := a.cfg.RMs[active], results[active]
		err = a.cfg.Store.RegisterSubCluster(ctx, Registration{
			SubClusterID: a.cfg.SubClusterID, ClientRMServiceAddress: rm.ClientRM, AMRMServiceAddress: rm.AMRM,
			RMAdminServiceAddress: rm.Admin, RMWebServiceAddress: rm.Web, State: StateRunning,
			LastStartTime: res.StartedOn, Capability: res.Capability,
		})
		if err == nil {
			if prev.Registered {
				a.metrics.failovers.Inc()
				a.log.Warn("RM failover: registered the new active RM", "from", prev.Active, "to", active, "clientrm", rm.ClientRM)
			} else {
				a.log.Info("sub-cluster registered", "clientrm", rm.ClientRM)
			}
		}
		a.record(err, true, active, StateRunning)
	case active >= 0 && (due || prev.State != StateRunning):
		err = a.cfg.Store.SubClusterHeartbeat(ctx, a.cfg.SubClusterID, StateRunning, results[active].Capability)
		a.record(err, prev.Registered, active, StateRunning)
	case active < 0 && prev.Registered && (due || prev.State != StateUnhealthy):
		// No RM is active (down, or mid-failover): say so at once so
		// routers stop sending work here. The store overwrites the
		// capability, so resend the last one seen.
		err = a.cfg.Store.SubClusterHeartbeat(ctx, a.cfg.SubClusterID, StateUnhealthy, lastCap)
		if prev.State != StateUnhealthy {
			a.log.Warn("no active RM: sub-cluster marked unhealthy", "probe_errors", errors.Join(errs...))
		}
		a.record(err, true, -1, StateUnhealthy)
	case active < 0 && (due || prev.State != StateUnhealthy):
		// Not registered by this process and no RM active: a row left by
		// a previous agent process may still say RUNNING, and nothing
		// else would ever correct it. Mark it unhealthy (a heartbeat
		// keeps its addresses); no row at all is fine too.
		err = a.cfg.Store.SubClusterHeartbeat(ctx, a.cfg.SubClusterID, StateUnhealthy, lastCap)
		if errors.Is(err, ErrNotRegistered) {
			err = nil
		}
		if err == nil {
			a.log.Warn("no active RM at start: sub-cluster marked unhealthy", "probe_errors", errors.Join(errs...))
		}
		a.record(err, false, -1, StateUnhealthy)
	}
	if errors.Is(err, ErrNotRegistered) {
		a.mu.Lock()
		a.status.Registered = false // register afresh next round
		a.mu.Unlock()
	}
	if err != nil && ctx.Err() == nil {
		a.log.Warn("state store write failed; retrying next probe", "err", err)
	}
}

// record updates the status after a store write (err nil = written).
func (a *Agent) record(err error, registered bool, active int, st State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.status.LastError = err.Error()
		a.metrics.heartbeats.WithLabelValues("error").Inc()
		return
	}
	a.status = Status{State: st, Active: active, Registered: registered}
	a.lastBeat = time.Now()
	a.metrics.heartbeats.WithLabelValues("ok").Inc()
	a.metrics.state.Set(float64(st))
}

// RESTProber probes an RM through /ws/v1/cluster/info (haState) and
// /ws/v1/cluster/metrics (the capability).
type RESTProber struct {
	HTTP *http.Client
	// SPNEGO, if set, authenticates to Kerberized RMs (one per identity:
	// it keeps the RMs' hadoop.auth cookies across probes).
	SPNEGO *rmrest.SPNEGO
}

// Probe implements Prober.
func (p *RESTProber) Probe(ctx context.Context, rm RMEndpoint) (ProbeResult, error) {
	c := rmrest.NewClient(rm.Web)
	if p.HTTP != nil {
		c.HTTP = p.HTTP
	}
	c.SPNEGO = p.SPNEGO
	info, err := c.GetClusterInfo(ctx)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("probe %s: %w", rm.Web, err)
	}
	res := ProbeResult{Active: strings.EqualFold(info.HAState, "ACTIVE"), StartedOn: time.UnixMilli(info.StartedOn)}
	if !res.Active {
		return res, nil
	}
	m, err := c.GetClusterMetrics(ctx)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("probe %s metrics: %w", rm.Web, err)
	}
	// Hadoop's heartbeat writes the object with its root element
	// ({"clusterMetrics":{...}}, JAXB rootUnwrapping(false)).
	b, err := json.Marshal(rmrest.ClusterMetricsResponse{ClusterMetrics: *m})
	if err != nil {
		return ProbeResult{}, err
	}
	res.Capability = string(b)
	return res, nil
}

type metrics struct {
	probes     *prometheus.CounterVec
	heartbeats *prometheus.CounterVec
	failovers  prometheus.Counter
	state      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, sc string) *metrics {
	cl := prometheus.Labels{"subcluster": sc}
	m := &metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_subclusteragent_probes_total",
			Help: "RM probes by RM index and outcome (ok, error).", ConstLabels: cl}, []string{"rm", "outcome"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_subclusteragent_heartbeats_total",
			Help: "State store registrations and heartbeats by outcome.", ConstLabels: cl}, []string{"outcome"}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_subclusteragent_failovers_total",
			Help: "RM HA failovers followed (re-registrations of a new active RM).", ConstLabels: cl}),
		state: prometheus.NewGauge(prometheus.GaugeOpts{Name: "yarnfed_subclusteragent_state",
			Help: "Last reported sub-cluster state (SubClusterStateProto number).", ConstLabels: cl}),
	}
	if reg != nil {
		reg.MustRegister(m.probes, m.heartbeats, m.failovers, m.state)
	}
	return m
}

func (m *metrics) probe(rm int, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.probes.WithLabelValues(fmt.Sprint(rm), outcome).Inc()
}
