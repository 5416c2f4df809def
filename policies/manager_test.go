package policies

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestManagerNamesAndPairs(t *testing.T) {
	reg := NewDefaultRegistry()
	params := weightsJSON("SC-1:1", "SC-1:1", 1)
	tests := []struct {
		short, router, amrm string
		weights             bool
	}{
		{"UniformBroadcast", "UniformRandom", "Broadcast", false},
		{"HashBroadcast", "HashBased", "Broadcast", false},
		{"PriorityBroadcast", "Priority", "Broadcast", true},
		{"WeightedLocality", "Locality", "LocalityMulticast", true},
		{"WeightedHome", "WeightedRandom", "Home", true},
		{"Home", "UniformRandom", "Home", false},
		{"RejectAll", "Reject", "Reject", false},
	}
	if got := reg.ManagerNames(); len(got) != len(tests) {
		t.Errorf("registered managers = %v", got)
	}
	for _, tt := range tests {
		fqn := "org.apache.hadoop.yarn.server.federation.policies.manager." + tt.short + "PolicyManager"
		for _, name := range []string{tt.short, tt.short + "PolicyManager", fqn, " " + fqn + "\n"} {
			m, err := reg.NewManager(PolicyConfig{Queue: "q", Type: name, Params: params}, Env{})
			if err != nil {
				t.Errorf("%q: %v", name, err)
				continue
			}
			if m.Type() != fqn || m.ShortName() != tt.short || m.Router().Type() != tt.router {
				t.Errorf("%q: type %s short %s router %s", name, m.Type(), m.ShortName(), m.Router().Type())
			}
			p, err := m.AMRM().AMRMPolicy("SC-1", nil)
			if err != nil || p.Type() != tt.amrm {
				t.Errorf("%q: AMRM policy %v, %v; want %s", name, p, err, tt.amrm)
			}
		}
		if got, _ := reg.ManagerClass(tt.short); got != fqn {
			t.Errorf("ManagerClass(%s) = %s", tt.short, got)
		}
		if reg.SupportsWeights(fqn) != tt.weights {
			t.Errorf("SupportsWeights(%s) = %v", tt.short, !tt.weights)
		}
	}
	for _, bad := range []string{"", "Nope", "org.apache.hadoop.yarn.server.federation.policies.manager.NopePolicyManager", "uniformbroadcast"} {
		_, err := reg.NewManager(PolicyConfig{Type: bad}, Env{})
		if !errors.Is(err, ErrUnknownPolicyType) || !strings.Contains(err.Error(), "known: ") {
			t.Errorf("%q: err = %v, want ErrUnknownPolicyType listing the known types", bad, err)
		}
	}
	// Java class names of the policies themselves resolve too.
	if _, err := reg.NewRouterPolicy("org.apache.hadoop.yarn.server.federation.policies.router.HashBasedRouterPolicy", nil, Env{}); err != nil {
		t.Error(err)
	}
	if _, err := reg.NewAMRMBuilder("BroadcastAMRMProxyPolicy", nil, Env{}); err != nil {
		t.Error(err)
	}
}

func TestRegistryRejectsDuplicates(t *testing.T) {
	reg := NewDefaultRegistry()
	if err := RegisterDefaults(reg); err == nil {
		t.Error("registering the defaults twice must fail")
	}
	if err := reg.RegisterManager("X", "a.b.X", "Nope", "Broadcast", false); err == nil {
		t.Error("a manager pairing an unregistered policy must fail")
	}
	if err := reg.RegisterManager("X", "a.b.HashBroadcastPolicyManager", "HashBased", "Broadcast", false); err == nil {
		t.Error("a manager reusing another's class name must fail")
	}
}

func TestManagerValidatesBothHalves(t *testing.T) {
	reg := NewDefaultRegistry()
	// Router weights fine, AMRM weights all zero: the manager must refuse
	// it at build time, not when the first AM allocates.
	_, err := reg.NewManager(PolicyConfig{Queue: "root.a", Type: "WeightedLocality", Params: weightsJSON("SC-1:1", "SC-1:0", 0)}, Env{})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `queue "root.a", manager WeightedLocality`) || !strings.Contains(err.Error(), "amrmPolicyWeights") {
		t.Errorf("err = %v", err)
	}
}

// memSource is a ConfigSource over a map, with an injectable failure.
type memSource struct {
	mu   sync.Mutex
	cfgs map[string]PolicyConfig
	fail error
}

func (m *memSource) PolicyConfig(_ context.Context, q string) (PolicyConfig, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return PolicyConfig{}, false, m.fail
	}
	c, ok := m.cfgs[q]
	return c, ok, nil
}

func (m *memSource) set(q string, c PolicyConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c.Queue = q
	m.cfgs[q] = c
}

func counterValue(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "yarnfed_policies_reinitializations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func TestFacadeLookupAndReinit(t *testing.T) {
	ctx := context.Background()
	src := &memSource{cfgs: map[string]PolicyConfig{}}
	promReg := prometheus.NewPedanticRegistry()
	f, err := NewFacade(FacadeConfig{Source: src, Registerer: promReg, Env: Env{Rand: NewSeededSource(1)}})
	if err != nil {
		t.Fatal(err)
	}

	m, err := f.Manager(ctx, "root.a")
	if err != nil || m.ShortName() != "UniformBroadcast" {
		t.Fatalf("nothing stored: got %v, %v; want the configured default", m, err)
	}

	src.set("*", PolicyConfig{Type: "HashBroadcast"})
	if m, _ := f.Manager(ctx, "root.a"); m.ShortName() != "HashBroadcast" {
		t.Errorf("wildcard: got %s", m.ShortName())
	}

	weighted := weightsJSON("SC-1:0.5,SC-2:0.5", "SC-1:1", 1)
	src.set("root.a", PolicyConfig{Type: "WeightedLocality", Params: weighted})
	m1, _ := f.Manager(ctx, "root.a")
	if m1.ShortName() != "WeightedLocality" {
		t.Fatalf("queue policy: got %s", m1.ShortName())
	}
	if m, _ := f.Manager(ctx, "root.b"); m.ShortName() != "HashBroadcast" {
		t.Errorf("other queue must still use the wildcard, got %s", m.ShortName())
	}
	if m, _ := f.Manager(ctx, ""); m.ShortName() != "HashBroadcast" {
		t.Errorf("empty queue: got %s", m.ShortName())
	}

	// Same bytes (a fresh copy): no rebuild.
	src.set("root.a", PolicyConfig{Type: "WeightedLocality", Params: append([]byte(nil), weighted...)})
	if m2, _ := f.Manager(ctx, "root.a"); m2 != m1 {
		t.Errorf("unchanged configuration rebuilt the manager")
	}
	okBefore := counterValue(t, promReg, "ok")

	// Changed bytes: rebuild.
	src.set("root.a", PolicyConfig{Type: "WeightedLocality", Params: weightsJSON("SC-1:1", "SC-1:1", 1)})
	m3, _ := f.Manager(ctx, "root.a")
	if m3 == m1 {
		t.Errorf("changed configuration did not rebuild the manager")
	}
	if got := counterValue(t, promReg, "ok"); got != okBefore+1 {
		t.Errorf("ok rebuilds = %v, want %v", got, okBefore+1)
	}

	// Bad configuration: the previous manager stays in force.
	for _, bad := range []PolicyConfig{
		{Type: "WeightedLocality", Params: []byte(`{"routerPolicyWeights":`)},
		{Type: "WeightedLocality", Params: weightsJSON("SC-1:-1", "SC-1:1", 1)},
		{Type: "NoSuchManager"},
	} {
		src.set("root.a", bad)
		m4, err := f.Manager(ctx, "root.a")
		if err != nil || m4 != m3 {
			t.Errorf("bad config %q: got %v, %v; want the previous manager", bad.Params, m4, err)
		}
	}
	if got := counterValue(t, promReg, "error"); got != 3 {
		t.Errorf("error rebuilds = %v, want 3", got)
	}
	// A bad first configuration has nothing to fall back to.
	src.set("root.new", PolicyConfig{Type: "NoSuchManager"})
	if _, err := f.Manager(ctx, "root.new"); !errors.Is(err, ErrUnknownPolicyType) {
		t.Errorf("first bad config: err = %v", err)
	}

	// Store failure: keep cached managers, fall back for unknown queues.
	src.mu.Lock()
	src.fail = errors.New("store down")
	src.mu.Unlock()
	if m5, err := f.Manager(ctx, "root.a"); err != nil || m5 != m3 {
		t.Errorf("store down: got %v, %v; want the cached manager", m5, err)
	}
	if m6, err := f.Manager(ctx, "root.zzz"); err != nil || m6.ShortName() != "HashBroadcast" {
		t.Errorf("store down, uncached queue: got %v, %v; want the cached wildcard", m6, err)
	}
	src.mu.Lock()
	src.fail = context.Canceled
	src.mu.Unlock()
	if _, err := f.Manager(ctx, "root.a"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled lookup: err = %v", err)
	}
}

func TestFacadeRoutesAndValidates(t *testing.T) {
	ctx := context.Background()
	src := &memSource{cfgs: map[string]PolicyConfig{}}
	src.set("root.a", PolicyConfig{Type: "RejectAll"})
	f, err := NewFacade(FacadeConfig{Source: src, Default: PolicyConfig{Type: "HashBroadcastPolicyManager"}})
	if err != nil {
		t.Fatal(err)
	}
	snap := NewSnapshot(running("SC-1", "SC-2"))
	if _, err := f.HomeSubCluster(ctx, snap, &AppSubmission{Queue: "root.a"}, nil); !errors.Is(err, ErrRejected) {
		t.Errorf("root.a: err = %v", err)
	}
	if id, err := f.HomeSubCluster(ctx, snap, &AppSubmission{Queue: "default"}, nil); err != nil || id != "SC-2" {
		t.Errorf("default queue hashes to SC-2: got %q, %v", id, err)
	}
	p, err := f.AMRMPolicy(ctx, "root.b", "SC-1", nil)
	if err != nil || p.Type() != "Broadcast" {
		t.Errorf("AMRM policy: %v, %v", p, err)
	}
	if _, err := NewFacade(FacadeConfig{Default: PolicyConfig{Type: "PriorityBroadcast"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unusable default: err = %v", err)
	}
}

func TestFacadeConcurrent(t *testing.T) {
	ctx := context.Background()
	src := &memSource{cfgs: map[string]PolicyConfig{}}
	f, err := NewFacade(FacadeConfig{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	snap := NewSnapshot(running("SC-1", "SC-2", "SC-3"))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if g == 0 && i%20 == 0 {
					src.set("root.a", PolicyConfig{Type: "PriorityBroadcast", Params: weightsJSON("SC-1:1,SC-2:"+JavaFloatString(float32(i)), "", 0)})
				}
				if _, err := f.HomeSubCluster(ctx, snap, &AppSubmission{Queue: "root.a"}, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}
