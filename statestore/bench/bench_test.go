package bench

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
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
	for _, row := range []string{"app-home insert", "get (linearizable)", "get (stale)"} {
		if !strings.Contains(out.String(), row) {
			t.Fatalf("no %q row", row)
		}
	}
}
