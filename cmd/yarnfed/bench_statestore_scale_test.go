//go:build bench

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
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
	if out, err := gobuild.Command(exe, "", "github.com/yarnfed/yarnfed/cmd/yarnfed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := bench.ScaleConfig{Executable: exe, Rows: 2000, Duration: 200 * time.Millisecond, Concurrency: []int{1, 4}, TrailingLogs: 16,
		// bolt: see ScaleConfig.RaftLogStore (with wal a wiped follower of
		// this small store held no snapshot after catching up).
		RaftLogStore: "bolt",
		Router:       routerOverStore(exe, 600*time.Millisecond, []int{2}), RouterRounds: 1}
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
	// The numbers read back from both router runs make the round table.
	if !regexp.MustCompile(`(?m)^ +1 +2 +\d+ .*x$`).MatchString(out.String()) {
		t.Error("no router round table row for round 1 at 2 clients")
	}
	if _, err := parseLevels("--concurrency", "1,x"); err == nil {
		t.Error("parseLevels accepted 1,x")
	}
}

// TestParseRouterTables reads the router bench's tables (as printed on
// 2026-11-24) back into cells, and refuses a table without a router row.
func TestParseRouterTables(t *testing.T) {
	out := `
1 clients, 6s per target (Go client)
   target  ops/s     p50      p99  errors  router CPU/op  router RSS (peak)  cold start  p50 new/submit/report
   direct  10406  0.08ms   0.29ms       0              -                  -           -       0.02/0.03/0.02ms
  yarnfed    333  1.71ms  23.75ms       0          410us        37 MiB (37)       104ms       0.11/1.45/0.13ms
ratio ops/s: yarnfed/direct 0.03x

16 clients, 6s per target (Go client)
   target  ops/s     p50       p99  errors  router CPU/op  router RSS (peak)  cold start  p50 new/submit/report
   direct  10086  0.48ms   19.18ms       0              -                  -           -       0.16/0.17/0.16ms
  yarnfed   1027  9.33ms  102.67ms       0          172us        41 MiB (41)       104ms       0.54/7.94/0.64ms
`
	cells, err := parseRouterTables(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []bench.RouterCell{
		{Clients: 1, OpsPerSec: 333, P50: 1710 * time.Microsecond, P99: 23750 * time.Microsecond, DirectOpsPerSec: 10406},
		{Clients: 16, OpsPerSec: 1027, P50: 9330 * time.Microsecond, P99: 102670 * time.Microsecond, DirectOpsPerSec: 10086},
	}
	if len(cells) != len(want) {
		t.Fatalf("got %+v, want %+v", cells, want)
	}
	for i := range want {
		if cells[i] != want[i] {
			t.Errorf("cell %d: got %+v, want %+v", i, cells[i], want[i])
		}
	}
	if _, err := parseRouterTables(strings.Split(out, "\n16 clients")[0] + "\n16 clients, 6s per target\n"); err == nil {
		t.Error("a table without a yarnfed row parsed")
	}
}
