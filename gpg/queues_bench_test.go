package gpg

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/policies"
)

// bigScheduler is the SC-1 fixture with root's children replaced by n
// copies of its root.a leaf (each a full Hadoop 3.4 leaf, ~16 KB here).
func bigScheduler(b *testing.B, n int) []byte {
	b.Helper()
	var doc map[string]any
	if err := json.Unmarshal(fixture(b, "scheduler-sc1.json"), &doc); err != nil {
		b.Fatal(err)
	}
	info := doc["scheduler"].(map[string]any)["schedulerInfo"].(map[string]any)
	leaf := info["queues"].(map[string]any)["queue"].([]any)[0].(map[string]any)
	qs := make([]any, n)
	for i := range qs {
		c := make(map[string]any, len(leaf))
		for k, v := range leaf {
			c[k] = v
		}
		c["queueName"], c["queuePath"] = fmt.Sprintf("q%d", i), fmt.Sprintf("root.q%d", i)
		qs[i] = c
	}
	info["queues"] = map[string]any{"queue": qs}
	out, err := json.Marshal(doc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// go test -run '^$' -bench 'ParseScheduler|QueueTargets' -benchmem ./gpg/
func BenchmarkParseScheduler1000Queues(b *testing.B) {
	data := bigScheduler(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := parseScheduler(data, time.Now())
		if err != nil || len(v.Leaves) != 1000 {
			b.Fatalf("%v, %d leaves", err, len(v.Leaves))
		}
	}
}

// 50 sub-clusters with 1000 leaf queues each, 20 managed queues: the
// per-queue part of a round.
func BenchmarkQueueTargets50x20(b *testing.B) {
	v, err := parseScheduler(bigScheduler(b, 1000), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	g := newTestGPG(b, gpgtest.NewFakeStore(nil), nil, nil, nil)
	var in []loadInput
	views := map[string]*queueView{}
	for i := range 50 {
		id := fmt.Sprintf("SC-%02d", i)
		in = append(in, loadInput{ID: id, Capability: policies.Capability{AvailableMB: int64(1000 * (i + 1)), AvailableVCores: int64(i + 1)}})
		views[id] = v
	}
	target := normalized(capacityWeights(in, 100))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		for q := range 20 {
			w, input := g.queueTarget(fmt.Sprintf("q%d", q*7), in, target, views, now)
			if input != inputPerQueue || len(w) != 50 {
				b.Fatalf("%s %v", input, w)
			}
		}
	}
}
