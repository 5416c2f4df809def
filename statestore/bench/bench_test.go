package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/testenv"
)

// TestRunSmoke runs the whole benchmark briefly without ZooKeeper: the
// table must come out with every row measured and no errors.
func TestRunSmoke(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ZooKeeper = false
	cfg.Duration = 200 * time.Millisecond
	cfg.Concurrency = []int{1, 4}
	cfg.ReadConcurrency = 4
	cfg.Conns = 2
	if d := os.Getenv("YARNFED_BENCH_DURATION"); d != "" {
		// For profiling: YARNFED_BENCH_DURATION=5s go test -run TestRunSmoke -cpuprofile ...
		cfg.Duration, _ = time.ParseDuration(d)
		cfg.Concurrency = []int{64}
		cfg.ReadConcurrency = 64
		cfg.Conns = 8
		if n, err := strconv.Atoi(os.Getenv("YARNFED_BENCH_CONNS")); err == nil {
			cfg.Conns = n
		}
		if os.Getenv("YARNFED_BENCH_NOREADS") != "" {
			cfg.ReadConcurrency = -1
		}
		cfg.UnsafeNoSync = os.Getenv("YARNFED_BENCH_NOSYNC") != ""
	}
	var out bytes.Buffer
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, row := range []string{"app-home insert", "get (linearizable)", "get (stale)", "load average"} {
		if !strings.Contains(out.String(), row) {
			t.Fatalf("no %q row", row)
		}
	}
}

// TestRunPeersSmoke runs the benchmark briefly against all three systems
// with a preload, as `make bench-peers` does at length. The peers need Java
// with Debian's zookeeper package and an etcd binary (make kube-binaries);
// without them it skips, unless YARNFED_BENCH_PEERS_REQUIRED=1 (CI).
func TestRunPeersSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts nine server processes")
	}
	cfg := DefaultConfig()
	cfg.Etcd = true
	missing := ""
	if _, err := os.Stat(cfg.ZKClasspath[strings.LastIndex(cfg.ZKClasspath, ":")+1:]); err != nil {
		missing = "zookeeper (apt-get install zookeeper)"
	}
	if _, err := FindEtcd(""); err != nil {
		missing += " " + err.Error()
	}
	if missing != "" {
		testenv.Missing(t, "YARNFED_BENCH_PEERS_REQUIRED", "bench peers missing: %s", missing)
	}
	exe := buildYarnfed(t)
	cfg.Executable = exe
	cfg.Duration = 300 * time.Millisecond
	cfg.Concurrency = []int{4}
	cfg.ReadConcurrency = 4
	cfg.Rows = 50
	var out bytes.Buffer
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"yarnfed/zookeeper", "yarnfed/etcd", "preloaded 50 rows", "etcd servers' RSS", "as separate processes"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Every cell measured, none failed: the errors columns are all 0.
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "app-home insert") {
			continue
		}
		f := strings.Fields(line)
		// workload(2 words) clients, then per system: ops p50 p99 cpu errors.
		for sys := 0; sys < 3; sys++ {
			if errs := f[3+sys*5+4]; errs != "0" {
				t.Errorf("system %d: %s errors in %q", sys, errs, line)
			}
			if ops := f[3+sys*5]; ops == "0" {
				t.Errorf("system %d: no ops in %q", sys, line)
			}
		}
	}
}

// TestAppIDsUniquePerRun: two runs write disjoint application ids (they
// used to reuse application_1700000000000_*, so a second run against a
// running cluster measured "already exists" answers, not inserts).
func TestAppIDsUniquePerRun(t *testing.T) {
	ids := func() string {
		cfg := DefaultConfig()
		cfg.ZooKeeper = false
		cfg.Duration = 20 * time.Millisecond
		cfg.Concurrency = []int{1}
		cfg.ReadConcurrency = -1
		var out bytes.Buffer
		if err := Run(context.Background(), cfg, &out); err != nil {
			t.Fatal(err)
		}
		_, after, _ := strings.Cut(out.String(), "application ids ")
		id, _, _ := strings.Cut(after, "\n")
		return id
	}
	a, b := ids(), ids()
	if a == "" || a == b {
		t.Fatalf("runs wrote the same ids %q and %q", a, b)
	}
	if appID(1, 7) == appID(2, 7) {
		t.Fatal("appID ignores the run")
	}
}

// buildYarnfed builds the yarnfed binary (its statestore role) once.
func buildYarnfed(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "yarnfed")
	cmd := gobuild.Command(exe, "", "github.com/yarnfed/yarnfed/cmd/yarnfed")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestRunScaleSmoke runs the scale benchmark (`yarnfed bench
// statestore-scale`) with 2,000 rows: every phase must run, the restores
// must catch up (the wiped replica through the leader's snapshot; RunScale
// fails otherwise) and the summary must name each target.
func TestRunScaleSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes, restarts two")
	}
	var routerRuns []string
	cfg := ScaleConfig{
		Executable: buildYarnfed(t), Rows: 2000, Duration: 200 * time.Millisecond, Concurrency: []int{1, 4},
		TrailingLogs: 16,
		RaftLogStore: "bolt", // see ScaleConfig.RaftLogStore
		Rounds:       3,
		RouterRounds: 2,
		Router: func(_ context.Context, addrs []string, w io.Writer) ([]RouterCell, error) {
			routerRuns = append(routerRuns, strings.Join(addrs, ","))
			_, err := io.WriteString(w, "router table\n")
			n := float64(len(routerRuns))
			return []RouterCell{{Clients: 1, OpsPerSec: 100 * n, P50: time.Millisecond, P99: 2 * time.Millisecond, DirectOpsPerSec: 1000}}, err
		},
	}
	var out bytes.Buffer
	if err := RunScale(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	// Two rounds, the order swapped in the second: empty, full, full, empty.
	if len(routerRuns) != 4 || strings.Count(routerRuns[0], ",") != 2 || routerRuns[0] == routerRuns[1] ||
		routerRuns[1] != routerRuns[2] || routerRuns[0] != routerRuns[3] {
		t.Errorf("router measured over %q, want empty, preloaded, preloaded, empty (3 replicas each)", routerRuns)
	}
	// Round 1: preloaded is run 2 (200 ops/s) against empty run 1 (100).
	if !regexp.MustCompile(`(?m)^ +1 +1 +100 .* 200 .* 2\.00x`).MatchString(out.String()) {
		t.Errorf("router round table lacks round 1's 2.00x ops/s ratio")
	}
	if n := strings.Count(out.String(), "# insert c=4 round "); n != 3 {
		t.Errorf("%d per-round lines at 4 clients, want 3", n)
	}
	if strings.Contains(out.String(), "leader metrics not read") || strings.Contains(out.String(), "leader commit n 0 ") {
		t.Errorf("leaders' commit histograms not read")
	}
	for _, want := range []string{"preloaded 2000 rows", "## router over the empty store, round 1", "## router over the preloaded store, round 2",
		"insert 4 clients, per round (preloaded/empty): p50 ratio", "preloaded p99 higher in", "leaders' Raft commit",
		"snapshot (leader):", "follower crashed", "installs the leader's snapshot", "target snapshot + restore <= 10s:",
		"target replica RSS <= 1 GiB:", "target insert latency within 10% of empty, 4 clients", "load average"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
