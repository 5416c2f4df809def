package bench_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/router/bench"
	ssbench "github.com/yarnfed/yarnfed/statestore/bench"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/testenv"
)

func short(cfg bench.Config) bench.Config {
	cfg.Duration, cfg.Rounds, cfg.Concurrency = 600*time.Millisecond, 2, []int{2}
	return cfg
}

// rowErrors returns the errors column of target's rows in the tables.
func rows(t *testing.T, out, target string) [][]string {
	t.Helper()
	var got [][]string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == target {
			got = append(got, f)
		}
	}
	if len(got) == 0 {
		t.Fatalf("no %s row:\n%s", target, out)
	}
	return got
}

func checkRows(t *testing.T, out string, targets ...string) {
	t.Helper()
	for _, tg := range targets {
		for _, f := range rows(t, out, tg) {
			if f[1] == "0" {
				t.Errorf("%s: no ops: %v", tg, f)
			}
			if f[4] != "0" {
				t.Errorf("%s: errors: %v", tg, f)
			}
		}
	}
}

func TestRunInMemoryStoreSaysSo(t *testing.T) {
	cfg := short(bench.DefaultConfig())
	cfg.InMemoryStore = true
	var out bytes.Buffer
	if err := bench.Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{"IN-MEMORY store", "ratio ops/s: yarnfed/direct ", "load average"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkRows(t, s, "direct", "yarnfed")
}

func TestRunRejectsBadConfig(t *testing.T) {
	for name, mut := range map[string]func(*bench.Config){
		"router without store": func(c *bench.Config) { c.RouterAddr = "127.0.0.1:1"; c.Executable = "x" },
		"memory and store":     func(c *bench.Config) { c.InMemoryStore = true; c.StoreAddrs = []string{"127.0.0.1:1"} },
		"no executable":        func(c *bench.Config) {},
		"unknown peer":         func(c *bench.Config) { c.Executable = "x"; c.Peer = "yarn2" },
		"zero concurrency":     func(c *bench.Config) { c.InMemoryStore = true; c.Concurrency = []int{0} },
		"tls and memory":       func(c *bench.Config) { c.InMemoryStore = true; c.StoreTLS = true },
	} {
		cfg := short(bench.DefaultConfig())
		mut(&cfg)
		if err := bench.Run(context.Background(), cfg, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// buildYarnfed builds the yarnfed binary the store replicas and the
// router run from.
func buildYarnfed(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "yarnfed")
	if out, err := gobuild.Command(exe, "", "github.com/yarnfed/yarnfed/cmd/yarnfed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestRunRealStore is the default setup, briefly: a router process over
// three store processes, two sub-clusters.
func TestRunRealStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	exe := buildYarnfed(t)
	for _, tls := range []bool{false, true} {
		cfg := short(bench.DefaultConfig())
		cfg.Executable, cfg.StoreTLS = exe, tls
		var out bytes.Buffer
		if err := bench.Run(context.Background(), cfg, &out); err != nil {
			t.Fatalf("tls=%v: %v\n%s", tls, err, out.String())
		}
		s := out.String()
		t.Log("\n" + s)
		want := "3-replica state store, separate `yarnfed statestore` processes, Raft log fsync on, plaintext gRPC (--insecure"
		if tls {
			want = "3-replica state store, separate `yarnfed statestore` processes, Raft log fsync on, mutual TLS"
		}
		if !strings.Contains(s, want) {
			t.Errorf("tls=%v: output does not say %q", tls, want)
		}
		checkRows(t, s, "direct", "yarnfed")
		if f := rows(t, s, "yarnfed")[0]; f[5] == "-" || f[len(f)-2] == "-" {
			t.Errorf("no router CPU/op or cold start: %v", f)
		}
	}
}

// TestRunHadoopPeer runs the whole comparison briefly: Hadoop's Router
// over ZooKeeper and the Java client. It needs java, mvn (Maven Central or
// a warm ~/.m2) and Debian's zookeeper; without them it skips, unless
// YARNFED_BENCH_PEERS_REQUIRED=1 (CI).
func TestRunHadoopPeer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	cfg := short(bench.DefaultConfig())
	missing := []string{}
	for _, bin := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		missing = append(missing, "zookeeper (apt-get install zookeeper)")
	}
	if len(missing) > 0 {
		testenv.Missing(t, "YARNFED_BENCH_PEERS_REQUIRED", "bench peers missing: %v", missing)
	}
	cfg.Executable = buildYarnfed(t)
	cfg.Peer, cfg.JavaClient = "hadoop", true
	cfg.SubClusters = 3
	var out bytes.Buffer
	if err := bench.Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{"yarnfed/hadoop", "Hadoop 3.4.2 Router JVM", "ratio ops/s (Java client)", "3 simrm sub-clusters"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkRows(t, s, "direct", "yarnfed", "hadoop")
}

// TestRunRunningStoreAndRouter measures a store and a router the bench did
// not start (--store, --router): it registers its sub-clusters in that
// store, the running router picks them up, and it leaves them unregistered.
func TestRunRunningStoreAndRouter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	exe := buildYarnfed(t)
	dir := t.TempDir()
	reps, err := ssbench.StartReplicas(context.Background(), exe, dir, ssbench.ReplicaOptions{})
	if reps != nil {
		defer reps.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	router := exec.Command(exe, "router", "--store", strings.Join(reps.Addrs, ","), "--store-insecure",
		"--clientrm-address", addr, "--web-address", "", "--admin-address", "", "--log-level", "warn")
	if err := router.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { router.Process.Kill(); router.Wait() }()

	cfg := short(bench.DefaultConfig())
	cfg.StoreAddrs, cfg.RouterAddr = reps.Addrs, addr
	var out bytes.Buffer
	if err := bench.Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	for _, want := range []string{"running state store at " + strings.Join(reps.Addrs, ","), "running router at " + addr} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	checkRows(t, s, "direct", "yarnfed")

	// The bench's sub-clusters are left unregistered in the running store.
	c, err := client.New(client.Config{Addrs: reps.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scs, err := c.ListSubClusters(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range scs {
		if strings.HasPrefix(sc.GetSubClusterId(), "bench-SC-") {
			n++
			if sc.GetState() != pb.SubClusterState_SC_UNREGISTERED {
				t.Errorf("%s left %v", sc.GetSubClusterId(), sc.GetState())
			}
		}
	}
	if n != cfg.SubClusters {
		t.Errorf("%d bench sub-clusters in the store, want %d", n, cfg.SubClusters)
	}
}
