package router_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestIPCFanOutDeadline: an RM that hangs costs an IPC fan-out
// (getApplications, getClusterNodes, getClusterMetrics) the fan-out's
// deadline, not call_timeout (a minute: longer than the test's client
// waits). With partial results on, the others' answers come back and the
// hung sub-cluster is counted as left out; off, the call fails naming it.
func TestIPCFanOutDeadline(t *testing.T) {
	for _, partial := range []bool{true, false} {
		t.Run(map[bool]string{true: "partial results on", false: "partial results off"}[partial], func(t *testing.T) {
			reg := prometheus.NewRegistry()
			f := routertest.NewFed(t, 3, func(c *router.Config) {
				c.PartialResults = partial
				c.CallTimeout = router.Duration(time.Minute)
				c.FanOut.Timeout = router.Duration(300 * time.Millisecond)
				c.Registerer = reg
			})
			for i := 0; i < 3; i++ {
				if err := f.Submit(f.Client, f.NewApp(f.Client)); err != nil {
					t.Fatal(err)
				}
			}
			f.RMs["SC-2"].SetHung(true)
			ctx := routertest.Ctx(t)
			resp := &yarnpb.GetApplicationsResponseProto{}
			err := f.Client.Call(ctx, "getApplications", &yarnpb.GetApplicationsRequestProto{}, resp)
			left := routertest.CounterByMethod(t, reg, "yarnfed_router_fanout_subclusters_left_out_total", "getApplications")
			if !partial {
				if err == nil || !strings.Contains(err.Error(), "SC-2") {
					t.Fatalf("getApplications: %v; want a failure naming SC-2", err)
				}
				if left != 0 {
					t.Fatalf("a failed call counted %v left out", left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := len(f.RMs["SC-1"].Apps()) + len(f.RMs["SC-3"].Apps())
			if got := len(resp.GetApplications()); got != want {
				t.Fatalf("%d apps, want SC-1's and SC-3's %d", got, want)
			}
			if left != 1 {
				t.Fatalf("left-out counter %v, want 1", left)
			}
		})
	}
}
