package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// hist is one Prometheus histogram as scraped: cumulative bucket counts
// by upper bound (ascending), sum and count.
type hist struct {
	le     []float64
	counts []float64
	sum    float64
	count  float64
}

// leaderHists are the store's own latency histograms on a replica.
type leaderHists struct {
	// commit: an entry handed to Raft until its FSM result (the leader's
	// log write and fsync, a follower's, and the bbolt apply).
	commit hist
	// apply: a command proposed until its result (commit plus the group
	// commit's queueing).
	apply hist
}

const (
	commitMetric = "yarnfed_statestore_raft_commit_seconds"
	applyMetric  = "yarnfed_statestore_apply_seconds"
)

// scrapeLeader reads the store histograms from a replica's /metrics.
func scrapeLeader(ctx context.Context, addr string) (leaderHists, error) {
	var out leaderHists
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var h *hist
		var rest string
		switch {
		case strings.HasPrefix(line, commitMetric):
			h, rest = &out.commit, line[len(commitMetric):]
		case strings.HasPrefix(line, applyMetric):
			h, rest = &out.apply, line[len(applyMetric):]
		default:
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			return out, fmt.Errorf("%s: %q: %w", addr, line, err)
		}
		key := rest[:i]
		switch {
		case key == "_sum":
			h.sum = v
		case key == "_count":
			h.count = v
		case strings.HasPrefix(key, `_bucket{le="`):
			le := strings.TrimSuffix(strings.TrimPrefix(key, `_bucket{le="`), `"}`)
			bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
			if err != nil {
				return out, fmt.Errorf("%s: %q: %w", addr, line, err)
			}
			h.le, h.counts = append(h.le, bound), append(h.counts, v)
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	if out.commit.count == 0 && len(out.commit.le) == 0 {
		return out, fmt.Errorf("%s/metrics has no %s", addr, commitMetric)
	}
	return out, nil
}

// sub is h minus an earlier scrape of the same histogram.
func (h hist) sub(before hist) hist {
	d := hist{le: h.le, counts: make([]float64, len(h.counts)), sum: h.sum - before.sum, count: h.count - before.count}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(before.counts) {
			d.counts[i] -= before.counts[i]
		}
	}
	return d
}

func (h hist) add(o hist) hist {
	if len(h.le) == 0 {
		return o
	}
	d := hist{le: h.le, counts: make([]float64, len(h.counts)), sum: h.sum + o.sum, count: h.count + o.count}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(o.counts) {
			d.counts[i] += o.counts[i]
		}
	}
	return d
}

func (h hist) mean() time.Duration {
	if h.count <= 0 {
		return 0
	}
	return time.Duration(h.sum / h.count * float64(time.Second))
}

// quantile is the upper bound of the bucket holding quantile q: with the
// store's doubling buckets, within a factor of 2 above the true value.
func (h hist) quantile(q float64) string {
	if h.count <= 0 {
		return "-"
	}
	for i, c := range h.counts {
		if c >= q*h.count {
			if h.le[i] > 1e9 {
				return fmt.Sprintf(">%s", ms(time.Duration(h.le[i-1]*float64(time.Second))))
			}
			return "<=" + ms(time.Duration(h.le[i]*float64(time.Second)))
		}
	}
	return "-"
}

// over is the fraction of observations above bound seconds (bound must be
// one of the bucket bounds).
func (h hist) over(bound float64) float64 {
	if h.count <= 0 {
		return 0
	}
	for i, le := range h.le {
		if le >= bound*0.999 && le <= bound*1.001 {
			return (h.count - h.counts[i]) / h.count
		}
	}
	return 0
}

func (h hist) String() string {
	return fmt.Sprintf("n %.0f mean %s p99 %s >6.4ms %.1f%%", h.count, ms(h.mean()), h.quantile(0.99), 100*h.over(0.0064))
}
