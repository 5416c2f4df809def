package router_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

func TestMergeFanoutCallsOverIPC(t *testing.T) {
	f := newFed(t, 2, nil)
	f.rms["SC-1"].NumNodeManagers = 3
	f.rms["SC-2"].NumNodeManagers = 4
	f.rms["SC-1"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n1"), Port: proto.Int32(1)}}}
	f.rms["SC-2"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n2"), Port: proto.Int32(1)}}}
	for range 3 {
		if err := f.submit(f.client, f.newApp(f.client)); err != nil {
			t.Fatal(err)
		}
	}
	m := &yarnpb.GetClusterMetricsResponseProto{}
	if err := f.client.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m); err != nil {
		t.Fatal(err)
	}
	if m.GetClusterMetrics().GetNumNodeManagers() != 7 || m.GetClusterMetrics().GetNumActiveNms() != 7 {
		t.Fatalf("metrics not summed: %v", m)
	}
	n := &yarnpb.GetClusterNodesResponseProto{}
	if err := f.client.Call(ctxT(t), "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, n); err != nil || len(n.GetNodeReports()) != 2 {
		t.Fatalf("nodes %v err %v", n, err)
	}
	a := &yarnpb.GetApplicationsResponseProto{}
	if err := f.client.Call(ctxT(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, a); err != nil || len(a.GetApplications()) != 3 {
		t.Fatalf("apps %d err %v", len(a.GetApplications()), err)
	}
	a = &yarnpb.GetApplicationsResponseProto{}
	if err := f.client.Call(ctxT(t), "getApplications", &yarnpb.GetApplicationsRequestProto{Limit: proto.Int64(2)}, a); err != nil || len(a.GetApplications()) != 2 {
		t.Fatalf("limited apps %d err %v", len(a.GetApplications()), err)
	}
	q := &yarnpb.GetQueueInfoResponseProto{}
	if err := f.client.Call(ctxT(t), "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default")}, q); err != nil {
		t.Fatal(err)
	}
	if q.GetQueueInfo().GetQueueStatistics().GetNumAppsSubmitted() != 3 || q.GetQueueInfo().GetCapacity() != 1 {
		t.Fatalf("queue not merged: %v", q)
	}
	one := &yarnpb.GetQueueInfoResponseProto{}
	if err := f.client.Call(ctxT(t), "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default"), SubClusterId: proto.String("SC-2")}, one); err != nil {
		t.Fatal(err)
	}
	if one.GetQueueInfo().GetSubClusterId() != "SC-2" || f.rms["SC-1"].Calls("getQueueInfo") != 1 || f.rms["SC-2"].Calls("getQueueInfo") != 2 {
		t.Fatalf("sub-cluster-scoped getQueueInfo: %v", one)
	}
}
