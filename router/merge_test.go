package router_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestMergeFanoutCallsOverIPC(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	f.RMs["SC-1"].NumNodeManagers = 3
	f.RMs["SC-2"].NumNodeManagers = 4
	f.RMs["SC-1"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n1"), Port: proto.Int32(1)}}}
	f.RMs["SC-2"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n2"), Port: proto.Int32(1)}}}
	for range 3 {
		if err := f.Submit(f.Client, f.NewApp(f.Client)); err != nil {
			t.Fatal(err)
		}
	}
	m := &yarnpb.GetClusterMetricsResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m); err != nil {
		t.Fatal(err)
	}
	if m.GetClusterMetrics().GetNumNodeManagers() != 7 || m.GetClusterMetrics().GetNumActiveNms() != 7 {
		t.Fatalf("metrics not summed: %v", m)
	}
	n := &yarnpb.GetClusterNodesResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, n); err != nil || len(n.GetNodeReports()) != 2 {
		t.Fatalf("nodes %v err %v", n, err)
	}
	a := &yarnpb.GetApplicationsResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, a); err != nil || len(a.GetApplications()) != 3 {
		t.Fatalf("apps %d err %v", len(a.GetApplications()), err)
	}
	a = &yarnpb.GetApplicationsResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{Limit: proto.Int64(2)}, a); err != nil || len(a.GetApplications()) != 2 {
		t.Fatalf("limited apps %d err %v", len(a.GetApplications()), err)
	}
	q := &yarnpb.GetQueueInfoResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default")}, q); err != nil {
		t.Fatal(err)
	}
	if q.GetQueueInfo().GetQueueStatistics().GetNumAppsSubmitted() != 3 || q.GetQueueInfo().GetCapacity() != 1 {
		t.Fatalf("queue not merged: %v", q)
	}
	one := &yarnpb.GetQueueInfoResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default"), SubClusterId: proto.String("SC-2")}, one); err != nil {
		t.Fatal(err)
	}
	if one.GetQueueInfo().GetSubClusterId() != "SC-2" || f.RMs["SC-1"].Calls("getQueueInfo") != 1 || f.RMs["SC-2"].Calls("getQueueInfo") != 2 {
		t.Fatalf("sub-cluster-scoped getQueueInfo: %v", one)
	}
}
