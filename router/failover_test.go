package router_test

import (
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestBreakerRenewedOnRMFailover: after a manual failover of a real RM
// pair the sub-cluster's breaker (keyed by sub-cluster id) stayed open for
// its whole interval although the agent had registered the new active RM,
// and submissions were refused meanwhile. A new RM address gets a fresh
// breaker.
func TestBreakerRenewedOnRMFailover(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.Breaker.ConsecutiveFailures = 1
		c.Breaker.OpenFor = router.Duration(time.Hour)
		c.FailoverWait = router.Duration(100 * time.Millisecond)
	})
	dead := downWhile(f.RMs["SC-1"])
	_ = f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if !f.Router.BreakerOpen("SC-1") {
		t.Fatal("breaker did not open")
	}
	// rm2 takes over; the agent registers its address.
	dead.Store(false)
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1-rm2:8032", State: router.StateRunning})
	routertest.Poll(t, "a fresh breaker for the new active RM", func() bool { return !f.Router.BreakerOpen("SC-1") })
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatalf("submit after the failover: %v", err)
	}
}

// TestPinnedQueueWaitsOutFailover: a queue whose weights pin it to SC-1
// failed at once ("no active sub-cluster has a positive router weight",
// non-retriable) while SC-1 was failing over, although a submission waits
// out the failover window when nothing at all is routable. It now waits
// for SC-1 too, and REST says 503 if the window ends first.
func TestPinnedQueueWaitsOutFailover(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) { c.FailoverWait = router.Duration(10 * time.Second) })
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: "root.a", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"0.0"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"0.0"}]},"headroomAlpha":"1.0"}`)})
	id := f.NewApp(f.Client)
	f.Store.SetState("SC-1", router.StateUnhealthy) // between RMs
	routertest.Poll(t, "router sees SC-1 out", func() bool {
		resp := &yarnpb.GetClusterMetricsResponseProto{}
		err := f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp)
		return err == nil && resp.GetClusterMetrics().GetNumNodeManagers() == 1
	})
	var wg sync.WaitGroup
	var err error
	ops := f.Store.Ops("GetSubClusters")
	wg.Go(func() {
		err = f.Client.Call(routertest.Ctx(t), "submitApplication", routertest.SubmitReq(id, "root.a"), &yarnpb.SubmitApplicationResponseProto{})
	})
	routertest.Poll(t, "submission waiting", func() bool { return f.Store.Ops("GetSubClusters") > ops+2 })
	f.Store.SetState("SC-1", router.StateRunning) // the new active registered
	wg.Wait()
	if err != nil {
		t.Fatalf("submit to a queue pinned to a failing-over sub-cluster: %v", err)
	}
	if h := f.Store.Homes()[yarnid.AppIDString(id)]; h != "SC-1" {
		t.Fatalf("home %s, want SC-1", h)
	}
}

func TestPinnedQueueAfterWindowIs503(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) { c.FailoverWait = router.Duration(50 * time.Millisecond) })
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: "root.a", Type: "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"0.0"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"0.0"}]},"headroomAlpha":"1.0"}`)})
	id := f.NewApp(f.Client)
	f.Store.SetState("SC-1", router.StateUnhealthy)
	body := `{"application-id":"` + yarnid.AppIDString(id) + `","application-name":"x","queue":"root.a","am-container-spec":{"commands":{"command":"true"}},"resource":{"memory":1024,"vCores":1}}`
	routertest.Poll(t, "503 once the window ends", func() bool {
		code, _ := f.Do("POST", "/ws/v1/cluster/apps", "", "application/json", body)
		return code == 503
	})
}
