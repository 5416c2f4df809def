package policies

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// WildcardQueue is the store key of the federation-wide fallback policy
// (Hadoop YarnConfiguration.DEFAULT_FEDERATION_POLICY_KEY).
const WildcardQueue = "*"

// ConfigSource returns stored per-queue policy configurations (the policy
// table of the state store, usually behind a cache).
type ConfigSource interface {
	// PolicyConfig returns the configuration stored for queue; ok is false
	// when there is none.
	PolicyConfig(ctx context.Context, queue string) (cfg PolicyConfig, ok bool, err error)
}

// FacadeConfig configures a Facade.
type FacadeConfig struct {
	// Source is the policy store; nil means only Default is used.
	Source ConfigSource
	// Registry resolves manager types; nil uses NewDefaultRegistry().
	Registry *Registry
	// Default is used when neither the queue nor "*" has a stored policy
	// (yarn.federation.policy-manager and -params). An empty Type means
	// DefaultManager.
	Default PolicyConfig
	// Env is handed to every policy built.
	Env Env
	// Logger receives configuration problems; nil discards them.
	Logger *slog.Logger
	// Registerer receives the facade's metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Facade resolves the policy manager of a queue (stored queue policy ->
// stored "*" policy -> configured default, as Hadoop's RouterPolicyFacade
// and FederationPolicyUtils.loadPolicyConfiguration do) and caches the
// built managers. A manager is rebuilt only when its stored type or params
// bytes change; when the new configuration is bad, the previous manager
// stays in force and the problem is logged and counted.
type Facade struct {
	src     ConfigSource
	reg     *Registry
	def     PolicyConfig
	env     Env
	log     *slog.Logger
	reinits *prometheus.CounterVec

	mu    sync.Mutex
	cache map[string]Manager // keyed by the source of the configuration
}

// NewFacade builds a facade and checks that the default configuration is
// usable.
func NewFacade(cfg FacadeConfig) (*Facade, error) {
	f := &Facade{src: cfg.Source, reg: cfg.Registry, def: cfg.Default, env: cfg.Env, log: cfg.Logger, cache: map[string]Manager{}}
	if f.reg == nil {
		f.reg = NewDefaultRegistry()
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.def.Type == "" {
		f.def.Type = DefaultManager
	}
	f.def.Queue = ""
	f.reinits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yarnfed_policies_reinitializations_total",
		Help: "Policy manager (re)builds after a stored policy configuration changed, by result (ok, error).",
	}, []string{"result"})
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(f.reinits); err != nil {
			return nil, fmt.Errorf("policies: registering metrics: %w", err)
		}
	}
	m, err := f.reg.NewManager(f.def, f.env)
	if err != nil {
		return nil, fmt.Errorf("policies: default policy: %w", err)
	}
	f.cache[defaultKey] = m
	return f, nil
}

// defaultKey cannot collide with a queue name: YARN queue names have no NUL.
const defaultKey = "\x00default"

// Manager returns the manager for queue (empty means DefaultQueue).
func (f *Facade) Manager(ctx context.Context, queue string) (Manager, error) {
	if queue == "" {
		queue = DefaultQueue
	}
	if f.src != nil {
		for _, q := range []string{queue, WildcardQueue} {
			cfg, ok, err := f.src.PolicyConfig(ctx, q)
			if err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return nil, err
				}
				// A store hiccup must not flip the queue to another policy:
				// keep what we built before, if anything.
				if m := f.cached(q); m != nil {
					f.log.Warn("policy store lookup failed; keeping the cached policy", "queue", q, "err", err)
					return m, nil
				}
				f.log.Warn("policy store lookup failed; falling back", "queue", q, "err", err)
				continue
			}
			if ok {
				return f.managerFor(q, cfg)
			}
		}
	}
	return f.cached(defaultKey), nil
}

func (f *Facade) cached(key string) Manager {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cache[key]
}

func (f *Facade) managerFor(key string, cfg PolicyConfig) (Manager, error) {
	f.mu.Lock()
	old := f.cache[key]
	f.mu.Unlock()
	if old != nil && old.Config().Same(cfg) {
		return old, nil
	}
	m, err := f.reg.NewManager(cfg, f.env)
	if err != nil {
		f.reinits.WithLabelValues("error").Inc()
		if old != nil {
			f.log.Error("stored policy is invalid; the previous policy stays in force", "queue", key, "type", cfg.Type, "err", err)
			return old, nil
		}
		return nil, err
	}
	f.reinits.WithLabelValues("ok").Inc()
	f.mu.Lock()
	// Another goroutine may have rebuilt the same config meanwhile; either
	// result is equivalent, keep the first to avoid churn.
	if cur := f.cache[key]; cur != nil && cur != old && cur.Config().Same(cfg) {
		m = cur
	} else {
		f.cache[key] = m
	}
	f.mu.Unlock()
	return m, nil
}

// AMRMPolicy returns the AMRMProxy policy of an application in queue whose
// home is home, reusing prev when it can.
func (f *Facade) AMRMPolicy(ctx context.Context, queue string, home SubClusterID, prev AMRMPolicy) (AMRMPolicy, error) {
	m, err := f.Manager(ctx, queue)
	if err != nil {
		return nil, err
	}
	return m.AMRM().AMRMPolicy(home, prev)
}
