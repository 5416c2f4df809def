package router_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

func rep(id int32, name string, unmanaged bool, containers int32, mem int64, tags ...string) *yarnpb.ApplicationReportProto {
	return &yarnpb.ApplicationReportProto{
		ApplicationId:        &yarnpb.ApplicationIdProto{Id: proto.Int32(id), ClusterTimestamp: proto.Int64(1)},
		Name:                 proto.String(name),
		UnmanagedApplication: proto.Bool(unmanaged),
		ApplicationTags:      tags,
		AppResource_Usage: &yarnpb.ApplicationResourceUsageReportProto{
			NumUsedContainers: proto.Int32(containers),
			UsedResources: &yarnpb.ResourceProto{Memory: proto.Int64(mem), VirtualCores: proto.Int32(containers),
				ResourceValueMap: []*yarnpb.ResourceInformationProto{{Key: proto.String("yarn.io/gpu"), Value: proto.Int64(int64(containers))}}},
			MemorySeconds: proto.Int64(mem * 10),
		},
	}
}

func TestMergeApplications(t *testing.T) {
	type want struct {
		name       string
		containers int32
		mem        int64
		gpus       int64
		tags       int
	}
	tests := []struct {
		name    string
		lists   [][]*yarnpb.ApplicationReportProto
		partial bool
		want    []want
	}{
		{
			name:  "distinct apps are concatenated",
			lists: [][]*yarnpb.ApplicationReportProto{{rep(1, "a", false, 1, 100)}, {rep(2, "b", false, 2, 200)}},
			want:  []want{{"a", 1, 100, 1, 0}, {"b", 2, 200, 2, 0}},
		},
		{
			name: "UAMs fold into the home app, whichever order",
			lists: [][]*yarnpb.ApplicationReportProto{
				{rep(1, "UnmanagedAM", true, 3, 300, "x")},
				{rep(1, "job", false, 1, 100, "y")},
				{rep(1, "UnmanagedAM", true, 2, 200, "x")},
			},
			want: []want{{"job", 6, 600, 6, 2}},
		},
		{
			name:  "UAM-only app dropped without partial results",
			lists: [][]*yarnpb.ApplicationReportProto{{rep(1, "UnmanagedAM", true, 3, 300)}, {rep(1, "UnmanagedAM", true, 1, 100)}},
			want:  nil,
		},
		{
			name:    "UAM-only app shown as partial report with partial results",
			lists:   [][]*yarnpb.ApplicationReportProto{{rep(1, "UnmanagedAM", true, 3, 300)}, {rep(1, "UnmanagedAM", true, 1, 100)}},
			partial: true,
			want:    []want{{"Partial Report application_1_0001", 4, 400, 4, 0}},
		},
		{
			name:  "a user's own unmanaged app is kept",
			lists: [][]*yarnpb.ApplicationReportProto{{rep(1, "my-unmanaged", true, 1, 100)}},
			want:  []want{{"my-unmanaged", 1, 100, 1, 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := make([][]byte, 0)
			for _, l := range tc.lists {
				for _, a := range l {
					b, _ := proto.Marshal(a)
					orig = append(orig, b)
				}
			}
			got := router.MergeApplications(tc.lists, tc.partial)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d apps, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				u := g.GetAppResource_Usage()
				if g.GetName() != w.name || u.GetNumUsedContainers() != w.containers || u.GetUsedResources().GetMemory() != w.mem ||
					u.GetUsedResources().GetResourceValueMap()[0].GetValue() != w.gpus || len(g.GetApplicationTags()) != w.tags {
					t.Errorf("app %d = %s containers=%d mem=%d gpus=%d tags=%v, want %+v", i, g.GetName(), u.GetNumUsedContainers(),
						u.GetUsedResources().GetMemory(), u.GetUsedResources().GetResourceValueMap()[0].GetValue(), g.GetApplicationTags(), w)
				}
				if u.GetMemorySeconds() != w.mem*10 {
					t.Errorf("memory seconds %d, want %d", u.GetMemorySeconds(), w.mem*10)
				}
			}
			// Inputs are not mutated (they may be shared with a cache).
			i := 0
			for _, l := range tc.lists {
				for _, a := range l {
					b, _ := proto.Marshal(a)
					if string(b) != string(orig[i]) {
						t.Fatalf("input report %d mutated", i)
					}
					i++
				}
			}
		})
	}
}

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

func TestMergeAppInfos(t *testing.T) {
	home := rmrest.App{ID: "application_1_0001", Name: "job", AllocatedMB: 100, RunningContainers: 1, ApplicationTags: "a"}
	uam1 := rmrest.App{ID: "application_1_0001", Name: "UnmanagedAM", UnmanagedApplication: true, AllocatedMB: 200, RunningContainers: 2, ApplicationTags: "b"}
	orphan := rmrest.App{ID: "application_1_0002", Name: "UnmanagedAM", UnmanagedApplication: true, AllocatedMB: 5}
	got := router.MergeAppInfos([][]rmrest.App{{uam1, orphan}, {home}}, false)
	if len(got) != 1 || got[0].Name != "job" || got[0].AllocatedMB != 300 || got[0].RunningContainers != 3 || got[0].ApplicationTags != "a,b" {
		t.Fatalf("merged %+v", got)
	}
	got = router.MergeAppInfos([][]rmrest.App{{uam1, orphan}, {home}}, true)
	if len(got) != 2 || got[1].Name != "Partial Report application_1_0002" {
		t.Fatalf("partial merge %+v", got)
	}
}
