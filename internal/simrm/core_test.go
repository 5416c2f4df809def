package simrm

import (
	"github.com/yarnfed/yarnfed/internal/config"

	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a manual clock: tests advance time explicitly, never sleep.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testCore(t testing.TB, mutate func(*Config)) (*core, *clock) {
	t.Helper()
	clk := newClock()
	cfg := TestConfig()
	cfg.ClusterID = "sc-test"
	cfg.Now = clk.Now
	cfg.Nodes = 4
	cfg.NodeMemoryMB = 8192
	cfg.NodeVCores = 8
	cfg.SimAM.ContainerRuntime = config.Duration(time.Second)
	cfg.SimAM.Heartbeat = config.Duration(100 * time.Millisecond)
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return newCore(cfg), clk
}

func submit(t testing.TB, c *core, mutate func(*SubmitRequest)) AppID {
	t.Helper()
	id, _ := c.NewApplication()
	req := SubmitRequest{ID: id, Name: "app", User: "alice", AMResource: Resource{MemoryMB: 1024, VCores: 1}}
	if mutate != nil {
		mutate(&req)
	}
	if err := c.Submit(req); err != nil {
		t.Fatalf("submit: %v", err)
	}
	return id
}

func report(t testing.TB, c *core, id AppID) AppReport {
	t.Helper()
	r, err := c.AppReport(id)
	if err != nil {
		t.Fatalf("report %s: %v", id, err)
	}
	return r
}

// runUntil ticks the simulation, advancing the clock, until cond holds.
func runUntil(t testing.TB, c *core, clk *clock, step time.Duration, cond func() bool) {
	t.Helper()
	for i := 0; i < 10000; i++ {
		if cond() {
			return
		}
		clk.Advance(step)
		c.tick()
	}
	t.Fatal("condition not reached after 10000 ticks")
}

func TestIDStrings(t *testing.T) {
	app := AppID{ClusterTimestamp: 1700000000000, ID: 7}
	at := AttemptID{App: app, Attempt: 1}
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"application", app.String(), "application_1700000000000_0007"},
		{"application wide id", AppID{ClusterTimestamp: 1, ID: 123456}.String(), "application_1_123456"},
		{"attempt", at.String(), "appattempt_1700000000000_0007_000001"},
		{"container no epoch", NewContainerID(at, 0, 5).String(), "container_1700000000000_0007_01_000005"},
		{"container epoch", NewContainerID(at, 17, 5).String(), "container_e17_1700000000000_0007_01_000005"},
		{"container small epoch", NewContainerID(at, 3, 1234567).String(), "container_e03_1700000000000_0007_01_1234567"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	cid := NewContainerID(at, 17, 5)
	if cid.ID != 17<<40|5 {
		t.Fatalf("raw container id %d, want epoch<<40|seq", cid.ID)
	}
	back, err := ParseContainerID(cid.String())
	if err != nil || back != cid {
		t.Fatalf("round trip %v: %v %v", cid, back, err)
	}
	if _, err := ParseAppID("application_x_1"); !errors.Is(err, ErrBadID) {
		t.Fatalf("bad id: %v", err)
	}
	if a, err := ParseAttemptID(at.String()); err != nil || a != at {
		t.Fatalf("attempt round trip: %v %v", a, err)
	}
}

func TestManagedAppRunsToFinished(t *testing.T) {
	c, clk := testCore(t, func(cfg *Config) { cfg.SimAM.Containers = 3 })
	id := submit(t, c, nil)
	if st := report(t, c, id).State; st != AppAccepted {
		t.Fatalf("state after submit %v, want ACCEPTED", st)
	}
	var sawRunning bool
	runUntil(t, c, clk, 50*time.Millisecond, func() bool {
		r := report(t, c, id)
		sawRunning = sawRunning || r.State == AppRunning
		return r.State.Final()
	})
	r := report(t, c, id)
	if !sawRunning || r.State != AppFinished || r.FinalStatus != FinalSucceeded {
		t.Fatalf("sawRunning=%v state=%v final=%v diag=%q", sawRunning, r.State, r.FinalStatus, r.Diagnostics)
	}
	cs, err := c.Containers(*r.CurrentAttempt)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 { // AM + 3 workers
		t.Fatalf("%d containers, want 4", len(cs))
	}
	for _, ct := range cs {
		if ct.State != ContainerComplete {
			t.Errorf("container %s still %v", ct.ID, ct.State)
		}
		if ct.ID.Epoch() != c.epoch {
			t.Errorf("container %s epoch %d, want %d", ct.ID, ct.ID.Epoch(), c.epoch)
		}
	}
	if m := c.Metrics(); m.AppsCompleted != 1 || m.Allocated != (Resource{}) || m.ContainersAllocated != 4 {
		t.Fatalf("metrics after finish: %+v", m)
	}
}

func TestUnmanagedAppReportCarriesAMRMToken(t *testing.T) {
	c, _ := testCore(t, nil)
	id := submit(t, c, func(r *SubmitRequest) { r.Unmanaged = true })
	r := report(t, c, id)
	if r.State != AppAccepted || r.AMRMToken == nil {
		t.Fatalf("state %v token %v", r.State, r.AMRMToken)
	}
	if r.AMRMToken.Kind != KindAMRMToken {
		t.Fatalf("kind %q", r.AMRMToken.Kind)
	}
	at, pw, err := c.keys.checkAMRM(r.AMRMToken.Identifier)
	if err != nil || at != *r.CurrentAttempt || string(pw) != string(r.AMRMToken.Password) {
		t.Fatalf("token does not verify: %v %v", at, err)
	}
	if _, err := c.Register(at, RegisterRequest{Host: "uam", RPCPort: 1}); err != nil {
		t.Fatal(err)
	}
	if r := report(t, c, id); r.State != AppRunning || r.AMRMToken != nil {
		t.Fatalf("after register: state %v, token %v (Hadoop stops handing it out once the AM registered)", r.State, r.AMRMToken)
	}
	if ok, err := c.Finish(at, FinishRequest{FinalStatus: FinalSucceeded}); !ok || err != nil {
		t.Fatalf("finish: %v %v", ok, err)
	}
	r = report(t, c, id)
	if r.State != AppFinished || r.AMRMToken != nil {
		t.Fatalf("after finish: state %v token %v", r.State, r.AMRMToken)
	}
	// A managed app's report never carries the token.
	mid := submit(t, c, nil)
	if report(t, c, mid).AMRMToken != nil {
		t.Fatal("managed app report carries an AMRMToken")
	}
}

func unmanagedAttempt(t testing.TB, c *core, mutate func(*SubmitRequest)) AttemptID {
	t.Helper()
	id := submit(t, c, func(r *SubmitRequest) {
		r.Unmanaged = true
		if mutate != nil {
			mutate(r)
		}
	})
	return *report(t, c, id).CurrentAttempt
}

func TestResponseIDSemantics(t *testing.T) {
	c, _ := testCore(t, nil)
	at := unmanagedAttempt(t, c, nil)

	_, err := c.Allocate(at, AllocateRequest{ResponseID: 0})
	if !errors.Is(err, ErrAMNotRegistered) {
		t.Fatalf("allocate before register: %v", err)
	}
	if _, err := c.Finish(at, FinishRequest{}); !errors.Is(err, ErrAMNotRegistered) ||
		!strings.Contains(err.Error(), "trying to unregister before registering") {
		t.Fatalf("finish before register: %v", err)
	}
	if _, err := c.Register(at, RegisterRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Register(at, RegisterRequest{})
	if !errors.Is(err, ErrInvalidAMRequest) || !strings.Contains(err.Error(), "Application Master is already registered : "+at.App.String()) {
		t.Fatalf("second register: %v", err)
	}
	r1, err := c.Allocate(at, AllocateRequest{ResponseID: 0})
	if err != nil || r1.ResponseID != 1 {
		t.Fatalf("first allocate: %+v %v", r1, err)
	}
	dup, err := c.Allocate(at, AllocateRequest{ResponseID: 0, Asks: []ResourceRequest{{ResourceName: "*", NumContainers: 5, Capability: Resource{MemoryMB: 1024, VCores: 1}}}})
	if err != nil || dup != r1 {
		t.Fatalf("duplicate heartbeat must resend the last response: %p vs %p, %v", dup, r1, err)
	}
	if c.pendingContainers != 0 {
		t.Fatal("a duplicate heartbeat's asks must be ignored")
	}
	cases := []struct {
		name string
		id   int32
	}{{"ahead", 5}, {"two behind", -1}, {"far behind", -100}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Allocate(at, AllocateRequest{ResponseID: tc.id})
			want := "expect responseId to be 1, but get "
			if !errors.Is(err, ErrInvalidAMRequest) || !strings.Contains(err.Error(), want) {
				t.Fatalf("responseId %d: %v", tc.id, err)
			}
		})
	}
	r2, err := c.Allocate(at, AllocateRequest{ResponseID: 1})
	if err != nil || r2.ResponseID != 2 {
		t.Fatalf("second allocate: %+v %v", r2, err)
	}
	// Wrap from MaxInt32 to 0, as Hadoop's getNextResponseId does.
	c.mu.Lock()
	a := c.cached(at)
	a.last = &AllocateResponse{ResponseID: math.MaxInt32, Attempt: at}
	c.mu.Unlock()
	r3, err := c.Allocate(at, AllocateRequest{ResponseID: math.MaxInt32})
	if err != nil || r3.ResponseID != 0 {
		t.Fatalf("wrap: %+v %v", r3, err)
	}
	if dup, err := c.Allocate(at, AllocateRequest{ResponseID: math.MaxInt32}); err != nil || dup != r3 {
		t.Fatalf("duplicate across the wrap: %v", err)
	}
	if ok, err := c.Finish(at, FinishRequest{FinalStatus: FinalSucceeded}); !ok || err != nil {
		t.Fatalf("finish: %v %v", ok, err)
	}
	if ok, err := c.Finish(at, FinishRequest{FinalStatus: FinalSucceeded}); !ok || err != nil {
		t.Fatalf("a retried finish after success must answer true: %v %v", ok, err)
	}
	if _, err := c.Allocate(at, AllocateRequest{ResponseID: 0}); !errors.Is(err, ErrAttemptNotFound) {
		t.Fatalf("allocate after finish: %v", err)
	}
}

// registered returns a registered unmanaged attempt and its next responseId.
func registered(t testing.TB, c *core, mutate func(*SubmitRequest)) AttemptID {
	t.Helper()
	at := unmanagedAttempt(t, c, mutate)
	if _, err := c.Register(at, RegisterRequest{Host: "am", RPCPort: 1}); err != nil {
		t.Fatal(err)
	}
	return at
}

type amDriver struct {
	t    testing.TB
	c    *core
	at   AttemptID
	next int32
}

func (d *amDriver) allocate(req AllocateRequest) *AllocateResponse {
	d.t.Helper()
	req.ResponseID = d.next
	resp, err := d.c.Allocate(d.at, req)
	if err != nil {
		d.t.Fatalf("allocate: %v", err)
	}
	d.next = resp.ResponseID
	return resp
}

func anyAsk(n int32, mb int64) ResourceRequest {
	return ResourceRequest{Priority: 1, ResourceName: AnyResource, NumContainers: n, Capability: Resource{MemoryMB: mb, VCores: 1}, RelaxLocality: true}
}

func TestAllocateAsksReleasesAndCompleted(t *testing.T) {
	c, clk := testCore(t, nil)
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	resp := d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(3, 1000)}})
	if len(resp.Allocated) != 0 {
		t.Fatal("containers must arrive on a later heartbeat, after a scheduling pass")
	}
	if resp.Available != (Resource{MemoryMB: 4 * 8192, VCores: 32}) {
		t.Fatalf("headroom %v", resp.Available)
	}
	c.tick()
	resp = d.allocate(AllocateRequest{})
	if len(resp.Allocated) != 3 {
		t.Fatalf("allocated %d, want 3", len(resp.Allocated))
	}
	for _, ct := range resp.Allocated {
		if ct.Resource != (Resource{MemoryMB: 1024, VCores: 1}) {
			t.Errorf("container not normalized to the minimum allocation: %v", ct.Resource)
		}
	}
	if len(resp.NMTokenNodes) == 0 {
		t.Fatal("no NM tokens for the new containers' nodes")
	}
	if resp.Available != (Resource{MemoryMB: 4*8192 - 3*1024, VCores: 32 - 3}) {
		t.Fatalf("headroom after allocation %v", resp.Available)
	}
	rel := resp.Allocated[0].ID
	// Hadoop reports a released container on this or a later heartbeat.
	completed := d.allocate(AllocateRequest{Releases: []ContainerID{rel}}).Completed
	completed = append(completed, d.allocate(AllocateRequest{}).Completed...)
	resp.Completed = completed
	if len(resp.Completed) != 1 || resp.Completed[0].ID != rel || resp.Completed[0].ExitStatus != ExitAborted {
		t.Fatalf("released container not reported completed: %+v", resp.Completed)
	}
	// A container of another application cannot be released.
	other := registered(t, c, nil)
	bad := NewContainerID(other, c.epoch, 1)
	_, err := c.Allocate(d.at, AllocateRequest{ResponseID: d.next, Releases: []ContainerID{bad}})
	if !errors.Is(err, ErrInvalidContainerRelease) {
		t.Fatalf("foreign release: %v", err)
	}
	// Asks above the maximum allocation are rejected.
	_, err = c.Allocate(d.at, AllocateRequest{ResponseID: d.next, Asks: []ResourceRequest{anyAsk(1, 100000)}})
	if !errors.Is(err, ErrInvalidResourceRequest) {
		t.Fatalf("oversized ask: %v", err)
	}
	// Containers of external AMs end by themselves when configured.
	c.cfg.ContainerRuntime = config.Duration(time.Second)
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(1, 1024)}})
	c.tick()
	resp = d.allocate(AllocateRequest{})
	if len(resp.Allocated) != 1 {
		t.Fatalf("allocated %d", len(resp.Allocated))
	}
	clk.Advance(2 * time.Second)
	c.tick()
	resp = d.allocate(AllocateRequest{})
	if len(resp.Completed) != 1 || resp.Completed[0].ExitStatus != ExitSuccess {
		t.Fatalf("expired container: %+v", resp.Completed)
	}
}

func TestPlacementLocalityAndBlacklist(t *testing.T) {
	c, _ := testCore(t, nil)
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	host := c.nodes[2].id.Host
	cases := []struct {
		name   string
		req    AllocateRequest
		check  func(ContainerInfo) bool
		expect string
	}{
		{
			name: "node local",
			req: AllocateRequest{Asks: []ResourceRequest{
				{Priority: 1, ResourceName: host, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: true},
				{Priority: 1, ResourceName: "/rack-0", NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: true},
				anyAsk(1, 1024),
			}},
			check:  func(ci ContainerInfo) bool { return ci.Node.Host == host },
			expect: "on " + host,
		},
		{
			name: "blacklisted node avoided",
			req: AllocateRequest{
				Asks:         []ResourceRequest{{Priority: 2, ResourceName: AnyResource, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: true}},
				BlacklistAdd: []string{c.nodes[0].id.Host, c.nodes[1].id.Host, c.nodes[3].id.Host},
			},
			check:  func(ci ContainerInfo) bool { return ci.Node.Host == host },
			expect: "only on the one node left",
		},
		{
			name: "strict locality waits",
			req: AllocateRequest{
				Asks: []ResourceRequest{
					{Priority: 3, ResourceName: c.nodes[0].id.Host, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: true},
					{Priority: 3, ResourceName: AnyResource, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: false},
				},
			},
			check:  nil, // node 0 is blacklisted: nothing may be allocated
			expect: "no container",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d.allocate(tc.req)
			c.tick()
			resp := d.allocate(AllocateRequest{})
			if tc.check == nil {
				if len(resp.Allocated) != 0 {
					t.Fatalf("want %s, got %+v", tc.expect, resp.Allocated)
				}
				return
			}
			if len(resp.Allocated) != 1 || !tc.check(resp.Allocated[0]) {
				t.Fatalf("want one container %s, got %+v", tc.expect, resp.Allocated)
			}
		})
	}
}

func TestQueueCapacityAndFIFO(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) {
		cfg.Nodes = 2 // 16 GiB, 16 vcores
		cfg.Queues = []QueueConfig{{Name: "a", Capacity: 50, MaxCapacity: 50}, {Name: "b", Capacity: 50, MaxCapacity: 100}}
	})
	a1 := &amDriver{t: t, c: c, at: registered(t, c, func(r *SubmitRequest) { r.Queue = "a" })}
	a2 := &amDriver{t: t, c: c, at: registered(t, c, func(r *SubmitRequest) { r.Queue = "a" })}
	b1 := &amDriver{t: t, c: c, at: registered(t, c, func(r *SubmitRequest) { r.Queue = "root.b" })}
	// Queue a may hold 8 GiB: a1 (first in FIFO) gets 6, a2 the last 2.
	a1.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(6, 1024)}})
	a2.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(6, 1024)}})
	c.tick()
	if n := len(a1.allocate(AllocateRequest{}).Allocated); n != 6 {
		t.Fatalf("a1 got %d, want 6", n)
	}
	r := a2.allocate(AllocateRequest{})
	if n := len(r.Allocated); n != 2 {
		t.Fatalf("a2 got %d, want 2 (queue a at its 50%% maximum)", n)
	}
	if r.Available != (Resource{}) {
		t.Fatalf("a2 headroom %v, want zero at the queue limit", r.Available)
	}
	// Queue b is elastic up to 100%: it takes the other 8 GiB.
	b1.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(10, 1024)}})
	c.tick()
	if n := len(b1.allocate(AllocateRequest{}).Allocated); n != 8 {
		t.Fatalf("b1 got %d, want 8", n)
	}
	qa, _ := c.Queue("a", true)
	if qa.Used.MemoryMB != 8192 || qa.NumApps != 2 || qa.PendingContainers != 4 {
		t.Fatalf("queue a report %+v", qa)
	}
	// Higher application priority jumps the FIFO line.
	if _, err := c.UpdatePriority(a2.at.App, 5); err != nil {
		t.Fatal(err)
	}
	qa, _ = c.Queue("a", true)
	first := qa.Apps[0]
	if first != a2.at.App {
		t.Fatalf("priority did not reorder the queue: first is %s", first)
	}
}

func TestKillMoveAndFailures(t *testing.T) {
	c, clk := testCore(t, func(cfg *Config) {
		cfg.Queues = []QueueConfig{{Name: "default", Capacity: 50}, {Name: "other", Capacity: 50}}
		cfg.AMLivenessTimeout = config.Duration(time.Minute)
	})
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(2, 1024)}})
	c.tick()
	d.allocate(AllocateRequest{})
	if err := c.Move(d.at.App, "other", "alice"); err != nil {
		t.Fatal(err)
	}
	if q, _ := c.Queue("other", false); q.Used.MemoryMB != 2048 {
		t.Fatalf("usage did not follow the move: %+v", q)
	}
	if err := c.Move(d.at.App, "nope", "alice"); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("move to unknown queue: %v", err)
	}
	done, err := c.Kill(d.at.App, "bob", "")
	if !done || err != nil {
		t.Fatalf("kill: %v %v", done, err)
	}
	r := report(t, c, d.at.App)
	if r.State != AppKilled || r.FinalStatus != FinalKilled || !strings.Contains(r.Diagnostics, "bob") {
		t.Fatalf("after kill: %+v", r)
	}
	if m := c.Metrics(); m.Allocated != (Resource{}) || m.AppsKilled != 1 {
		t.Fatalf("kill did not free resources: %+v", m)
	}
	if _, err := c.Kill(AppID{ClusterTimestamp: 1, ID: 99}, "", ""); !errors.Is(err, ErrApplicationNotFound) ||
		!strings.Contains(err.Error(), "doesn't exist in RM") {
		t.Fatalf("kill unknown: %v", err)
	}
	// Unknown queue: accepted by the call, FAILED at once (capacity scheduler).
	bad := submit(t, c, func(r *SubmitRequest) { r.Queue = "nope" })
	if r := report(t, c, bad); r.State != AppFailed || !strings.Contains(r.Diagnostics, "unknown queue: nope") {
		t.Fatalf("unknown queue: %+v", r)
	}
	// A silent unmanaged AM times out and, never retried, fails the app.
	quiet := registered(t, c, nil)
	clk.Advance(2 * time.Minute)
	c.tick()
	if r := report(t, c, quiet.App); r.State != AppFailed {
		t.Fatalf("liveness: %v", r.State)
	}
	// A managed app whose attempt fails gets a second attempt.
	m := submit(t, c, nil)
	runUntil(t, c, clk, 50*time.Millisecond, func() bool { return report(t, c, m).State == AppRunning })
	if err := c.FailAttempt(*report(t, c, m).CurrentAttempt, "chaos"); err != nil {
		t.Fatal(err)
	}
	if r := report(t, c, m); r.CurrentAttempt.Attempt != 2 || r.State != AppAccepted {
		t.Fatalf("after attempt failure: attempt %v state %v", r.CurrentAttempt, r.State)
	}
	runUntil(t, c, clk, 50*time.Millisecond, func() bool { return report(t, c, m).State.Final() })
	if r := report(t, c, m); r.State != AppFinished {
		t.Fatalf("second attempt: %v %q", r.State, r.Diagnostics)
	}
}

func TestAppFilters(t *testing.T) {
	c, clk := testCore(t, func(cfg *Config) {
		cfg.Queues = []QueueConfig{{Name: "default", Capacity: 50}, {Name: "q2", Capacity: 50}}
	})
	a := submit(t, c, func(r *SubmitRequest) { r.Type = "MAPREDUCE"; r.Tags = []string{"Nightly", "etl"}; r.Name = "wc" })
	clk.Advance(time.Second)
	b := submit(t, c, func(r *SubmitRequest) { r.User = "bob"; r.Queue = "q2"; r.Unmanaged = true })
	clk.Advance(time.Second)
	k := submit(t, c, func(r *SubmitRequest) { r.Type = "SPARK" })
	if _, err := c.Kill(k, "", ""); err != nil {
		t.Fatal(err)
	}
	t0 := report(t, c, a).Started
	ids := func(rs []AppReport) []AppID {
		var out []AppID
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    AppFilter
		want []AppID
	}{
		{"all", AppFilter{}, []AppID{a, b, k}},
		{"type case-insensitive", AppFilter{Types: []string{"mapreduce"}}, []AppID{a}},
		{"state", AppFilter{States: []AppState{AppKilled}}, []AppID{k}},
		{"user", AppFilter{Users: []string{"bob"}}, []AppID{b}},
		{"own", AppFilter{OwnUser: "alice"}, []AppID{a, k}},
		{"queue", AppFilter{Queues: []string{"root.q2"}}, []AppID{b}},
		{"tag any, lower-cased", AppFilter{Tags: []string{"NIGHTLY", "zzz"}}, []AppID{a}},
		{"name", AppFilter{Name: "wc"}, []AppID{a}},
		{"limit", AppFilter{Limit: 2}, []AppID{a, b}},
		{"start range", AppFilter{StartBegin: t0 + 500, StartEnd: t0 + 1500}, []AppID{b}},
		{"finish range", AppFilter{FinishBegin: 1}, []AppID{k}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(c.Apps(tc.f))
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSubmitValidationAndIdempotence(t *testing.T) {
	c, _ := testCore(t, nil)
	id := submit(t, c, nil)
	if err := c.Submit(SubmitRequest{ID: id, Name: "again", User: "x"}); err != nil {
		t.Fatalf("resubmit: %v", err)
	}
	if r := report(t, c, id); r.Name != "app" {
		t.Fatal("resubmission changed the application")
	}
	nid, _ := c.NewApplication()
	err := c.Submit(SubmitRequest{ID: nid, AMResource: Resource{MemoryMB: 1 << 20, VCores: 1}})
	if !errors.Is(err, ErrInvalidResourceRequest) {
		t.Fatalf("oversized AM: %v", err)
	}
	// A foreign id with this RM's timestamp moves the id counter past it.
	foreign := AppID{ClusterTimestamp: c.clusterTS, ID: 50}
	if err := c.Submit(SubmitRequest{ID: foreign, Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	if next, _ := c.NewApplication(); next.ID != 51 {
		t.Fatalf("next id %v, want 51", next)
	}
}

func TestRestartForgetsRegistrations(t *testing.T) {
	c, _ := testCore(t, nil)
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	d.allocate(AllocateRequest{})
	before := c.epoch
	c.ForgetRegistrations()
	if c.epoch != before+1 {
		t.Fatalf("epoch %d, want %d", c.epoch, before+1)
	}
	if _, err := c.Allocate(d.at, AllocateRequest{ResponseID: d.next}); !errors.Is(err, ErrAMNotRegistered) {
		t.Fatalf("allocate after restart: %v", err)
	}
	if _, err := c.Register(d.at, RegisterRequest{}); err != nil {
		t.Fatalf("re-register: %v", err)
	}
}

func TestMaxAllocationCappedAfterWait(t *testing.T) {
	c, clk := testCore(t, func(cfg *Config) { cfg.NodeMemoryMB = 4096; cfg.MaxAllocationWait = config.Duration(10 * time.Second) })
	if _, m := c.NewApplication(); m.MemoryMB != 8192 {
		t.Fatalf("right after start: %v, want the configured 8192", m)
	}
	clk.Advance(11 * time.Second)
	if _, m := c.NewApplication(); m.MemoryMB != 4096 {
		t.Fatalf("after the wait: %v, want the largest node's 4096", m)
	}
	id, _ := c.NewApplication()
	if err := c.Submit(SubmitRequest{ID: id, AMResource: Resource{MemoryMB: 6000, VCores: 1}}); !errors.Is(err, ErrInvalidResourceRequest) {
		t.Fatalf("AM larger than any node: %v", err)
	}
}

func TestCompletedAppsAreForgottenBeyondTheLimit(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) { cfg.MaxCompletedApps = 2 })
	var ids []AppID
	for i := 0; i < 6; i++ {
		id := submit(t, c, func(r *SubmitRequest) { r.Unmanaged = true })
		ids = append(ids, id)
		if i < 5 {
			if _, err := c.Kill(id, "", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	got := c.Apps(AppFilter{})
	if len(got) != 3 || got[0].ID != ids[3] || got[1].ID != ids[4] || got[2].ID != ids[5] {
		t.Fatalf("remembered %v", got)
	}
	if _, err := c.AppReport(ids[0]); !errors.Is(err, ErrApplicationNotFound) {
		t.Fatalf("oldest finished app still known: %v", err)
	}
	if m := c.Metrics(); m.AppsKilled != 5 || m.AppsSubmitted != 6 {
		t.Fatalf("counters must survive forgetting: %+v", m)
	}
}

// TestMaxApplicationsRejects: beyond yarn.scheduler.capacity.maximum-applications
// (each queue its capacity's share) a submission succeeds and the
// application FAILS with the capacity scheduler's message; a slot frees
// when a live application ends. Live plus remembered applications stay
// bounded however many are submitted.
func TestMaxApplicationsRejects(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) {
		cfg.MaxApplications, cfg.MaxCompletedApps = 8, 4
		cfg.Queues = []QueueConfig{{Name: "default", Capacity: 50}, {Name: "other", Capacity: 50}}
	})
	var live []AppID
	for i := 0; i < 4; i++ {
		live = append(live, submit(t, c, nil))
	}
	id := submit(t, c, nil)
	rep, err := c.AppReport(id)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("org.apache.hadoop.security.AccessControlException: Queue root.default already has 4 applications, cannot accept submission of application: %s", id)
	if rep.State != AppFailed || rep.FinalStatus != FinalFailed || rep.Diagnostics != want {
		t.Fatalf("fifth submission to a queue of 4: %s %s %q", rep.State, rep.FinalStatus, rep.Diagnostics)
	}
	// The other queue has its own share.
	if rep, _ := c.AppReport(submit(t, c, func(r *SubmitRequest) { r.Queue = "other" })); rep.State != AppAccepted {
		t.Fatalf("submission to the other queue: %s", rep.State)
	}
	if _, err := c.Kill(live[0], "", ""); err != nil {
		t.Fatal(err)
	}
	if rep, _ := c.AppReport(submit(t, c, nil)); rep.State != AppAccepted {
		t.Fatalf("submission after a kill freed a slot: %s %q", rep.State, rep.Diagnostics)
	}
	for i := 0; i < 100; i++ {
		submit(t, c, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.apps) > 8+4 {
		t.Fatalf("holding %d applications after 100 more submissions, want at most 8 live + 4 completed", len(c.apps))
	}
}

// One attempt's blacklist must not stop another's same-sized ask.
func TestBlacklistDoesNotPoisonOthers(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) { cfg.Nodes = 2 })
	a := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	b := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	a.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(1, 1024)}, BlacklistAdd: []string{c.nodes[0].id.Host, c.nodes[1].id.Host}})
	b.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(1, 1024)}})
	c.tick()
	if n := len(a.allocate(AllocateRequest{}).Allocated); n != 0 {
		t.Fatalf("blacklisted attempt got %d containers", n)
	}
	if n := len(b.allocate(AllocateRequest{}).Allocated); n != 1 {
		t.Fatalf("other attempt got %d containers, want 1", n)
	}
	// Lifting the blacklist lets the first one through on the next pass.
	a.allocate(AllocateRequest{BlacklistRemove: []string{c.nodes[0].id.Host, c.nodes[1].id.Host}})
	c.tick()
	if n := len(a.allocate(AllocateRequest{}).Allocated); n != 1 {
		t.Fatalf("after removing the blacklist: %d containers", n)
	}
}

func TestNodeLoss(t *testing.T) {
	c, clk := testCore(t, func(cfg *Config) { cfg.Nodes = 2; cfg.SimAM.ContainerRuntime = config.Duration(time.Hour) })
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(4, 1024)}})
	c.tick()
	got := d.allocate(AllocateRequest{}).Allocated
	if len(got) != 4 {
		t.Fatalf("allocated %d", len(got))
	}
	m := submit(t, c, nil)
	runUntil(t, c, clk, 50*time.Millisecond, func() bool { return report(t, c, m).State == AppRunning })
	amHost := report(t, c, m).AMContainer.Node.Host

	if err := c.SetNodeLost(amHost, true); err != nil {
		t.Fatal(err)
	}
	resp := d.allocate(AllocateRequest{})
	var onLost int
	for _, ct := range got {
		if ct.Node.Host == amHost {
			onLost++
		}
	}
	if len(resp.Completed) != onLost || onLost == 0 {
		t.Fatalf("completed %d, want the %d containers on the lost node", len(resp.Completed), onLost)
	}
	for _, st := range resp.Completed {
		if st.ExitStatus != ExitAborted || st.Diagnostics != "Container released on a *lost* node" {
			t.Fatalf("lost container status %+v", st)
		}
	}
	if len(resp.UpdatedNodes) != 1 || resp.UpdatedNodes[0].State != "LOST" || resp.NumClusterNodes != 1 {
		t.Fatalf("updated nodes %+v, cluster nodes %d", resp.UpdatedNodes, resp.NumClusterNodes)
	}
	if again := d.allocate(AllocateRequest{}); len(again.UpdatedNodes) != 0 {
		t.Fatal("a node change is reported once")
	}
	if mt := c.Metrics(); mt.LostNodes != 1 || mt.ActiveNodes != 1 || mt.Total.MemoryMB != 8192 {
		t.Fatalf("metrics after loss %+v", mt)
	}
	// The managed app lost its AM: a second attempt runs on the other node.
	runUntil(t, c, clk, 50*time.Millisecond, func() bool {
		r := report(t, c, m)
		return r.CurrentAttempt.Attempt == 2 && r.State == AppRunning
	})
	if h := report(t, c, m).AMContainer.Node.Host; h == amHost {
		t.Fatal("AM placed on the lost node")
	}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{{Priority: 5, ResourceName: amHost, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}},
		{Priority: 5, ResourceName: AnyResource, NumContainers: 1, Capability: Resource{MemoryMB: 1024, VCores: 1}, RelaxLocality: false}}})
	c.tick()
	if n := len(d.allocate(AllocateRequest{}).Allocated); n != 0 {
		t.Fatal("placed on a lost node")
	}
	if err := c.SetNodeLost(amHost, false); err != nil {
		t.Fatal(err)
	}
	c.tick()
	resp = d.allocate(AllocateRequest{})
	if len(resp.Allocated) != 1 || len(resp.UpdatedNodes) != 1 || resp.UpdatedNodes[0].State != "RUNNING" {
		t.Fatalf("after recovery: %d allocated, updated %+v", len(resp.Allocated), resp.UpdatedNodes)
	}
	if err := c.SetNodeLost("nope", true); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("unknown node: %v", err)
	}
}

func TestKeepContainersAcrossAttempts(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) { cfg.MaxAppAttempts = 3 })
	// Managed apps run the built-in AM; drive an unmanaged one instead: fail
	// attempt 1 of a keep-containers app holding a worker, and check
	// attempt 2 inherits it.
	id := submit(t, c, func(r *SubmitRequest) { r.KeepContainers = true; r.Unmanaged = true })
	first := *report(t, c, id).CurrentAttempt
	if _, err := c.Register(first, RegisterRequest{}); err != nil {
		t.Fatal(err)
	}
	d := &amDriver{t: t, c: c, at: first}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(1, 1024)}})
	c.tick()
	worker := d.allocate(AllocateRequest{}).Allocated[0]
	// Unmanaged apps are not retried; flip the flag to model a managed AM
	// crash with keep-containers.
	c.mu.Lock()
	c.apps[id].unmanaged = false
	c.mu.Unlock()
	if err := c.FailAttempt(first, "crash"); err != nil {
		t.Fatal(err)
	}
	second := *report(t, c, id).CurrentAttempt
	if second.Attempt != 2 {
		t.Fatalf("attempt %v", second)
	}
	reg, err := c.Register(second, RegisterRequest{})
	if err != nil || len(reg.ContainersFromPrevious) != 1 || reg.ContainersFromPrevious[0].ID != worker.ID {
		t.Fatalf("previous containers %+v %v", reg.ContainersFromPrevious, err)
	}
	d2 := &amDriver{t: t, c: c, at: second}
	got := d2.allocate(AllocateRequest{Releases: []ContainerID{worker.ID}}).Completed
	got = append(got, d2.allocate(AllocateRequest{}).Completed...)
	if len(got) != 1 || got[0].ID != worker.ID {
		t.Fatalf("the inherited container's completion goes to the new AM: %+v", got)
	}
}

// TestClusterTimestampsUniqueInProcess: RMs built in the same millisecond
// must not share a cluster timestamp, or their application ids collide and
// the federation merges distinct applications (seen in `yarnfed dev`).
func TestClusterTimestampsUniqueInProcess(t *testing.T) {
	frozen := time.UnixMilli(1_700_000_000_000)
	seen := map[int64]bool{}
	for i := 0; i < 5; i++ {
		cfg := TestConfig()
		cfg.ClusterID = fmt.Sprintf("sc%d", i)
		cfg.Now = func() time.Time { return frozen }
		rm, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := rm.Config().ClusterTimestamp
		if seen[ts] {
			t.Fatalf("cluster timestamp %d handed out twice", ts)
		}
		seen[ts] = true
	}
	// An explicit timestamp is kept as configured.
	cfg := TestConfig()
	cfg.ClusterTimestamp = 42
	rm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := rm.Config().ClusterTimestamp; got != 42 {
		t.Fatalf("explicit cluster timestamp changed to %d", got)
	}
}

// TestUpdateNodeResourceOverCommit: shrinking a node below what runs on it
// keeps the containers (overCommitTimeout -1) and places nothing new there
// until it has room; growing it lets remembered sizes fit again.
func TestUpdateNodeResourceOverCommit(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) { cfg.Nodes = 1; cfg.SimAM.ContainerRuntime = config.Duration(time.Hour) })
	d := &amDriver{t: t, c: c, at: registered(t, c, nil)}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(4, 1024)}})
	c.tick()
	if got := d.allocate(AllocateRequest{}).Allocated; len(got) != 4 {
		t.Fatalf("allocated %d", len(got))
	}
	id := c.Nodes()[0].ID
	if err := c.UpdateNodeResource(map[NodeID]Resource{id: {MemoryMB: 2048, VCores: 2}}); err != nil {
		t.Fatal(err)
	}
	n := c.Nodes()[0]
	if n.Total != (Resource{MemoryMB: 2048, VCores: 2}) || n.NumContainers != 4 {
		t.Fatalf("after shrinking: %+v", n)
	}
	if resp := d.allocate(AllocateRequest{}); len(resp.Completed) != 0 || len(resp.UpdatedNodes) != 1 ||
		resp.UpdatedNodes[0].Total != n.Total {
		t.Fatalf("shrinking preempted %d containers or was not reported: updated %+v", len(resp.Completed), resp.UpdatedNodes)
	}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(1, 1024)}})
	c.tick()
	if got := d.allocate(AllocateRequest{}).Allocated; len(got) != 0 {
		t.Fatalf("placed %d containers on an over-committed node", len(got))
	}
	if err := c.UpdateNodeResource(map[NodeID]Resource{id: {MemoryMB: 16384, VCores: 16}}); err != nil {
		t.Fatal(err)
	}
	c.tick()
	if got := d.allocate(AllocateRequest{}).Allocated; len(got) != 1 {
		t.Fatalf("after growing: allocated %d, want 1", len(got))
	}
	if m := c.Metrics(); m.Total != (Resource{MemoryMB: 16384, VCores: 16}) {
		t.Fatalf("cluster total %v", m.Total)
	}
}

// TestUnmanagedKeepContainersAttemptRegistersAgain: Hadoop 3.4's
// ApplicationMasterService lets an unmanaged, keep-containers attempt
// register again (a federation proxy re-attaching a UAM for the next AM
// attempt) and hands back its live containers; any other attempt that
// registers twice is refused.
func TestUnmanagedKeepContainersAttemptRegistersAgain(t *testing.T) {
	c, _ := testCore(t, nil)
	id := submit(t, c, func(r *SubmitRequest) { r.KeepContainers = true; r.Unmanaged = true })
	at := *report(t, c, id).CurrentAttempt
	if _, err := c.Register(at, RegisterRequest{}); err != nil {
		t.Fatal(err)
	}
	d := &amDriver{t: t, c: c, at: at}
	d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(2, 1024)}})
	c.tick()
	got := d.allocate(AllocateRequest{}).Allocated
	if len(got) != 2 {
		t.Fatalf("allocated %+v", got)
	}
	reg, err := c.Register(at, RegisterRequest{})
	if err != nil {
		t.Fatalf("second register of an unmanaged keep-containers attempt: %v", err)
	}
	if len(reg.ContainersFromPrevious) != 2 || reg.ContainersFromPrevious[0].ID != got[0].ID && reg.ContainersFromPrevious[0].ID != got[1].ID {
		t.Fatalf("live containers handed back: %+v", reg.ContainersFromPrevious)
	}
	if len(reg.NMTokenNodes) == 0 || reg.User == "" || reg.Attempt != at {
		t.Fatalf("NM tokens for the containers' nodes: %+v", reg)
	}
	// The sequence restarts at 0: the old id is refused, 0 is served.
	if _, err := c.Allocate(at, AllocateRequest{ResponseID: d.next}); !errors.Is(err, ErrInvalidAMRequest) {
		t.Fatalf("old responseId %d after the re-register: %v", d.next, err)
	}
	if r, err := c.Allocate(at, AllocateRequest{ResponseID: 0}); err != nil || r.ResponseID != 1 {
		t.Fatalf("allocate from 0 after the re-register: %+v %v", r, err)
	}

	c, _ = testCore(t, func(cfg *Config) { cfg.SimAM.Off = true })
	for name, mutate := range map[string]func(*SubmitRequest){
		"unmanaged without keep-containers": func(r *SubmitRequest) { r.Unmanaged = true },
		"managed with keep-containers":      func(r *SubmitRequest) { r.KeepContainers = true },
	} {
		id := submit(t, c, mutate)
		c.tick() // places a managed AM's container
		at := *report(t, c, id).CurrentAttempt
		if _, err := c.Register(at, RegisterRequest{}); err != nil {
			t.Fatalf("%s: first register: %v", name, err)
		}
		if _, err := c.Register(at, RegisterRequest{}); !errors.Is(err, ErrInvalidAMRequest) {
			t.Fatalf("%s: second register: %v, want already registered", name, err)
		}
	}
}

// TestNMTokensOncePerNodePerAttempt: the RM's NM-token rule (Hadoop 3.4's
// NMTokenSecretManagerInRM and DefaultAMSProcessor). An attempt gets a
// node's token with the first container there and never again, also
// across a re-register of an unmanaged keep-containers attempt that has
// no live containers (the set is kept); a re-register that hands
// containers over forgets the set and mints tokens for their nodes only;
// a master-key roll and a node that goes down and comes back forget it
// too. A federation proxy depends on each of these.
func TestNMTokensOncePerNodePerAttempt(t *testing.T) {
	c, _ := testCore(t, func(cfg *Config) { cfg.Nodes = 2; cfg.SimAM.ContainerRuntime = config.Duration(time.Hour) })
	hostA, hostB := c.nodes[0].id.Host, c.nodes[1].id.Host
	at := registered(t, c, func(r *SubmitRequest) { r.KeepContainers = true })
	d := &amDriver{t: t, c: c, at: at}
	prio := int32(0)
	// on allocates one container on host and returns it with the hosts
	// whose tokens came with it.
	on := func(host string) (ContainerInfo, []string) {
		t.Helper()
		prio++
		res := Resource{MemoryMB: 512, VCores: 1}
		d.allocate(AllocateRequest{Asks: []ResourceRequest{
			{Priority: prio, ResourceName: host, NumContainers: 1, Capability: res, RelaxLocality: true},
			{Priority: prio, ResourceName: "/rack-0", NumContainers: 1, Capability: res, RelaxLocality: false},
			{Priority: prio, ResourceName: AnyResource, NumContainers: 1, Capability: res, RelaxLocality: false},
		}})
		c.tick()
		resp := d.allocate(AllocateRequest{})
		if len(resp.Allocated) != 1 || resp.Allocated[0].Node.Host != host {
			t.Fatalf("want one container on %s, got %+v", host, resp.Allocated)
		}
		var hosts []string
		for _, n := range resp.NMTokenNodes {
			hosts = append(hosts, n.Host)
		}
		return resp.Allocated[0], hosts
	}
	want := func(step string, got []string, hosts ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(hosts) {
			t.Fatalf("%s: NM tokens for %v, want %v", step, got, hosts)
		}
	}
	reRegister := func(step string, containers int, hosts ...string) {
		t.Helper()
		reg, err := c.Register(at, RegisterRequest{})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var got []string
		for _, n := range reg.NMTokenNodes {
			got = append(got, n.Host)
		}
		if len(reg.ContainersFromPrevious) != containers {
			t.Fatalf("%s: %d containers handed over, want %d", step, len(reg.ContainersFromPrevious), containers)
		}
		want(step+" (register)", got, hosts...)
		d.next = 0
	}
	release := func(ids ...ContainerID) {
		t.Helper()
		d.allocate(AllocateRequest{Releases: ids})
	}

	a1, got := on(hostA)
	want("first container on A", got, hostA)
	a2, got := on(hostA)
	want("second container on A", got)
	b1, got := on(hostB)
	want("first container on B", got, hostB)

	// No live container: the re-register hands nothing over and the node
	// set stays, so A and B never get a token again in this attempt.
	release(a1.ID, a2.ID, b1.ID)
	reRegister("re-register without live containers", 0)
	_, got = on(hostA)
	want("container on A after a re-register without live containers", got)
	b2, got := on(hostB)
	want("container on B after a re-register without live containers", got)

	// Live containers on A only: the set is forgotten and A's token minted
	// in the register answer; B's comes with its next container.
	release(b2.ID)
	reRegister("re-register with a live container on A", 1, hostA)
	_, got = on(hostA)
	want("container on A after the hand-over", got)
	_, got = on(hostB)
	want("container on B after the hand-over", got, hostB)

	// A master-key roll forgets every set.
	c.RollNMTokenKey()
	_, got = on(hostA)
	want("container on A after a key roll", got, hostA)

	_, got = on(hostB)
	want("container on B after a key roll", got, hostB)

	// A node that went down and came back is forgotten.
	if err := c.SetNodeLost(hostB, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetNodeLost(hostB, false); err != nil {
		t.Fatal(err)
	}
	_, got = on(hostB)
	want("container on B after it came back", got, hostB)
	_, got = on(hostA)
	want("container on A (not lost)", got)
}
