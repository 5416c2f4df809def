package gpg

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/config/configtest"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func TestLivenessMarksLostAndHeartbeatBringsBack(t *testing.T) {
	clk := newClock()
	st := gpgtest.NewFakeStore(clk.Now)
	for _, sc := range []struct {
		id string
		st pb.SubClusterState
	}{
		{"running", pb.SubClusterState_SC_RUNNING}, {"new", pb.SubClusterState_SC_NEW}, {"unhealthy", pb.SubClusterState_SC_UNHEALTHY},
		{"decommissioned", pb.SubClusterState_SC_DECOMMISSIONED}, {"fresh", pb.SubClusterState_SC_RUNNING},
	} {
		st.Register(subCluster(sc.id, sc.st, ""))
	}
	g := newTestGPG(t, st, nil, clk.Now, func(c *Config) { c.Liveness.Expiry = Duration(30 * time.Minute) })
	clk.Add(31 * time.Minute)
	if err := st.Heartbeat("fresh", pb.SubClusterState_SC_RUNNING, ""); err != nil {
		t.Fatal(err)
	}
	acquire(t, g)
	marked, err := g.markLost(context.Background(), g.lease.fence())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(marked)
	if want := []string{"new", "running", "unhealthy"}; !slices.Equal(marked, want) {
		t.Fatalf("marked %v, want %v", marked, want)
	}
	cases := map[string]pb.SubClusterState{
		"running": pb.SubClusterState_SC_LOST, "new": pb.SubClusterState_SC_LOST, "unhealthy": pb.SubClusterState_SC_LOST,
		"decommissioned": pb.SubClusterState_SC_DECOMMISSIONED, "fresh": pb.SubClusterState_SC_RUNNING,
	}
	for id, want := range cases {
		if got := st.SubCluster(id).GetState(); got != want {
			t.Errorf("%s: %v, want %v", id, got, want)
		}
	}
	// The agent comes back: its heartbeat makes it RUNNING again and the
	// next round leaves it alone.
	if err := st.Heartbeat("running", pb.SubClusterState_SC_RUNNING, ""); err != nil {
		t.Fatal(err)
	}
	if marked, _ := g.markLost(context.Background(), g.lease.fence()); slices.Contains(marked, "running") {
		t.Fatal("a sub-cluster that heartbeated again was marked lost")
	}
	if got := st.SubCluster("running").GetState(); got != pb.SubClusterState_SC_RUNNING {
		t.Fatalf("after heartbeat: %v", got)
	}
}

// runGPG starts g.Run and stops it at cleanup.
func runGPG(t *testing.T, g *GPG) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestTwoGPGsOnlyOneActs: two GPGs run against one store; only the lease
// holder writes. When it stops, the other takes over and acts.
func TestTwoGPGsOnlyOneActs(t *testing.T) {
	st := gpgtest.NewFakeStore(nil)
	st.Register(subCluster("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(1000, 10, 0)))
	st.Register(subCluster("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(3000, 30, 0)))
	mk := func(id string) *GPG {
		return newTestGPG(t, st, nil, nil, func(c *Config) {
			c.ID = id
			c.Interval = Duration(20 * time.Millisecond)
			c.Debounce = 0
			c.LeaseTTL = Duration(600 * time.Millisecond)
			c.Cleaner.Enabled = false
			c.Generator.MaxStep = 1
		})
	}
	a, b := mk("gpg-a"), mk("gpg-b")
	stops := map[*GPG]func(){a: runGPG(t, a)}
	testpoll.Poll(t, "gpg-a to hold the lease", a.Holding)
	stops[b] = runGPG(t, b)
	testpoll.Poll(t, "a policy written", func() bool { return st.Policy("*") != nil })
	// Many rounds pass; never do both act at once.
	for range 20 {
		if a.Holding() && b.Holding() {
			t.Fatal("both GPGs hold the lease")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The holder (a, unless a renewal on a busy machine came too late)
	// stops and releases; the other takes over and acts on a change.
	var holder, other *GPG
	testpoll.Poll(t, "one holder", func() bool {
		switch {
		case a.Holding():
			holder, other = a, b
		case b.Holding():
			holder, other = b, a
		}
		return holder != nil
	})
	if l := st.Lease("gpg"); l.GetHolder() != holder.cfg.ID {
		t.Fatalf("lease %v, holder %s", l, holder.cfg.ID)
	}
	stops[holder]()
	testpoll.Poll(t, other.cfg.ID+" to take over", other.Holding)
	if holder.Holding() {
		t.Fatal("a stopped GPG still holds the lease")
	}
	st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(3000, 30, 0))
	testpoll.Poll(t, "the new holder to write new weights", func() bool {
		w := storedWeights(t, st, "*")
		return w != nil && w["SC-1"] > 0.49 && w["SC-1"] < 0.51
	})
}

// TestTakeoverAfterExpiry: a holder that dies without releasing (no
// renewals) loses the lease after its TTL; a standby takes over.
func TestTakeoverAfterExpiry(t *testing.T) {
	clk := newClock()
	st := gpgtest.NewFakeStore(clk.Now)
	a := newTestGPG(t, st, nil, clk.Now, func(c *Config) { c.ID = "gpg-a" })
	b := newTestGPG(t, st, nil, clk.Now, func(c *Config) { c.ID = "gpg-b" })
	acquire(t, a)
	b.lease.tryOnce(context.Background())
	if b.Holding() {
		t.Fatal("standby took a held lease")
	}
	clk.Add(a.cfg.LeaseTTL.D() + time.Millisecond) // a crashed: no renewal
	if a.Holding() {
		t.Fatal("a still believes it holds an expired lease")
	}
	acquire(t, b)
	if l := st.Lease("gpg"); l.GetHolder() != "gpg-b" || l.GetEpoch() != 2 {
		t.Fatalf("lease after takeover %v", l)
	}
	// a wakes up: it cannot renew what b holds.
	a.lease.tryOnce(context.Background())
	if a.Holding() {
		t.Fatal("old holder renewed a lease another GPG holds")
	}
}

// TestCapacityChangeReachesWeightsByEvent: with a one-hour interval, a
// capacity change still reaches the stored weights at once (the source's
// Changed channel starts a round).
func TestCapacityChangeReachesWeightsByEvent(t *testing.T) {
	st := gpgtest.NewFakeStore(nil)
	st.Register(subCluster("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0)))
	st.Register(subCluster("SC-2", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0)))
	src := gpgtest.NewFakeSource()
	g := newTestGPG(t, st, src, nil, func(c *Config) {
		c.Interval = Duration(time.Hour)
		c.Debounce = Duration(10 * time.Millisecond)
		c.Cleaner.Enabled = false
		c.Generator.MaxStep = 1
	})
	runGPG(t, g)
	testpoll.Poll(t, "first round after taking the lease", func() bool { return st.Policy("*") != nil })
	src.Set(capacity.SubCluster{ID: "SC-2", Usable: capacity.Resources{MemoryMB: 2500, VCores: 3}, Nodes: 5, ObservedAt: time.Now()})
	testpoll.Poll(t, "weights to follow the capacity change", func() bool {
		w := storedWeights(t, st, "*")
		return w["SC-2"] > 0.19 && w["SC-2"] < 0.21 && st.SubCluster("SC-2").GetPublishedCapacity().GetMemoryMb() == 2500
	})
}

func TestWebEndpoints(t *testing.T) {
	st := gpgtest.NewFakeStore(nil)
	st.Register(subCluster("SC-1", pb.SubClusterState_SC_RUNNING, metricsJSON(10000, 10, 0)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newTestGPG(t, st, nil, nil, func(c *Config) {
		c.WebListener = ln
		c.Interval = Duration(20 * time.Millisecond)
		c.Cleaner.Enabled = false
	})
	runGPG(t, g)
	base := "http://" + g.WebAddr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	testpoll.Poll(t, "/readyz", func() bool { code, _ := get("/readyz"); return code == 200 })
	testpoll.Poll(t, "a round in the status", func() bool {
		_, body := get("/gpg/v1/status")
		var s Status
		return json.Unmarshal([]byte(body), &s) == nil && s.Holding && s.Target["SC-1"] == 1
	})
	if _, body := get("/gpg/v1/status"); !strings.Contains(body, `"policy": "capacity"`) {
		t.Fatalf("status %s", body)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults are valid", func(*Config) {}, ""},
		{"no store", func(c *Config) { c.Store = nil }, "store: required"},
		{"unknown policy", func(c *Config) { c.Generator.Policy = "magic" }, "generator.policy"},
		{"threshold out of range", func(c *Config) { c.Generator.Threshold = 1 }, "generator.threshold"},
		{"zero step", func(c *Config) { c.Generator.MaxStep = 0 }, "generator.max_step"},
		{"load-based band inverted", func(c *Config) { c.Generator.LoadBased.PendingMinimum = 2000 }, "pending_minimum"},
		{"bad scaling", func(c *Config) { c.Generator.LoadBased.Scaling = "CUBIC" }, "scaling"},
		{"tiny lease", func(c *Config) { c.LeaseTTL = Duration(time.Millisecond) }, "lease_ttl"},
		{"zero max per round", func(c *Config) { c.Cleaner.MaxPerRound = 0 }, "max_per_round"},
		{"negative grace", func(c *Config) { c.Cleaner.Grace = Duration(-time.Second) }, "cleaner.grace"},
		{"kubernetes entry valid", func(c *Config) { c.Kubernetes = []kube.Config{kubeCluster("east", "SC-K8S")} }, ""},
		{"kubernetes entry without sub-cluster", func(c *Config) { c.Kubernetes = []kube.Config{kubeCluster("east", "")} },
			"kubernetes[0] (east): default_sub_cluster: required"},
		{"kubernetes entry without name", func(c *Config) { c.Kubernetes = []kube.Config{kubeCluster("", "SC-K8S")} },
			"kubernetes[0].name: required"},
		{"kubernetes names collide", func(c *Config) {
			c.Kubernetes = []kube.Config{kubeCluster("east", "SC-1"), kubeCluster("east", "SC-2")}
		}, `kubernetes[1].name: "east" already names kubernetes[0]`},
		{"kerberos keytab without principal", func(c *Config) { c.Kerberos.Keytab = "/k" }, "need kerberos.principal"},
		{"kerberos principal without keytab", func(c *Config) { c.Kerberos.Principal = "gpg/h@R" }, "kerberos.keytab: required"},
		{"kerberos node-resource push without rm_principal", func(c *Config) {
			c.Kerberos = krblogin.Config{Principal: "gpg/h@R", Keytab: "/k"}
			k := kubeCluster("east", "SC-K8S")
			k.NodeResourcePush.Enabled, k.NodeResourcePush.User = true, "yarn"
			c.Kubernetes = []kube.Config{k}
		}, `kerberos.rm_principal: required for kubernetes "east" node_resource_push`},
		{"kerberos with rm_principal and push", func(c *Config) {
			c.Kerberos = krblogin.Config{Principal: "gpg/h@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R"}
			k := kubeCluster("east", "SC-K8S")
			k.NodeResourcePush.Enabled, k.NodeResourcePush.User = true, "yarn"
			c.Kubernetes = []kube.Config{k}
		}, ""},
		{"kubernetes entry stale_after too short", func(c *Config) {
			k := kubeCluster("east", "SC-K8S")
			k.StaleAfter = kube.Duration(time.Second)
			c.Kubernetes = []kube.Config{k}
		}, "kubernetes[0] (east): stale_after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Store = gpgtest.NewFakeStore(nil)
			tc.mutate(&cfg)
			err := cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Store, cfg.WebAddress = gpgtest.NewFakeStore(nil), ""
	cfg.Generator.Manager = "UniformBroadcast"
	if _, err := New(cfg, nil); err == nil {
		t.Fatal("a manager that takes no weights was accepted")
	}
}

func kubeCluster(name, sc string) kube.Config {
	k := kube.DefaultConfig()
	k.Name, k.DefaultSubCluster = name, sc
	return k
}

// TestConfigFileKubernetes: each "kubernetes" entry of a config file is
// gpg/kube's own Config, decoded on top of its defaults, with unknown keys
// refused inside the entries too.
func TestConfigFileKubernetes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"kubernetes":[
		{"name":"east","kubeconfig":"/etc/yarnfed/east.kubeconfig","default_sub_cluster":"SC-K8S"},
		{"name":"west","context":"w","default_sub_cluster":"SC-W","sub_clusters":["SC-W2"],"stale_after":"20m"}]}`)
	cfg := DefaultConfig()
	cfg.Store = gpgtest.NewFakeStore(nil)
	if err := configtest.DecodeFile(good, &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	def := kube.DefaultConfig()
	if len(cfg.Kubernetes) != 2 {
		t.Fatalf("%d clusters", len(cfg.Kubernetes))
	}
	east, west := cfg.Kubernetes[0], cfg.Kubernetes[1]
	if east.Kubeconfig != "/etc/yarnfed/east.kubeconfig" || east.DefaultSubCluster != "SC-K8S" ||
		east.ResyncPeriod != def.ResyncPeriod || east.StaleAfter != def.StaleAfter {
		t.Errorf("east = %+v (defaults not applied?)", east)
	}
	if west.Context != "w" || len(west.SubClusters) != 1 || west.StaleAfter.D() != 20*time.Minute || west.ResyncPeriod != def.ResyncPeriod {
		t.Errorf("west = %+v", west)
	}
	for name, body := range map[string]string{
		"misspelt key in an entry": `{"kubernetes":[{"name":"east","default_subcluster":"SC-K8S"}]}`,
		"the old hook's key":       `{"kubernetes":[{"name":"east","subcluster_id":"SC-K8S"}]}`,
		"number for a duration":    `{"kubernetes":[{"name":"east","default_sub_cluster":"SC-K8S","stale_after":900}]}`,
	} {
		cfg := DefaultConfig()
		if err := configtest.DecodeFile(write("bad.json", body), &cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
