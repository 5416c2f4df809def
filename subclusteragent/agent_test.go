package subclusteragent_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/rmrest/spnegotest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// recStore records what the agent writes.
type recStore struct {
	mu    sync.Mutex
	regs  []subclusteragent.Registration
	beats []subclusteragent.State
	caps  []string
}

func (s *recStore) RegisterSubCluster(_ context.Context, r subclusteragent.Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.regs = append(s.regs, r)
	return nil
}

func (s *recStore) SubClusterHeartbeat(_ context.Context, _ string, st subclusteragent.State, c string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beats = append(s.beats, st)
	s.caps = append(s.caps, c)
	return nil
}

func (s *recStore) last() (subclusteragent.Registration, int, []subclusteragent.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r subclusteragent.Registration
	if len(s.regs) > 0 {
		r = s.regs[len(s.regs)-1]
	}
	return r, len(s.regs), append([]subclusteragent.State(nil), s.beats...)
}

func startRM(t *testing.T, rm *simrm.RM) {
	t.Helper()
	if err := rm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
}

func endpoint(rm *simrm.RM) subclusteragent.RMEndpoint {
	a := rm.Addrs()
	return subclusteragent.RMEndpoint{ClientRM: a.Client, AMRM: a.Scheduler, Admin: a.Admin, Web: a.Web}
}

// TestAgentFollowsFailover drives an HA pair through failover and a full
// outage; every change must reach the store in the very next probe round.
func TestAgentFollowsFailover(t *testing.T) {
	cfg := simrm.TestConfig()
	cfg.ClusterID = "SC-1"
	rm0, err := simrm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startRM(t, rm0)
	rm1, err := simrm.NewStandby(rm0, simrm.TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	startRM(t, rm1)

	st := &recStore{}
	acfg := subclusteragent.DefaultConfig()
	acfg.SubClusterID, acfg.Store = "SC-1", st
	acfg.RMs = []subclusteragent.RMEndpoint{endpoint(rm1), endpoint(rm0)} // standby listed first on purpose
	acfg.HeartbeatInterval = config.Duration(time.Hour)                   // only changes write
	a, err := subclusteragent.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	a.Step(ctx)
	reg, n, _ := st.last()
	if n != 1 || reg.ClientRMServiceAddress != rm0.Addrs().Client || reg.State != subclusteragent.StateRunning {
		t.Fatalf("first step: %d registrations, last %+v; want the active rm0", n, reg)
	}
	var cm rmrest.ClusterMetricsResponse
	if err := json.Unmarshal([]byte(reg.Capability), &cm); err != nil || cm.ClusterMetrics.TotalNodes == 0 {
		t.Fatalf("capability %q is not the RM's clusterMetrics: %v", reg.Capability, err)
	}

	a.Step(ctx) // nothing changed, heartbeat not due: no write
	if _, n, beats := st.last(); n != 1 || len(beats) != 0 {
		t.Fatalf("idle step wrote: %d regs, beats %v", n, beats)
	}

	rm0.TransitionToStandby()
	rm1.TransitionToActive()
	a.Step(ctx)
	reg, n, _ = st.last()
	if n != 2 || reg.ClientRMServiceAddress != rm1.Addrs().Client || reg.RMWebServiceAddress != rm1.Addrs().Web {
		t.Fatalf("after failover: %d regs, last %+v; want rm1's addresses", n, reg)
	}

	_ = rm1.Close()
	_ = rm0.Close()
	a.Step(ctx)
	if _, _, beats := st.last(); len(beats) != 1 || beats[0] != subclusteragent.StateUnhealthy {
		t.Fatalf("outage: heartbeats %v, want one SC_UNHEALTHY", beats)
	}
	if s := a.Status(); s.State != subclusteragent.StateUnhealthy || s.Active != -1 {
		t.Fatalf("status %+v", s)
	}
}

func TestAgentConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*subclusteragent.Config)
	}{
		{"no id", func(c *subclusteragent.Config) { c.SubClusterID = "" }},
		{"no RMs", func(c *subclusteragent.Config) { c.RMs = nil }},
		{"RM without web address", func(c *subclusteragent.Config) { c.RMs[0].Web = "" }},
		{"no store", func(c *subclusteragent.Config) { c.Store = nil }},
		{"zero interval", func(c *subclusteragent.Config) { c.ProbeInterval = 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := subclusteragent.DefaultConfig()
			c.SubClusterID, c.Store = "SC-1", &recStore{}
			c.RMs = []subclusteragent.RMEndpoint{{ClientRM: "a:1", AMRM: "a:2", Web: "a:3"}}
			if err := c.Validate(); err != nil {
				t.Fatalf("base config invalid: %v", err)
			}
			tc.mod(&c)
			if c.Validate() == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestAgentRestartWhileRMDown: a new agent process whose RM is down must
// still mark the row a previous process left RUNNING as unhealthy.
func TestAgentRestartWhileRMDown(t *testing.T) {
	st := &recStore{}
	cfg := subclusteragent.DefaultConfig()
	cfg.SubClusterID, cfg.Store = "SC-1", st
	cfg.RMs = []subclusteragent.RMEndpoint{{ClientRM: "127.0.0.1:1", AMRM: "127.0.0.1:1", Admin: "127.0.0.1:1", Web: "127.0.0.1:1"}}
	cfg.ProbeTimeout, cfg.HeartbeatInterval = config.Duration(time.Second), config.Duration(time.Hour)
	a, err := subclusteragent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Step(context.Background())
	a.Step(context.Background()) // unchanged and not due: no second write
	if _, n, beats := st.last(); n != 0 || len(beats) != 1 || beats[0] != subclusteragent.StateUnhealthy {
		t.Fatalf("registrations %d, heartbeats %v; want one SC_UNHEALTHY heartbeat", n, beats)
	}
}

// TestAgentKerberos: an agent with a keytab probes an RM whose REST API
// takes only SPNEGO (a simrm behind spnegotest, tickets from a real KDC)
// and registers it; the same RM refuses an agent without Kerberos, which
// then registers nothing.
func TestAgentKerberos(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKT := kdc.AddService(t, "HTTP/localhost")
	agentKT := kdc.AddService(t, "agent/localhost")

	cfg := simrm.TestConfig()
	cfg.ClusterID = "SC-K"
	rm, err := simrm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	startRM(t, rm)
	ep := spnegotest.New(spnegotest.Proxy(rm.Addrs().Web), kdc.Keytab(t, httpKT), "HTTP/localhost")
	secured := endpoint(rm)
	secured.Web = ep.Serve(t)

	newAgent := func(k krblogin.Config) (*subclusteragent.Agent, *recStore) {
		st := &recStore{}
		acfg := subclusteragent.DefaultConfig()
		acfg.SubClusterID, acfg.Store, acfg.Kerberos = "SC-K", st, k
		acfg.RMs = []subclusteragent.RMEndpoint{secured}
		acfg.HeartbeatInterval = config.Duration(time.Hour)
		a, err := subclusteragent.New(acfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		return a, st
	}

	plain, st := newAgent(krblogin.Config{})
	plain.Step(context.Background())
	if _, n, beats := st.last(); n != 0 || len(beats) != 1 || beats[0] != subclusteragent.StateUnhealthy {
		t.Fatalf("agent without Kerberos: %d registrations, heartbeats %v; want none and SC_UNHEALTHY", n, beats)
	}
	if ep.Challenges.Load() == 0 || ep.Tokens.Load() != 0 {
		t.Fatalf("agent without Kerberos: challenges %d, tokens %d", ep.Challenges.Load(), ep.Tokens.Load())
	}

	a, st := newAgent(krblogin.Config{Principal: kdc.Principal("agent/localhost"), Keytab: agentKT, Krb5Conf: kdc.ConfPath})
	for i := 0; i < 3; i++ {
		a.Step(context.Background())
	}
	reg, n, _ := st.last()
	if n != 1 || reg.State != subclusteragent.StateRunning || reg.RMWebServiceAddress != secured.Web {
		t.Fatalf("Kerberized agent: %d registrations, last %+v", n, reg)
	}
	var cm rmrest.ClusterMetricsResponse
	if err := json.Unmarshal([]byte(reg.Capability), &cm); err != nil || cm.ClusterMetrics.TotalNodes == 0 {
		t.Fatalf("capability %q: %v", reg.Capability, err)
	}
	// Three probes of /info + /metrics: one ticket exchange, the rest on
	// the hadoop.auth cookie.
	if tok, hits := ep.Tokens.Load(), ep.CookieHits.Load(); tok != 1 || hits != 5 {
		t.Fatalf("tokens %d, cookie hits %d; want 1 and 5", tok, hits)
	}
}

func TestAgentKerberosConfig(t *testing.T) {
	base := func() subclusteragent.Config {
		c := subclusteragent.DefaultConfig()
		c.SubClusterID, c.Store = "SC-1", &recStore{}
		c.RMs = []subclusteragent.RMEndpoint{{ClientRM: "a:1", AMRM: "a:2", Web: "a:3"}}
		return c
	}
	for name, k := range map[string]krblogin.Config{
		"keytab without principal":  {Keytab: "/k"},
		"principal without keytab":  {Principal: "agent/h@R"},
		"principal without realm":   {Principal: "agent/h", Keytab: "/k"},
		"rm_principal (no IPC)":     {Principal: "agent/h@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R"},
		"non-HTTP SPNEGO principal": {Principal: "agent/h@R", Keytab: "/k", RMHTTPPrincipal: "rm/_HOST@R"},
	} {
		t.Run(name, func(t *testing.T) {
			c := base()
			c.Kerberos = k
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kerberos") {
				t.Fatalf("Validate = %v, want a kerberos error", err)
			}
		})
	}
	c := base()
	c.Kerberos = krblogin.Config{Principal: "agent/h@R", Keytab: "/nonexistent.keytab"}
	if _, err := subclusteragent.New(c); err == nil || !strings.Contains(err.Error(), "kerberos.keytab") {
		t.Fatalf("New with a missing keytab = %v", err)
	}
}
