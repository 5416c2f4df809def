package bench_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/router/bench"
)

func TestRunPrintsRatioLast(t *testing.T) {
	cfg := bench.DefaultConfig()
	cfg.Duration, cfg.Rounds, cfg.Concurrency = time.Second, 1, 2
	var out bytes.Buffer
	if err := bench.Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ratio router/direct throughput: ") {
		t.Fatalf("last line %q\n%s", last, out.String())
	}
	if !strings.Contains(out.String(), "router ") || !strings.Contains(out.String(), "direct ") {
		t.Fatalf("missing rows:\n%s", out.String())
	}
}
