package merge_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/merge"
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
			got := merge.Applications(tc.lists, tc.partial)
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

// BenchmarkMergeApplications merges 3 sub-clusters x 1000 apps with UAMs.
func BenchmarkMergeApplications(b *testing.B) {
	lists := make([][]*yarnpb.ApplicationReportProto, 3)
	for sc := range lists {
		for i := range 1000 {
			if sc > 0 && i%10 == 0 {
				lists[sc] = append(lists[sc], rep(int32(i), "UnmanagedAM", true, 1, 100))
				continue
			}
			lists[sc] = append(lists[sc], rep(int32(sc*1000+i), "job", false, 1, 100))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		merge.Applications(lists, false)
	}
}
