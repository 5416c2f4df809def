package router

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/spnego"
)

// Hadoop's default router ports (yarn.router.clientrm.address,
// yarn.router.webapp.address).
const (
	DefaultClientRMAddress = "0.0.0.0:8050"
	DefaultWebAddress      = "0.0.0.0:8089"
	// DefaultAdminAddress is yarn.router.rmadmin.address. DefaultConfig
	// leaves the admin port off (in-process routers in tests and `yarnfed
	// dev` must not bind a fixed port); `yarnfed router` turns it on here.
	DefaultAdminAddress = "0.0.0.0:8052"
)

// BreakerConfig tunes the per-sub-cluster circuit breakers.
type BreakerConfig struct {
	// ConsecutiveFailures of "RM down" kind that open the breaker.
	ConsecutiveFailures uint32 `json:"consecutive_failures"`
	// OpenFor is how long an open breaker keeps the sub-cluster out of
	// routing before one probe call is let through.
	OpenFor Duration `json:"open_for"`
	// Interval clears closed-state counts periodically (0 = never).
	Interval Duration `json:"interval"`
}

// WebConfig bounds what HTTP peers, authenticated or not, can make the
// REST server hold (DESIGN.md, "Resource limits").
type WebConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout Duration `json:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included
	// (slow-body peers). Request bodies are small JSON documents.
	ReadTimeout Duration `json:"read_timeout"`
	// WriteTimeout bounds a request from the end of its headers to the end
	// of the response: fanned-out calls (call_timeout each) and writing a
	// large application list to a slow reader.
	WriteTimeout Duration `json:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle this long.
	IdleTimeout Duration `json:"idle_timeout"`
	// MaxHeaderBytes bounds request headers (SPNEGO tokens need a few KiB).
	MaxHeaderBytes int `json:"max_header_bytes"`
	// MaxConns caps open connections; further ones wait in the listen
	// backlog until one closes.
	MaxConns int `json:"max_conns"`
	// MaxConnsPerAddr caps open connections from one IP address (further
	// ones are closed at once), so one host cannot hold all MaxConns.
	MaxConnsPerAddr int `json:"max_conns_per_addr"`
}

// FanOutConfig bounds one fan-out call: how many sub-clusters it asks at
// once, and by when every answer must be in.
type FanOutConfig struct {
	// MaxConcurrency is the most sub-cluster calls one fan-out has in
	// flight (the rest wait for a slot, within Timeout). Hadoop's
	// FederationClientInterceptor runs its fan-outs on a per-user pool of
	// yarn.router.interceptor.user-thread-pool.maximum-pool-size threads
	// (5); ours is per call.
	MaxConcurrency int `json:"max_concurrency"`
	// Timeout is the fan-out's deadline from its start: a sub-cluster that
	// has not answered by then (hung, or still waiting for a slot) is left
	// out of a partial answer, or fails the call when partial results are
	// off. 0: call_timeout.
	Timeout Duration `json:"timeout"`
}

// RMHTTPConfig sizes the one HTTP transport the router shares for every
// call to the RMs' web apps (REST documents, metrics, relays).
type RMHTTPConfig struct {
	// MaxIdleConnsPerHost is the idle keep-alive connections kept per RM.
	// Go's default, 2, made concurrent fan-outs re-dial every RM; a
	// fan-out holds one connection per RM, so this is the number of REST
	// fan-outs that may run at once without dialling.
	MaxIdleConnsPerHost int `json:"max_idle_conns_per_host"`
	// IdleConnTimeout closes an idle connection to an RM.
	IdleConnTimeout Duration `json:"idle_conn_timeout"`
}

// IPCConfig bounds the Hadoop IPC ports (client and admin) against peers
// that have not authenticated; see internal/hadoopipc DESIGN.md, "Limits
// before authentication".
type IPCConfig struct {
	// MaxConns caps open connections per port.
	MaxConns int `json:"max_conns"`
	// MaxConnsPerAddr caps open connections from one IP address. Raise it
	// when many clients reach the router through one NAT address.
	MaxConnsPerAddr int `json:"max_conns_per_addr"`
	// HandshakeTimeout bounds preamble, SASL and connection context.
	HandshakeTimeout Duration `json:"handshake_timeout"`
	// IdleTimeout closes connections with no call in flight.
	IdleTimeout Duration `json:"idle_timeout"`
	// PreAuthBufferBytes bounds bytes buffered across connections that
	// have not finished their handshake.
	PreAuthBufferBytes int64 `json:"preauth_buffer_bytes"`
}

// apply copies the limits onto an IPC server config.
func (c IPCConfig) apply(s *hadoopipc.ServerConfig) {
	s.MaxConns = c.MaxConns
	s.MaxConnsPerAddr = c.MaxConnsPerAddr
	s.HandshakeTimeout = c.HandshakeTimeout.D()
	s.IdleTimeout = c.IdleTimeout.D()
	s.PreAuthBufferBytes = c.PreAuthBufferBytes
}

// Config is everything a Router needs. Build it with DefaultConfig, then a
// file (internal/config.Loader, in the role), then flags, then call Validate.
type Config struct {
	// ClientRMAddress is where ApplicationClientProtocol is served
	// (Hadoop yarn.router.clientrm.address). Ignored if ClientListener is set.
	ClientRMAddress string `json:"clientrm_address"`
	// WebAddress serves the RM REST API, /metrics, /healthz, /readyz
	// (yarn.router.webapp.address). Empty disables it. Ignored if
	// WebListener is set.
	WebAddress string `json:"web_address"`
	// SubmitRetries bounds getNewApplication/submitApplication tries on
	// distinct sub-clusters (yarn.router.submit.retry).
	SubmitRetries int `json:"submit_retries"`
	// RetryInterval is the pause between those tries (Hadoop: 10 ms).
	RetryInterval Duration `json:"retry_interval"`
	// PartialResults lets fan-out calls skip failing sub-clusters
	// (yarn.router.clientrm.partial-results.enabled); off = any failure fails.
	PartialResults bool `json:"partial_results"`
	// FailoverWait is how long a call waits for a routable sub-cluster
	// (RM failover, breaker reopen) before failing, instead of failing at once.
	FailoverWait Duration `json:"failover_wait"`
	// MembershipRefresh is the membership poll period (a store watch, if
	// available, refreshes sooner).
	MembershipRefresh Duration `json:"membership_refresh"`
	// SubClusterHeartbeatExpiry: a sub-cluster whose last heartbeat is
	// older takes no new work (submissions, fan-outs) even while its row
	// still says RUNNING, so a dead agent stops attracting applications
	// whether or not a GPG is running to mark it SC_LOST. Per-app calls
	// still reach an existing home. 0 disables the rule.
	SubClusterHeartbeatExpiry Duration `json:"subcluster_heartbeat_expiry"`
	// PublishedCapacityTTL: a capacity the GPG published (Kubernetes batch
	// capacity YARN can really use) is used by load-based routing while it
	// is younger than this; older, the RM's own figures alone count.
	PublishedCapacityTTL Duration `json:"published_capacity_ttl"`
	// CallTimeout bounds one call to one RM.
	CallTimeout Duration `json:"call_timeout"`
	// FanOut bounds the calls a fan-out (lists, metrics, nodes; IPC, REST
	// and RM admin) makes; see FanOutConfig.
	FanOut FanOutConfig `json:"fanout"`
	// DialTimeout bounds connecting to an RM.
	DialTimeout Duration `json:"dial_timeout"`
	// RMHTTP sizes the transport to the RMs' web apps.
	RMHTTP RMHTTPConfig `json:"rm_http"`
	// HomeCacheTTL caches app-home lookups; a stale entry is detected by
	// ApplicationNotFound from the RM and re-read. 0 disables the cache.
	HomeCacheTTL Duration `json:"home_cache_ttl"`
	// HomeCacheSize caps cached app homes.
	HomeCacheSize int `json:"home_cache_size"`
	// DefaultPolicy is used when neither the queue nor "*" has a stored
	// policy (yarn.federation.policy-manager).
	DefaultPolicy string `json:"default_policy"`
	// TokenService is the service field of router-issued delegation tokens
	// (what clients match against the address they dial); default: the
	// bound client RPC address.
	TokenService string        `json:"token_service"`
	Breaker      BreakerConfig `json:"breaker"`
	// Web bounds the REST server's connections.
	Web WebConfig `json:"web"`
	// IPC bounds the Hadoop IPC ports' connections.
	IPC IPCConfig `json:"ipc"`
	// MaxRMClients bounds the per-(sub-cluster, user) RM clients kept for
	// forwarding, each pool separately (client and admin protocol); the
	// least recently used is closed beyond it, so cycling user names
	// cannot grow it without bound.
	MaxRMClients int `json:"max_rm_clients"`
	// AdminAddress serves ResourceManagerAdministrationProtocol (`yarn
	// routeradmin`, `yarn rmadmin` through the router;
	// yarn.router.rmadmin.address). Empty disables it. Ignored if
	// AdminListener is set.
	AdminAddress string `json:"admin_address"`
	// AdminACL says who may call the admin port, in the syntax of Hadoop's
	// yarn.admin.acl: "user1,user2 group1,group2", "*" for everyone, " "
	// for no one. Empty (the default) means only the user the router runs
	// as: Hadoop's own default ("*") would let anyone change routing.
	AdminACL string `json:"admin_acl"`
	// Authz: proxy users, group mapping and application ACLs (authz.go).
	Authz AuthzConfig `json:"authz"`
	// SPNEGO authenticates the REST API with Kerberos (router/spnego).
	SPNEGO spnego.Config `json:"spnego"`
	// Kerberos turns on Kerberos security (see KerberosConfig); off by
	// default.
	Kerberos KerberosConfig `json:"kerberos"`

	// In-process wiring (not from files).
	// Version is the build's version, shown on the web UI's About page.
	Version        string       `json:"-"`
	ClientListener net.Listener `json:"-"`
	WebListener    net.Listener `json:"-"`
	AdminListener  net.Listener `json:"-"`
	// AdminDial opens a sub-cluster RM's admin protocol for the fanned-out
	// RM admin calls (nil: hadoopipc to RMAdminServiceAddress).
	AdminDial  DialFunc              `json:"-"`
	Store      StateStore            `json:"-"`
	Policies   PolicyFactory         `json:"-"` // nil: built-in policies
	Dial       DialFunc              `json:"-"` // nil: hadoopipc
	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"` // nil: no metrics
	Gatherer   prometheus.Gatherer   `json:"-"` // non-nil: served at /prom on the web port
	// AuthorizeProxyUser, when set, decides per call, when Kerberos is on,
	// whether a caller acting for someone else (User.RealUser set: a doAs)
	// may, instead of the authz.proxy_users rules. Nil (the usual case):
	// the authz.proxy_users rules (Hadoop's hadoop.proxyuser.<real>.*) are
	// applied to every connection at its handshake, and with no rules every
	// doAs is refused (AuthorizationException), so no principal can make the
	// router act for another user at the RMs unchecked.
	AuthorizeProxyUser hadoopipc.Authorizer `json:"-"`
	// OnSubmitted, if set, is told about every successful submission (for
	// `yarnfed dev`'s live view of where apps land and why). It must not block.
	OnSubmitted func(SubmitEvent) `json:"-"`
}

// SubmitEvent describes one successful submission.
type SubmitEvent struct {
	App          string
	Queue        string
	Home         SubClusterID
	Policy       string       // policy type that chose (e.g. "WeightedRandom")
	PolicyChoice SubClusterID // what the policy chose on the last try
	Resubmission bool         // the home was already stored (client retry)
	Tries        int
	Candidates   []SubClusterID // routable sub-clusters on the last try
}

// DefaultConfig returns Hadoop's defaults where Hadoop has one.
func DefaultConfig() Config {
	return Config{
		ClientRMAddress:   DefaultClientRMAddress,
		WebAddress:        DefaultWebAddress,
		SubmitRetries:     3,
		RetryInterval:     Duration(10 * time.Millisecond),
		FailoverWait:      Duration(30 * time.Second),
		MembershipRefresh: Duration(time.Second),
		// Three of Hadoop's 60 s RM heartbeats (our agent beats every 10 s).
		SubClusterHeartbeatExpiry: Duration(3 * time.Minute),
		PublishedCapacityTTL:      Duration(5 * time.Minute),
		CallTimeout:               Duration(30 * time.Second),
		DialTimeout:               Duration(5 * time.Second),
		FanOut:                    FanOutConfig{MaxConcurrency: 32},
		RMHTTP:                    RMHTTPConfig{MaxIdleConnsPerHost: 16, IdleConnTimeout: Duration(90 * time.Second)},
		HomeCacheTTL:              Duration(60 * time.Second),
		HomeCacheSize:             100_000,
		DefaultPolicy:             PolicyUniformBroadcast,
		Breaker: BreakerConfig{
			ConsecutiveFailures: 3,
			OpenFor:             Duration(5 * time.Second),
		},
		Web: WebConfig{
			ReadHeaderTimeout: Duration(10 * time.Second),
			ReadTimeout:       Duration(30 * time.Second),
			WriteTimeout:      Duration(2 * time.Minute),
			IdleTimeout:       Duration(time.Minute),
			MaxHeaderBytes:    64 << 10,
			MaxConns:          1024,
			MaxConnsPerAddr:   128,
		},
		IPC: IPCConfig{
			MaxConns:           hadoopipc.DefaultMaxConns,
			MaxConnsPerAddr:    hadoopipc.DefaultMaxConnsPerAddr,
			HandshakeTimeout:   Duration(hadoopipc.DefaultHandshakeTimeout),
			IdleTimeout:        Duration(hadoopipc.DefaultIdleTimeout),
			PreAuthBufferBytes: hadoopipc.DefaultPreAuthBufferBytes,
		},
		MaxRMClients: 4096,
		SPNEGO:       spnego.Config{CookieValidity: Duration(10 * time.Hour)},
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.ClientListener == nil && c.ClientRMAddress == "" {
		errs = append(errs, errors.New("clientrm_address: required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("store: required"))
	}
	if c.SubmitRetries < 1 {
		errs = append(errs, fmt.Errorf("submit_retries: %d, must be >= 1", c.SubmitRetries))
	}
	for name, d := range map[string]Duration{
		"retry_interval": c.RetryInterval, "failover_wait": c.FailoverWait,
		"home_cache_ttl": c.HomeCacheTTL, "breaker.interval": c.Breaker.Interval,
		"subcluster_heartbeat_expiry": c.SubClusterHeartbeatExpiry, "published_capacity_ttl": c.PublishedCapacityTTL,
		"fanout.timeout": c.FanOut.Timeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: %v, must be >= 0", name, time.Duration(d)))
		}
	}
	for name, d := range map[string]Duration{
		"membership_refresh": c.MembershipRefresh, "call_timeout": c.CallTimeout,
		"dial_timeout": c.DialTimeout, "breaker.open_for": c.Breaker.OpenFor,
		"web.read_header_timeout": c.Web.ReadHeaderTimeout, "web.read_timeout": c.Web.ReadTimeout,
		"web.write_timeout": c.Web.WriteTimeout, "web.idle_timeout": c.Web.IdleTimeout,
		"rm_http.idle_conn_timeout": c.RMHTTP.IdleConnTimeout,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v, must be > 0", name, time.Duration(d)))
		}
	}
	if c.Breaker.ConsecutiveFailures < 1 {
		errs = append(errs, errors.New("breaker.consecutive_failures: must be >= 1"))
	}
	if c.AdminListener != nil || c.AdminAddress != "" {
		if _, err := appacl.ParseACL(c.AdminACL); err != nil {
			errs = append(errs, fmt.Errorf("admin_acl: %w", err))
		}
	}
	if err := c.Authz.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.SPNEGO.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Web.MaxHeaderBytes < 1 {
		errs = append(errs, fmt.Errorf("web.max_header_bytes: %d, must be >= 1", c.Web.MaxHeaderBytes))
	}
	if c.Web.MaxConns < 1 {
		errs = append(errs, fmt.Errorf("web.max_conns: %d, must be >= 1", c.Web.MaxConns))
	}
	if c.Web.MaxConnsPerAddr < 1 {
		errs = append(errs, fmt.Errorf("web.max_conns_per_addr: %d, must be >= 1", c.Web.MaxConnsPerAddr))
	}
	for name, n := range map[string]int64{"ipc.max_conns": int64(c.IPC.MaxConns), "ipc.max_conns_per_addr": int64(c.IPC.MaxConnsPerAddr),
		"ipc.preauth_buffer_bytes": c.IPC.PreAuthBufferBytes} {
		if n < 1 {
			errs = append(errs, fmt.Errorf("%s: %d, must be >= 1", name, n))
		}
	}
	if c.IPC.HandshakeTimeout <= 0 || c.IPC.IdleTimeout <= 0 || c.IPC.HandshakeTimeout > c.IPC.IdleTimeout {
		errs = append(errs, fmt.Errorf("ipc.handshake_timeout (%v) and ipc.idle_timeout (%v): must be > 0, the handshake no longer than idleness",
			c.IPC.HandshakeTimeout.D(), c.IPC.IdleTimeout.D()))
	}
	if c.IPC.PreAuthBufferBytes > 0 && c.IPC.PreAuthBufferBytes < hadoopipc.DefaultMaxPreAuthFrame {
		errs = append(errs, fmt.Errorf("ipc.preauth_buffer_bytes: %d, must hold one handshake packet (%d)", c.IPC.PreAuthBufferBytes, hadoopipc.DefaultMaxPreAuthFrame))
	}
	errs = append(errs, c.Kerberos.validate()...)
	if c.FanOut.MaxConcurrency < 1 {
		errs = append(errs, fmt.Errorf("fanout.max_concurrency: %d, must be >= 1", c.FanOut.MaxConcurrency))
	}
	if c.RMHTTP.MaxIdleConnsPerHost < 1 {
		errs = append(errs, fmt.Errorf("rm_http.max_idle_conns_per_host: %d, must be >= 1", c.RMHTTP.MaxIdleConnsPerHost))
	}
	if c.MaxRMClients < 1 {
		errs = append(errs, fmt.Errorf("max_rm_clients: %d, must be >= 1", c.MaxRMClients))
	}
	if c.HomeCacheTTL > 0 && c.HomeCacheSize < 1 {
		errs = append(errs, errors.New("home_cache_size: must be >= 1 when home_cache_ttl > 0"))
	}
	return errors.Join(errs...)
}

// Duration is the duration type every role's config uses ("10s" in files
// and flags).
type Duration = config.Duration

// fan is the fan-out bound of cfg (fed.Fan).
func (c *Config) fan() fed.Fan {
	t := c.FanOut.Timeout.D()
	if t <= 0 {
		t = c.CallTimeout.D()
	}
	return fed.Fan{Limit: c.FanOut.MaxConcurrency, Timeout: t}
}

// rmHTTPClient is the one client (and transport) for every call to the
// RMs' web apps: Go's default transport keeps 2 idle connections per host,
// so at 100 sub-clusters concurrent fan-outs re-dialled the RMs.
func (c *Config) rmHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: c.DialTimeout.D(), KeepAlive: 30 * time.Second}
	return &http.Client{
		// A backstop: every call also carries a context with its deadline.
		Timeout: c.CallTimeout.D(),
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           d.DialContext,
			MaxIdleConns:          0, // no total cap: bounded per RM
			MaxIdleConnsPerHost:   c.RMHTTP.MaxIdleConnsPerHost,
			IdleConnTimeout:       c.RMHTTP.IdleConnTimeout.D(),
			TLSHandshakeTimeout:   c.DialTimeout.D(),
			ResponseHeaderTimeout: c.CallTimeout.D(),
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     false,
		},
	}
}
