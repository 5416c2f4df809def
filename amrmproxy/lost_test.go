package amrmproxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/policies"
)

// lostFed is a two-sub-cluster federation with short timeouts: SC-2 counts
// as lost after 300 ms without an answer.
func lostFed(t *testing.T, finishWait time.Duration) *fed {
	return newFed(t, 2, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(50 * time.Millisecond)
		c.SubClusterTimeout = Duration(300 * time.Millisecond)
		c.DialTimeout = Duration(200 * time.Millisecond)
		c.CallTimeout = Duration(time.Minute) // a stalled RM holds a call this long
		c.FinishWait = Duration(finishWait)
		c.Breaker.OpenFor = Duration(500 * time.Millisecond)
	})
}

// spanTwo starts an AM holding one container on each sub-cluster and
// returns the SC-2 one.
func spanTwo(t *testing.T, f *fed) (*yarnpb.ApplicationIdProto, *commonpb.TokenProto, *testAM, *yarnpb.ContainerProto) {
	t.Helper()
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("a container on each sub-cluster", func() bool { by := f.bySC(am); return by["SC-1"] == 1 && by["SC-2"] == 1 })
	for _, c := range am.got {
		if f.owner(c.GetId()) == "SC-2" {
			return app, tok, am, c
		}
	}
	t.Fatal("no SC-2 container")
	return nil, nil, nil, nil
}

// Without abandoning lost secondaries the AM is told isUnregistered=false
// for as long as SC-2 is gone, and its home application never finishes
// (what TestAMRMProxySecondaryRMDies saw with real Hadoop).
func TestLostSecondaryDoesNotBlockFinish(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(f *fed)
		// early: finish before the timeout still answers false.
		early bool
	}{
		{"RM killed, silent past subcluster_timeout", func(f *fed) {
			if err := f.rms["SC-2"].Crash(); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"RM stalled, silent past subcluster_timeout", func(f *fed) { f.rms["SC-2"].SetFaults(simrm.FaultConfig{Stalled: true}) }, true},
		{"membership says SC_LOST", func(f *fed) {
			f.rms["SC-2"].SetFaults(simrm.FaultConfig{ErrorRate: 1})
			f.store.mu.Lock()
			row := f.store.rows["SC-2"]
			row.State = policies.StateLost
			f.store.rows["SC-2"] = row
			f.store.mu.Unlock()
			if err := f.proxy.RefreshNow(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lostFed(t, 100*time.Millisecond)
			defer f.rms["SC-2"].SetFaults(simrm.FaultConfig{})
			app, _, am, _ := spanTwo(t, f)
			tc.lose(f)
			start := time.Now()
			if tc.early {
				resp, err := am.finish()
				if err != nil || resp.GetIsUnregistered() {
					t.Fatalf("finish right after SC-2 went: %v %v, want isUnregistered=false (a brief failover must still unregister)", resp, err)
				}
			}
			var calls int
			for {
				calls++
				resp, err := am.finish()
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetIsUnregistered() {
					break
				}
				if time.Since(start) > 10*time.Second {
					t.Fatalf("finish still isUnregistered=false after %d calls in %v with SC-2 lost", calls, time.Since(start))
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("finish unregistered after %d calls, %v", calls, time.Since(start).Round(time.Millisecond))
			if st := f.rmApp("SC-1", app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
				t.Fatalf("home application %v after finish", st)
			}
			if n := counterValue(f.proxy.metrics.uamsAbandoned.WithLabelValues("SC-2")); n != 1 {
				t.Fatalf("uams_abandoned_total{SC-2} = %v, want 1", n)
			}
			if recs, _ := f.proxy.state.Load(); len(recs) != 0 {
				t.Fatalf("state of a finished attempt kept: %+v", recs)
			}
		})
	}
}

// Containers of a lost secondary are reported ABORTED once (so the AM asks
// again), leave the container map on disk, and when the secondary comes
// back they are released there and nothing about them reaches the AM
// again: no leak, no double count. Without the fix the AM never hears of
// them and would wait for them forever.
func TestLostSecondaryContainersAreAbortedOnce(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lose, recover func(f *fed)
	}{
		{"stall then unstall", func(f *fed) { f.rms["SC-2"].SetFaults(simrm.FaultConfig{Stalled: true}) },
			func(f *fed) { f.rms["SC-2"].SetFaults(simrm.FaultConfig{}) }},
		{"crash then work-preserving restart", func(f *fed) {
			if err := f.rms["SC-2"].Crash(); err != nil {
				t.Fatal(err)
			}
		}, func(f *fed) { f.restartRM("SC-2") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := lostFed(t, 100*time.Millisecond)
			defer f.rms["SC-2"].SetFaults(simrm.FaultConfig{})
			app, tok, am, victim := spanTwo(t, f)
			k := keyOf(victim.GetId())
			tc.lose(f)
			am.until("the SC-2 container reported ABORTED", func() bool { return am.completed[k] != nil })
			st := am.completed[k]
			if st.GetExitStatus() != int32(yarnpb.ContainerExitStatusProto_ABORTED) || st.GetState() != yarnpb.ContainerStateProto_C_COMPLETE ||
				!strings.Contains(st.GetDiagnostics(), "SC-2") || !strings.Contains(st.GetDiagnostics(), "not answered") {
				t.Fatalf("status of the lost container: %v", st)
			}
			if !proto.Equal(st.GetContainerId().GetAppAttemptId(), victim.GetId().GetAppAttemptId()) || st.GetContainerId().GetId() != victim.GetId().GetId() {
				t.Fatalf("aborted id %v, want %v", st.GetContainerId(), victim.GetId())
			}
			// The AM asks again; SC-1 serves it while SC-2 is out.
			am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 1)}, nil)
			am.until("the re-ask served by SC-1", func() bool { return f.byAlloc(am, 1)["SC-1"] == 1 })
			if n := counterValue(f.proxy.metrics.containersAborted.WithLabelValues("SC-2")); n != 1 {
				t.Fatalf("containers_aborted_total{SC-2} = %v", n)
			}
			tc.recover(f)
			am.until("SC-2 back in headroom", func() bool { return am.last.GetNumClusterNodes() == 8 })
			// The container the AM gave up on is released on SC-2, and
			// its completion there is not shown to the AM a second time
			// (heartbeat fails the test on a second completion).
			am.until("the aborted container released on SC-2", func() bool {
				return f.rmContainerDone(t, "SC-2", app, victim.GetId())
			})
			// SC-2's report of that completion has passed the proxy and
			// every answer since reached the AM.
			f.quiesce(am, app)
			// On disk: out of the live map, in the aborted set. A proxy
			// restart keeps it that way.
			f.restart()
			am.c.Close()
			am2 := f.newAM(tok)
			am2.got, am2.completed, am2.asks, am2.responseID = am.got, am.completed, am.asks, am.responseID
			am = am2
			recs, err := f.proxy.state.Load()
			if err != nil || len(recs) != 1 {
				t.Fatalf("state: %v %v", recs, err)
			}
			if _, live := recs[0].Containers[k.String()]; live || recs[0].Aborted[k.String()] != "SC-2" {
				t.Fatalf("after the abort: containers %v aborted %v", recs[0].Containers, recs[0].Aborted)
			}
			am.heartbeat(nil, nil)

			// An RM resending an old response with the container must not
			// deliver it again (heartbeat fails the test on a second
			// delivery) and has it released again.
			a := f.proxyAttempt(t)
			a.mu.Lock()
			u := a.uams["SC-2"]
			a.mu.Unlock()
			u.mu.Lock()
			u.results = append(u.results, rmAnswer{resp: &yarnpb.AllocateResponseProto{AllocatedContainers: []*yarnpb.ContainerProto{victim}}})
			u.mu.Unlock()
			am.heartbeat(nil, nil)
			a.mu.Lock()
			_, ok := a.containers[k]
			a.mu.Unlock()
			if ok {
				t.Fatal("a resent aborted container went back into the container map")
			}
			if resp, err := am.finish(); err != nil || !resp.GetIsUnregistered() {
				t.Fatalf("finish after SC-2 came back: %v %v", resp, err)
			}
			if st := f.rmApp("SC-2", app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
				t.Fatalf("UAM on the recovered SC-2: %v, want FINISHED (it answers again, so it is unregistered)", st)
			}
		})
	}
}

// proxyAttempt is the proxy's only attempt.
func (f *fed) proxyAttempt(t *testing.T) *attempt {
	t.Helper()
	f.proxy.mu.Lock()
	defer f.proxy.mu.Unlock()
	for _, a := range f.proxy.attempts {
		return a
	}
	t.Fatal("no attempt")
	return nil
}

// rmContainerDone: sc's RM reports container id of app's UAM completed.
func (f *fed) rmContainerDone(t *testing.T, sc string, app *yarnpb.ApplicationIdProto, id *yarnpb.ContainerIdProto) bool {
	t.Helper()
	for _, r := range f.rmContainers(t, sc, app) {
		if r.GetContainerId().GetId() == id.GetId() {
			return r.GetContainerState() == yarnpb.ContainerStateProto_C_COMPLETE
		}
	}
	return false
}

// rmContainers: the container reports sc's RM holds for attempt 1 of app
// (the UAM on a secondary, the test AM's attempt at the home).
func (f *fed) rmContainers(t *testing.T, sc string, app *yarnpb.ApplicationIdProto) []*yarnpb.ContainerReportProto {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.rms[sc].Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "yarnfed"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp := &yarnpb.GetContainersResponseProto{}
	if err := c.Call(context.Background(), "getContainers", &yarnpb.GetContainersRequestProto{
		ApplicationAttemptId: &yarnpb.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(1)}}, resp); err != nil {
		t.Fatalf("getContainers on %s: %v", sc, err)
	}
	return resp.Containers
}

func counterValue(c prometheus.Counter) float64 {
	m := &dto.Metric{}
	_ = c.Write(m)
	return m.GetCounter().GetValue()
}

// A UAM unregister that fails fast (here every SC-2 call fails, as behind
// an open breaker) is retried within finish_wait instead of answering
// false at once: an RM that recovers inside the window costs the AM one
// finish call, not a 100 ms retry loop.
func TestFinishRetriesUAMUnregisterWithinFinishWait(t *testing.T) {
	f := lostFed(t, 5*time.Second)
	app, _, am, _ := spanTwo(t, f)
	f.rms["SC-2"].SetFaults(simrm.FaultConfig{ErrorRate: 1})
	defer f.rms["SC-2"].SetFaults(simrm.FaultConfig{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		f.rms["SC-2"].SetFaults(simrm.FaultConfig{})
	}()
	resp, err := am.finish()
	if err != nil || !resp.GetIsUnregistered() {
		t.Fatalf("finish while SC-2 failed for 300ms of a 5s finish_wait: %v %v, want isUnregistered=true in one call", resp, err)
	}
	if st := f.rmApp("SC-2", app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
		t.Fatalf("UAM %v after finish", st)
	}
}

// The answer carrying the ABORTED statuses is lost with a proxy crash: the
// abort is on disk with that answer (as containers are), so the restarted
// proxy hands the statuses out again and the AM does not wait forever for
// a container that is gone.
func TestRestartRedeliversAbortsTheAMNeverSaw(t *testing.T) {
	f := lostFed(t, 100*time.Millisecond)
	_, tok, am, victim := spanTwo(t, f)
	k := keyOf(victim.GetId())
	if err := f.rms["SC-2"].Crash(); err != nil {
		t.Fatal(err)
	}
	am.loseAnswerWhere("no ABORTED status", func(r *yarnpb.AllocateResponseProto) bool { return len(r.CompletedContainerStatuses) > 0 })
	f.restart()
	am2 := f.newAM(tok)
	am2.got, am2.asks, am2.responseID = am.got, am.asks, am.responseID
	am2.heartbeat(nil, nil) // NotRegistered -> re-register -> re-send
	am2.until("the ABORTED status after the restart", func() bool { return am2.completed[k] != nil })
	if st := am2.completed[k]; st.GetExitStatus() != int32(yarnpb.ContainerExitStatusProto_ABORTED) {
		t.Fatalf("redelivered status %v", st)
	}
	// A second report (heartbeat fails the test on one) would come from the
	// redelivered status staying queued, or from the restarted proxy
	// finding SC-2 lost and aborting the container anew. Heartbeat until the
	// restarted proxy itself judges SC-2 lost, then once more: that answer
	// is merged with SC-2 lost.
	am2.until("the restarted proxy to judge SC-2 lost", func() bool { return f.judgesLost(t, "SC-2") })
	am2.heartbeat(nil, nil)
}

// judgesLost: the proxy's attempt counts secondary sc as lost now, as its
// next answer will.
func (f *fed) judgesLost(t *testing.T, sc string) bool {
	a := f.proxyAttempt(t)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, lost := a.lostReason(sc, a.uams[sc], time.Now())
	return lost
}
