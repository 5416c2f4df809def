package gpg

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// DefaultWebAddress is Hadoop's GPG web address
// (yarn.federation.gpg.webapp.address).
const DefaultWebAddress = "0.0.0.0:8069"

// Global policies the generator can run.
const (
	// PolicyCapacity (the default) weights sub-clusters by their headroom
	// in memory and vcores, narrowed by the capacity a capacity.Source
	// measured (Kubernetes batch capacity), damped by pending apps.
	PolicyCapacity = "capacity"
	// PolicyLoadBased is Hadoop's LoadBasedGlobalPolicy (keys and formula
	// of yarn.federation.gpg.policy.generator.load-based.*).
	PolicyLoadBased = "load-based"
)

// DefaultManager is the policy manager written for queues that have no
// stored policy (Hadoop's LoadBasedGlobalPolicy creates the same).
const DefaultManager = "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager"

// Config is everything a GPG needs. Build it with DefaultConfig, then a
// file (internal/config.Loader, in the role), then flags, then call Validate.
type Config struct {
	// ID names this GPG instance as the lease holder; default
	// hostname-pid.
	ID string `json:"id"`
	// WebAddress serves /healthz, /readyz, /prom and /gpg/v1/status; empty
	// disables. Ignored if WebListener is set.
	WebAddress string `json:"web_address"`
	// Interval is the period of a full round; capacity changes and
	// membership events start one sooner (after Debounce).
	Interval Duration `json:"interval"`
	Debounce Duration `json:"debounce"`
	// LeaseName and LeaseTTL: one GPG acts at a time, the holder of this
	// store lease. A holder that dies is replaced within LeaseTTL.
	LeaseName string   `json:"lease_name"`
	LeaseTTL  Duration `json:"lease_ttl"`

	Liveness  LivenessConfig  `json:"liveness"`
	Cleaner   CleanerConfig   `json:"cleaner"`
	Generator GeneratorConfig `json:"generator"`
	// UAMReaper kills unmanaged AMs whose federated application is over
	// (off by default: it kills applications on the RMs).
	UAMReaper UAMReaperConfig `json:"uam_reaper"`

	// Kubernetes lists co-location clusters whose Koordinator batch
	// capacity the GPG reads: package gpg/kube's own configuration, one
	// entry per cluster, each decoded from its defaults (the role builds
	// one kube.Source per entry). Empty: no capacity source.
	Kubernetes []kube.Config `json:"kubernetes"`

	// Kerberos is the GPG's own login for Kerberized RMs: the cleaner
	// lists applications over SPNEGO, and the node-resource push calls the
	// RM admin protocol with SASL KERBEROS (needs rm_principal) as the
	// GPG's principal, whose short name must be in the RMs' yarn.admin.acl.
	// Off while kerberos.principal is empty.
	Kerberos krblogin.Config `json:"kerberos"`

	// In-process wiring (not from files).
	Store       Store        `json:"-"`
	WebListener net.Listener `json:"-"`
	Apps        AppLister    `json:"-"` // nil: the RMs' REST API
	// UAMs deletes rows of the UAM registry after the reaper killed their
	// UAM; nil: Store, if it implements UAMRegistry (*client.Client does).
	UAMs       UAMRegistry           `json:"-"`
	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"`
	Gatherer   prometheus.Gatherer   `json:"-"`
	Now        func() time.Time      `json:"-"` // nil: time.Now
}

// LivenessConfig marks silent sub-clusters lost (Hadoop SubClusterCleaner).
type LivenessConfig struct {
	Enabled bool `json:"enabled"`
	// Expiry: a usable sub-cluster whose last heartbeat is older becomes
	// SC_LOST (yarn.federation.gpg.subcluster.heartbeat.expiration-ms).
	Expiry Duration `json:"expiry"`
}

// CleanerConfig deletes application homes no RM knows any more.
type CleanerConfig struct {
	Enabled  bool     `json:"enabled"`
	Interval Duration `json:"interval"`
	// Grace protects young rows: a home written just before its
	// submission reached the RM must survive.
	Grace Duration `json:"grace"`
	// Retention keeps homes of finished applications the RMs still list
	// for this long after they finished (routers answer reports from them).
	Retention Duration `json:"retention"`
	// MaxPerRound caps deletions per round.
	MaxPerRound int `json:"max_per_round"`
	// DryRun logs what would be deleted and deletes nothing.
	DryRun bool `json:"dry_run"`
	// MinRMUptime: an RM that started more recently may still be
	// recovering its applications; no deletion while one is that young.
	MinRMUptime Duration `json:"min_rm_uptime"`
	// RMTimeout bounds each RM call.
	RMTimeout Duration `json:"rm_timeout"`
	// RMUser is sent as user.name to the RMs' REST API (empty: none).
	RMUser string `json:"rm_user"`
}

// UAMReaperConfig finds unmanaged AMs (UAMs) that an AMRMProxy launched
// for a federated application in a sub-cluster other than its home, and
// kills them once the home RM reports the application final (or, having
// answered completely, does not know it). See DESIGN.md, "UAM reaper".
type UAMReaperConfig struct {
	// Enabled: off by default, like the node-resource push, because it
	// acts on the RMs: the GPG must be allowed to kill any application
	// (yarn.admin.acl, or ACLs off).
	Enabled  bool     `json:"enabled"`
	Interval Duration `json:"interval"`
	// Grace: a UAM whose application its home RM does not know at all is
	// killed only if the UAM started, and its home row was written, longer
	// ago than this. A home that reports the application final needs no
	// grace.
	Grace Duration `json:"grace"`
	// MaxPerRound caps the UAMs killed per round.
	MaxPerRound int `json:"max_per_round"`
	// DryRun logs each UAM it would kill and kills and deletes nothing.
	DryRun bool `json:"dry_run"`
	// MinRMUptime: a home RM up for less may still be recovering
	// applications, so "unknown" from it is not trusted (final still is).
	MinRMUptime Duration `json:"min_rm_uptime"`
	// RMTimeout bounds each RM call.
	RMTimeout Duration `json:"rm_timeout"`
	// RMUser is sent as user.name to the RMs' REST API (empty: none; the
	// RM acts as its static user). With Kerberos the GPG's principal is
	// used instead.
	RMUser string `json:"rm_user"`
}

// GeneratorConfig computes router and AMRMProxy weights per queue.
type GeneratorConfig struct {
	Enabled bool `json:"enabled"`
	// Policy is PolicyCapacity or PolicyLoadBased.
	Policy string `json:"policy"`
	// ReadOnly computes and logs weights but writes nothing
	// (yarn.federation.gpg.policy.generator.readonly).
	ReadOnly bool `json:"read_only"`
	// Threshold: a queue is rewritten only when the new weights would send
	// more than this share of new applications elsewhere (total variation
	// distance between the stored and the target normalized weights).
	Threshold float64 `json:"threshold"`
	// MaxStep bounds the share of new applications one round may redirect
	// (the same distance), so weights glide instead of flapping.
	MaxStep float64 `json:"max_step"`
	// Manager is the policy manager class written for queues without a
	// stored policy. Stored queues keep their manager; queues whose
	// manager takes no weights are left alone.
	Manager string `json:"manager"`
	// ManageDefault writes the "*" policy (every queue without its own).
	ManageDefault bool `json:"manage_default"`
	// Queues are managed in addition to the queues the store holds.
	Queues []string `json:"queues"`
	// PendingScale damps a sub-cluster's capacity weight by
	// 1/(1 + appsPending/PendingScale) (capacity policy).
	PendingScale float64 `json:"pending_scale"`
	// CapacityMaxAge: a capacity.Source figure older than this counts as
	// zero, never as unlimited (Koordinator resets stale batch figures).
	CapacityMaxAge Duration `json:"capacity_max_age"`
	// PublishCapacity writes each sub-cluster's measured capacity to the
	// store (routers read it) when it moves by more than PublishThreshold
	// (relative) or is older than Republish.
	PublishCapacity  bool            `json:"publish_capacity"`
	PublishThreshold float64         `json:"publish_threshold"`
	Republish        Duration        `json:"republish"`
	LoadBased        LoadBasedConfig `json:"load_based"`
	// QueueInputs weighs each managed queue by its own headroom in every
	// sub-cluster (the RMs' /ws/v1/cluster/scheduler), capacity policy only.
	QueueInputs QueueInputsConfig `json:"queue_inputs"`
}

// QueueInputsConfig reads the RMs' CapacityScheduler queues so each
// managed queue gets weights from its own headroom (DESIGN.md, "Per-queue
// weights").
type QueueInputsConfig struct {
	Enabled bool `json:"enabled"`
	// Interval between reads of every eligible RM's scheduler (the lease
	// holder only). A read is one /ws/v1/cluster/scheduler per RM: tens of
	// KiB per queue on Hadoop 3.4, so not every round.
	Interval Duration `json:"interval"`
	// MaxAge: a sub-cluster's last answer is used this long; past it, every
	// managed queue falls back to the cluster-wide weights.
	MaxAge Duration `json:"max_age"`
	// RMTimeout bounds one read.
	RMTimeout Duration `json:"rm_timeout"`
	// MaxBytes bounds one answer's body.
	MaxBytes int64 `json:"max_bytes"`
}

// LoadBasedConfig holds Hadoop's LoadBasedGlobalPolicy settings
// (yarn.federation.gpg.policy.generator.load-based.*).
type LoadBasedConfig struct {
	PendingMinimum int     `json:"pending_minimum"` // pending.minimum (100)
	PendingMaximum int     `json:"pending_maximum"` // pending.maximum (1000)
	WeightMinimum  float64 `json:"weight_minimum"`  // weight.minimum (0)
	EditMaximum    int     `json:"edit_maximum"`    // edit.maximum (3)
	Scaling        string  `json:"scaling"`         // scaling: LINEAR, QUADRATIC, LOG, NONE
}

// DefaultConfig returns Hadoop's defaults where Hadoop has one, except
// that every service is on and rounds are seconds apart, not an hour; the
// services that act on the RMs themselves (the UAM reaper, the
// node-resource push) are off until enabled.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		ID:         fmt.Sprintf("%s-%d", host, os.Getpid()),
		WebAddress: DefaultWebAddress,
		Interval:   Duration(10 * time.Second),
		Debounce:   Duration(time.Second),
		LeaseName:  "gpg",
		LeaseTTL:   Duration(15 * time.Second),
		Liveness:   LivenessConfig{Enabled: true, Expiry: Duration(30 * time.Minute)},
		Cleaner: CleanerConfig{
			Enabled: true, Interval: Duration(10 * time.Minute), Grace: Duration(10 * time.Minute),
			Retention: Duration(24 * time.Hour), MaxPerRound: 1000, MinRMUptime: Duration(5 * time.Minute),
			RMTimeout: Duration(30 * time.Second),
		},
		UAMReaper: UAMReaperConfig{
			Enabled: false, Interval: Duration(30 * time.Second), Grace: Duration(10 * time.Minute), MaxPerRound: 100,
			MinRMUptime: Duration(5 * time.Minute), RMTimeout: Duration(30 * time.Second),
		},
		Generator: GeneratorConfig{
			Enabled: true, Policy: PolicyCapacity, Threshold: 0.05, MaxStep: 0.2, Manager: DefaultManager,
			ManageDefault: true, PendingScale: 100, CapacityMaxAge: Duration(15 * time.Minute),
			PublishCapacity: true, PublishThreshold: 0.05, Republish: Duration(time.Minute),
			LoadBased: LoadBasedConfig{PendingMinimum: 100, PendingMaximum: 1000, WeightMinimum: 0, EditMaximum: 3, Scaling: "LINEAR"},
			QueueInputs: QueueInputsConfig{Enabled: true, Interval: Duration(30 * time.Second), MaxAge: Duration(2 * time.Minute),
				RMTimeout: Duration(10 * time.Second), MaxBytes: 64 << 20},
		},
	}
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Store == nil {
		add("store: required")
	}
	if strings.TrimSpace(c.ID) == "" {
		add("id: required")
	}
	if c.LeaseName == "" {
		add("lease_name: required")
	}
	for name, d := range map[string]Duration{
		"interval": c.Interval, "lease_ttl": c.LeaseTTL, "liveness.expiry": c.Liveness.Expiry,
		"cleaner.interval": c.Cleaner.Interval, "cleaner.rm_timeout": c.Cleaner.RMTimeout,
		"generator.capacity_max_age": c.Generator.CapacityMaxAge, "generator.republish": c.Generator.Republish,
		"uam_reaper.interval": c.UAMReaper.Interval, "uam_reaper.rm_timeout": c.UAMReaper.RMTimeout,
		"generator.queue_inputs.interval": c.Generator.QueueInputs.Interval, "generator.queue_inputs.max_age": c.Generator.QueueInputs.MaxAge,
		"generator.queue_inputs.rm_timeout": c.Generator.QueueInputs.RMTimeout,
	} {
		if d <= 0 {
			add("%s: %v, must be > 0", name, time.Duration(d))
		}
	}
	for name, d := range map[string]Duration{
		"debounce": c.Debounce, "cleaner.grace": c.Cleaner.Grace, "cleaner.retention": c.Cleaner.Retention,
		"cleaner.min_rm_uptime": c.Cleaner.MinRMUptime,
		"uam_reaper.grace":      c.UAMReaper.Grace, "uam_reaper.min_rm_uptime": c.UAMReaper.MinRMUptime,
	} {
		if d < 0 {
			add("%s: %v, must be >= 0", name, time.Duration(d))
		}
	}
	if c.LeaseTTL > 0 && c.LeaseTTL.D() < 300*time.Millisecond {
		add("lease_ttl: %v, must be >= 300ms (renewed every third of it)", c.LeaseTTL.D())
	}
	if c.LeaseTTL.D() > 10*time.Minute {
		add("lease_ttl: %v, must be <= 10m", c.LeaseTTL.D())
	}
	if err := c.Kerberos.Validate(true); err != nil {
		errs = append(errs, err)
	}
	if c.Kerberos.Enabled() && c.Kerberos.RMPrincipal == "" {
		for _, k := range c.Kubernetes {
			if k.NodeResourcePush.Enabled {
				add("kerberos.rm_principal: required for kubernetes %q node_resource_push (RM admin calls over Hadoop IPC)", k.Name)
			}
		}
	}
	if c.Cleaner.MaxPerRound < 1 {
		add("cleaner.max_per_round: %d, must be >= 1", c.Cleaner.MaxPerRound)
	}
	if c.UAMReaper.MaxPerRound < 1 {
		add("uam_reaper.max_per_round: %d, must be >= 1", c.UAMReaper.MaxPerRound)
	}
	if c.UAMReaper.Enabled && c.UAMs == nil {
		if _, ok := c.Store.(UAMRegistry); !ok && c.Store != nil {
			add("uam_reaper: the store client cannot delete UAM registry rows (no DeleteUAM); wire Config.UAMs")
		}
	}
	g := c.Generator
	switch g.Policy {
	case PolicyCapacity, PolicyLoadBased:
	default:
		add("generator.policy: %q, must be %q or %q", g.Policy, PolicyCapacity, PolicyLoadBased)
	}
	if !(g.Threshold >= 0 && g.Threshold < 1) {
		add("generator.threshold: %v, must be within [0,1)", g.Threshold)
	}
	if !(g.MaxStep > 0 && g.MaxStep <= 1) {
		add("generator.max_step: %v, must be within (0,1]", g.MaxStep)
	}
	if g.Manager == "" {
		add("generator.manager: required")
	}
	if !(g.PendingScale > 0) {
		add("generator.pending_scale: %v, must be > 0", g.PendingScale)
	}
	if !(g.PublishThreshold >= 0) {
		add("generator.publish_threshold: %v, must be >= 0", g.PublishThreshold)
	}
	if qi := g.QueueInputs; qi.MaxBytes <= 0 || qi.MaxBytes > rmrest.MaxResponseBytes {
		add("generator.queue_inputs.max_bytes: %d, must be within [1, %d]", qi.MaxBytes, rmrest.MaxResponseBytes)
	}
	lb := g.LoadBased
	if lb.PendingMinimum > lb.PendingMaximum {
		add("generator.load_based: pending_minimum %d must be <= pending_maximum %d", lb.PendingMinimum, lb.PendingMaximum)
	}
	if !(lb.WeightMinimum >= 0 && lb.WeightMinimum < 1) {
		add("generator.load_based.weight_minimum: %v, must be within [0,1)", lb.WeightMinimum)
	}
	if lb.EditMaximum < 0 {
		add("generator.load_based.edit_maximum: %d, must be >= 0", lb.EditMaximum)
	}
	switch lb.Scaling {
	case "LINEAR", "QUADRATIC", "LOG", "NONE":
	default:
		add("generator.load_based.scaling: %q, must be LINEAR, QUADRATIC, LOG or NONE", lb.Scaling)
	}
	names := make(map[string]int, len(c.Kubernetes))
	for i, k := range c.Kubernetes {
		// The name labels the cluster's metrics and logs: two clusters
		// sharing one would collide in the registry.
		if strings.TrimSpace(k.Name) == "" {
			add("kubernetes[%d].name: required (labels the cluster's logs and metrics)", i)
		} else if j, dup := names[k.Name]; dup {
			add("kubernetes[%d].name: %q already names kubernetes[%d]", i, k.Name, j)
		} else {
			names[k.Name] = i
		}
		if err := k.Validate(); err != nil {
			add("kubernetes[%d] (%s): %w", i, k.Name, err)
		}
	}
	return errors.Join(errs...)
}

// Duration is the duration type every role's config uses ("10s" in files
// and flags).
type Duration = config.Duration
