package amrmproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

const weightedLocality = "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager"

func weights(ids ...string) []byte {
	e := ""
	for i, id := range ids {
		if i > 0 {
			e += ","
		}
		e += `{"key":{"id":"` + id + `"},"value":"1.0"}`
	}
	return []byte(`{"routerPolicyWeights":{"entry":[` + e + `]},"amrmPolicyWeights":{"entry":[` + e + `]},"headroomAlpha":"1.0"}`)
}

// byAlloc counts the AM's containers per (allocationRequestId, sub-cluster).
func (f *fed) byAlloc(am *testAM, allocID int64) map[string]int {
	out := map[string]int{}
	for _, c := range am.got {
		if c.GetAllocationRequestId() == allocID {
			out[f.owner(c.GetId())]++
		}
	}
	return out
}

// quiesce brings app to rest by events, not by the clock: afterwards the AM
// holds everything it will ever get for the asks it has sent, so an exact
// count cannot change by waiting longer.
//  1. Every sub-cluster running app answers two proxy allocates, the second
//     begun after this call: whatever the proxy queued for it before (the
//     AM's asks as split) has reached its RM.
//  2. No RM has an outstanding ask of app left (needed = used): none will
//     allocate more.
//  3. Three more allocates to each: what the RMs allocated is back at the
//     proxy (a secondary's answer is recorded before its next call starts).
//  4. One more AM heartbeat hands it to the AM.
func (f *fed) quiesce(am *testAM, app *yarnpb.ApplicationIdProto) {
	am.t.Helper()
	var scs []string
	for sc := range f.rms {
		if f.rmApp(sc, app) != nil {
			scs = append(scs, sc)
		}
	}
	callsSince := func(base map[string]uint64, n uint64) func() bool {
		return func() bool {
			for _, sc := range scs {
				if f.rmCalls(sc) < base[sc]+n {
					return false
				}
			}
			return true
		}
	}
	base := map[string]uint64{}
	for _, sc := range scs {
		base[sc] = f.rmCalls(sc)
	}
	am.until("two allocates to every sub-cluster of the app", callsSince(base, 2))
	am.until("no RM with an outstanding ask", func() bool {
		for _, sc := range scs {
			u := f.rmApp(sc, app).GetAppResource_Usage()
			if u.GetNeededResources().GetMemory() != u.GetUsedResources().GetMemory() {
				return false
			}
		}
		return true
	})
	for _, sc := range scs {
		base[sc] = f.rmCalls(sc)
	}
	am.until("three more allocates to every sub-cluster of the app", callsSince(base, 3))
	am.heartbeat(nil, nil)
}

// rmCalls is how many allocates the proxy has finished with sub-cluster
// sc's RM (home or UAM).
func (f *fed) rmCalls(sc string) uint64 {
	var m dto.Metric
	_ = f.proxy.metrics.rmAllocate.WithLabelValues(sc).(interface{ Write(*dto.Metric) error }).Write(&m)
	return m.GetHistogram().GetSampleCount()
}

func TestLocalityMulticastSendsNodeAsksToTheNodesSubCluster(t *testing.T) {
	f := newFed(t, 3, weightedLocality, weights("SC-1", "SC-2", "SC-3"), nil)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{
		ask("sc2-node-00001", 1, 1024, 7), ask("*", 1, 1024, 7),
		ask("sc3-node-00002", 2, 1024, 8), ask("*", 2, 1024, 8),
	}, nil)
	am.until("node-local containers", func() bool { return len(am.got) >= 3 })
	// A stray allocation would have reached the AM by now.
	f.quiesce(am, app)
	if got := f.byAlloc(am, 7); got["SC-2"] != 1 || len(got) != 1 {
		t.Fatalf("allocation 7 (node of SC-2): %v", got)
	}
	if got := f.byAlloc(am, 8); got["SC-3"] != 2 || len(got) != 1 {
		t.Fatalf("allocation 8 (node of SC-3): %v", got)
	}
}

func TestFinishFailingUAMAsksTheAMToRetry(t *testing.T) {
	f := newFed(t, 2, "", nil, nil)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("a container from SC-2", func() bool { return f.bySC(am)["SC-2"] == 1 })
	f.rms["SC-2"].SetFaults(simrm.FaultConfig{ErrorRate: 1})
	resp, err := am.finish()
	if err != nil || resp.GetIsUnregistered() {
		t.Fatalf("finish with a failing UAM: %v %v, want isUnregistered=false", resp, err)
	}
	f.rms["SC-2"].SetFaults(simrm.FaultConfig{})
	if st := f.rmApp("SC-2", app).GetYarnApplicationState(); st == yarnpb.YarnApplicationStateProto_FINISHED {
		t.Fatal("UAM finished although its unregister failed")
	}
	resp, err = am.finish()
	if err != nil || !resp.GetIsUnregistered() {
		t.Fatalf("retried finish: %v %v", resp, err)
	}
	for _, sc := range []string{"SC-1", "SC-2"} {
		if st := f.rmApp(sc, app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
			t.Fatalf("%s: %v after finish", sc, st)
		}
	}
	if recs, _ := f.proxy.state.Load(); len(recs) != 0 {
		t.Fatalf("state of a finished attempt kept: %+v", recs)
	}
}

func TestStalledSecondaryIsBoundedThenExcluded(t *testing.T) {
	f := newFed(t, 3, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(50 * time.Millisecond)
		c.SubClusterTimeout = Duration(300 * time.Millisecond)
		c.CallTimeout = Duration(time.Minute)
	})
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("a container from every sub-cluster", func() bool { return len(f.bySC(am)) == 3 })
	if n := am.last.GetNumClusterNodes(); n != 12 {
		t.Fatalf("nodes %d before the stall", n)
	}
	f.rms["SC-3"].SetFaults(simrm.FaultConfig{Stalled: true})
	defer f.rms["SC-3"].SetFaults(simrm.FaultConfig{})
	var slowest time.Duration
	deadline := time.Now().Add(700 * time.Millisecond)
	for time.Now().Before(deadline) {
		s := time.Now()
		am.heartbeat(nil, nil)
		slowest = max(slowest, time.Since(s))
	}
	// The stalled RM would hold a call for a minute: every heartbeat
	// returning at all proves the wait is bounded.
	t.Logf("slowest AM heartbeat while SC-3 stalled: %v (secondary wait 50ms)", slowest)
	if slowest > 10*time.Second {
		t.Fatalf("heartbeat took %v", slowest)
	}
	// Timed out: out of headroom and node counts, and out of splitting.
	if n := am.last.GetNumClusterNodes(); n != 8 {
		t.Fatalf("nodes %d with SC-3 timed out, want 8", n)
	}
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 1)}, nil)
	am.until("new asks served by SC-1 and SC-2", func() bool {
		by := f.byAlloc(am, 1)
		return by["SC-1"] == 1 && by["SC-2"] == 1
	})
	f.rms["SC-3"].SetFaults(simrm.FaultConfig{})
	am.until("SC-3 back in headroom", func() bool { return am.last.GetNumClusterNodes() == 12 })
	// Anything split to SC-3 while it was out was queued for it and has
	// reached it, and the AM, by now.
	f.quiesce(am, app)
	if by := f.byAlloc(am, 1); by["SC-3"] != 0 {
		t.Fatalf("an ask split while SC-3 was timed out reached it: %v", by)
	}
}

func TestSecondaryKilledAppContinuesOnHome(t *testing.T) {
	f := newFed(t, 3, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(50 * time.Millisecond)
		c.SubClusterTimeout = Duration(300 * time.Millisecond)
		c.DialTimeout = Duration(200 * time.Millisecond)
	})
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("a container from every sub-cluster", func() bool { return len(f.bySC(am)) == 3 })
	if err := f.rms["SC-3"].Crash(); err != nil {
		t.Fatal(err)
	}
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 2)}, nil)
	am.until("new asks served by the live sub-clusters", func() bool {
		by := f.byAlloc(am, 2)
		return by["SC-1"] == 1 && by["SC-2"] == 1
	})
}

func TestRestartRecoversWithoutLosingOrDuplicatingContainers(t *testing.T) {
	f := newFed(t, 3, "", nil, nil)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	regResp := am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
	am.until("2 containers from each sub-cluster", func() bool { return len(am.got) == 6 })

	f.restart()
	am2 := f.newAM(tok)
	am2.got, am2.completed, am2.asks, am2.responseID = am.got, am.completed, am.asks, am.responseID
	if _, err := am2.rawAllocate(am2.responseID, nil, nil); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Fatalf("first allocate after restart: %v, want ApplicationMasterNotRegisteredException", err)
	}
	again := am2.mustRegister()
	if !proto.Equal(again, regResp) {
		t.Fatalf("re-register after restart: %v, want the cached %v", again, regResp)
	}
	am2.responseID, am2.resendAll = 0, true
	am2.heartbeat(nil, nil)
	// A release after the restart still reaches the owner.
	var victim *yarnpb.ContainerIdProto
	for _, c := range am2.got {
		if f.owner(c.GetId()) == "SC-2" {
			victim = c.GetId()
			break
		}
	}
	am2.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, []*yarnpb.ContainerIdProto{victim})
	am2.until("one more container per sub-cluster", func() bool { return len(am2.got) == 9 })
	am2.until("the release to complete", func() bool { return am2.completed[keyOf(victim)] != nil })
	f.quiesce(am2, app)
	// Exact accounting: what each RM runs for the app is what the AM holds.
	by := f.bySC(am2)
	for _, sc := range []string{"SC-1", "SC-2", "SC-3"} {
		if n := f.rmApp(sc, app).GetAppResource_Usage().GetNumUsedContainers(); int(n) != by[sc] {
			t.Fatalf("%s runs %d containers, the AM holds %d (%v)", sc, n, by[sc], by)
		}
	}
	if by["SC-2"] != 2 || by["SC-1"] != 3 || by["SC-3"] != 3 {
		t.Fatalf("containers per sub-cluster %v", by)
	}
	// UAMs were re-attached, not submitted again.
	for _, sc := range []string{"SC-2", "SC-3"} {
		if n := counter(f.proxy.metrics.uamLaunches.WithLabelValues(sc, "ok")); n != 0 {
			t.Fatalf("%s: %v UAM launches after restart", sc, n)
		}
		if rep := f.rmApp(sc, app); rep.GetCurrentApplicationAttemptId().GetAttemptId() != 1 {
			t.Fatalf("%s: UAM attempt %v", sc, rep.GetCurrentApplicationAttemptId())
		}
	}
	if resp, err := am2.finish(); err != nil || !resp.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", resp, err)
	}
}

func TestProtectionOtherThanAuthenticationIsRefused(t *testing.T) {
	for _, p := range []string{"integrity", "privacy"} {
		cfg := DefaultConfig()
		cfg.SubClusterID, cfg.DataDir, cfg.Store, cfg.RPCProtection = "SC-1", t.TempDir(), ClientStore{}, p
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "hadoop.rpc.protection="+p) {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

func counter(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

func TestUAMFollowsRMFailoverFromMembership(t *testing.T) {
	f := newFed(t, 2, weightedLocality, weights("SC-2"), func(c *Config) {
		c.SecondaryWait = Duration(100 * time.Millisecond)
		c.DialTimeout = Duration(200 * time.Millisecond)
	})
	active := f.rms["SC-2"]
	standby, err := simrm.NewStandby(active, simrm.TestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := standby.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Close() })
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("a container from SC-2", func() bool { return f.bySC(am)["SC-2"] == 1 })

	active.TransitionToStandby()
	standby.TransitionToActive()
	f.register("SC-2", standby) // the sub-cluster agent reports the new active RM
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 3)}, nil)
	am.until("a container from SC-2 after its failover", func() bool { return f.byAlloc(am, 3)["SC-2"] == 1 })
}

func TestRMRestartMakesTheAMResync(t *testing.T) {
	for _, restarted := range []string{"SC-1", "SC-2"} {
		t.Run(restarted, func(t *testing.T) {
			f := newFed(t, 2, "", nil, nil)
			app, tok := f.newApp("alice")
			am := f.newAM(tok)
			am.mustRegister()
			am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
			am.until("a container from each sub-cluster", func() bool { return len(f.bySC(am)) == 2 })
			f.restartRM(restarted)
			am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 4)}, nil)
			// AMRMClient's outstanding count: once one container of
			// allocation 4 arrived, the AM's re-sent ask is 0 and cancels
			// the rest; at least one must come.
			am.until("new asks served after the restart", func() bool {
				by := f.byAlloc(am, 4)
				return by["SC-1"]+by["SC-2"] >= 1
			})
			t.Logf("allocation 4: %v; all: %v", f.byAlloc(am, 4), f.bySC(am))
			if am.reRegs == 0 {
				t.Fatal("the AM was never asked to re-register")
			}
			f.quiesce(am, app)
			by := f.bySC(am)
			for _, sc := range []string{"SC-1", "SC-2"} {
				if n := f.rmApp(sc, app).GetAppResource_Usage().GetNumUsedContainers(); int(n) != by[sc] {
					t.Fatalf("%s runs %d containers, the AM holds %d", sc, n, by[sc])
				}
			}
		})
	}
}

// TestRestartRedeliversContainersTheAMNeverSaw: the proxy records
// containers and stops before its answer reaches the AM. The AM's next
// allocate carries the id of the last answer it did get, which tells the
// restarted proxy to hand those containers out again: none leaks, none
// arrives twice.
func TestRestartRedeliversContainersTheAMNeverSaw(t *testing.T) {
	f := newFed(t, 2, "", nil, nil)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	// Heartbeat until an answer carries containers, then lose that answer.
	am.loseAnswerWhere("no containers", func(r *yarnpb.AllocateResponseProto) bool { return len(r.AllocatedContainers) > 0 })
	f.restart()
	am2 := f.newAM(tok)
	am2.asks, am2.responseID = am.asks, am.responseID
	am2.heartbeat(nil, nil) // NotRegistered -> re-register -> re-send
	am2.until("both sub-clusters' containers", func() bool { return len(f.bySC(am2)) == 2 })
	f.quiesce(am2, app)
	by := f.bySC(am2)
	for _, sc := range []string{"SC-1", "SC-2"} {
		if n := f.rmApp(sc, app).GetAppResource_Usage().GetNumUsedContainers(); int(n) != by[sc] {
			t.Fatalf("%s runs %d containers, the AM holds %d: a container leaked", sc, n, by[sc])
		}
	}
}
