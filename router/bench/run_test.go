package bench_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/router/bench"
)

// TestManualRun is skipped unless ROUTER_BENCH is set: a full run for humans.
func TestManualRun(t *testing.T) {
	if os.Getenv("ROUTER_BENCH") == "" {
		t.Skip("set ROUTER_BENCH=1 for a full run")
	}
	cfg := bench.DefaultConfig()
	if d, err := time.ParseDuration(os.Getenv("ROUTER_BENCH")); err == nil {
		cfg.Duration = d
	}
	if err := bench.Run(context.Background(), cfg, os.Stdout); err != nil {
		t.Fatal(err)
	}
}
