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

// TestUnionsKeepFirstSeenOrderAndMergeByKey pins the node, label, attribute
// and ACL unions: entries sharing a key merge into the first one seen, in
// first-seen order, and duplicates inside a merged entry are dropped where
// Hadoop's RouterYarnClientUtils drops them.
func TestUnionsKeepFirstSeenOrderAndMergeByKey(t *testing.T) {
	n := func(h string, p int32) *yarnpb.NodeIdProto {
		return &yarnpb.NodeIdProto{Host: proto.String(h), Port: proto.Int32(p)}
	}
	ltn := merge.LabelsToNodes([]*yarnpb.GetLabelsToNodesResponseProto{
		{LabelsToNodes: []*yarnpb.LabelsToNodeIdsProto{{NodeLabels: proto.String("gpu"), NodeId: []*yarnpb.NodeIdProto{n("a", 1)}}}},
		{LabelsToNodes: []*yarnpb.LabelsToNodeIdsProto{
			{NodeLabels: proto.String("ssd"), NodeId: []*yarnpb.NodeIdProto{n("b", 1)}},
			{NodeLabels: proto.String("gpu"), NodeId: []*yarnpb.NodeIdProto{n("a", 1), n("c", 2)}},
		}},
	}).GetLabelsToNodes()
	if len(ltn) != 2 || ltn[0].GetNodeLabels() != "gpu" || ltn[1].GetNodeLabels() != "ssd" {
		t.Fatalf("labels to nodes = %v, want gpu then ssd", ltn)
	}
	if got := ltn[0].GetNodeId(); len(got) != 2 || merge.NodeKey(got[0]) != "a:1" || merge.NodeKey(got[1]) != "c:2" {
		t.Fatalf("gpu nodes = %v, want a:1 and c:2 once each", got)
	}

	ntl := merge.NodesToLabels([]*yarnpb.GetNodesToLabelsResponseProto{
		{NodeToLabels: []*yarnpb.NodeIdToLabelsProto{{NodeId: n("a", 1), NodeLabels: []string{"x"}}}},
		{NodeToLabels: []*yarnpb.NodeIdToLabelsProto{{NodeId: n("a", 1), NodeLabels: []string{"x", "y"}}}},
	}).GetNodeToLabels()
	if len(ntl) != 1 || len(ntl[0].GetNodeLabels()) != 2 {
		t.Fatalf("nodes to labels = %v, want a:1 with x and y", ntl)
	}

	acls := merge.QueueUserAcls([]*yarnpb.GetQueueUserAclsInfoResponseProto{
		{QueueUserAcls: []*yarnpb.QueueUserACLInfoProto{{QueueName: proto.String("q"), UserAcls: []yarnpb.QueueACLProto{yarnpb.QueueACLProto_QACL_SUBMIT_APPLICATIONS}}}},
		{QueueUserAcls: []*yarnpb.QueueUserACLInfoProto{{QueueName: proto.String("q"), UserAcls: []yarnpb.QueueACLProto{
			yarnpb.QueueACLProto_QACL_SUBMIT_APPLICATIONS, yarnpb.QueueACLProto_QACL_ADMINISTER_QUEUE}}}},
	}).GetQueueUserAcls()
	if len(acls) != 1 || len(acls[0].GetUserAcls()) != 2 {
		t.Fatalf("queue ACLs = %v, want q with submit and administer once each", acls)
	}

	labels := merge.ClusterNodeLabels([]*yarnpb.GetClusterNodeLabelsResponseProto{
		{NodeLabels: []*yarnpb.NodeLabelProto{{Name: proto.String("x")}}, DeprecatedNodeLabels: []string{"x"}},
		{NodeLabels: []*yarnpb.NodeLabelProto{{Name: proto.String("y")}, {Name: proto.String("x"), IsExclusive: proto.Bool(false)}}, DeprecatedNodeLabels: []string{"y", "x"}},
	})
	if l := labels.GetNodeLabels(); len(l) != 2 || l[0].GetName() != "x" || l[0].IsExclusive != nil || l[1].GetName() != "y" {
		t.Fatalf("cluster node labels = %v, want the first x, then y", l)
	}
	if d := labels.GetDeprecatedNodeLabels(); len(d) != 2 {
		t.Fatalf("deprecated labels = %v, want x and y", d)
	}

	nta := merge.NodesToAttributes([]*yarnpb.GetNodesToAttributesResponseProto{
		{NodesToAttributes: []*yarnpb.NodeToAttributesProto{{Node: proto.String("h1"), NodeAttributes: []*yarnpb.NodeAttributeProto{{}}}}},
		{NodesToAttributes: []*yarnpb.NodeToAttributesProto{{Node: proto.String("h2")}, {Node: proto.String("h1"), NodeAttributes: []*yarnpb.NodeAttributeProto{{}}}}},
	}).GetNodesToAttributes()
	if len(nta) != 2 || nta[0].GetNode() != "h1" || len(nta[0].GetNodeAttributes()) != 2 || nta[1].GetNode() != "h2" {
		t.Fatalf("nodes to attributes = %v, want h1 with both attributes, then h2", nta)
	}
	if got := merge.ResourceTypeInfo(nil).GetResourceTypeInfo(); got != nil {
		t.Fatalf("no answers: resource types = %v, want none", got)
	}
}

// TestSecondManagedReportIsDropped: two managed reports of one id (a
// duplicate submission) are not summed; the first one seen is the answer.
func TestSecondManagedReportIsDropped(t *testing.T) {
	got := merge.Applications([][]*yarnpb.ApplicationReportProto{
		{rep(7, "first", false, 2, 100)},
		{rep(7, "second", false, 3, 300)},
	}, false)
	if len(got) != 1 || got[0].GetName() != "first" || got[0].GetAppResource_Usage().GetNumUsedContainers() != 2 {
		t.Fatalf("got %v, want the first report alone", got)
	}
}
