package policies

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// PolicyConfig is one stored per-queue policy (Hadoop
// SubClusterPolicyConfiguration): the queue, the manager type and the
// manager's params (WeightedPolicyInfo JSON for the weighted managers).
type PolicyConfig struct {
	Queue  string
	Type   string
	Params []byte
}

// Same reports whether two configurations would build the same policies.
func (c PolicyConfig) Same(o PolicyConfig) bool {
	if c.Type != o.Type || len(c.Params) != len(o.Params) {
		return false
	}
	// A caching store hands back the same slice every time: skip the
	// byte-by-byte comparison then.
	if len(c.Params) == 0 || &c.Params[0] == &o.Params[0] {
		return true
	}
	return bytes.Equal(c.Params, o.Params)
}

// Env is what policies need from their surroundings.
type Env struct {
	// Resolver maps nodes and racks to sub-clusters (Locality router,
	// LocalityMulticast). Nil resolves nothing.
	Resolver SubClusterResolver
	// Reservations resolves a reservation's home sub-cluster. Nil makes
	// submissions with a reservation fail with ErrReservation.
	Reservations ReservationResolver
	// Rand is the random source; nil uses math/rand/v2's global generator.
	Rand Source
}

// PolicyParams wraps a configuration's params and parses them at most once,
// on demand: policies that ignore weights (UniformRandom, HashBased,
// Broadcast, ...) never look at them, as in Hadoop, so an empty params
// blob is fine for them.
type PolicyParams struct {
	raw  []byte
	once sync.Once
	info *WeightedPolicyInfo
	err  error
}

// NewPolicyParams wraps raw params.
func NewPolicyParams(raw []byte) *PolicyParams { return &PolicyParams{raw: raw} }

// Weighted returns the params parsed as WeightedPolicyInfo.
func (p *PolicyParams) Weighted() (*WeightedPolicyInfo, error) {
	p.once.Do(func() { p.info, p.err = ParseWeightedPolicyInfo(p.raw) })
	return p.info, p.err
}

// RouterFactory builds a router policy from params.
type RouterFactory func(p *PolicyParams, env Env) (RouterPolicy, error)

// AMRMFactory builds the AMRMProxy policy builder of one configuration.
type AMRMFactory func(p *PolicyParams, env Env) (AMRMBuilder, error)

// Manager pairs a router policy and an AMRMProxy policy built from one
// stored configuration (Hadoop FederationPolicyManager).
type Manager interface {
	// Type is the manager's Hadoop class name, as stored in the state store.
	Type() string
	// ShortName is our short name, e.g. "WeightedLocality".
	ShortName() string
	// Config is the configuration the manager was built from.
	Config() PolicyConfig
	// Router is the router policy.
	Router() RouterPolicy
	// AMRM makes the per-application AMRMProxy policies.
	AMRM() AMRMBuilder
}

type manager struct {
	entry  *managerEntry
	cfg    PolicyConfig
	router RouterPolicy
	amrm   AMRMBuilder
}

func (m *manager) Type() string         { return m.entry.javaClass }
func (m *manager) ShortName() string    { return m.entry.name }
func (m *manager) Config() PolicyConfig { return m.cfg }
func (m *manager) Router() RouterPolicy { return m.router }
func (m *manager) AMRM() AMRMBuilder    { return m.amrm }

type routerEntry struct {
	name, javaClass string
	f               RouterFactory
}

type amrmEntry struct {
	name, javaClass string
	f               AMRMFactory
}

type managerEntry struct {
	name, javaClass string
	router, amrm    string
	supportsWeights bool
}

// Registry maps policy and manager type names to their constructors. Fill
// it with RegisterDefaults (and any extra registrations); there is no
// package-level registry.
type Registry struct {
	mu       sync.RWMutex
	routers  map[string]*routerEntry
	amrms    map[string]*amrmEntry
	managers map[string]*managerEntry
	// aliases maps every accepted spelling (short name, Java simple class
	// name, Java fully qualified class name) to the short name, per kind.
	routerAlias, amrmAlias, managerAlias map[string]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		routers: map[string]*routerEntry{}, amrms: map[string]*amrmEntry{}, managers: map[string]*managerEntry{},
		routerAlias: map[string]string{}, amrmAlias: map[string]string{}, managerAlias: map[string]string{},
	}
}

func addAliases(alias map[string]string, name, javaClass string) error {
	keys := []string{name}
	if javaClass != "" {
		keys = append(keys, javaClass, javaClass[strings.LastIndexByte(javaClass, '.')+1:])
	}
	for _, k := range keys {
		if prev, dup := alias[k]; dup && prev != name {
			return fmt.Errorf("policies: name %q already registered for %q", k, prev)
		}
	}
	for _, k := range keys {
		alias[k] = name
	}
	return nil
}

// RegisterRouterPolicy registers a router policy under its short name and
// its Java class name.
func (r *Registry) RegisterRouterPolicy(name, javaClass string, f RouterFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.routers[name]; dup {
		return fmt.Errorf("policies: router policy %q registered twice", name)
	}
	if err := addAliases(r.routerAlias, name, javaClass); err != nil {
		return err
	}
	r.routers[name] = &routerEntry{name: name, javaClass: javaClass, f: f}
	return nil
}

// RegisterAMRMPolicy registers an AMRMProxy policy.
func (r *Registry) RegisterAMRMPolicy(name, javaClass string, f AMRMFactory) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.amrms[name]; dup {
		return fmt.Errorf("policies: AMRMProxy policy %q registered twice", name)
	}
	if err := addAliases(r.amrmAlias, name, javaClass); err != nil {
		return err
	}
	r.amrms[name] = &amrmEntry{name: name, javaClass: javaClass, f: f}
	return nil
}

// RegisterManager registers a manager pairing registered policies.
// supportsWeights marks managers whose weights the router admin may set
// (Hadoop allows -policy -s only for those).
func (r *Registry) RegisterManager(name, javaClass, router, amrm string, supportsWeights bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.managers[name]; dup {
		return fmt.Errorf("policies: manager %q registered twice", name)
	}
	if r.routers[router] == nil || r.amrms[amrm] == nil {
		return fmt.Errorf("policies: manager %q: unregistered policies %q / %q", name, router, amrm)
	}
	if err := addAliases(r.managerAlias, name, javaClass); err != nil {
		return err
	}
	r.managers[name] = &managerEntry{name: name, javaClass: javaClass, router: router, amrm: amrm, supportsWeights: supportsWeights}
	return nil
}

func (r *Registry) manager(typ string) (*managerEntry, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if n, ok := r.managerAlias[strings.TrimSpace(typ)]; ok {
		return r.managers[n], nil
	}
	return nil, fmt.Errorf("%w: policy manager %q (known: %s)", ErrUnknownPolicyType, typ, strings.Join(r.namesLocked(), ", "))
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.managers))
	for n := range r.managers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ManagerNames returns the short names of the registered managers, sorted.
func (r *Registry) ManagerNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

// RouterPolicyNames returns the short names of the registered router
// policies, sorted.
func (r *Registry) RouterPolicyNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(func(yield func(string) bool) {
		for n := range r.routers {
			if !yield(n) {
				return
			}
		}
	})
}

// AMRMPolicyNames returns the short names of the registered AMRMProxy
// policies, sorted.
func (r *Registry) AMRMPolicyNames() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(func(yield func(string) bool) {
		for n := range r.amrms {
			if !yield(n) {
				return
			}
		}
	})
}

// ManagerClass returns the Hadoop class name for any accepted spelling of
// a manager type: what to store so Hadoop routers can read it too.
func (r *Registry) ManagerClass(typ string) (string, error) {
	e, err := r.manager(typ)
	if err != nil {
		return "", err
	}
	return e.javaClass, nil
}

// SupportsWeights reports whether the manager type takes operator weights
// (the managers Hadoop's router admin accepts for -policy -s/-bs).
func (r *Registry) SupportsWeights(typ string) bool {
	e, err := r.manager(typ)
	return err == nil && e.supportsWeights
}

// NewRouterPolicy builds a router policy by type name.
func (r *Registry) NewRouterPolicy(typ string, params []byte, env Env) (RouterPolicy, error) {
	r.mu.RLock()
	e := r.routers[r.routerAlias[strings.TrimSpace(typ)]]
	r.mu.RUnlock()
	if e == nil {
		return nil, fmt.Errorf("%w: router policy %q", ErrUnknownPolicyType, typ)
	}
	return e.f(NewPolicyParams(params), env)
}

// NewAMRMBuilder builds an AMRMProxy policy builder by type name.
func (r *Registry) NewAMRMBuilder(typ string, params []byte, env Env) (AMRMBuilder, error) {
	r.mu.RLock()
	e := r.amrms[r.amrmAlias[strings.TrimSpace(typ)]]
	r.mu.RUnlock()
	if e == nil {
		return nil, fmt.Errorf("%w: AMRMProxy policy %q", ErrUnknownPolicyType, typ)
	}
	return e.f(NewPolicyParams(params), env)
}

// NewManager builds and validates both halves of a manager from cfg. Both
// policies are checked now, so a bad configuration is refused before it
// replaces a working one.
func (r *Registry) NewManager(cfg PolicyConfig, env Env) (Manager, error) {
	e, err := r.manager(cfg.Type)
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	rf, af := r.routers[e.router].f, r.amrms[e.amrm].f
	r.mu.RUnlock()
	p := NewPolicyParams(cfg.Params)
	router, err := rf(p, env)
	if err != nil {
		return nil, fmt.Errorf("queue %q, manager %s: %w", cfg.Queue, e.name, err)
	}
	amrm, err := af(p, env)
	if err != nil {
		return nil, fmt.Errorf("queue %q, manager %s: %w", cfg.Queue, e.name, err)
	}
	return &manager{entry: e, cfg: cfg, router: router, amrm: amrm}, nil
}

// Hadoop class-name prefixes.
const (
	javaRouterPkg  = "org.apache.hadoop.yarn.server.federation.policies.router."
	javaAMRMPkg    = "org.apache.hadoop.yarn.server.federation.policies.amrmproxy."
	javaManagerPkg = "org.apache.hadoop.yarn.server.federation.policies.manager."
)

// DefaultManager is the manager used when nothing is configured (Hadoop's
// yarn.federation.policy-manager default).
const DefaultManager = javaManagerPkg + "UniformBroadcastPolicyManager"

// routerWeights returns validated router weights: Hadoop requires a
// non-empty weight vector; we also refuse empty ids and an all-zero vector,
// which could never route anything.
func routerWeights(p *PolicyParams) ([]Weight, error) {
	info, err := p.Weighted()
	if err != nil {
		return nil, err
	}
	if len(info.RouterWeights) == 0 {
		return nil, fmt.Errorf("%w: routerPolicyWeights: empty", ErrInvalidConfig)
	}
	positive := false
	for _, w := range info.RouterWeights {
		if w.ID == "" {
			return nil, fmt.Errorf("%w: routerPolicyWeights: empty sub-cluster id", ErrInvalidConfig)
		}
		positive = positive || w.Value > 0
	}
	if !positive {
		return nil, fmt.Errorf("%w: routerPolicyWeights: all zero, so no application could be routed", ErrInvalidConfig)
	}
	return slices.Clone(info.RouterWeights), nil
}

// RegisterDefaults registers every Hadoop 3.4 router policy, AMRMProxy
// policy and policy manager.
func RegisterDefaults(r *Registry) error {
	routers := []struct {
		name string
		f    RouterFactory
	}{
		{"UniformRandom", func(_ *PolicyParams, env Env) (RouterPolicy, error) {
			return &routerBase{typ: "UniformRandom", reservations: env.Reservations, c: &uniformRandom{rnd: sourceOrDefault(env.Rand)}}, nil
		}},
		{"WeightedRandom", func(p *PolicyParams, env Env) (RouterPolicy, error) {
			ws, err := routerWeights(p)
			if err != nil {
				return nil, err
			}
			return &routerBase{typ: "WeightedRandom", reservations: env.Reservations, c: &weightedRandom{weights: ws, rnd: sourceOrDefault(env.Rand)}}, nil
		}},
		{"Priority", func(p *PolicyParams, env Env) (RouterPolicy, error) {
			ws, err := routerWeights(p)
			if err != nil {
				return nil, err
			}
			return &routerBase{typ: "Priority", reservations: env.Reservations, c: &priority{weights: ws}}, nil
		}},
		{"HashBased", func(_ *PolicyParams, env Env) (RouterPolicy, error) {
			return &routerBase{typ: "HashBased", reservations: env.Reservations, c: hashBased{}}, nil
		}},
		{"LoadBased", func(p *PolicyParams, env Env) (RouterPolicy, error) {
			ws, err := routerWeights(p)
			if err != nil {
				return nil, err
			}
			for _, w := range ws {
				if w.Value != 0 && w.Value != 1 {
					return nil, fmt.Errorf("%w: routerPolicyWeights[%s]: LoadBased expects weights of 0 or 1, got %s", ErrInvalidConfig, w.ID, JavaFloatString(w.Value))
				}
			}
			return &routerBase{typ: "LoadBased", reservations: env.Reservations, c: &loadBased{weights: ws}}, nil
		}},
		{"Locality", func(p *PolicyParams, env Env) (RouterPolicy, error) {
			ws, err := routerWeights(p)
			if err != nil {
				return nil, err
			}
			wr := &weightedRandom{weights: ws, rnd: sourceOrDefault(env.Rand)}
			enabled := map[SubClusterID]bool{}
			for _, w := range ws {
				enabled[w.ID] = w.Value > 0
			}
			return &localityRouter{routerBase: routerBase{typ: "Locality", reservations: env.Reservations, c: wr},
				resolver: env.Resolver, wr: wr, enabled: enabled}, nil
		}},
		{"Reject", func(_ *PolicyParams, env Env) (RouterPolicy, error) {
			return &rejectRouter{routerBase{typ: "Reject", reservations: env.Reservations, c: reject{}}}, nil
		}},
	}
	for _, x := range routers {
		if err := r.RegisterRouterPolicy(x.name, javaRouterPkg+x.name+"RouterPolicy", x.f); err != nil {
			return err
		}
	}
	amrms := []struct {
		name string
		f    AMRMFactory
	}{
		{"Broadcast", func(*PolicyParams, Env) (AMRMBuilder, error) { return broadcastBuilder{}, nil }},
		{"Home", func(*PolicyParams, Env) (AMRMBuilder, error) { return homeBuilder{}, nil }},
		{"Reject", func(*PolicyParams, Env) (AMRMBuilder, error) { return rejectBuilder{}, nil }},
		{"LocalityMulticast", func(p *PolicyParams, env Env) (AMRMBuilder, error) {
			info, err := p.Weighted()
			if err != nil {
				return nil, err
			}
			return newLocalityMulticastBuilder(info, env)
		}},
	}
	for _, x := range amrms {
		if err := r.RegisterAMRMPolicy(x.name, javaAMRMPkg+x.name+"AMRMProxyPolicy", x.f); err != nil {
			return err
		}
	}
	managers := []struct {
		name, router, amrm string
		weights            bool
	}{
		{"UniformBroadcast", "UniformRandom", "Broadcast", false},
		{"HashBroadcast", "HashBased", "Broadcast", false},
		{"PriorityBroadcast", "Priority", "Broadcast", true},
		{"WeightedLocality", "Locality", "LocalityMulticast", true},
		{"WeightedHome", "WeightedRandom", "Home", true},
		{"Home", "UniformRandom", "Home", false},
		{"RejectAll", "Reject", "Reject", false},
	}
	for _, x := range managers {
		if err := r.RegisterManager(x.name, javaManagerPkg+x.name+"PolicyManager", x.router, x.amrm, x.weights); err != nil {
			return err
		}
	}
	return nil
}

// NewDefaultRegistry returns a registry filled by RegisterDefaults.
func NewDefaultRegistry() *Registry {
	r := NewRegistry()
	if err := RegisterDefaults(r); err != nil {
		panic(err) // a fresh registry cannot hold duplicates
	}
	return r
}
