package router_test

import (
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/yarnid"
)

func TestAuditLineAndMetrics(t *testing.T) {
	var logs logtest.Buffer
	f := newFed(t, 2, func(c *router.Config) {
		prefer("SC-2")(c)
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	f.newRouterRegistry(t)
	id := f.newApp(f.client)
	if err := f.submit(f.client, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.report(f.client, id); err != nil {
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
func (f *fed) newRouterRegistry(t *testing.T) {
	r := f.newRouter(func(c *router.Config) { c.Registerer = f.reg })
	c := f.dial(r)
	if err := c.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatal(err)
	}
	mfs, err := f.reg.Gather()
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
	f := newFed(t, 2, prefer("SC-2"))
	rid := &yarnpb.ReservationIdProto{Id: proto.Int64(1), ClusterTimestamp: proto.Int64(5)}
	if err := f.client.Call(ctxT(t), "submitReservation", &yarnpb.ReservationSubmissionRequestProto{Queue: proto.String("default"), ReservationId: rid},
		&yarnpb.ReservationSubmissionResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Call(ctxT(t), "deleteReservation", &yarnpb.ReservationDeleteRequestProto{ReservationId: rid},
		&yarnpb.ReservationDeleteResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if f.rms["SC-2"].Calls("submitReservation") != 1 || f.rms["SC-2"].Calls("deleteReservation") != 1 ||
		f.rms["SC-1"].Calls("submitReservation")+f.rms["SC-1"].Calls("deleteReservation") != 0 {
		t.Fatal("reservation calls did not follow the reservation home")
	}
}
