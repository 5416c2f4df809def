//go:build bench

package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/bench"
)

// TestBenchStatestoreScaleSmoke runs `bench statestore-scale` with 2,000
// rows and the router bench over the store, as the command wires it: both
// router tables (empty, preloaded) must have an error-free yarnfed row.
func TestBenchStatestoreScaleSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three replicas and two routers")
	}
	exe := filepath.Join(t.TempDir(), "yarnfed")
	if out, err := exec.Command("go", "build", "-o", exe, "github.com/yarnfed/yarnfed/cmd/yarnfed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := bench.ScaleConfig{Executable: exe, Rows: 2000, Duration: 200 * time.Millisecond, Concurrency: []int{1, 4}, TrailingLogs: 16,
		Router: routerOverStore(exe, 600*time.Millisecond, []int{2})}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := bench.RunScale(ctx, cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	_, preloaded, ok := strings.Cut(out.String(), "## router over the preloaded store")
	if !ok || !strings.Contains(out.String(), "## router over the empty store") {
		t.Fatal("no router run over the empty and the preloaded store")
	}
	for name, part := range map[string]string{"empty": out.String()[:len(out.String())-len(preloaded)], "preloaded": preloaded} {
		found := false
		for _, line := range strings.Split(part, "\n") {
			// target clients ops/s p50 p99 ... errors are checked by the
			// router bench itself (it fails the run); a row is a measurement.
			if f := strings.Fields(line); len(f) > 3 && f[0] == "yarnfed" && f[2] != "0" {
				found = true
			}
		}
		if !found {
			t.Errorf("router over the %s store: no measured yarnfed row", name)
		}
	}
	if _, err := parseLevels("--concurrency", "1,x"); err == nil {
		t.Error("parseLevels accepted 1,x")
	}
}
