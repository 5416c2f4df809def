package gpg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// reapEnv is a federation of two simulated RMs (SC-1 and SC-2) in a fake
// store, with a fake UAM registry.
type reapEnv struct {
	st       *gpgtest.FakeStore
	uams     *gpgtest.FakeUAMRegistry
	rm1, rm2 *simrm.RM
}

// newReapEnv starts the RMs. With restartHome1, SC-1's RM is reached
// through a proxy that restarts it (without recovery) on its first live
// /apps listing: YARN-11387's partial answer.
func newReapEnv(t testing.TB, restartHome1 bool) *reapEnv {
	t.Helper()
	e := &reapEnv{st: gpgtest.NewFakeStore(nil), uams: gpgtest.NewFakeUAMRegistry()}
	rms := simrmtest.StartN(t, 2, nil)
	e.rm1, e.rm2 = rms[0], rms[1]
	web1 := e.rm1.Addrs().Web
	if restartHome1 {
		target, _ := url.Parse("http://" + web1)
		proxy := httputil.NewSingleHostReverseProxy(target)
		var (
			once  sync.Once
			mu    sync.Mutex
			lists int
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The round lists SC-1's unmanaged applications first (the
			// scan), then asks SC-1 as the home: restart before the second.
			if r.URL.Path == "/ws/v1/cluster/apps" {
				mu.Lock()
				lists++
				n := lists
				mu.Unlock()
				if n == 2 {
					once.Do(func() {
						if err := e.rm1.Restart(context.Background(), false); err != nil {
							t.Errorf("restart: %v", err)
						}
					})
				}
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		web1 = strings.TrimPrefix(srv.URL, "http://")
	}
	for i, web := range []string{web1, e.rm2.Addrs().Web} {
		sc := subCluster([]string{"SC-1", "SC-2"}[i], pb.SubClusterState_SC_RUNNING, "")
		sc.RmWebServiceAddress = web
		e.st.Register(sc)
	}
	return e
}

// newAppID asks rm for a new application id without submitting it.
func newAppID(t testing.TB, rm *simrm.RM) *yarnpb.ApplicationIdProto {
	t.Helper()
	c := ipcClient(t, rm)
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(context.Background(), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		t.Fatal(err)
	}
	return na.GetApplicationId()
}

func ipcClient(t testing.TB, rm *simrm.RM) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func appIDString(id *yarnpb.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}

func parseAppID(t testing.TB, s string) *yarnpb.ApplicationIdProto {
	t.Helper()
	parts := strings.Split(s, "_")
	ts, err1 := strconv.ParseInt(parts[1], 10, 64)
	n, err2 := strconv.ParseInt(parts[2], 10, 32)
	if len(parts) != 3 || err1 != nil || err2 != nil {
		t.Fatalf("bad application id %q", s)
	}
	return &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(ts), Id: proto.Int32(int32(n))}
}

// submitUAM submits an unmanaged application with the given id to rm, as
// an AMRMProxy launches a UAM of a federated application.
func submitUAM(t testing.TB, rm *simrm.RM, app string) {
	t.Helper()
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: parseAppID(t, app), ApplicationName: proto.String("UnmanagedAM"), Queue: proto.String("default"),
		UnmanagedAm: proto.Bool(true), KeepContainersAcrossApplicationAttempts: proto.Bool(true),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
	}}
	if err := ipcClient(t, rm).Call(context.Background(), "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
}

func appState(t testing.TB, rm *simrm.RM, app string) string {
	t.Helper()
	s, err := rmrest.NewClient(rm.Addrs().Web).GetAppState(context.Background(), app)
	if err != nil {
		t.Fatalf("state of %s: %v", app, err)
	}
	return s
}

func killApp(t testing.TB, rm *simrm.RM, app string) {
	t.Helper()
	if _, err := rmrest.NewClient(rm.Addrs().Web).KillApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
}

// spanning makes an application homed in SC-1 (unmanaged there, so it
// stays RUNNING until killed) with a UAM in SC-2 and its registry row; the
// home row was written an hour ago.
func (e *reapEnv) spanning(t testing.TB) string {
	t.Helper()
	return e.spanningFrom(t, "SC-1")
}

// spanningFrom is spanning with the home in SC-1 or SC-2 (the UAM in the
// other); it returns the application and the UAM's RM.
func (e *reapEnv) spanningFrom(t testing.TB, home string) string {
	t.Helper()
	homeRM, uamRM, uamSC := e.rm1, e.rm2, "SC-2"
	if home == "SC-2" {
		homeRM, uamRM, uamSC = e.rm2, e.rm1, "SC-1"
	}
	app := submit(t, homeRM, true)
	submitUAM(t, uamRM, app)
	e.st.AddHome(app, home, time.Now().Add(-time.Hour))
	e.uams.Put(app, uamSC)
	return app
}

// orphanUnknown makes a UAM in SC-2 of an application homed in SC-1 that
// SC-1's RM never heard of (its id was taken, never submitted).
func (e *reapEnv) orphanUnknown(t testing.TB) string {
	t.Helper()
	app := appIDString(newAppID(t, e.rm1))
	submitUAM(t, e.rm2, app)
	e.st.AddHome(app, "SC-1", time.Now().Add(-time.Hour))
	e.uams.Put(app, "SC-2")
	return app
}

func live(s string) bool { return slices.Contains(liveAppStates, s) }

// later is a GPG clock an hour ahead: every UAM and home row is past the
// grace, and every RM has been up longer than min_rm_uptime, so only the
// rule under test can keep a UAM.
func later() time.Time { return time.Now().Add(time.Hour) }

func TestUAMReaper(t *testing.T) {
	type want struct {
		killed  bool   // the UAM in SC-2 ends KILLED
		noCand  bool   // the UAM is no candidate (no home row)
		reason  string // reaped metric label, when killed
		kept    string // kept metric label, when not
		deletes int    // DeleteUAM calls
	}
	cases := []struct {
		name    string
		restart bool // SC-1's RM restarts during the home's listing
		now     func() time.Time
		cfg     func(*UAMReaperConfig)
		// setup builds the scenario and returns the UAM's application.
		setup func(t *testing.T, e *reapEnv) string
		want  want
	}{
		{name: "home KILLED: the UAM is killed and its row deleted in one round",
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				killApp(t, e.rm1, app)
				return app
			},
			want: want{killed: true, reason: reapHomeFinal, deletes: 1}},
		{name: "home FINISHED (a managed application that ended): the UAM is killed",
			setup: func(t *testing.T, e *reapEnv) string {
				app := submit(t, e.rm1, false)
				testpoll.Poll(t, "the home application to finish", func() bool { return appState(t, e.rm1, app) == "FINISHED" })
				submitUAM(t, e.rm2, app)
				e.st.AddHome(app, "SC-1", time.Now())
				e.uams.Put(app, "SC-2")
				return app
			},
			want: want{killed: true, reason: reapHomeFinal, deletes: 1}},
		{name: "a secondary RM restarted (with recovery) after the application ended: its returning UAM is killed at once",
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				killApp(t, e.rm1, app)
				if err := e.rm2.Restart(context.Background(), true); err != nil {
					t.Fatal(err)
				}
				if st := appState(t, e.rm2, app); !live(st) {
					t.Fatalf("the UAM did not come back with its RM: %s", st)
				}
				return app
			},
			want: want{killed: true, reason: reapHomeFinal, deletes: 1}},
		{name: "home RUNNING: the UAM is kept", now: later,
			setup: func(t *testing.T, e *reapEnv) string { return e.spanning(t) },
			want:  want{kept: keepHomeLive}},
		{name: "unknown to a home that answered completely, past the grace: the UAM is killed", now: later,
			setup: func(t *testing.T, e *reapEnv) string { return e.orphanUnknown(t) },
			want:  want{killed: true, reason: reapHomeUnknown, deletes: 1}},
		{name: "unknown to its home but started within the grace: kept",
			cfg:   func(c *UAMReaperConfig) { c.MinRMUptime = 0 },
			setup: func(t *testing.T, e *reapEnv) string { return e.orphanUnknown(t) },
			want:  want{kept: keepYoung}},
		{name: "unknown to its home but the home row is younger than the grace: kept",
			now: func() time.Time { return time.Now().Add(30 * time.Minute) },
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.orphanUnknown(t)
				e.st.AddHome(app, "SC-1", time.Now().Add(25*time.Minute))
				return app
			},
			want: want{kept: keepYoung}},
		{name: "YARN-11387: the home RM down keeps the UAM", now: later,
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				killApp(t, e.rm1, app)
				_ = e.rm1.Crash()
				return app
			},
			want: want{kept: keepHomeUnanswered}},
		{name: "YARN-11387: the home RM restarting during the round (partial answer) keeps the UAM", now: later, restart: true,
			setup: func(t *testing.T, e *reapEnv) string { return e.spanning(t) },
			want:  want{kept: keepHomeUnanswered}},
		{name: "a home RM that may still be recovering: unknown is not trusted",
			now: func() time.Time { return time.Now().Add(time.Minute) },
			cfg: func(c *UAMReaperConfig) { c.Grace = 0 },
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				if err := e.rm1.Restart(context.Background(), false); err != nil {
					t.Fatal(err)
				}
				return app
			},
			want: want{kept: keepHomeRecovering}},
		{name: "a standby home RM keeps the UAM", now: later,
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.orphanUnknown(t)
				e.rm1.TransitionToStandby()
				return app
			},
			want: want{kept: keepHomeUnanswered}},
		{name: "unknown to a home sub-cluster that is not RUNNING: kept", now: later,
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.orphanUnknown(t)
				sc := e.st.SubCluster("SC-1")
				sc.State = pb.SubClusterState_SC_UNHEALTHY
				e.st.Register(sc)
				return app
			},
			want: want{kept: keepHomeNotRunning}},
		{name: "a home sub-cluster that left the federation is not asked: kept", now: later,
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				killApp(t, e.rm1, app)
				sc := e.st.SubCluster("SC-1")
				sc.State = pb.SubClusterState_SC_DECOMMISSIONED
				e.st.Register(sc)
				return app
			},
			want: want{kept: keepHomeUnanswered}},
		{name: "no home row (not a federated application): kept", now: later,
			setup: func(t *testing.T, e *reapEnv) string {
				app := appIDString(newAppID(t, e.rm1))
				submitUAM(t, e.rm2, app)
				return app
			},
			want: want{kept: keepNoHome, noCand: true}},
		{name: "dry run kills and deletes nothing",
			cfg: func(c *UAMReaperConfig) { c.DryRun = true },
			setup: func(t *testing.T, e *reapEnv) string {
				app := e.spanning(t)
				killApp(t, e.rm1, app)
				return app
			},
			want: want{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newReapEnv(t, tc.restart)
			app := tc.setup(t, e)
			g := newTestGPG(t, e.st, nil, tc.now, func(c *Config) {
				c.UAMReaper.Enabled = true
				c.UAMReaper.RMTimeout = Duration(5 * time.Second)
				c.UAMs = e.uams
				if tc.cfg != nil {
					tc.cfg(&c.UAMReaper)
				}
			})
			acquire(t, g)
			res, err := g.reapUAMs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("round: candidates=%d reaped=%v kept=%v", res.Candidates, res.Reaped, res.Kept)
			if wantCand := map[bool]int{false: 1, true: 0}[tc.want.noCand]; res.Candidates != wantCand {
				t.Errorf("candidates %d, want 1 (the UAM in SC-2; the home's own copy is no candidate)", res.Candidates)
			}
			st := appState(t, e.rm2, app)
			if got := st == "KILLED"; got != tc.want.killed {
				t.Fatalf("UAM state %s, want killed=%v", st, tc.want.killed)
			}
			if !tc.want.killed && !live(st) {
				t.Fatalf("UAM state %s, want it still live", st)
			}
			if got := len(e.uams.Deletes()); got != tc.want.deletes {
				t.Fatalf("DeleteUAM calls %v, want %d", e.uams.Deletes(), tc.want.deletes)
			}
			if tc.want.deletes > 0 && e.uams.Has(app, "SC-2") {
				t.Fatalf("the UAM's registry row is still there: %v", e.uams.Rows())
			}
			if tc.want.killed {
				if n := metricValue(t, g.metrics.uamsReaped.WithLabelValues(tc.want.reason)); n != 1 {
					t.Fatalf("reaped{%s} = %v, want 1", tc.want.reason, n)
				}
			}
			if tc.want.kept != "" {
				if n := metricValue(t, g.metrics.uamsKept.WithLabelValues(tc.want.kept)); n != 1 {
					t.Fatalf("kept{%s} = %v, want 1 (kept: %v)", tc.want.kept, n, res.Kept)
				}
			}
			if g.cfg.UAMReaper.DryRun {
				if len(res.Reaped) != 1 || metricValue(t, g.metrics.uamsDryRun.WithLabelValues(reapHomeFinal)) != 1 {
					t.Fatalf("dry run: would reap %v, want the UAM once", res.Reaped)
				}
			}
			if tc.want.kept == keepHomeLive {
				if st := appState(t, e.rm1, app); !live(st) {
					t.Fatalf("the home application itself was touched: %s", st)
				}
			}
		})
	}
}

// TestUAMReaperCap: at most max_per_round UAMs are killed per round, the
// longest-running first; the rest go in the next round. The three are
// spread over both homes, so the cap holds across homes (not only through
// the per-home bound on look-ups).
func TestUAMReaperCap(t *testing.T) {
	e := newReapEnv(t, false)
	var apps []string
	uamRM := map[string]*simrm.RM{}
	for _, home := range []string{"SC-1", "SC-2", "SC-1"} {
		app := e.spanningFrom(t, home)
		homeRM, other := e.rm1, e.rm2
		if home == "SC-2" {
			homeRM, other = e.rm2, e.rm1
		}
		killApp(t, homeRM, app)
		apps, uamRM[app] = append(apps, app), other
		// Distinct start times (simrm stamps milliseconds), so "oldest
		// first" has one answer.
		ms := time.Now().UnixMilli()
		testpoll.Poll(t, "the next millisecond", func() bool { return time.Now().UnixMilli() > ms })
	}
	g := newTestGPG(t, e.st, nil, nil, func(c *Config) {
		c.UAMReaper.Enabled, c.UAMReaper.MaxPerRound, c.UAMs = true, 2, e.uams
	})
	acquire(t, g)
	states := func() []string {
		var out []string
		for _, a := range apps {
			out = append(out, appState(t, uamRM[a], a))
		}
		return out
	}
	res, err := g.reapUAMs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s := states(); s[0] != "KILLED" || s[1] != "KILLED" || !live(s[2]) {
		t.Fatalf("after round 1: %v, want the two oldest killed, the third live", s)
	}
	if len(res.Reaped) != 2 || res.Kept[keepCapped] != 1 {
		t.Fatalf("round 1 reaped %v kept %v", res.Reaped, res.Kept)
	}
	if _, err := g.reapUAMs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := states(); s[2] != "KILLED" {
		t.Fatalf("after round 2: %v, want all killed", s)
	}
	if got := len(e.uams.Rows()); got != 0 {
		t.Fatalf("registry rows left: %v", e.uams.Rows())
	}
}

// TestUAMReaperStandby: a GPG that does not hold the lease kills nothing.
func TestUAMReaperStandby(t *testing.T) {
	e := newReapEnv(t, false)
	app := e.spanning(t)
	killApp(t, e.rm1, app)
	other := newTestGPG(t, e.st, nil, nil, func(c *Config) { c.ID = "the-other-gpg" })
	acquire(t, other)
	g := newTestGPG(t, e.st, nil, nil, func(c *Config) { c.UAMReaper.Enabled, c.UAMs = true, e.uams })
	g.lease.tryOnce(context.Background())
	if g.Holding() {
		t.Fatal("both GPGs hold the lease")
	}
	g.ReapOnce(context.Background())
	if st := appState(t, e.rm2, app); !live(st) || len(e.uams.Deletes()) != 0 {
		t.Fatalf("a standby GPG acted: UAM %s, deletes %v", st, e.uams.Deletes())
	}
	if n := metricValue(t, g.metrics.uamRounds.WithLabelValues("standby")); n != 1 {
		t.Fatalf("standby rounds %v", n)
	}
	// A round already under way when the lease is lost: every kill checks.
	if _, err := g.reapUAMs(context.Background()); !errors.Is(err, errNotLeader) {
		t.Fatalf("a round without the lease: %v, want errNotLeader", err)
	}
	if st := appState(t, e.rm2, app); !live(st) || len(e.uams.Deletes()) != 0 {
		t.Fatalf("a GPG without the lease killed: UAM %s, deletes %v", st, e.uams.Deletes())
	}
}

// TestUAMReaperDeleteRetried: a registry delete that fails after the kill
// is retried in the next round (the killed UAM is no longer on any RM, so
// only the retry can remove its row).
func TestUAMReaperDeleteRetried(t *testing.T) {
	e := newReapEnv(t, false)
	app := e.spanning(t)
	killApp(t, e.rm1, app)
	errDown := errors.New("fake: store unavailable")
	var mu sync.Mutex
	failing := true
	e.uams.Fail = func(string, string) error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errDown
		}
		return nil
	}
	g := newTestGPG(t, e.st, nil, nil, func(c *Config) { c.UAMReaper.Enabled, c.UAMs = true, e.uams })
	acquire(t, g)
	if _, err := g.reapUAMs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := appState(t, e.rm2, app); st != "KILLED" || !e.uams.Has(app, "SC-2") {
		t.Fatalf("after round 1: UAM %s, row kept %v", st, e.uams.Has(app, "SC-2"))
	}
	if n := metricValue(t, g.metrics.uamErrors.WithLabelValues("delete_uam")); n != 1 {
		t.Fatalf("delete_uam errors %v", n)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	res, err := g.reapUAMs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e.uams.Has(app, "SC-2") || res.Candidates != 0 {
		t.Fatalf("after round 2: row %v, candidates %d", e.uams.Rows(), res.Candidates)
	}
}

// TestUAMReaperConfig: the reaper needs a registry it can delete from.
func TestUAMReaperConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Store = gpgtest.NewFakeStore(nil) // no DeleteUAM
	if cfg.UAMReaper.Enabled {
		t.Fatal("the UAM reaper is on by default")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cfg.UAMReaper.Enabled = true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "uam_reaper") {
		t.Fatalf("enabled without a registry: %v", err)
	}
	cfg.UAMs = gpgtest.NewFakeUAMRegistry()
	cfg.UAMReaper.MaxPerRound = 0
	cfg.UAMReaper.Interval = 0
	err := cfg.Validate()
	for _, key := range []string{"uam_reaper.max_per_round", "uam_reaper.interval"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Fatalf("want an error naming %s, got %v", key, err)
		}
	}
}

// metricValue reads one counter or gauge.
func metricValue(t testing.TB, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if c := out.GetCounter(); c != nil {
		return c.GetValue()
	}
	return out.GetGauge().GetValue()
}

// BenchmarkUAMReapLatency measures the reaping latency with the default
// uam_reaper.interval and the role's own loop (Run): from the kill of a
// spanning application's home to its UAM in the other sub-cluster being
// KILLED. Each sample first waits a random part of the interval, so the
// home ends at a random phase of the reaper's ticker.
//
//	go test -run '^$' -bench UAMReapLatency -benchtime 8x ./gpg/
func BenchmarkUAMReapLatency(b *testing.B) {
	e := newReapEnv(b, false)
	g := newTestGPG(b, e.st, nil, nil, func(c *Config) {
		c.UAMReaper.Enabled, c.UAMs = true, e.uams
		c.Cleaner.Enabled, c.Generator.Enabled, c.Liveness.Enabled = false, false, false
	})
	interval := g.cfg.UAMReaper.Interval.D()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	testpoll.Poll(b, "the lease", g.Holding)
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		app := e.spanning(b)
		time.Sleep(rand.N(interval)) // a random phase of the ticker; not an assertion
		start := time.Now()
		killApp(b, e.rm1, app)
		deadline := start.Add(2*interval + 10*time.Second)
		for appState(b, e.rm2, app) != "KILLED" {
			if time.Now().After(deadline) {
				b.Fatalf("UAM of %s not reaped within %v", app, 2*interval)
			}
			time.Sleep(10 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
		b.Logf("home killed -> UAM killed: %v", lat[len(lat)-1].Round(time.Millisecond))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(lat))/1000, "mean-s")
	b.ReportMetric(lat[len(lat)/2].Seconds(), "median-s")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "max-s")
	b.ReportMetric(0, "ns/op")
}

// TestUAMReaperKillAnswers: the RM's answer to the kill decides whether the
// registry row goes. NotFoundException (the UAM is gone already, e.g. its
// RM restarted without recovery) counts as done; any other failure,
// including a 404 that is not the RM's own (a proxy, a wrong address),
// keeps the row and retries next round.
func TestUAMReaperKillAnswers(t *testing.T) {
	cases := []struct {
		name     string
		answer   func(w http.ResponseWriter)
		wantGone bool
	}{
		{"the RM no longer knows the application: done", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"RemoteException":{"exception":"NotFoundException","message":"app not found","javaClassName":%q}}`, rmrest.ClassNotFound)
		}, true},
		{"a 404 that is not the RM's: failed", func(w http.ResponseWriter) { http.NotFound(w, nil) }, false},
		{"the RM refuses (403): failed", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"RemoteException":{"exception":"AuthorizationException","message":"no","javaClassName":"org.apache.hadoop.security.authorize.AuthorizationException"}}`)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newReapEnv(t, false)
			app := e.spanning(t)
			killApp(t, e.rm1, app)
			// SC-2's REST API behind a proxy that answers the kill itself.
			target, _ := url.Parse("http://" + e.rm2.Addrs().Web)
			proxy := httputil.NewSingleHostReverseProxy(target)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut {
					tc.answer(w)
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			sc := e.st.SubCluster("SC-2")
			sc.RmWebServiceAddress = strings.TrimPrefix(srv.URL, "http://")
			e.st.Register(sc)
			g := newTestGPG(t, e.st, nil, nil, func(c *Config) { c.UAMReaper.Enabled, c.UAMs = true, e.uams })
			acquire(t, g)
			res, err := g.reapUAMs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if gone := !e.uams.Has(app, "SC-2"); gone != tc.wantGone {
				t.Fatalf("row deleted %v, want %v (reaped %v kept %v)", gone, tc.wantGone, res.Reaped, res.Kept)
			}
			if !tc.wantGone && (res.Kept[keepKillFailed] != 1 || metricValue(t, g.metrics.uamErrors.WithLabelValues("kill")) != 1) {
				t.Fatalf("a failed kill: kept %v", res.Kept)
			}
		})
	}
}

// TestUAMReaperHomeForeign404: only the RM's own NotFoundException means
// "the home does not know the application"; a plain 404 (a proxy or a web
// server that is not the RM) is a failed answer and keeps the UAM.
func TestUAMReaperHomeForeign404(t *testing.T) {
	e := newReapEnv(t, false)
	app := e.orphanUnknown(t)
	target, _ := url.Parse("http://" + e.rm1.Addrs().Web)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/ws/v1/cluster/apps/application_") {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	sc := e.st.SubCluster("SC-1")
	sc.RmWebServiceAddress = strings.TrimPrefix(srv.URL, "http://")
	e.st.Register(sc)
	g := newTestGPG(t, e.st, nil, later, func(c *Config) { c.UAMReaper.Enabled, c.UAMs = true, e.uams })
	acquire(t, g)
	res, err := g.reapUAMs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st := appState(t, e.rm2, app); !live(st) || res.Kept[keepHomeUnanswered] != 1 {
		t.Fatalf("UAM %s, reaped %v kept %v; want it kept as home_unanswered", st, res.Reaped, res.Kept)
	}
}
