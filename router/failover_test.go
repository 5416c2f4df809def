package router_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// TestBreakerRenewedOnRMFailover: after a manual failover of a real RM
// pair the sub-cluster's breaker (keyed by sub-cluster id) stayed open for
// its whole interval although the agent had registered the new active RM,
// and submissions were refused meanwhile. A new RM address gets a fresh
// breaker.
func TestBreakerRenewedOnRMFailover(t *testing.T) {
	f := newFed(t, 1, func(c *router.Config) {
		c.Breaker.ConsecutiveFailures = 1
		c.Breaker.OpenFor = router.Duration(time.Hour)
		c.FailoverWait = router.Duration(100 * time.Millisecond)
	})
	var dead atomic.Bool
	dead.Store(true)
	f.rms["SC-1"].Intercept = func(string) (error, bool) {
		if dead.Load() {
			return down(), false
		}
		return nil, false
	}
	_ = f.client.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if !f.router.BreakerOpen("SC-1") {
		t.Fatal("breaker did not open")
	}
	// rm2 takes over; the agent registers its address.
	dead.Store(false)
	f.store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1-rm2:8032", State: router.StateRunning})
	poll(t, "a fresh breaker for the new active RM", func() bool { return !f.router.BreakerOpen("SC-1") })
	id := f.newApp(f.client)
	if err := f.submit(f.client, id); err != nil {
		t.Fatalf("submit after the failover: %v", err)
	}
}
