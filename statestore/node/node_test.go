package node

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/config/configtest"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func testConfig(t testing.TB, id string) Config {
	cfg := DefaultConfig()
	cfg.NodeID = id
	cfg.DataDir = filepath.Join(t.TempDir(), id)
	cfg.GRPCAddress = "127.0.0.1:0"
	cfg.RaftAddress = freeAddr(t)
	cfg.HTTPAddress = "127.0.0.1:0"
	cfg.HeartbeatTimeout = config.Duration(200 * time.Millisecond)
	cfg.ElectionTimeout = config.Duration(200 * time.Millisecond)
	cfg.Insecure = true
	return cfg
}

// startLeader starts the replica cfg describes (a bootstrapping one, which
// elects itself) and waits until it leads; the caller closes it.
func startLeader(t testing.TB, ctx context.Context, cfg Config) *Node {
	t.Helper()
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	led := false
	defer func() {
		if !led { // Poll failed the test
			_ = n.Close()
		}
	}()
	storetest.Poll(t, 20*time.Second, func() bool { return n.Store.IsLeader() })
	led = true
	return n
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBootstrapJoinOverTCP: one replica bootstraps, two join through it,
// over the real TCP transport, and serve through HTTP endpoints.
func TestBootstrapJoinOverTCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := testConfig(t, "a")
	first.Bootstrap = true
	reg := prometheus.NewRegistry()
	first.Registerer, first.Gatherer = reg, reg
	n0, err := Start(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer n0.Close()
	storetest.Poll(t, 20*time.Second, func() bool { code, _ := httpGet(t, "http://"+n0.HTTPAddr()+"/readyz"); return code == 200 })
	nodes := []*Node{n0}
	for _, id := range []string{"b", "c"} {
		cfg := testConfig(t, id)
		cfg.Join = []string{n0.GRPCAddr()}
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nodes = append(nodes, n)
	}
	cl, err := client.New(client.Config{Addrs: []string{nodes[2].GRPCAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "*", Type: "UniformBroadcastPolicyManager"}); err != nil {
		t.Fatal(err)
	}
	st, err := cl.Status(ctx)
	if err != nil || len(st.GetNodes()) != 3 {
		t.Fatalf("status: %v %v", st, err)
	}
	if code, body := httpGet(t, "http://"+n0.HTTPAddr()+"/metrics"); code != 200 || !strings.Contains(body, "yarnfed_statestore_fsm_batches_total") {
		t.Fatalf("metrics: %d", code)
	}
	if code, _ := httpGet(t, "http://"+n0.HTTPAddr()+"/healthz"); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no node id", func(c *Config) { c.NodeID = "" }, "node_id"},
		{"bootstrap and join", func(c *Config) { c.Bootstrap = true; c.Join = []string{"h:1"} }, "exclusive"},
		{"even voters", func(c *Config) { c.Bootstrap = true; c.Peers = []string{"statestore-0=h:1", "b=h:2"} }, "odd"},
		{"self not in peers", func(c *Config) { c.Bootstrap = true; c.Peers = []string{"x=h:1"} }, "include this node"},
		{"malformed peer", func(c *Config) { c.Bootstrap = true; c.Peers = []string{"statestore-0"} }, "id=host:port"},
		{"bad address", func(c *Config) { c.RaftAddress = "nope" }, "raft_address"},
		{"huge context", func(c *Config) { c.MaxContextBytes = 64 << 20 }, "max_context_bytes"},
		{"tls without ca", func(c *Config) { c.TLS.CertFile, c.TLS.KeyFile = "c", "k" }, "ca_file"},
		{"raft log store wal", func(c *Config) { c.RaftLogStore = "wal" }, ""},
		{"raft log store bolt", func(c *Config) { c.RaftLogStore = "bolt" }, ""},
		{"unknown raft log store", func(c *Config) { c.RaftLogStore = "leveldb" }, "leveldb"},
		{"wal without fsync", func(c *Config) { c.RaftLogStore, c.NoSync = "wal", true }, "unsafe_no_sync"},
		{"no commit timeout", func(c *Config) { c.CommitTimeout = 0 }, "commit_timeout"},
		{"tls and insecure", func(c *Config) {
			c.TLS.CertFile, c.TLS.KeyFile, c.TLS.CAFile, c.Insecure = "c", "k", "a", true
		}, "exclusive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCommitTimeoutReachesRaft: commit_timeout (default 10 ms, not Raft's
// 50 ms) is what the store's Raft runs with. A follower learns of a
// commit only from the leader's next AppendEntries, so this bounds how
// long a lone write takes to reach the watchers a follower serves (the
// routers' membership and policy caches): measured 79 ms p50 at Raft's
// default, 18 ms at 10 ms (statestore/DESIGN.md, Watch).
func TestCommitTimeoutReachesRaft(t *testing.T) {
	var s store.Config
	DefaultConfig().setRaftTimings(&s)
	if s.CommitTimeout != 10*time.Millisecond {
		t.Fatalf("default commit timeout reaches the store as %v, want 10ms", s.CommitTimeout)
	}
	p := filepath.Join(t.TempDir(), "ss.json")
	os.WriteFile(p, []byte(`{"commit_timeout":"7ms"}`), 0o600)
	c := DefaultConfig()
	if err := configtest.DecodeFile(p, &c); err != nil {
		t.Fatal(err)
	}
	c.setRaftTimings(&s)
	if s.CommitTimeout != 7*time.Millisecond {
		t.Fatalf("commit_timeout 7ms reaches the store as %v", s.CommitTimeout)
	}
}

// TestParallelLeaderAppendReachesStore: by default the store's leader
// writes its log before replicating (upstream's order);
// parallel_leader_append reaches the store.
func TestParallelLeaderAppendReachesStore(t *testing.T) {
	var s store.Config
	DefaultConfig().setRaftTimings(&s)
	if s.ParallelLeaderAppend {
		t.Fatal("the default configuration asks the store for parallel leader appends")
	}
	p := filepath.Join(t.TempDir(), "ss.json")
	os.WriteFile(p, []byte(`{"parallel_leader_append":true}`), 0o600)
	c := DefaultConfig()
	if err := configtest.DecodeFile(p, &c); err != nil {
		t.Fatal(err)
	}
	c.setRaftTimings(&s)
	if !s.ParallelLeaderAppend {
		t.Fatal("parallel_leader_append: true does not reach the store")
	}
}

// TestConfigFileKeys: node.Config's keys as a file names them (the
// statestore role reads the file with internal/config).
func TestConfigFileKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ss.json")
	os.WriteFile(p, []byte(`{"node_id":"x","election_timeout":"250ms","peers":["x=h:1"],"raft_log_store":"bolt"}`), 0o600)
	c := DefaultConfig()
	if err := configtest.DecodeFile(p, &c); err != nil {
		t.Fatal(err)
	}
	if c.NodeID != "x" || c.RaftLogStore != "bolt" || time.Duration(c.ElectionTimeout) != 250*time.Millisecond || c.GRPCAddress != DefaultConfig().GRPCAddress {
		t.Fatalf("loaded %+v", c)
	}
	os.WriteFile(p, []byte(`{"node_idd":"x"}`), 0o600)
	if err := configtest.DecodeFile(p, &c); err == nil {
		t.Fatal("unknown key accepted")
	}
}

func FuzzParsePeers(f *testing.F) {
	f.Add("a=127.0.0.1:9091,b=[::1]:9091")
	f.Add("=,a=,=b:1")
	f.Add("a=h:1,a=h:2")
	f.Fuzz(func(t *testing.T, s string) {
		peers, err := ParsePeers(strings.Split(s, ","))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range peers {
			if p.ID == "" || p.RaftAddr == "" || seen[p.ID] {
				t.Fatalf("accepted bad peer list %q: %+v", s, peers)
			}
			seen[p.ID] = true
		}
	})
}

// TestJoinedReplicaRestartsWithoutItsSeed: a replica that joined through a
// seed is a member by its own log. Restarting it must not depend on the
// seed being up (it used to ask the dead seed again for a minute, then
// exit), so a cluster whose seed died can still restart a replica and keep
// a majority.
func TestJoinedReplicaRestartsWithoutItsSeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seedCfg := testConfig(t, "seed")
	seedCfg.Bootstrap = true
	seed, err := Start(ctx, seedCfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Poll(t, 20*time.Second, func() bool { code, _ := httpGet(t, "http://"+seed.HTTPAddr()+"/readyz"); return code == 200 })
	cfgs := map[string]Config{}
	nodes := map[string]*Node{}
	for _, id := range []string{"b", "c"} {
		cfg := testConfig(t, id)
		cfg.Join = []string{seed.GRPCAddr()}
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[id], nodes[id] = cfg, n
	}
	defer func() { nodes["c"].Close() }()
	storetest.Poll(t, 20*time.Second, func() bool {
		st, err := nodes["c"].Store.Status()
		return err == nil && len(st.GetNodes()) == 3
	})

	seed.Close() // the seed is gone for good
	nodes["b"].Close()
	start := time.Now()
	b, err := Start(ctx, cfgs["b"]) // same command line: --join names the dead seed
	if err != nil {
		t.Fatalf("restart with the seed down: %v (after %v)", err, time.Since(start))
	}
	nodes["b"] = b
	defer b.Close()

	cl, err := client.New(client.Config{Addrs: []string{b.GRPCAddr(), nodes["c"].GRPCAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: "*", Type: "UniformBroadcastPolicyManager"}); err != nil {
		t.Fatalf("write with b and c as the majority: %v", err)
	}
}

// TestStartRefusesPlaintextByDefault: a replica with neither TLS files nor
// Insecure does not start, and binds nothing.
func TestStartRefusesPlaintextByDefault(t *testing.T) {
	cfg := testConfig(t, "a")
	cfg.Insecure = false
	cfg.Bootstrap = true
	n, err := Start(context.Background(), cfg)
	if err == nil {
		n.Close()
	}
	if !errors.Is(err, security.ErrPlaintext) {
		t.Fatalf("Start() = %v, want ErrPlaintext", err)
	}
	if _, statErr := os.Stat(cfg.DataDir); statErr == nil {
		t.Errorf("refused replica created its data dir")
	}
}

// TestShutdownTransfersLeadership: a leader told to stop hands leadership
// over before closing. The two followers run with a one-minute election
// timeout, so without the hand-over nobody would lead again within the
// poll's bound; with it, the chosen follower starts its election at once.
func TestShutdownTransfersLeadership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := testConfig(t, "a")
	first.Bootstrap = true
	leader, err := Start(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	storetest.Poll(t, 20*time.Second, func() bool { code, _ := httpGet(t, "http://"+leader.HTTPAddr()+"/readyz"); return code == 200 })
	var followers []*Node
	for _, id := range []string{"b", "c"} {
		cfg := testConfig(t, id)
		cfg.Join = []string{leader.GRPCAddr()}
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = config.Duration(time.Minute), config.Duration(time.Minute)
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		followers = append(followers, n)
	}
	storetest.Poll(t, 20*time.Second, func() bool {
		for _, f := range followers {
			if id, _ := f.Store.Leader(); id != "a" {
				return false
			}
		}
		return true
	})

	if err := leader.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	newLeader := -1
	storetest.Poll(t, 15*time.Second, func() bool {
		for i, f := range followers {
			if f.Store.IsLeader() {
				newLeader = i
				return true
			}
		}
		return false
	})
	// A follower's Shutdown has nothing to hand over and just closes.
	if err := followers[1-newLeader].Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStartRefusesOtherLogStore: a replica whose data dir was created with
// one Raft log store does not start with the other named in its config,
// and starts again with none named.
func TestStartRefusesOtherLogStore(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t, "a")
	cfg.Bootstrap, cfg.RaftLogStore = true, "bolt"
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	cfg.RaftLogStore = "wal"
	if n, err := Start(ctx, cfg); !errors.Is(err, store.ErrLogStoreMismatch) {
		if err == nil {
			n.Close()
		}
		t.Fatalf("Start with wal on a bolt data dir: err = %v, want store.ErrLogStoreMismatch", err)
	}
	cfg.RaftLogStore = ""
	n, err = Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if got := n.Store.LogStore(); got != "bolt" {
		t.Fatalf("restarted with log store %q, want bolt", got)
	}
}
