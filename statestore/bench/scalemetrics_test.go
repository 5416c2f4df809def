package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestScrapeLeaderHistogram reads the store's commit histogram from a
// /metrics page twice and takes the difference: count, mean, the bucket
// holding p99 and the share above 6.4 ms.
func TestScrapeLeaderHistogram(t *testing.T) {
	page := func(n6, n12, inf int, sum float64) string {
		var b strings.Builder
		for _, m := range []string{commitMetric, applyMetric} {
			fmt.Fprintf(&b, "# HELP %s x\n# TYPE %s histogram\n", m, m)
			fmt.Fprintf(&b, "%s_bucket{le=\"0.0032\"} 0\n%s_bucket{le=\"0.0064\"} %d\n%s_bucket{le=\"0.0128\"} %d\n%s_bucket{le=\"+Inf\"} %d\n", m, m, n6, m, n12, m, inf)
			fmt.Fprintf(&b, "%s_sum %g\n%s_count %d\n", m, sum, m, inf)
		}
		b.WriteString("yarnfed_statestore_batch_commands_count 7\n")
		return b.String()
	}
	pages := []string{page(10, 10, 10, 0.05), page(110, 200, 210, 1.05)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, pages[0])
		pages = pages[1:]
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	a, err := scrapeLeader(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := scrapeLeader(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	d := b.commit.sub(a.commit)
	// 200 commits, 1 s: mean 5 ms; 100 <= 6.4 ms, 90 in (6.4, 12.8], 10 above.
	if d.count != 200 || d.mean() != 5*time.Millisecond {
		t.Errorf("count %v mean %v, want 200, 5ms", d.count, d.mean())
	}
	if got := d.quantile(0.99); got != ">12.80ms" {
		t.Errorf("p99 bucket %q, want >12.80ms", got)
	}
	if got := d.quantile(0.5); got != "<=6.40ms" {
		t.Errorf("p50 bucket %q, want <=6.40ms", got)
	}
	if got := d.over(0.0064); got != 0.5 {
		t.Errorf("over 6.4ms %v, want 0.5", got)
	}
	if sum := d.add(d); sum.count != 400 || sum.counts[1] != 200 {
		t.Errorf("add: %+v", sum)
	}
	if _, err := scrapeLeader(context.Background(), srv.Listener.Addr().String()+"0"); err == nil {
		t.Error("a bad address scraped")
	}
}
