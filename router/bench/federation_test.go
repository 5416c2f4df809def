package bench

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
)

// TestFederationSmoke is `bench federation` small and short, as CI runs it
// (`make test`): two sizes (2 and 3 sub-clusters), two router processes over
// a 3-replica store, every call type of the mix, policy propagation and
// LOST propagation.
// RunFederation itself fails on any failed call or a call type with no
// successful call at some N; the test also reads the printed curves back:
// one row per call type and N with ops, and propagation rows per N.
func TestFederationSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes per size")
	}
	exe := filepath.Join(t.TempDir(), "yarnfed")
	if out, err := gobuild.Command(exe, "", "github.com/yarnfed/yarnfed/cmd/yarnfed").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := FedConfig{SubClusters: []int{2, 3}, Routers: 2, NodesPerSubCluster: 50, AppsPerSubCluster: 6,
		// Every worker walks the whole mix within 100 calls (fedSchedule);
		// a call type not measured at some N fails the run.
		Duration: 2 * time.Second, Warmup: 300 * time.Millisecond, Concurrency: 4, MinCalls: 2, SoloCalls: 2, PolicyChanges: 5, LostChanges: 3, Executable: exe}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := RunFederation(ctx, cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	t.Log("\n" + s)
	s, lost, ok := strings.Cut(s, "\nLOST propagation:")
	if !ok {
		t.Fatalf("no LOST propagation table:\n%s", out.String())
	}
	curves, routers, prop, ok := cutFedTables(s)
	if !ok {
		t.Fatalf("the three tables are not all printed:\n%s", s)
	}
	for _, c := range fedMix {
		for _, n := range []string{"2", "3"} {
			found := false
			for _, line := range strings.Split(curves, "\n") {
				// call, fan-out, N, calls, ops/s, p50, p99, errors, ...
				if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), c.name)); strings.HasPrefix(strings.TrimSpace(line), c.name+" ") &&
					len(f) > 7 && f[1] == n && f[2] != "0" && f[6] == "0" {
					found = true
				}
			}
			if !found {
				t.Errorf("no measured, error-free %q row at N=%s", c.name, n)
			}
		}
	}
	for _, n := range []string{"2", "3"} {
		if !hasRow(routers, n, func(f []string) bool { return f[1] != "0" && !strings.HasPrefix(f[3], "0.00") }) {
			t.Errorf("no routers row with nodes and router CPU at N=%s", n)
		}
		if !hasRow(prop, n, func(f []string) bool { return f[1] == "5" }) {
			t.Errorf("no policy propagation row with 5 changes at N=%s", n)
		}
		if !hasRow(lost, n, func(f []string) bool { return f[1] == "3" }) {
			t.Errorf("no LOST propagation row with 3 changes at N=%s", n)
		}
	}
}

func cutFedTables(s string) (curves, routers, prop string, ok bool) {
	_, rest, ok1 := strings.Cut(s, "\ncurves against N")
	curves, rest, ok2 := strings.Cut(rest, "\nrouters against N")
	routers, prop, ok3 := strings.Cut(rest, "\npolicy propagation:")
	return curves, routers, prop, ok1 && ok2 && ok3
}

func hasRow(table, n string, good func([]string) bool) bool {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == n && good(f) {
			return true
		}
	}
	return false
}

// TestCheckFedRuns: a failed call (mix or solo), a call type missing at one
// N, or a failed propagation fails the run, naming it; a complete run passes.
func TestCheckFedRuns(t *testing.T) {
	full := func(n int) *fedRun {
		r := &fedRun{n: n, calls: map[string]*callStats{}}
		for _, c := range fedMix {
			r.calls[c.name] = &callStats{lat: []time.Duration{time.Millisecond}}
		}
		return r
	}
	if err := checkFedRuns([]*fedRun{full(2), full(3)}); err != nil {
		t.Fatalf("complete runs: %v", err)
	}
	missing := full(3)
	delete(missing.calls, "getClusterNodes")
	if err := checkFedRuns([]*fedRun{full(2), missing}); err == nil || !strings.Contains(err.Error(), "N=3: no successful getClusterNodes") {
		t.Errorf("missing point: %v", err)
	}
	empty := full(2)
	empty.calls["REST /nodes"].lat = nil
	if err := checkFedRuns([]*fedRun{empty}); err == nil || !strings.Contains(err.Error(), "REST /nodes") {
		t.Errorf("no successful call: %v", err)
	}
	failed := full(2)
	failed.calls["kill"].errors, failed.calls["kill"].firstErr = 1, errors.New("boom")
	if err := checkFedRuns([]*fedRun{failed}); err == nil || !strings.Contains(err.Error(), "1 kill calls failed, first: boom") {
		t.Errorf("failed call: %v", err)
	}
	prop := full(2)
	prop.propErr = errors.New("stuck")
	if err := checkFedRuns([]*fedRun{prop}); err == nil || !strings.Contains(err.Error(), "policy propagation: stuck") {
		t.Errorf("propagation: %v", err)
	}
	lost := full(2)
	lost.lostErr = errors.New("still routed")
	if err := checkFedRuns([]*fedRun{lost}); err == nil || !strings.Contains(err.Error(), "LOST propagation: still routed") {
		t.Errorf("LOST propagation: %v", err)
	}
	solo := full(2)
	solo.solo = map[string]*callStats{"getClusterNodes": {errors: 2, firstErr: errors.New("short")}}
	if err := checkFedRuns([]*fedRun{solo}); err == nil || !strings.Contains(err.Error(), "2 solo getClusterNodes calls failed") {
		t.Errorf("solo: %v", err)
	}
}
