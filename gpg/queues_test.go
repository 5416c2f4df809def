package gpg

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The fixtures in testdata are /ws/v1/cluster/scheduler answers in the
// shape of Hadoop 3.4's DAOs (SchedulerTypeInfo > CapacitySchedulerInfo >
// CapacitySchedulerQueueInfo / CapacitySchedulerLeafQueueInfo with
// ResourceInfo's resourceInformations, queueCapacitiesByPartition, ...):
//
//	SC-1 (32 GiB / 32 vcores; 10 GiB / 10 vcores used):
//	  root.a        max 8 GiB/8,   used 6 GiB/6  -> headroom 2 GiB / 2
//	  root.eng.b    max 16 GiB/16, used 4 GiB/4, 50 pending -> 12 GiB / 12
//	  root.eng.c    max 24 GiB/24, used 0        (only in SC-1)
//	SC-2 (16 GiB / 16 vcores; 2 GiB / 2 used):
//	  root.a        max 8 GiB/8,   used 2 GiB/2  -> headroom 6 GiB / 6
//	  root.eng.b    max 8 GiB/8,   used 0        -> 8 GiB / 8
//	  (root.eng has b as its only child)
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Cluster-wide capability as the agent's heartbeat carries it.
const (
	sc1Metrics = `{"clusterMetrics":{"availableMB":22528,"availableVirtualCores":22,"allocatedMB":10240,"allocatedVirtualCores":10,"totalMB":32768,"totalVirtualCores":32,"appsPending":0}}`
	sc2Metrics = `{"clusterMetrics":{"availableMB":14336,"availableVirtualCores":14,"allocatedMB":2048,"allocatedVirtualCores":2,"totalMB":16384,"totalVirtualCores":16,"appsPending":0}}`
)

// fakeRMScheduler is a fake RM web service answering /ws/v1/cluster/scheduler
// with a settable body, an error status, or not at all (until the
// request's context ends).
type fakeRMScheduler struct {
	srv *httptest.Server
	mu  sync.Mutex
	// body answered with 200; status != 0 answers that status instead;
	// hang answers nothing.
	body   []byte
	status int
	hang   bool
	calls  int
}

func newFakeRMScheduler(t *testing.T, body []byte) *fakeRMScheduler {
	f := &fakeRMScheduler{body: body}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls++
		body, status, hang := f.body, f.status, f.hang
		f.mu.Unlock()
		if r.URL.Path != "/ws/v1/cluster/scheduler" {
			http.NotFound(w, r)
			return
		}
		if hang {
			<-r.Context().Done()
			return
		}
		if status != 0 {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"RemoteException":{"exception":"WebApplicationException","message":"boom","javaClassName":"javax.ws.rs.WebApplicationException"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRMScheduler) set(fn func(f *fakeRMScheduler)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

type queueEnv struct {
	clk      *clock
	st       *gpgtest.FakeStore
	src      *gpgtest.FakeSource
	g        *GPG
	rm1, rm2 *fakeRMScheduler
}

// newQueueEnv: SC-1 and SC-2 RUNNING with the capabilities above, their
// RMs answering the fixtures; queues "a" (short name), "root.eng.b" (full
// path) and "c" managed besides "*"; max_step 1 so a round reaches its
// target.
func newQueueEnv(t *testing.T, sc2Fixture string, mutate func(*Config)) *queueEnv {
	t.Helper()
	e := &queueEnv{clk: newClock(), src: gpgtest.NewFakeSource()}
	e.rm1 = newFakeRMScheduler(t, fixture(t, "scheduler-sc1.json"))
	e.rm2 = newFakeRMScheduler(t, fixture(t, sc2Fixture))
	e.st = gpgtest.NewFakeStore(e.clk.Now)
	sc1 := subCluster("SC-1", pb.SubClusterState_SC_RUNNING, sc1Metrics)
	sc1.RmWebServiceAddress = e.rm1.srv.URL
	sc2 := subCluster("SC-2", pb.SubClusterState_SC_RUNNING, sc2Metrics)
	sc2.RmWebServiceAddress = e.rm2.srv.URL
	e.st.Register(sc1)
	e.st.Register(sc2)
	e.g = newTestGPG(t, e.st, e.src, e.clk.Now, func(c *Config) {
		c.Generator.MaxStep = 1
		c.Generator.Queues = []string{"a", "root.eng.b", "c"}
		c.Generator.QueueInputs.RMTimeout = Duration(300 * time.Millisecond)
		if mutate != nil {
			mutate(c)
		}
	})
	acquire(t, e.g)
	return e
}

func (e *queueEnv) round(t *testing.T) RoundResult {
	t.Helper()
	acquire(t, e.g)
	e.g.RefreshQueueInputs(context.Background())
	res, err := e.g.policyRound(context.Background(), e.g.lease.fence())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The cluster-wide vector of these capabilities: SC-1 has 22 GiB / 22
// vcores free, SC-2 14 GiB / 14: 22/36 = 0.6111 and 14/36 = 0.3889.
var clusterWide = Weights{"SC-1": 22.0 / 36, "SC-2": 14.0 / 36}

func TestQueueWeightsFromSchedulerHeadroom(t *testing.T) {
	e := newQueueEnv(t, "scheduler-sc2.json", nil)
	res := e.round(t)
	// "*" covers queues without their own policy: cluster-wide.
	approx(t, storedWeights(t, e.st, "*"), clusterWide)
	// a: 2 GiB / 2 vcores of headroom in SC-1 against 6 GiB / 6 in SC-2,
	// although SC-1 has more free capacity overall: 0.25 / 0.75.
	approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 0.25, "SC-2": 0.75})
	// root.eng.b: 12 GiB / 12 in SC-1 and 8 GiB / 8 in SC-2 is 0.6 / 0.4;
	// SC-1's 50 pending applications in b damp it by 1/(1+50/100):
	// 0.6/1.5 = 0.4 against 0.4, so 0.5 / 0.5.
	approx(t, storedWeights(t, e.st, "root.eng.b"), Weights{"SC-1": 0.5, "SC-2": 0.5})
	// c exists only in SC-1: no complete view, the cluster-wide vector.
	approx(t, storedWeights(t, e.st, "c"), clusterWide)
	want := map[string]string{"*": "cluster-wide: default_queue", "a": inputPerQueue, "root.eng.b": inputPerQueue,
		"c": "cluster-wide: queue_not_found (SC-2)"}
	for q, in := range want {
		if res.QueueInputs[q] != in {
			t.Fatalf("queue %s input %q, want %q (all: %v)", q, res.QueueInputs[q], in, res.QueueInputs)
		}
	}
	// /gpg/v1/status shows each queue's target and input after a Round.
	e.g.Round(context.Background())
	if st := e.g.Status(); st.QueueInputs["a"] != inputPerQueue || st.QueueTargets["a"]["SC-2"] < 0.74 {
		t.Fatalf("status: inputs %v, targets %v", st.QueueInputs, st.QueueTargets)
	}

	// Kubernetes narrows SC-2 to 4 GiB / 4 vcores usable, 2 GiB / 2 of it
	// allocated: SC-2 has 2 GiB / 2 free, which bounds every queue there.
	e.src.Set(capacity.SubCluster{ID: "SC-2", Usable: capacity.Resources{MemoryMB: 4096, VCores: 4}, Nodes: 2, ObservedAt: e.clk.Now()})
	e.round(t)
	// a: min(6 GiB, 2 GiB) in SC-2 against 2 GiB in SC-1: 0.5 / 0.5.
	approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 0.5, "SC-2": 0.5})
	// b: 12 GiB (damped by 1.5) against min(8 GiB, 2 GiB): shares 12/14 and
	// 2/14; (12/14)/1.5 = 8/14 against 2/14: 0.8 / 0.2.
	approx(t, storedWeights(t, e.st, "root.eng.b"), Weights{"SC-1": 0.8, "SC-2": 0.2})
}

// Hadoop's Jersey renders a one-element list as a lone object where the
// DAO is not registered for natural arrays; root.eng's single child comes
// that way in this fixture and must read exactly as the array form.
func TestSchedulerLoneObjectList(t *testing.T) {
	now := time.Now()
	lone, err := parseScheduler(fixture(t, "scheduler-sc2-lone-child.json"), now)
	if err != nil {
		t.Fatal(err)
	}
	arr, err := parseScheduler(fixture(t, "scheduler-sc2.json"), now)
	if err != nil {
		t.Fatal(err)
	}
	want := leafQueue{Path: "root.eng.b", Name: "b", State: "RUNNING", Effective: true, AvailableMB: 8192, AvailableVCores: 8}
	if got := lone.Leaves["root.eng.b"]; got != want {
		t.Fatalf("lone child: %+v, want %+v", got, want)
	}
	if got := slices.Sorted(maps.Keys(lone.Leaves)); !slices.Equal(got, []string{"root.a", "root.eng.b"}) {
		t.Fatalf("leaves %v", got)
	}
	if len(lone.Leaves) != len(arr.Leaves) || lone.Leaves["root.a"] != arr.Leaves["root.a"] || lone.Leaves["root.eng.b"] != arr.Leaves["root.eng.b"] {
		t.Fatalf("lone-object and array forms differ: %+v vs %+v", lone.Leaves, arr.Leaves)
	}
	// And the round reads it: b's weights as with the array form.
	e := newQueueEnv(t, "scheduler-sc2-lone-child.json", nil)
	e.round(t)
	approx(t, storedWeights(t, e.st, "root.eng.b"), Weights{"SC-1": 0.5, "SC-2": 0.5})
}

// The rule for a sub-cluster whose scheduler read fails (an error status,
// or no answer within queue_inputs.rm_timeout): its last answer is used
// until queue_inputs.max_age; after that every managed queue gets the
// cluster-wide vector (never a weight of 0 for a sub-cluster whose agent
// still heartbeats: the REST read is a refinement, not a liveness test).
func TestQueueWeightsSchedulerReadFails(t *testing.T) {
	e := newQueueEnv(t, "scheduler-sc2.json", nil) // max_age 2m
	e.round(t)
	approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 0.25, "SC-2": 0.75})

	for _, fail := range []struct {
		name string
		set  func(f *fakeRMScheduler)
	}{
		{"500", func(f *fakeRMScheduler) { f.status = http.StatusInternalServerError }},
		{"timeout", func(f *fakeRMScheduler) { f.hang = true }},
	} {
		t.Run(fail.name, func(t *testing.T) {
			e.rm2.set(func(f *fakeRMScheduler) { f.status, f.hang = 0, false })
			e.round(t) // a fresh answer from both
			e.rm2.set(fail.set)
			// Within max_age: SC-2's last answer still counts.
			e.clk.Add(90 * time.Second)
			heartbeatBoth(t, e.st)
			res := e.round(t)
			if res.QueueInputs["a"] != inputPerQueue {
				t.Fatalf("within max_age: a's input %q", res.QueueInputs["a"])
			}
			approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 0.25, "SC-2": 0.75})
			// Past max_age: the cluster-wide vector for every queue.
			e.clk.Add(60 * time.Second)
			heartbeatBoth(t, e.st)
			res = e.round(t)
			for _, q := range []string{"a", "root.eng.b"} {
				if want := "cluster-wide: no_answer (SC-2)"; res.QueueInputs[q] != want {
					t.Fatalf("past max_age: %s's input %q, want %q", q, res.QueueInputs[q], want)
				}
				approx(t, storedWeights(t, e.st, q), clusterWide)
			}
			if w := storedWeights(t, e.st, "a"); w["SC-2"] == 0 {
				t.Fatalf("SC-2 drained by a failed scheduler read: %v", w)
			}
		})
	}
	// Back: per-queue weights again at once.
	e.rm2.set(func(f *fakeRMScheduler) { f.status, f.hang = 0, false })
	e.round(t)
	approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 0.25, "SC-2": 0.75})
}

func heartbeatBoth(t *testing.T, st *gpgtest.FakeStore) {
	t.Helper()
	if err := st.Heartbeat("SC-1", pb.SubClusterState_SC_RUNNING, sc1Metrics); err != nil {
		t.Fatal(err)
	}
	if err := st.Heartbeat("SC-2", pb.SubClusterState_SC_RUNNING, sc2Metrics); err != nil {
		t.Fatal(err)
	}
}

// Other cases that keep a queue on the cluster-wide vector, and a stopped
// queue.
func TestQueueInputsFallbacks(t *testing.T) {
	t.Run("fair scheduler", func(t *testing.T) {
		e := newQueueEnv(t, "scheduler-fair.json", nil)
		res := e.round(t)
		if want := "cluster-wide: not_capacity_scheduler (SC-2)"; res.QueueInputs["a"] != want {
			t.Fatalf("a's input %q, want %q", res.QueueInputs["a"], want)
		}
		approx(t, storedWeights(t, e.st, "a"), clusterWide)
	})
	t.Run("no maxEffectiveCapacity", func(t *testing.T) {
		// An RM older than 3.1 (or simrm) renders no effective capacities.
		body := strings.ReplaceAll(string(fixture(t, "scheduler-sc2.json")), `"maxEffectiveCapacity"`, `"maxEffectiveCapacityGone"`)
		e := newQueueEnv(t, "scheduler-sc2.json", nil)
		e.rm2.set(func(f *fakeRMScheduler) { f.body = []byte(body) })
		res := e.round(t)
		if want := "cluster-wide: no_effective_capacity (SC-2)"; res.QueueInputs["a"] != want {
			t.Fatalf("a's input %q, want %q", res.QueueInputs["a"], want)
		}
	})
	t.Run("load-based policy and disabled", func(t *testing.T) {
		for _, c := range []struct {
			mutate func(*Config)
			want   string
		}{
			{func(c *Config) { c.Generator.Policy = PolicyLoadBased }, "cluster-wide: load_based"},
			{func(c *Config) { c.Generator.QueueInputs.Enabled = false }, "cluster-wide: disabled"},
		} {
			e := newQueueEnv(t, "scheduler-sc2.json", c.mutate)
			res := e.round(t)
			if res.QueueInputs["a"] != c.want {
				t.Fatalf("a's input %q, want %q", res.QueueInputs["a"], c.want)
			}
			e.rm1.mu.Lock()
			calls := e.rm1.calls
			e.rm1.mu.Unlock()
			if calls != 0 {
				t.Fatalf("%s: the RM's scheduler was read %d times", c.want, calls)
			}
		}
	})
	t.Run("stopped queue", func(t *testing.T) {
		// a STOPPED in SC-2: the RM refuses new applications there.
		body := strings.Replace(string(fixture(t, "scheduler-sc2.json")), `"state": "RUNNING"`, `"state": "STOPPED"`, 1)
		e := newQueueEnv(t, "scheduler-sc2.json", nil)
		e.rm2.set(func(f *fakeRMScheduler) { f.body = []byte(body) })
		e.round(t)
		approx(t, storedWeights(t, e.st, "a"), Weights{"SC-1": 1, "SC-2": 0})
	})
	t.Run("standby reads nothing", func(t *testing.T) {
		e := newQueueEnv(t, "scheduler-sc2.json", nil)
		e.g.lease.release()
		e.g.RefreshQueueInputs(context.Background())
		e.rm1.mu.Lock()
		calls := e.rm1.calls
		e.rm1.mu.Unlock()
		if calls != 0 {
			t.Fatalf("a standby read the RM's scheduler %d times", calls)
		}
	})
}

func TestSchedulerReadBounded(t *testing.T) {
	e := newQueueEnv(t, "scheduler-sc2.json", func(c *Config) { c.Generator.QueueInputs.MaxBytes = 4096 })
	_, err := e.g.readScheduler(context.Background(), e.st.SubCluster("SC-1"))
	if !errors.Is(err, rmrest.ErrResponseTooLarge) {
		t.Fatalf("an 85 KB answer with max_bytes 4096: %v", err)
	}
	for _, bad := range []string{`[]`, `{"scheduler":{}}`, `{"scheduler":{"schedulerInfo":{"type":"capacityScheduler","queues":{"queue":"x"}}}}`} {
		if _, err := parseScheduler([]byte(bad), time.Now()); !errors.Is(err, ErrSchedulerInfo) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	cfg := DefaultConfig()
	cfg.Store = gpgtest.NewFakeStore(time.Now)
	cfg.Generator.QueueInputs.MaxBytes = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "queue_inputs.max_bytes") {
		t.Fatalf("max_bytes 0 validated: %v", err)
	}
}

// Run reads the schedulers in a loop of its own, and a changed answer
// starts a round: with a one-hour round interval, only the reads can move
// a queue's weights.
func TestQueueInputsDriveRounds(t *testing.T) {
	rm1 := newFakeRMScheduler(t, fixture(t, "scheduler-sc1.json"))
	rm2 := newFakeRMScheduler(t, fixture(t, "scheduler-sc2.json"))
	st := gpgtest.NewFakeStore(nil)
	for id, c := range map[string]struct {
		metrics string
		rm      *fakeRMScheduler
	}{"SC-1": {sc1Metrics, rm1}, "SC-2": {sc2Metrics, rm2}} {
		sc := subCluster(id, pb.SubClusterState_SC_RUNNING, c.metrics)
		sc.RmWebServiceAddress = c.rm.srv.URL
		st.Register(sc)
	}
	g := newTestGPG(t, st, nil, nil, func(c *Config) {
		c.Interval = Duration(time.Hour)
		c.Debounce = Duration(10 * time.Millisecond)
		c.Cleaner.Enabled = false
		c.Generator.MaxStep = 1
		c.Generator.Queues = []string{"a"}
		c.Generator.QueueInputs.Interval = Duration(50 * time.Millisecond)
	})
	runGPG(t, g)
	testpoll.Poll(t, "a's own weights from the schedulers", func() bool {
		w := storedWeights(t, st, "a")
		return w["SC-1"] > 0.249 && w["SC-1"] < 0.251
	})
	// a is stopped in SC-2: the next read changes the answer, and a round
	// follows at once.
	body := strings.Replace(string(fixture(t, "scheduler-sc2.json")), `"state": "RUNNING"`, `"state": "STOPPED"`, 1)
	rm2.set(func(f *fakeRMScheduler) { f.body = []byte(body) })
	testpoll.Poll(t, "a drained from SC-2 after its queue stopped there", func() bool { return storedWeights(t, st, "a")["SC-2"] == 0 })
}
