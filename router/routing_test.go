package router_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func down() error { return fmt.Errorf("%w: connection refused", hadoopipc.ErrDial) }

// downWhile makes rm refuse every call, as a dead RM does, until the
// returned switch is set to false.
func downWhile(rm *routertest.RM) *atomic.Bool {
	dead := new(atomic.Bool)
	dead.Store(true)
	rm.Intercept = func(string) (error, bool) {
		if dead.Load() {
			return down(), false
		}
		return nil, false
	}
	return dead
}

func TestGetNewApplicationRetriesAnotherSubCluster(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	f.RMs["SC-1"].Intercept = func(string) (error, bool) { return down(), false }
	for range 5 {
		id := f.NewApp(f.Client)
		if id.GetClusterTimestamp() != f.RMs["SC-2"].ClusterTimestamp {
			t.Fatalf("new app id %v not from SC-2", id)
		}
	}
}

func TestSubmitRetryBlacklistsAndUpdatesHome(t *testing.T) {
	tests := []struct {
		name string
		fail func(string) (error, bool)
	}{
		{"rm refuses", func(m string) (error, bool) {
			if m == "submitApplication" {
				return hadoopipc.Errorf(hadoopipc.ClassYarnException, "queue full"), false
			}
			return nil, false
		}},
		{"rm unreachable", func(m string) (error, bool) {
			if m == "submitApplication" {
				return down(), false
			}
			return nil, false
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := routertest.NewFed(t, 2, routertest.Prefer("SC-1", "SC-2"))
			id := f.NewApp(f.Client)
			f.RMs["SC-1"].Intercept = tc.fail
			if err := f.Submit(f.Client, id); err != nil {
				t.Fatalf("submit: %v", err)
			}
			app := yarnid.AppIDString(id)
			if got := f.Holders(app); !slices.Equal(got, []router.SubClusterID{"SC-2"}) {
				t.Fatalf("app on %v, want only SC-2", got)
			}
			if h := f.Store.Homes()[app]; h != "SC-2" {
				t.Fatalf("home row %s, want SC-2 (updated after the failed try)", h)
			}
		})
	}
}

func TestSubmitAllFailReturnsNamedError(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) { c.FailoverWait = 0 })
	id := f.NewApp(f.Client)
	for _, rm := range f.RMs {
		rm.Intercept = func(m string) (error, bool) {
			if m == "submitApplication" {
				return hadoopipc.Errorf(hadoopipc.ClassAccessControl, "user alice cannot submit"), false
			}
			return nil, false
		}
	}
	err := f.Submit(f.Client, id)
	if routertest.RemoteClass(err) != hadoopipc.ClassAccessControl || !strings.Contains(err.Error(), "sub-cluster SC-") {
		t.Fatalf("err = %v, want AccessControlException naming the sub-cluster", err)
	}
}

// TestSubmitCrashAtEachStep kills the router between the steps of a
// submission, then a fresh router gets the client's retry: the app must end
// up on exactly one RM, the one the home row names.
func TestSubmitCrashAtEachStep(t *testing.T) {
	for _, step := range []string{router.StepPolicy, router.StepHome, router.StepSubmit} {
		t.Run(step, func(t *testing.T) {
			// The second router's policy prefers the other SC, so a retry
			// that ignored the stored home would duplicate the app.
			f := routertest.NewFed(t, 2, routertest.Prefer("SC-1"))
			f.Router.SetCrashAt(func(s string) bool { return s == step })
			id := f.NewApp(f.Client)
			if err := f.Submit(f.Client, id); err == nil {
				t.Fatal("crashed submission reported success")
			}
			r2 := f.NewRouter(routertest.Prefer("SC-2"))
			c2 := f.Dial(r2)
			if err := f.Submit(c2, id); err != nil {
				t.Fatalf("retry through a new router: %v", err)
			}
			if err := f.Submit(c2, id); err != nil { // and once more: still one copy
				t.Fatalf("second retry: %v", err)
			}
			app := yarnid.AppIDString(id)
			got := f.Holders(app)
			if len(got) != 1 {
				t.Fatalf("app on %v, want exactly one RM", got)
			}
			if h := f.Store.Homes()[app]; h != got[0] {
				t.Fatalf("home row %s but app on %s", h, got[0])
			}
			if step != router.StepPolicy && got[0] != "SC-1" {
				t.Fatalf("app moved to %s although its home was stored as SC-1", got[0])
			}
			if _, err := f.Report(c2, id); err != nil {
				t.Fatalf("report: %v", err)
			}
		})
	}
}

func TestSubmitAmbiguousFailure(t *testing.T) {
	t.Run("rm accepted, reply lost: confirmed, not duplicated", func(t *testing.T) {
		f := routertest.NewFed(t, 2, routertest.Prefer("SC-1", "SC-2"))
		id := f.NewApp(f.Client)
		f.RMs["SC-1"].Intercept = func(m string) (error, bool) {
			if m == "submitApplication" {
				return hadoopipc.ErrConnectionClosed, true
			}
			return nil, false
		}
		if err := f.Submit(f.Client, id); err != nil {
			t.Fatalf("submit: %v", err)
		}
		if got := f.Holders(yarnid.AppIDString(id)); !slices.Equal(got, []router.SubClusterID{"SC-1"}) {
			t.Fatalf("app on %v, want only SC-1", got)
		}
	})
	t.Run("rm unreachable after an ambiguous failure: retriable error, no copy elsewhere", func(t *testing.T) {
		f := routertest.NewFed(t, 2, func(c *router.Config) {
			routertest.Prefer("SC-1", "SC-2")(c)
			c.FailoverWait = router.Duration(50 * time.Millisecond)
		})
		id := f.NewApp(f.Client)
		f.RMs["SC-1"].Intercept = func(m string) (error, bool) {
			if m == "submitApplication" {
				return context.DeadlineExceeded, true
			}
			return down(), false
		}
		err := f.Submit(f.Client, id)
		if routertest.RemoteClass(err) != hadoopipc.ClassRetriable {
			t.Fatalf("err = %v, want RetriableException", err)
		}
		if n := len(f.RMs["SC-2"].Apps()); n != 0 {
			t.Fatalf("SC-2 got %d apps: a possible duplicate", n)
		}
	})
}

func TestResubmitToDeadHomeDoesNotDuplicate(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) {
		routertest.Prefer("SC-1", "SC-2")(c)
		c.FailoverWait = router.Duration(50 * time.Millisecond)
		c.Breaker.OpenFor = router.Duration(20 * time.Millisecond)
	})
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	// The home dies (nothing can even connect) and the client, which never
	// saw the first reply, resubmits: the app exists on SC-1, so moving it
	// would run it twice.
	f.RMs["SC-1"].Intercept = func(string) (error, bool) { return down(), false }
	err := f.Submit(f.Client, id)
	if routertest.RemoteClass(err) != hadoopipc.ClassRetriable {
		t.Fatalf("err = %v, want RetriableException", err)
	}
	if n := len(f.RMs["SC-2"].Apps()); n != 0 {
		t.Fatal("resubmission duplicated the app on SC-2")
	}
	// Once the home is back the retry succeeds in place.
	f.RMs["SC-1"].Intercept = nil
	f.Store.SetState("SC-1", router.StateRunning) // agent heartbeat after recovery
	routertest.Poll(t, "resubmission succeeds", func() bool { return f.Submit(f.Client, id) == nil })
	if got := f.Holders(yarnid.AppIDString(id)); !slices.Equal(got, []router.SubClusterID{"SC-1"}) {
		t.Fatalf("app on %v", got)
	}
}

func TestPerAppCallFallsBackToAskingEverySubCluster(t *testing.T) {
	f := routertest.NewFed(t, 3, routertest.Prefer("SC-3"))
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	app := yarnid.AppIDString(id)
	f.Store.DeleteApplicationHome(app)
	r2 := f.NewRouter(nil) // fresh cache
	c2 := f.Dial(r2)
	rep, err := f.Report(c2, id)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if rep.GetRmClusterId() != "SC-3" {
		t.Fatalf("report from %s", rep.GetRmClusterId())
	}
	if h := f.Store.Homes()[app]; h != "SC-3" {
		t.Fatalf("home row not re-inserted: %q", h)
	}
	// Unknown everywhere: ApplicationNotFoundException, as from an RM.
	_, err = f.Report(c2, &yarnpb.ApplicationIdProto{Id: new(int32(99)), ClusterTimestamp: new(int64(7))})
	if routertest.RemoteClass(err) != hadoopipc.ClassApplicationNotFound {
		t.Fatalf("err = %v, want ApplicationNotFoundException", err)
	}
}

func TestKillGoesToHome(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-2"))
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	resp := &yarnpb.KillApplicationResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, resp); err != nil {
		t.Fatal(err)
	}
	if f.RMs["SC-2"].Calls("forceKillApplication") != 1 || f.RMs["SC-1"].Calls("forceKillApplication") != 0 {
		t.Fatal("kill not sent to the home only")
	}
	rep, _ := f.Report(f.Client, id)
	if rep.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_KILLED {
		t.Fatalf("state %v", rep.GetYarnApplicationState())
	}
}

func TestFanoutPartialResults(t *testing.T) {
	tests := []struct {
		name    string
		partial bool
		wantErr bool
	}{
		{"partial off: one failing sub-cluster fails the call", false, true},
		{"partial on: failing sub-cluster skipped", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := routertest.NewFed(t, 3, func(c *router.Config) {
				c.PartialResults = tc.partial
				c.Breaker.ConsecutiveFailures = 100 // keep SC-2 in routing
			})
			f.RMs["SC-2"].Intercept = func(string) (error, bool) {
				return hadoopipc.Errorf(hadoopipc.ClassYarnException, "boom"), false
			}
			resp := &yarnpb.GetClusterMetricsResponseProto{}
			err := f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "SC-2") {
					t.Fatalf("err = %v, want a failure naming SC-2", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := resp.GetClusterMetrics().GetNumNodeManagers(); n != 2 {
				t.Fatalf("NMs = %d, want 2 (SC-1 + SC-3)", n)
			}
		})
	}
}

func TestBreakerTakesDeadSubClusterOutOfRouting(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) {
		c.Breaker.ConsecutiveFailures = 2
		c.Breaker.OpenFor = router.Duration(time.Hour)
	})
	downWhile(f.RMs["SC-1"]) // dead for the whole test
	call := func() (*yarnpb.GetClusterMetricsResponseProto, error) {
		resp := &yarnpb.GetClusterMetricsResponseProto{}
		err := f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp)
		return resp, err
	}
	for range 2 {
		_, _ = call() // partial results off: these fail, and trip the breaker
	}
	if !f.Router.BreakerOpen("SC-1") {
		t.Fatal("breaker did not open after 2 failures")
	}
	before := f.RMs["SC-1"].Calls("getClusterMetrics")
	for range 10 {
		resp, err := call()
		if err != nil {
			t.Fatalf("with SC-1 out of routing the call must succeed: %v", err)
		}
		if resp.GetClusterMetrics().GetNumNodeManagers() != 1 {
			t.Fatal("want SC-2 only")
		}
	}
	if got := f.RMs["SC-1"].Calls("getClusterMetrics"); got != before {
		t.Fatalf("open breaker still let %d calls through", got-before)
	}
	// New applications avoid it too.
	for range 5 {
		if id := f.NewApp(f.Client); id.GetClusterTimestamp() != f.RMs["SC-2"].ClusterTimestamp {
			t.Fatal("new app from the dead sub-cluster")
		}
	}
}

func TestBreakerRecoversAfterOpenPeriod(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.Breaker.ConsecutiveFailures = 1
		c.Breaker.OpenFor = router.Duration(30 * time.Millisecond)
	})
	dead := downWhile(f.RMs["SC-1"])
	_ = f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if !f.Router.BreakerOpen("SC-1") {
		t.Fatal("breaker not open")
	}
	dead.Store(false)
	// The only sub-cluster is out of routing: the call waits out the open
	// period (failover window) instead of failing.
	if err := f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("call after recovery: %v", err)
	}
	if f.Router.BreakerOpen("SC-1") {
		t.Fatal("breaker still open after a successful probe")
	}
}

// TestSubmitRidesThroughFailover: the only sub-cluster is between RMs
// (UNHEALTHY in the store) when the client submits; once its agent reports
// it RUNNING again the submission goes through instead of failing with
// "no active sub-cluster".
func TestSubmitRidesThroughFailover(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) { c.FailoverWait = router.Duration(10 * time.Second) })
	id := f.NewApp(f.Client)
	f.Store.SetState("SC-1", router.StateUnhealthy)
	routertest.Poll(t, "router sees SC-1 unhealthy", func() bool {
		resp := &yarnpb.GetClusterMetricsResponseProto{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		return f.Client.Call(ctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp) != nil
	})
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = f.Submit(f.Client, id) })
	routertest.Poll(t, "submission waiting", func() bool { return f.Store.Ops("GetSubClusters") > 0 })
	f.Store.SetState("SC-1", router.StateRunning)
	wg.Wait()
	if err != nil {
		t.Fatalf("submit during failover: %v", err)
	}
	if got := f.Holders(yarnid.AppIDString(id)); len(got) != 1 {
		t.Fatalf("app on %v", got)
	}
}

func TestNoSubClusterFailsAfterWindow(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) { c.FailoverWait = router.Duration(30 * time.Millisecond) })
	f.Store.SetState("SC-1", router.StateLost)
	routertest.Poll(t, "SC-1 out", func() bool {
		return f.Client.Call(routertest.Ctx(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{}) != nil
	})
	err := f.Client.Call(routertest.Ctx(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
	if !strings.Contains(fmt.Sprint(err), "no active sub-cluster") {
		t.Fatalf("err = %v", err)
	}
	_ = errors.New
}

func TestQueuePolicyFromStore(t *testing.T) {
	var mu sync.Mutex
	var events []router.SubmitEvent
	f := routertest.NewFed(t, 2, func(c *router.Config) { // the real policies package
		c.OnSubmitted = func(e router.SubmitEvent) { mu.Lock(); events = append(events, e); mu.Unlock() }
	})
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: "root.a", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.0"},{"key":{"id":"SC-2"},"value":"1.0"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.5"},{"key":{"id":"SC-2"},"value":"0.5"}]},"headroomAlpha":"1.0"}`)})
	for range 10 {
		id := f.NewApp(f.Client)
		if err := f.Client.Call(routertest.Ctx(t), "submitApplication", routertest.SubmitReq(id, "root.a"), &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		if h := f.Store.Homes()[yarnid.AppIDString(id)]; h != "SC-2" {
			t.Fatalf("app went to %s, the queue's weights say SC-2 only", h)
		}
	}
	// A policy change applies to the very next submission.
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: "root.a", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"0.0"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.5"},{"key":{"id":"SC-2"},"value":"0.5"}]},"headroomAlpha":"1.0"}`)})
	id := f.NewApp(f.Client)
	if err := f.Client.Call(routertest.Ctx(t), "submitApplication", routertest.SubmitReq(id, "root.a"), &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if h := f.Store.Homes()[yarnid.AppIDString(id)]; h != "SC-1" {
		t.Fatalf("after the policy change the app went to %s, want SC-1", h)
	}
	// A broken configuration keeps the last good policy.
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: "root.a", Type: "no.such.Manager"})
	id = f.NewApp(f.Client)
	if err := f.Client.Call(routertest.Ctx(t), "submitApplication", routertest.SubmitReq(id, "root.a"), &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatalf("submit under a broken policy: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 12 || events[0].Home != "SC-2" || events[0].Queue != "root.a" || events[0].Policy == "" || len(events[0].Candidates) != 2 {
		t.Fatalf("submit events %+v", events)
	}
}

// TestPerAppCallRidesThroughHomeFailover: the home RM dies mid-session; a
// report waits for the sub-cluster's agent to report the new active RM
// and then succeeds, instead of failing.
func TestPerAppCallRidesThroughHomeFailover(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) {
		routertest.Prefer("SC-1")(c)
		c.FailoverWait = router.Duration(10 * time.Second)
	})
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	dead := downWhile(f.RMs["SC-1"])
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { _, err = f.Report(f.Client, id) })
	routertest.Poll(t, "first attempt failed", func() bool { return f.RMs["SC-1"].Calls("getApplicationReport") > 0 })
	dead.Store(false)
	f.Store.SetState("SC-1", router.StateRunning) // the agent's re-registration after failover
	wg.Wait()
	if err != nil {
		t.Fatalf("report across the home's failover: %v", err)
	}
}

// TestFallbackIgnoresUAMCopies: with no home row and the home RM unknown,
// a sub-cluster holding only the app's UAM must not become its home.
func TestFallbackIgnoresUAMCopies(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	id := &yarnpb.ApplicationIdProto{Id: new(int32(7)), ClusterTimestamp: new(int64(99))}
	f.RMs["SC-2"].AddApp(&yarnpb.ApplicationReportProto{ApplicationId: id, Name: new("UnmanagedAM"), UnmanagedApplication: new(true)})
	_, err := f.Report(f.Client, id)
	if err == nil || !strings.Contains(err.Error(), "unmanaged AMs") {
		t.Fatalf("err = %v", err)
	}
	if _, ok := f.Store.Homes()[yarnid.AppIDString(id)]; ok {
		t.Fatal("a UAM's sub-cluster was recorded as the home")
	}
	// Once the real home shows up, it is found and recorded.
	f.RMs["SC-1"].AddApp(&yarnpb.ApplicationReportProto{ApplicationId: id, Name: new("job")})
	if _, err := f.Report(f.Client, id); err != nil {
		t.Fatal(err)
	}
	if h := f.Store.Homes()[yarnid.AppIDString(id)]; h != "SC-1" {
		t.Fatalf("home %q, want SC-1", h)
	}
}

// TestBlacklistLapsesWhenBreakerRecovers: the only sub-cluster's breaker
// opens under a per-app call; the call itself becomes the half-open probe
// once the open period ends, without waiting for a heartbeat.
func TestBlacklistLapsesWhenBreakerRecovers(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.Breaker.ConsecutiveFailures = 1
		c.Breaker.OpenFor = router.Duration(30 * time.Millisecond)
		c.FailoverWait = router.Duration(5 * time.Second)
		c.MembershipRefresh = router.Duration(time.Hour) // no heartbeat news
	})
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	var fails atomic.Int32
	fails.Store(1)
	f.RMs["SC-1"].Intercept = func(m string) (error, bool) {
		if m == "getApplicationReport" && fails.Add(-1) >= 0 {
			return down(), false
		}
		return nil, false
	}
	if _, err := f.Report(f.Client, id); err != nil {
		t.Fatalf("report: %v", err)
	}
	if f.RMs["SC-1"].Calls("getApplicationReport") != 2 {
		t.Fatalf("calls %d, want the failure and one probe", f.RMs["SC-1"].Calls("getApplicationReport"))
	}
}

// TestSubmitRefusesADifferentAppWithTheSameID: two RMs that share a cluster
// timestamp hand out the same application ids. A second, different
// application with a known id must not be taken for a retry of the first
// (the RM would answer "earlier submitted application" and the new one would
// silently never run); a true retry still succeeds.
func TestSubmitRefusesADifferentAppWithTheSameID(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-1", "SC-2"))
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatalf("retry of the same submission: %v", err)
	}
	// A retry that spells out defaults (the REST decoder does) is the same.
	explicit := routertest.SubmitReq(id, "default")
	explicit.ApplicationSubmissionContext.UnmanagedAm = proto.Bool(false)
	explicit.ApplicationSubmissionContext.KeepContainersAcrossApplicationAttempts = proto.Bool(false)
	explicit.ApplicationSubmissionContext.ApplicationType = proto.String("YARN")
	if err := f.Client.Call(routertest.Ctx(t), "submitApplication", explicit, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatalf("retry with explicit defaults: %v", err)
	}
	other := routertest.SubmitReq(id, "default")
	other.ApplicationSubmissionContext.ApplicationName = proto.String("someone-else")
	err := f.Client.Call(routertest.Ctx(t), "submitApplication", other, &yarnpb.SubmitApplicationResponseProto{})
	if routertest.RemoteClass(err) != hadoopipc.ClassYarnException || !strings.Contains(err.Error(), "different submission context") {
		t.Fatalf("err = %v, want YarnException naming the id clash", err)
	}
	if got := f.Holders(yarnid.AppIDString(id)); !slices.Equal(got, []router.SubClusterID{"SC-1"}) {
		t.Fatalf("app on %v, want only SC-1", got)
	}
}
