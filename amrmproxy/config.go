package amrmproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/policies"
)

// Hadoop's AMRMProxy port (yarn.nodemanager.amrmproxy.address).
const (
	DefaultAMRMAddress = "0.0.0.0:8049"
	DefaultWebAddress  = "0.0.0.0:8070"
)

// PolicyUniformBroadcast is Hadoop's default yarn.federation.policy-manager.
const PolicyUniformBroadcast = "org.apache.hadoop.yarn.server.federation.policies.manager.UniformBroadcastPolicyManager"

// BreakerConfig tunes the per-sub-cluster circuit breakers on UAM calls.
type BreakerConfig struct {
	ConsecutiveFailures uint32   `json:"consecutive_failures"`
	OpenFor             Duration `json:"open_for"`
}

// Config is everything a proxy needs. Build it with DefaultConfig, then a
// file (internal/config.Loader, in the role), then flags, then call Validate.
type Config struct {
	// SubClusterID is the sub-cluster of the NodeManager host this proxy
	// sits beside: the home of every AM it serves.
	SubClusterID string `json:"subcluster_id"`
	// AMRMAddress serves ApplicationMasterProtocol (Hadoop
	// yarn.nodemanager.amrmproxy.address). Ignored if AMRMListener is set.
	AMRMAddress string `json:"amrm_address"`
	// WebAddress serves /healthz, /readyz and /prom; empty disables it.
	WebAddress string `json:"web_address"`
	// DataDir holds the per-attempt state (bbolt).
	DataDir string `json:"data_dir"`
	// NoSync skips fsync of state commits: faster heartbeats that deliver
	// containers, at the risk of forgetting them on a machine crash.
	NoSync bool `json:"no_sync"`
	// RPCProtection is hadoop.rpc.protection; only "authentication" can be
	// served (see DESIGN.md).
	RPCProtection string `json:"rpc_protection"`
	// SubClusterTimeout: a secondary that has not answered for this long is
	// left out of splitting and headroom (Hadoop
	// yarn.nodemanager.federation.amrmproxy.subcluster.timeout.ms, 60 s).
	SubClusterTimeout Duration `json:"subcluster_timeout"`
	// FinishWait is how long a finish call waits for (and retries) the
	// unregister of reachable UAMs before answering isUnregistered=false
	// (the AM then retries, every 100 ms for distributed shell): fewer,
	// longer calls. Lost sub-clusters are never waited for.
	FinishWait Duration `json:"finish_wait"`
	// SecondaryWait bounds how long an AM heartbeat waits for the
	// secondaries' answers after the home answered; later answers are
	// merged into the next heartbeat.
	SecondaryWait Duration `json:"secondary_wait"`
	// CallTimeout bounds one call to one RM.
	CallTimeout Duration `json:"call_timeout"`
	// DialTimeout bounds connecting to an RM.
	DialTimeout Duration `json:"dial_timeout"`
	// UAMLaunchTimeout bounds submitting a UAM and waiting for its token.
	UAMLaunchTimeout Duration `json:"uam_launch_timeout"`
	// UAMRegisterRetries and UAMRegisterBackoff: Hadoop retries 3 x 100 ms.
	UAMRegisterRetries int      `json:"uam_register_retries"`
	UAMRegisterBackoff Duration `json:"uam_register_backoff"`
	// AttemptExpiry forgets an attempt whose AM has not called for this
	// long even when its home could not be asked (SilentAM ends it sooner
	// when the home answers): its state leaves memory and disk.
	AttemptExpiry Duration `json:"attempt_expiry"`
	// SilentAM: an attempt whose AM has not called for this long has the
	// home's application report checked (again every SilentAM while it
	// stays silent). When the application is final (killed, failed,
	// finished) the attempt's UAMs are unregistered or killed, their
	// registry rows deleted and the attempt's state ended; when another
	// attempt is current, only the local state ends (the new attempt
	// re-attaches the UAMs). Well under the RMs' AM liveness expiry
	// (observed 900 s with Hadoop 3.4.3) so a killed application's UAMs do
	// not outlive it by minutes; an AM that is alive only costs a report
	// call per SilentAM (MapReduce and distributed shell heartbeat every
	// second, Spark every 3 s).
	SilentAM Duration `json:"silent_am"`
	// ProxyID names this proxy in the UAM registry's proxy column. Empty:
	// the host name and the bound AMRM port ("nm-1.example.com:8049").
	ProxyID string `json:"proxy_id"`
	// MembershipRefresh is the membership and node-map poll period.
	MembershipRefresh Duration `json:"membership_refresh"`
	// DefaultPolicy is used when neither the queue nor "*" has a stored
	// policy (yarn.federation.policy-manager).
	DefaultPolicy string `json:"default_policy"`
	// MachineList, if set, is a yarn.federation.machine-list file
	// (node,subcluster,rack per line); otherwise nodes are learnt from
	// every sub-cluster's RM (getClusterNodes).
	MachineList string        `json:"machine_list"`
	Breaker     BreakerConfig `json:"breaker"`
	// Kerberos is the proxy's own login for Kerberized RMs. Set, every
	// ApplicationClientProtocol call to an RM (UAM submission and its
	// reports on secondaries, the application's report and node lists from
	// the RMs) logs in with SASL KERBEROS as kerberos.principal, acting for
	// the application's submitter (doAs) where there is one, as Hadoop's
	// AMRMProxy does over the NodeManager's login; the RMs need
	// hadoop.proxyuser.<short name>.hosts/groups (or users) for it. The
	// AM-facing side and the UAMs' AMRM calls keep their token logins. Off
	// while kerberos.principal is empty (SIMPLE, as before).
	Kerberos krblogin.Config `json:"kerberos"`

	// In-process wiring (not from files).
	AMRMListener net.Listener                `json:"-"`
	WebListener  net.Listener                `json:"-"`
	Store        Store                       `json:"-"`
	Registry     uamRegistry                 `json:"-"` // nil: the ClientStore's client if it serves the UAM registry, else none
	Home         HomeConnector               `json:"-"` // nil with Secrets nil: the relayed login (production); else a token connector over Passwords
	Identity     Identity                    `json:"-"` // nil: TokenIdentity
	Secrets      hadoopipc.SecretManager     `json:"-"` // nil: relay AM logins to the home RM (production); set only by tests, dev and bench
	Passwords    PasswordSource              `json:"-"` // for the token home connector
	Resolver     policies.SubClusterResolver `json:"-"` // nil: MachineList file or RM node lists
	Logger       *slog.Logger                `json:"-"`
	Registerer   prometheus.Registerer       `json:"-"`
	Gatherer     prometheus.Gatherer         `json:"-"`
}

// DefaultConfig returns Hadoop's defaults where Hadoop has one.
func DefaultConfig() Config {
	return Config{
		AMRMAddress:        DefaultAMRMAddress,
		WebAddress:         DefaultWebAddress,
		RPCProtection:      "authentication",
		SubClusterTimeout:  Duration(60 * time.Second),
		SecondaryWait:      Duration(200 * time.Millisecond),
		FinishWait:         Duration(time.Second),
		CallTimeout:        Duration(30 * time.Second),
		DialTimeout:        Duration(5 * time.Second),
		UAMLaunchTimeout:   Duration(60 * time.Second),
		UAMRegisterRetries: 3,
		UAMRegisterBackoff: Duration(100 * time.Millisecond),
		MembershipRefresh:  Duration(time.Second),
		AttemptExpiry:      Duration(30 * time.Minute),
		SilentAM:           Duration(5 * time.Second),
		DefaultPolicy:      PolicyUniformBroadcast,
		Breaker:            BreakerConfig{ConsecutiveFailures: 3, OpenFor: Duration(5 * time.Second)},
	}
}

// ErrProtection: integrity or privacy was asked for; the relayed SASL
// design cannot serve it.
var ErrProtection = errors.New("hadoop.rpc.protection")

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	if c.SubClusterID == "" {
		errs = append(errs, errors.New("subcluster_id: required (the sub-cluster of this NodeManager host)"))
	}
	if c.AMRMListener == nil && c.AMRMAddress == "" {
		errs = append(errs, errors.New("amrm_address: required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: required (per-attempt state survives restarts there)"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("store: required"))
	}
	switch c.RPCProtection {
	case "", "authentication":
	case "integrity", "privacy":
		errs = append(errs, fmt.Errorf("%w=%s: the AMRMProxy relays the AM's DIGEST-MD5 login to the home RM and so holds no session key; it can only serve hadoop.rpc.protection=authentication", ErrProtection, c.RPCProtection))
	default:
		errs = append(errs, fmt.Errorf("%w=%q: want authentication, integrity or privacy", ErrProtection, c.RPCProtection))
	}
	for name, d := range map[string]Duration{
		"subcluster_timeout": c.SubClusterTimeout, "secondary_wait": c.SecondaryWait, "call_timeout": c.CallTimeout,
		"dial_timeout": c.DialTimeout, "uam_launch_timeout": c.UAMLaunchTimeout, "uam_register_backoff": c.UAMRegisterBackoff,
		"membership_refresh": c.MembershipRefresh, "breaker.open_for": c.Breaker.OpenFor, "attempt_expiry": c.AttemptExpiry,
		"finish_wait": c.FinishWait, "silent_am": c.SilentAM,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v, must be > 0", name, time.Duration(d)))
		}
	}
	if err := c.Kerberos.Validate(true); err != nil {
		errs = append(errs, err)
	}
	if c.Kerberos.Enabled() && c.Kerberos.RMPrincipal == "" {
		errs = append(errs, errors.New("kerberos.rm_principal: required with kerberos.principal (the proxy calls the RMs over Hadoop IPC)"))
	}
	if c.Kerberos.RMHTTPPrincipal != "" {
		errs = append(errs, errors.New("kerberos.rm_http_principal: the AMRMProxy calls no RM REST API (only Hadoop IPC, with rm_principal)"))
	}
	if c.UAMRegisterRetries < 1 {
		errs = append(errs, errors.New("uam_register_retries: must be >= 1"))
	}
	if c.Breaker.ConsecutiveFailures < 1 {
		errs = append(errs, errors.New("breaker.consecutive_failures: must be >= 1"))
	}
	return errors.Join(errs...)
}

// Duration is the duration type every role's config uses ("10s" in files
// and flags).
type Duration = config.Duration
