package router_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestHomeDownIsRetriable: a home RM down for longer than the failover
// window once gave clients a YarnException, which Hadoop's client does not
// retry, while a client of that RM itself keeps retrying its connection.
// While the sub-cluster is expected back the router answers with an
// exception Hadoop's RMProxy retries (StandbyException) and REST with 503;
// once the sub-cluster is gone for good (LOST) the error is final.
func TestHomeDownIsRetriable(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) {
		routertest.Prefer("SC-1")(c)
		c.FailoverWait = router.Duration(100 * time.Millisecond)
	})
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	f.RMs["SC-1"].Intercept = func(string) (error, bool) { return down(), false }
	_, err := f.Report(f.Client, id)
	if got := routertest.RemoteClass(err); got != hadoopipc.ClassStandby {
		t.Fatalf("report with the home down: class %q (%v), want %s", got, err, hadoopipc.ClassStandby)
	}
	if code, b := f.Do("GET", "/ws/v1/cluster/apps/"+yarnid.AppIDString(id)+"/state", "", "", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("REST state with the home down: %d %s, want 503", code, b)
	}
	f.Store.SetState("SC-1", router.StateLost)
	routertest.Poll(t, "final error once the home is LOST", func() bool {
		_, err := f.Report(f.Client, id)
		return err != nil && routertest.RemoteClass(err) != hadoopipc.ClassStandby
	})
}

// TestHungHomeRM: a home RM that accepts calls but never answers made a
// per-app call wait twice the call timeout (its agent's heartbeats lifted
// the request's blacklist, and REST fell back to the same RM's IPC port),
// and REST answered 500. One timeout per request, then a retriable answer.
func TestHungHomeRM(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.CallTimeout = router.Duration(150 * time.Millisecond)
		c.FailoverWait = router.Duration(time.Second)
		c.Breaker.ConsecutiveFailures = 100 // the request's own behaviour, not the breaker's
	})
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	app := yarnid.AppIDString(id)
	// The RM's web server hangs too.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { <-req.Context().Done() }))
	t.Cleanup(web.Close)
	sc := router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning,
		RMWebServiceAddress: strings.TrimPrefix(web.URL, "http://")}
	f.Store.Put(sc)
	// Its agent keeps heartbeating: the RM process is up.
	var stop atomic.Bool
	t.Cleanup(func() { stop.Store(true) })
	go func() {
		for !stop.Load() {
			sc.LastHeartbeat = time.Now()
			f.Store.Put(sc)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	rm := f.RMs["SC-1"]
	rm.SetHung(true)

	// One try per call (our IPC client, like Hadoop's, retries a
	// StandbyException by itself).
	once, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.Router.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "alice", FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = once.Close() })
	before := rm.Calls("getApplicationReport")
	_, err = f.Report(once, id)
	if got := routertest.RemoteClass(err); got != hadoopipc.ClassStandby {
		t.Fatalf("report from a hung home: class %q (%v), want %s", got, err, hadoopipc.ClassStandby)
	}
	if n := rm.Calls("getApplicationReport") - before; n != 1 {
		t.Fatalf("the hung RM was called %d times in one request, want 1 (one call timeout)", n)
	}

	before = rm.Calls("getApplicationReport")
	code, b := f.Do("GET", "/ws/v1/cluster/apps/"+app, "", "", "")
	if code != http.StatusServiceUnavailable {
		t.Fatalf("REST app from a hung home: %d %s, want 503", code, b)
	}
	if n := rm.Calls("getApplicationReport") - before; n != 0 {
		t.Fatalf("after the RM's REST API timed out, its IPC port was tried too (%d calls): a second timeout", n)
	}
}

// TestNothingRoutableIsRetriable: the same rule for calls with no home:
// when the only sub-cluster is down or between RMs past the failover
// window, new applications, submissions and lists answer with what
// Hadoop's client retries; once nothing is expected back, a final error.
func TestNothingRoutableIsRetriable(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) { c.FailoverWait = router.Duration(50 * time.Millisecond) })
	id := f.NewApp(f.Client)
	f.RMs["SC-1"].Intercept = func(string) (error, bool) { return down(), false }
	once, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.Router.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "alice", FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = once.Close() })
	calls := map[string]func() error{
		"getNewApplication": func() error {
			return once.Call(routertest.Ctx(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
		},
		"submitApplication": func() error {
			return once.Call(routertest.Ctx(t), "submitApplication", routertest.SubmitReq(id, "default"), &yarnpb.SubmitApplicationResponseProto{})
		},
		"getApplications": func() error {
			return once.Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, &yarnpb.GetApplicationsResponseProto{})
		},
	}
	for name, call := range calls {
		if err := call(); routertest.RemoteClass(err) != hadoopipc.ClassStandby {
			t.Errorf("%s with the only RM down: %v, want %s", name, err, hadoopipc.ClassStandby)
		}
	}
	f.Store.SetState("SC-1", router.StateUnhealthy) // between RMs
	routertest.Poll(t, "SC-1 out of routing", func() bool { return routertest.RemoteClass(calls["getApplications"]()) == hadoopipc.ClassStandby })
	f.Store.SetState("SC-1", router.StateDecommissioned) // gone for good
	routertest.Poll(t, "a final error once nothing is expected back", func() bool {
		err := calls["getNewApplication"]()
		return err != nil && routertest.RemoteClass(err) != hadoopipc.ClassStandby
	})
}
