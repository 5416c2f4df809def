package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunPrintsTheTable runs a tiny bench: both parts work end to end and
// the ratio line comes last. It asserts no numbers (speed is measured by
// the bench, not by tests).
func TestRunPrintsTheTable(t *testing.T) {
	var out bytes.Buffer
	cfg := Config{Duration: 300 * time.Millisecond, Rounds: 1, AMs: 2, FanoutLatency: []time.Duration{0, time.Millisecond, 2 * time.Millisecond}}
	if err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ratio proxy/direct") || !strings.Contains(last, "fan-out") {
		t.Fatalf("last line %q\n%s", last, out.String())
	}
	if !strings.Contains(out.String(), "through the proxy (3 sub-clusters)") {
		t.Fatalf("no fan-out row:\n%s", out.String())
	}
}
