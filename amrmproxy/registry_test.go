package amrmproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/state"
	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	storepb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// fakeUAMRegistry is an in-memory UAM registry with the semantics of
// UAMAPI.md (upsert by application and sub-cluster, delete of one row or
// all of an application); the real one is the state store's. failPut
// makes every PutUAM fail.
type fakeUAMRegistry struct {
	mu      sync.Mutex
	rows    map[[2]string]*storepb.UAMRecord
	failPut error
	failGet int // fail this many GetUAMs calls
	puts    int // PutUAM calls that wrote a row
}

func newFakeUAMRegistry() *fakeUAMRegistry {
	return &fakeUAMRegistry{rows: map[[2]string]*storepb.UAMRecord{}}
}

func (r *fakeUAMRegistry) setFailPut(err error) {
	r.mu.Lock()
	r.failPut = err
	r.mu.Unlock()
}

func (r *fakeUAMRegistry) PutUAM(_ context.Context, rec *storepb.UAMRecord) (*storepb.UAMRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failPut != nil {
		return nil, r.failPut
	}
	c := proto.Clone(rec).(*storepb.UAMRecord)
	k := [2]string{rec.GetApplicationId(), rec.GetSubClusterId()}
	now := time.Now().UnixMilli()
	c.CreateTimeMs, c.UpdateTimeMs = now, now
	if old := r.rows[k]; old != nil {
		c.CreateTimeMs = old.CreateTimeMs
	}
	r.rows[k] = c
	r.puts++
	return proto.Clone(c).(*storepb.UAMRecord), nil
}

func (r *fakeUAMRegistry) GetUAMs(_ context.Context, appID string, _ ...client.ReadOption) ([]*storepb.UAMRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failGet > 0 {
		r.failGet--
		return nil, errors.New("fake: store unavailable")
	}
	var out []*storepb.UAMRecord
	for k, v := range r.rows {
		if k[0] == appID {
			out = append(out, proto.Clone(v).(*storepb.UAMRecord))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetSubClusterId() < out[j].GetSubClusterId() })
	return out, nil
}

func (r *fakeUAMRegistry) ListUAMs(_ context.Context, sc string, limit int, _ ...client.ReadOption) ([]*storepb.UAMRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*storepb.UAMRecord
	for k, v := range r.rows {
		if sc == "" || k[1] == sc {
			out = append(out, proto.Clone(v).(*storepb.UAMRecord))
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (r *fakeUAMRegistry) DeleteUAM(_ context.Context, appID, sc string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k := range r.rows {
		if k[0] == appID && (sc == "" || k[1] == sc) {
			delete(r.rows, k)
			n++
		}
	}
	return n, nil
}

func (r *fakeUAMRegistry) putCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.puts
}

func (r *fakeUAMRegistry) row(appID, sc string) *storepb.UAMRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.rows[[2]string{appID, sc}]; v != nil {
		return proto.Clone(v).(*storepb.UAMRecord)
	}
	return nil
}

func appKey(app *yarnpb.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", app.GetClusterTimestamp(), app.GetId())
}

func attemptOf(app *yarnpb.ApplicationIdProto, n int32) AttemptID {
	return AttemptID{ClusterTimestamp: app.GetClusterTimestamp(), App: app.GetId(), Attempt: n}
}

// submitManaged submits a managed application (max 2 attempts) to the
// home, whose RM runs no built-in AM for it (SimAM.Off): the test is its
// AM. The submission context is stored beside the home, as the router does.
func (f *fed) submitManaged(user string, keep bool) *yarnpb.ApplicationIdProto {
	f.t.Helper()
	c, id := f.newAppAtHome(user)
	defer c.Close()
	ctx := context.Background()
	asc := &yarnpb.ApplicationSubmissionContextProto{ApplicationId: id, ApplicationName: proto.String("test-am"),
		Queue: proto.String("default"), AmContainerSpec: &yarnpb.ContainerLaunchContextProto{},
		Resource:       &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		MaxAppAttempts: proto.Int32(2), KeepContainersAcrossApplicationAttempts: proto.Bool(keep)}
	if err := c.Call(ctx, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		f.t.Fatal(err)
	}
	f.store.mu.Lock()
	if f.store.submissions == nil {
		f.store.submissions = map[string]*yarnpb.ApplicationSubmissionContextProto{}
	}
	f.store.submissions[appKey(id)] = asc
	f.store.mu.Unlock()
	return id
}

// reattachFed is the federation the attempt-2 tests start from: two
// simulated RMs, SC-1 the home running no AM of its own (the test is the
// AM), a short secondary wait and silent-AM check, and a fake UAM registry
// when withRegistry (else reg is nil and the proxies keep UAM state alone).
// rmMutate, when not nil, changes each RM's config further.
func reattachFed(t *testing.T, withRegistry bool, rmMutate func(id string, c *simrm.Config)) (f *fed, reg *fakeUAMRegistry) {
	t.Helper()
	if withRegistry {
		reg = newFakeUAMRegistry()
	}
	f = newFedRMs(t, 2, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(100 * time.Millisecond)
		c.SilentAM = Duration(200 * time.Millisecond)
	}, func(id string, c *simrm.Config) {
		c.SimAM.Off = id == "SC-1"
		if rmMutate != nil {
			rmMutate(id, c)
		}
	}, reg)
	return f, reg
}

// attemptOneOnSC2 submits a managed application (keep: keep-containers
// across attempts), registers attempt 1's AM (mapReduce: one that takes NM
// tokens from allocate answers only) and asks for two containers until both
// run on SC-2, behind a UAM.
func (f *fed) attemptOneOnSC2(keep, mapReduce bool) (*yarnpb.ApplicationIdProto, *testAM) {
	f.t.Helper()
	app := f.submitManaged("alice", keep)
	am1 := f.newAM(f.amToken(app, 1))
	am1.mapReduce = mapReduce
	am1.mustRegister()
	am1.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
	am1.until("two containers on SC-2", func() bool { return f.bySC(am1)["SC-2"] == 2 })
	return app, am1
}

// failAttemptOne ends app's attempt 1 at the home RM as a killed AM
// container would; the RM starts attempt 2.
func (f *fed) failAttemptOne(app *yarnpb.ApplicationIdProto) {
	f.t.Helper()
	if err := f.rms["SC-1"].FailAttempt(simrm.AttemptID{App: simrm.AppID{ClusterTimestamp: app.GetClusterTimestamp(), ID: app.GetId()}, Attempt: 1}, "AM container killed"); err != nil {
		f.t.Fatal(err)
	}
}

// amToken waits until attempt n of app has its AM container and returns
// the attempt's AMRMToken (what the AM finds in its credentials).
func (f *fed) amToken(app *yarnpb.ApplicationIdProto, n int32) *commonpb.TokenProto {
	f.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		id, tok, err := f.rms["SC-1"].AMRMToken(simrm.AppID{ClusterTimestamp: app.GetClusterTimestamp(), ID: app.GetId()})
		if err == nil && id.Attempt == n && strings.Contains(f.rmApp("SC-1", app).GetDiagnostics(), "AM container is launched") {
			f.secrets.add(tok)
			return tok
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("attempt %d of %v never got its AM container: %v %v", n, app, id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// poll waits for cond (15 s at most).
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *Proxy) attemptCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.attempts)
}

func finalApp(r *yarnpb.ApplicationReportProto) bool {
	switch r.GetYarnApplicationState() {
	case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

// AM attempt 2, on another proxy or the same one, re-attaches the UAM of
// attempt 1: with keep-containers it hands the AM attempt 1's live SC-2
// containers (and NM tokens for their nodes) in the register response and
// routes their releases to SC-2; without, those containers are released
// on SC-2 before the AM gets its answer and the UAM then serves attempt 2.
// The registry row moves to the new proxy and attempt; at the end nothing
// is left on any RM or in the registry.
func TestAttemptTwoReattachesTheUAMs(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		keep, sameProxy, registry bool
		failGet                   int // registry reads that fail at attempt 2's register
	}{
		{"keep-containers, another proxy", true, false, true, 0},
		{"keep-containers, another proxy, registry read fails once", true, false, true, 1},
		{"keep-containers, the same proxy", true, true, true, 0},
		{"keep-containers, the same proxy, no registry", true, true, false, 0},
		{"no keep-containers, another proxy", false, false, true, 0},
		{"no keep-containers, the same proxy", false, true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, reg := reattachFed(t, tc.registry, nil)
			app, am1 := f.attemptOneOnSC2(tc.keep, false)
			var sc2 []*yarnpb.ContainerProto
			for _, c := range am1.got {
				if f.owner(c.GetId()) == "SC-2" {
					sc2 = append(sc2, c)
				}
			}
			if reg != nil {
				row := reg.row(appKey(app), "SC-2")
				if row == nil || row.GetProxy() != f.proxy.proxyID || row.GetAmAttemptId() != attemptOf(app, 1).String() || len(row.GetAmrmToken()) == 0 ||
					!row.GetRegistered() || row.GetUamAttemptId() != attemptOf(app, 1).String() || row.GetUser() != "alice" || row.GetHomeSubClusterId() != "SC-1" {
					t.Fatalf("registry row of the UAM: %v", row)
				}
			}

			// The AM process dies; the RM starts attempt 2.
			failedAt := time.Now()
			f.failAttemptOne(app)
			tok2 := f.amToken(app, 2)
			if !tc.registry {
				// Only the superseded attempt in memory can hand its UAMs
				// over: several silent checks pass and must keep it.
				poll(t, "attempt 1 checked at its home after attempt 2 started", func() bool {
					f.proxy.mu.Lock()
					defer f.proxy.mu.Unlock()
					for _, a := range f.proxy.attempts {
						return a.lastCheck.Load() > failedAt.UnixNano() && !a.checking.Load()
					}
					t.Fatal("attempt 1 was dropped: without a registry only it holds the UAM tokens")
					return false
				})
			}
			p2 := f.proxy
			if !tc.sameProxy {
				p2 = f.secondProxy()
			}
			am2 := f.newAMAt(p2, tok2)
			if tc.failGet > 0 {
				reg.mu.Lock()
				reg.failGet = tc.failGet
				reg.mu.Unlock()
			}
			// A register whose registry read fails is answered
			// RetriableException; the test AM's client retries it as
			// AMRMClient's RM proxy does, and the retry finds the home
			// registration kept.
			resp := am2.mustRegister()
			if got := counterValue(p2.metrics.registryErrors.WithLabelValues("get")); got != float64(tc.failGet) {
				t.Fatalf("registry_errors_total{op=get} = %v, want %d", got, tc.failGet)
			}
			prev := map[int64]*yarnpb.ContainerProto{}
			for _, c := range resp.GetContainersFromPreviousAttempts() {
				prev[c.GetId().GetId()] = c
			}
			if tc.keep {
				hosts := map[string]bool{}
				for _, t := range resp.GetNmTokensFromPreviousAttempts() {
					hosts[t.GetNodeId().GetHost()] = true
				}
				for _, c := range sc2 {
					if prev[c.GetId().GetId()] == nil {
						t.Fatalf("attempt 1's SC-2 container %v not handed to attempt 2 (got %v)", c.GetId(), resp.GetContainersFromPreviousAttempts())
					}
					if !hosts[c.GetNodeId().GetHost()] {
						t.Fatalf("no NM token for SC-2 node %s", c.GetNodeId().GetHost())
					}
					am2.got[keyOf(c.GetId())] = c
				}
				if finalApp(f.rmApp("SC-2", app)) {
					t.Fatal("the UAM ended although attempt 2 keeps its containers")
				}
				// The handed-over containers belong to SC-2 for attempt 2.
				am2.heartbeat(nil, []*yarnpb.ContainerIdProto{sc2[0].GetId()})
				poll(t, "the released SC-2 container done on SC-2", func() bool { return f.rmContainerDone(t, "SC-2", app, sc2[0].GetId()) })
				if f.rmContainerDone(t, "SC-2", app, sc2[1].GetId()) {
					t.Fatal("a kept container was released")
				}
			} else {
				for _, c := range sc2 {
					if prev[c.GetId().GetId()] != nil {
						t.Fatalf("without keep-containers attempt 1's container %v reached attempt 2", c.GetId())
					}
					// Its node's NM token did: the RM minted it for attempt 1's
					// UAM on the re-register and will not send it again.
					if !am2.nmTokens[c.GetNodeId().GetHost()] {
						t.Fatalf("no NM token for SC-2 node %s in attempt 2's register answer (the RM will not send it again)", c.GetNodeId().GetHost())
					}
					// Released before the register answer, not after.
					if !f.rmContainerDone(t, "SC-2", app, c.GetId()) {
						t.Fatalf("attempt 1's SC-2 container %v still runs when attempt 2 is answered", c.GetId())
					}
				}
				// Attempt 2 spans again through the same UAM, and can start
				// what it gets there: it holds an NM token for every SC-2
				// node (the RM sends none for nodes it counts attempt 1's
				// UAM as holding already).
				am2.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
				am2.until("a new SC-2 container", func() bool { return f.bySC(am2)["SC-2"] >= 1 })
				for _, c := range am2.got {
					if !am2.nmTokens[c.GetNodeId().GetHost()] {
						t.Fatalf("attempt 2 got container %v on %s without an NM token for that node", c.GetId(), c.GetNodeId().GetHost())
					}
				}
				for _, c := range sc2 {
					if am2.completed[keyOf(c.GetId())] != nil {
						t.Fatalf("attempt 2 heard of attempt 1's released container %v", c.GetId())
					}
				}
			}
			if reg != nil {
				row := reg.row(appKey(app), "SC-2")
				if row.GetProxy() != p2.proxyID || row.GetAmAttemptId() != attemptOf(app, 2).String() || row.GetUamAttemptId() != attemptOf(app, 1).String() {
					t.Fatalf("registry row after the re-attach: %v", row)
				}
			}
			if r, err := am2.finish(); err != nil || !r.GetIsUnregistered() {
				t.Fatalf("finish: %v %v", r, err)
			}
			if st := f.rmApp("SC-2", app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
				t.Fatalf("the UAM is %s after attempt 2 finished", st)
			}
			if reg != nil {
				if rows, _ := reg.GetUAMs(context.Background(), appKey(app)); len(rows) != 0 {
					t.Fatalf("registry rows left: %v", rows)
				}
			}
			// Whichever proxy held attempt 1 has forgotten it.
			poll(t, "attempt 1 forgotten", func() bool { return f.proxy.attemptCount() == 0 && p2.attemptCount() == 0 })
		})
	}
}

func killApp(t *testing.T, rm *simrm.RM, app *yarnpb.ApplicationIdProto, user string) {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: user})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(context.Background(), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: app}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
}

// A home application killed without its AM finishing (yarn application
// -kill at the home RM) is noticed by the proxy once the AM is silent:
// the UAM on SC-2 ends, its row goes, the attempt's state ends, with an
// audit line and a metric. When the router's kill got there first (UAM
// killed, rows deleted) the proxy just cleans up, quietly.
func TestKilledHomeAppEndsItsUAMs(t *testing.T) {
	for _, routerFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("router killed the UAMs first=%v", routerFirst), func(t *testing.T) {
			reg := newFakeUAMRegistry()
			logs := &logtest.Buffer{}
			f := newFedRMs(t, 2, "", nil, func(c *Config) {
				c.SecondaryWait = Duration(100 * time.Millisecond)
				c.SilentAM = Duration(200 * time.Millisecond)
				c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			}, nil, reg)
			app, _, _, c2 := spanTwo(t, f)
			if reg.row(appKey(app), "SC-2") == nil {
				t.Fatal("no registry row for the UAM")
			}
			if routerFirst {
				killApp(t, f.rms["SC-2"], app, "alice")
				if _, err := reg.DeleteUAM(context.Background(), appKey(app), ""); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			killApp(t, f.rms["SC-1"], app, "alice")
			poll(t, "the UAM gone and the attempt ended", func() bool {
				return finalApp(f.rmApp("SC-2", app)) && f.proxy.attemptCount() == 0 && reg.row(appKey(app), "SC-2") == nil &&
					counterValue(f.proxy.metrics.attemptsEnded.WithLabelValues(endKilled)) == 1
			})
			t.Logf("home killed -> UAM on SC-2 %s and the attempt ended: %v (silent_am 200 ms)", f.rmApp("SC-2", app).GetYarnApplicationState(), time.Since(start))
			if !f.rmContainerDone(t, "SC-2", app, c2.GetId()) {
				t.Fatal("the SC-2 container still runs")
			}
			out := logs.String()
			if !strings.Contains(out, "attempt-end") || !strings.Contains(out, "reason=killed") {
				t.Fatalf("no audit line for the killed attempt:\n%s", out)
			}
			if strings.Contains(out, "cannot end the UAM") {
				t.Fatalf("cleanup was not quiet:\n%s", out)
			}
		})
	}
}

// A UAM is not submitted before its registry row is written: with the
// registry failing, SC-2 never hears of the application and the AM is
// served by the home alone; once the registry answers, the next ask spans.
func TestUAMNotUsedUntilRecorded(t *testing.T) {
	reg := newFakeUAMRegistry()
	reg.setFailPut(errors.New("fake: store unavailable"))
	f := newFedRMs(t, 2, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(50 * time.Millisecond)
		c.Breaker.OpenFor = Duration(200 * time.Millisecond)
	}, nil, reg)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("the home container", func() bool { return f.bySC(am)["SC-1"] == 1 })
	for i := 0; i < 5; i++ {
		am.heartbeat(nil, nil)
	}
	if r := f.rmApp("SC-2", app); r != nil {
		t.Fatalf("UAM submitted without a registry row: %v", r)
	}
	if f.bySC(am)["SC-2"] != 0 {
		t.Fatal("containers from an unrecorded UAM")
	}
	reg.setFailPut(nil)
	// Once the launch retry period (breaker.open_for) has passed, an ask
	// for SC-2 launches the UAM again.
	poll(t, "an SC-2 container", func() bool {
		am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
		return f.bySC(am)["SC-2"] >= 1
	})
	if row := reg.row(appKey(app), "SC-2"); row == nil || !row.GetRegistered() || len(row.GetAmrmToken()) == 0 {
		t.Fatalf("row after the launch: %v", row)
	}
}

// A rolled AMRMToken whose save fails is kept and saved on a later
// heartbeat, on disk and in the registry (issue 22: it was dropped).
func TestRolledTokenSaveIsRetried(t *testing.T) {
	reg := newFakeUAMRegistry()
	f := newFedRMs(t, 2, "", nil, func(c *Config) { c.SecondaryWait = Duration(100 * time.Millisecond) }, nil, reg)
	app, _, am, _ := spanTwo(t, f)
	a := f.proxyAttempt(t)
	a.mu.Lock()
	u := a.uams["SC-2"]
	a.mu.Unlock()
	u.mu.Lock()
	rolled := proto.Clone(u.token).(*commonpb.TokenProto)
	rolled.Password = append([]byte("rolled-"), rolled.Password...)
	u.token, u.tokenUnsaved = rolled, true // as heartbeat does on a roll-over
	u.mu.Unlock()
	reg.setFailPut(errors.New("fake: store unavailable"))
	am.heartbeat(nil, nil)
	if got := reg.row(appKey(app), "SC-2").GetAmrmToken(); bytes.Equal(got, mustMarshal(rolled)) {
		t.Fatal("registry written while failing")
	}
	reg.setFailPut(nil)
	poll(t, "the rolled token in the registry", func() bool {
		am.heartbeat(nil, nil)
		return bytes.Equal(reg.row(appKey(app), "SC-2").GetAmrmToken(), mustMarshal(rolled))
	})
	f.restart() // the local copy too: a restarted proxy re-attaches with the rolled token
	recs, err := f.proxy.state.Load()
	if err != nil || len(recs) != 1 || len(recs[0].UAMs) != 1 || !bytes.Equal(recs[0].UAMs[0].Token, mustMarshal(rolled)) {
		t.Fatalf("local state after the roll-over: %+v %v", recs, err)
	}
}

// Restart re-attach of a UAM that was submitted (its token on disk) but
// never registered: the recovered proxy registers it at once, before any
// AM heartbeat could do it by accident.
func TestRestartRegistersASubmittedUnregisteredUAM(t *testing.T) {
	f := newFed(t, 2, "", nil, func(c *Config) { c.SecondaryWait = Duration(100 * time.Millisecond) })
	app, tok1 := f.newApp("alice")
	am := f.newAM(tok1)
	am.mustRegister()
	f.stop()
	// The proxy died between the UAM's submission and its registration.
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.rms["SC-2"].Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tok, err := uam.Launch(context.Background(), c, uam.Spec{App: app, Queue: "default", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.Open(f.dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutUAM(attemptOf(app, 1).String(), state.UAM{SubCluster: "SC-2", Token: mustMarshal(tok)}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if s := f.rmApp("SC-2", app).GetYarnApplicationState(); s != yarnpb.YarnApplicationStateProto_ACCEPTED {
		t.Fatalf("UAM before the restart: %s", s)
	}
	f.start()
	poll(t, "the recovered UAM registered", func() bool {
		return f.rmApp("SC-2", app).GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_RUNNING
	})
	// And it serves the AM: its SC-2 asks go through the recovered UAM.
	am = f.newAM(tok1)
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("an SC-2 container", func() bool { return f.bySC(am)["SC-2"] == 1 })
	if r, s := counterValue(f.proxy.metrics.recoveries), counterValue(f.proxy.metrics.resyncs); r != 1 || s != 1 {
		t.Fatalf("recoveries_total %v, resyncs_total %v; want 1 and 1", r, s)
	}
}
