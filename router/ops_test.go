package router_test

import (
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestAuditLineAndMetrics(t *testing.T) {
	var logs logtest.Buffer
	f := routertest.NewFed(t, 2, func(c *router.Config) {
		routertest.Prefer("SC-2")(c)
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	newRouterRegistry(t, f)
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Report(f.Client, id); err != nil {
		t.Fatal(err)
	}
	var audit string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "msg=audit") && strings.Contains(l, "operation=submitApplication") {
			audit = l
		}
	}
	for _, want := range []string{"user=alice", "app=" + yarnid.AppIDString(id), "subcluster=SC-2", "result=SUCCESS"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit line %q lacks %q", audit, want)
		}
	}
	if strings.Contains(logs.String(), "operation=getApplicationReport") {
		t.Error("reads must not be audited")
	}
}

// newRouterRegistry restarts f's router with a registry and checks the
// per-method and per-sub-cluster series exist after a call.
func newRouterRegistry(t *testing.T, f *routertest.Fed) {
	r := f.NewRouter(func(c *router.Config) { c.Registerer = f.Reg })
	c := f.Dial(r)
	if err := c.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatal(err)
	}
	mfs, err := f.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch mf.GetName() {
			case "yarnfed_router_requests_total":
				if labels["method"] == "getClusterMetrics" && labels["outcome"] == "ok" && m.GetCounter().GetValue() == 1 {
					found[mf.GetName()] = true
				}
			case "yarnfed_router_subcluster_calls_total":
				if labels["subcluster"] != "" && labels["method"] == "getClusterMetrics" {
					found[mf.GetName()] = true
				}
			case "yarnfed_router_request_seconds", "yarnfed_router_routable_subclusters":
				found[mf.GetName()] = true
			}
		}
	}
	for _, name := range []string{"yarnfed_router_requests_total", "yarnfed_router_subcluster_calls_total", "yarnfed_router_request_seconds", "yarnfed_router_routable_subclusters"} {
		if !found[name] {
			t.Errorf("metric %s missing or wrong", name)
		}
	}
}

func TestReservationRouting(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-2"))
	rid := &yarnpb.ReservationIdProto{Id: proto.Int64(1), ClusterTimestamp: proto.Int64(5)}
	if err := f.Client.Call(routertest.Ctx(t), "submitReservation", &yarnpb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: rid},
		&yarnpb.ReservationSubmissionResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Client.Call(routertest.Ctx(t), "deleteReservation", &yarnpb.ReservationDeleteRequestProto{ReservationId: rid},
		&yarnpb.ReservationDeleteResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if f.RMs["SC-2"].Calls("submitReservation") != 1 || f.RMs["SC-2"].Calls("deleteReservation") != 1 ||
		f.RMs["SC-1"].Calls("submitReservation")+f.RMs["SC-1"].Calls("deleteReservation") != 0 {
		t.Fatal("reservation calls did not follow the reservation home")
	}
}
