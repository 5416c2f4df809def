package kube

import (
	"errors"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/gpg/capacity"
)

// The REFERENCE §6 example node: origin 60646 milli-cores and 245976973438
// bytes of batch.
var refOrigin = `{"resources":{"kubernetes.io/batch-cpu":"60646","kubernetes.io/batch-memory":"245976973438"}}`

func TestNodeCompute(t *testing.T) {
	rules := nodeRules{defaultSubCluster: "sc-default", staleAfter: 15 * time.Minute}
	nm := mkPod("yarn", "nm", "n1", "", "", nodeManager(""))
	tests := []struct {
		name string
		node *corev1.Node
		pods []*corev1.Pod
		want NodeResult
	}{
		{
			name: "reference node, NodeManager only",
			node: mkNode("n1", refOrigin),
			pods: []*corev1.Pod{nm},
			// floor(60646/1000) = 60; floor(245976973438/2^20) = 234581 (234581.92)
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 60, MemoryMB: 234581}},
		},
		{
			name: "batch pods and the NodeManager pod's own requests (NM daemon + hdfs-dn) are subtracted",
			node: mkNode("n1", refOrigin),
			pods: []*corev1.Pod{
				// yarn-copilot's chart: yarn-nm 1k/1Gi and hdfs-dn 1k/1Gi.
				mkPod("yarn", "nm", "n1", "1k", "1Gi", nodeManager(""), container("1k", "1Gi")),
				mkPod("spark", "a", "n1", "2000", "4Gi"),
				mkPod("spark", "b", "n1", "1500", "1Gi"),
			},
			// 60646-2000-3500 = 55146 -> 55;
			// 245976973438-2*2^30-5*2^30 = 238460780670 -> 227413 (227413.92)
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 55, MemoryMB: 227413}},
		},
		{
			name: "a pending NodeManager's request is reserved, but it makes no node usable",
			node: mkNode("n1", origin("10000", "10Gi")),
			pods: []*corev1.Pod{mkPod("yarn", "nm", "n1", "2000", "2Gi", nodeManager(""), phase(corev1.PodPending))},
			want: NodeResult{Status: NodeNoNodeManager},
		},
		{
			name: "a pending second NodeManager's request is subtracted from the running one's node",
			node: mkNode("n1", origin("10000", "10Gi")),
			pods: []*corev1.Pod{
				mkPod("yarn", "nm", "n1", "2000", "2Gi", nodeManager("")),
				mkPod("yarn", "nm-new", "n1", "2000", "2Gi", nodeManager(""), phase(corev1.PodPending)),
			},
			// 10000-4000 = 6000 -> 6; 10Gi-4Gi = 6Gi
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 6, MemoryMB: 6 * 1024}},
		},
		{
			name: "canonicalised quantities (the API server writes 12000 back as 12k)",
			node: mkNode("n1", origin("12k", "64Gi")),
			pods: []*corev1.Pod{nm, mkPod("spark", "a", "n1", "1k", "1G")},
			// 12000-1000 = 11000 -> 11; 64*2^30 - 10^9 = 67719476736 -> 64582 (64582.33)
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 11, MemoryMB: 64582}},
		},
		{
			name: "JSON numbers as Koordinator's own tests write them",
			node: mkNode("n1", `{"resources": {"kubernetes.io/batch-cpu": 1000,"kubernetes.io/batch-memory": 1073741824}}`),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 1, MemoryMB: 1024}},
		},
		{
			name: "units floor: 1999 milli is 1 vcore, 2^20-1 bytes is 0 MiB",
			node: mkNode("n1", origin("1999", "1048575")),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 1, MemoryMB: 0}},
		},
		{
			name: "terminated pods are ignored; pending and unknown ones count",
			node: mkNode("n1", origin("10000", "10Gi")),
			pods: []*corev1.Pod{nm,
				mkPod("s", "done", "n1", "1000", "1Gi", phase(corev1.PodSucceeded)),
				mkPod("s", "failed", "n1", "1000", "1Gi", phase(corev1.PodFailed)),
				mkPod("s", "pending", "n1", "2000", "2Gi", phase(corev1.PodPending)),
				mkPod("s", "unknown", "n1", "3000", "", phase(corev1.PodUnknown)),
			},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 5, MemoryMB: 8 * 1024}},
		},
		{
			name: "pods asking more than the origin floor at 0",
			node: mkNode("n1", origin("4000", "4Gi")),
			pods: []*corev1.Pod{nm, mkPod("s", "big", "n1", "5000", "1Gi")},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 0, MemoryMB: 3 * 1024}},
		},
		{
			name: "init containers, sidecars and overhead as Kubernetes counts them",
			node: mkNode("n1", origin("20000", "20Gi")),
			pods: []*corev1.Pod{nm,
				// containers 1000 + sidecar 500 = 1500; init after the sidecar
				// 2000+500 = 2500 is the peak; + overhead 100 = 2600.
				// memory: 1Gi + 1Gi sidecar = 2Gi; init 1Gi+1Gi = 2Gi; + 0.
				mkPod("s", "side", "n1", "1000", "1Gi",
					initContainer("500", "1Gi", true), initContainer("2000", "1Gi", false), overhead("100", "")),
				// init 3000 > container 1000: 3000. memory container 2Gi.
				mkPod("s", "init", "n1", "1000", "2Gi", initContainer("3000", "1Gi", false)),
			},
			// 20000-2600-3000 = 14400 -> 14; 20Gi-4Gi = 16Gi
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 14, MemoryMB: 16 * 1024}},
		},
		{
			name: "the cluster-id annotation picks the sub-cluster",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{mkPod("yarn", "nm", "n1", "", "", nodeManager("sc-7"))},
			want: NodeResult{SubCluster: "sc-7", Usable: capacity.Resources{VCores: 2, MemoryMB: 2048}},
		},
		{
			name: "two NodeManagers of one sub-cluster count the node once",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{
				mkPod("yarn", "nm1", "n1", "", "", nodeManager("sc-default")),
				mkPod("yarn", "nm2", "n1", "", "", nodeManager("")),
			},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 2, MemoryMB: 2048}},
		},
		{
			name: "NodeManagers of two sub-clusters: the node counts for neither",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{
				mkPod("yarn", "nm1", "n1", "", "", nodeManager("sc-1")),
				mkPod("yarn", "nm2", "n1", "", "", nodeManager("sc-2")),
			},
			want: NodeResult{Status: NodeConflict},
		},
		{
			name: "a terminated NodeManager of another sub-cluster is no conflict",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{
				mkPod("yarn", "nm1", "n1", "", "", nodeManager("sc-1")),
				mkPod("yarn", "nm2", "n1", "", "", nodeManager("sc-2"), phase(corev1.PodFailed)),
			},
			want: NodeResult{SubCluster: "sc-1", Usable: capacity.Resources{VCores: 2, MemoryMB: 2048}},
		},
		{
			name: "no NodeManager: YARN cannot use the node",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{mkPod("s", "a", "n1", "1000", "1Gi")},
			want: NodeResult{Status: NodeNoNodeManager},
		},
		{
			name: "a pending NodeManager is not running yet",
			node: mkNode("n1", origin("2000", "2Gi")),
			pods: []*corev1.Pod{mkPod("yarn", "nm", "n1", "", "", nodeManager(""), phase(corev1.PodPending))},
			want: NodeResult{Status: NodeNoNodeManager},
		},
		{
			name: "Koordinator <= 1.3 (no origin annotation): the batch allocatable counts",
			node: mkNode("n1", "", allocatable(corev1.ResourceList{BatchCPU: mustQ("20k"), BatchMemory: mustQ("50Gi")})),
			pods: []*corev1.Pod{mkPod("yarn", "nm", "n1", "1k", "1Gi", nodeManager("")), mkPod("s", "a", "n1", "3000", "3Gi")},
			// 20000-1000-3000 = 16000 -> 16; 50Gi-4Gi = 46Gi = 47104 MiB
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 16, MemoryMB: 47104}, Status: NodeContributingAllocatable},
		},
		{
			name: "Koordinator <= 1.3 reset (no origin, batch gone from allocatable) is 0",
			node: mkNode("n1", "", allocatable(corev1.ResourceList{corev1.ResourceCPU: mustQ("8")})),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBatchReset},
		},
		{
			name: "garbage origin annotation is 0",
			node: mkNode("n1", "{not json"),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBadOrigin},
		},
		{
			name: "negative origin is 0, not a debt",
			node: mkNode("n1", origin("-1000", "2Gi")),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBadOrigin},
		},
		{
			name: "an origin past int64 is 0, never unlimited",
			node: mkNode("n1", origin("1e30", "2Gi")),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBadOrigin},
		},
		{
			name: "origin without batch memory counts memory 0",
			node: mkNode("n1", `{"resources":{"kubernetes.io/batch-cpu":"3000"}}`),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 3}},
		},
		{
			name: "Koordinator reset (batch gone from allocatable) is 0 even with an old origin",
			node: mkNode("n1", origin("2000", "2Gi"), allocatable(corev1.ResourceList{BatchCPU: mustQ("1k")})),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBatchReset},
		},
		{
			name: "Koordinator reset as 1.4+ writes it: batch keys deleted, origin 0",
			node: mkNode("n1", origin("0", "0"), allocatable(corev1.ResourceList{corev1.ResourceCPU: mustQ("8")})),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeBatchReset},
		},
		{
			name: "allocatable batch 0 is legitimate (YARN holds it all): the origin counts",
			node: mkNode("n1", origin("2000", "2Gi"), allocatable(corev1.ResourceList{BatchCPU: mustQ("0"), BatchMemory: mustQ("0")})),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 2, MemoryMB: 2048}},
		},
		{
			name: "NotReady node is 0",
			node: mkNode("n1", origin("2000", "2Gi"), ready(corev1.ConditionUnknown, testNow)),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeNotReady},
		},
		{
			name: "node without a Ready condition is 0",
			node: mkNode("n1", origin("2000", "2Gi"), noReadyCondition),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeNotReady},
		},
		{
			name: "Ready heartbeat older than the staleness bound is 0",
			node: mkNode("n1", origin("2000", "2Gi"), ready(corev1.ConditionTrue, testNow.Add(-15*time.Minute))),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Status: NodeStale},
		},
		{
			// Koordinator's CPU normalization amplifies a node's CPU by its
			// ratio before the batch figures are published, so batch-cpu is
			// already in normalized cores, the unit the NodeManager is sized
			// in and the RM places containers by: the ratio is deliberately
			// not applied again (x2) nor undone (/2). gpg/DESIGN.md, "CPU
			// normalization".
			name: "CPU normalization ratio: batch-cpu read as published",
			node: mkNode("n1", origin("10000", "10Gi"), func(n *corev1.Node) {
				n.Labels = map[string]string{"node.koordinator.sh/cpu-normalization-enabled": "true"}
				n.Annotations["node.koordinator.sh/cpu-normalization-ratio"] = "2.00"
			}),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 10, MemoryMB: 10240}},
		},
		{
			name: "Ready heartbeat just inside the bound counts",
			node: mkNode("n1", origin("2000", "2Gi"), ready(corev1.ConditionTrue, testNow.Add(-15*time.Minute+time.Second))),
			pods: []*corev1.Pod{nm},
			want: NodeResult{SubCluster: "sc-default", Usable: capacity.Resources{VCores: 2, MemoryMB: 2048}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rules.compute(tc.node, tc.pods, testNow)
			got.FreshUntil, got.NodeID = time.Time{}, ""
			if got != tc.want {
				t.Errorf("compute = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFreshUntil(t *testing.T) {
	rules := nodeRules{defaultSubCluster: "sc", staleAfter: 10 * time.Minute}
	hb := testNow.Add(-time.Minute)
	got := rules.compute(mkNode("n1", origin("1000", "1Gi"), ready(corev1.ConditionTrue, hb)),
		[]*corev1.Pod{mkPod("y", "nm", "n1", "", "", nodeManager(""))}, testNow)
	if want := hb.Add(10 * time.Minute); !got.FreshUntil.Equal(want) {
		t.Errorf("FreshUntil = %v, want %v", got.FreshUntil, want)
	}
}

func TestNodeID(t *testing.T) {
	rules := nodeRules{defaultSubCluster: "sc", staleAfter: time.Hour}
	n := mkNode("n1", origin("1000", "1Gi"))
	one := rules.compute(n, []*corev1.Pod{mkPod("y", "nm", "n1", "", "", nodeManager(""))}, testNow)
	if one.NodeID != "n1:8041" {
		t.Errorf("one NodeManager: NodeID %q, want n1:8041", one.NodeID)
	}
	two := rules.compute(n, []*corev1.Pod{
		mkPod("y", "nm", "n1", "", "", nodeManager("")), mkPod("y", "nm2", "n1", "", "", nodeManager("sc")),
	}, testNow)
	if two.Status != NodeContributing || two.NodeID != "" {
		t.Errorf("two NodeManagers of one sub-cluster: %+v, want contributing without a NodeID", two)
	}
}

func TestPodBatchRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want Batch
	}{
		{"one container", mkPod("s", "p", "n", "1500", "1Ki"), Batch{MilliCPU: 1500, Memory: 1024}},
		{"no batch requests", mkPod("s", "p", "n", "", ""), Batch{}},
		{"containers add", mkPod("s", "p", "n", "1000", "1Ki", container("2000", "1Ki")), Batch{MilliCPU: 3000, Memory: 2048}},
		{"init peak wins", mkPod("s", "p", "n", "1000", "1Ki", initContainer("5000", "", false)), Batch{MilliCPU: 5000, Memory: 1024}},
		{"init containers take the max, not the sum", mkPod("s", "p", "n", "", "", initContainer("3000", "", false), initContainer("2000", "", false)), Batch{MilliCPU: 3000, Memory: 0}},
		{"sidecars add to containers", mkPod("s", "p", "n", "1000", "", initContainer("500", "", true)), Batch{MilliCPU: 1500, Memory: 0}},
		{"an init container before a sidecar does not add it", mkPod("s", "p", "n", "1000", "", initContainer("1200", "", false), initContainer("500", "", true)), Batch{MilliCPU: 1500, Memory: 0}},
		{"an init container after a sidecar adds it", mkPod("s", "p", "n", "1000", "", initContainer("500", "", true), initContainer("1200", "", false)), Batch{MilliCPU: 1700, Memory: 0}},
		{"overhead adds", mkPod("s", "p", "n", "1000", "1Ki", overhead("250", "1Ki")), Batch{MilliCPU: 1250, Memory: 2048}},
		{"canonical forms", mkPod("s", "p", "n", "2k", "1M"), Batch{MilliCPU: 2000, Memory: 1_000_000}},
		{"fractions round up (less capacity, never more)", mkPod("s", "p", "n", "1500m", "1.5"), Batch{MilliCPU: 2, Memory: 2}},
		{"huge requests saturate", mkPod("s", "p", "n", "1e30", "", container("1e30", "")), Batch{MilliCPU: math.MaxInt64, Memory: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodBatchRequests(tc.pod); got != tc.want {
				t.Errorf("PodBatchRequests = %+v, want %+v", got, tc.want)
			}
			if got := recordOfPod(tc.pod).facts.request; got != tc.want {
				t.Errorf("stored record's request = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeOriginBatch(t *testing.T) {
	tests := []struct {
		in      string
		want    Batch
		wantErr bool
	}{
		{refOrigin, Batch{MilliCPU: 60646, Memory: 245976973438}, false},
		{origin("12k", "1Gi"), Batch{MilliCPU: 12000, Memory: 1 << 30}, false},
		{`{"resources":{}}`, Batch{}, false},
		{`{"resources":{"kubernetes.io/mid-cpu":"5"}}`, Batch{}, false},
		{`{}`, Batch{}, true},
		{`null`, Batch{}, true},
		{``, Batch{}, true},
		{`{"resources":{"kubernetes.io/batch-cpu":"abc"}}`, Batch{}, true},
		{`{"resources":{"kubernetes.io/batch-cpu":"1500m"}}`, Batch{}, true},
		{`{"resources":{"kubernetes.io/batch-cpu":"-1"}}`, Batch{}, true},
		{`{"resources":{"kubernetes.io/batch-memory":"9223372036854775808"}}`, Batch{}, true},
		{`{"resources":{"kubernetes.io/batch-memory":"9223372036854775807"}}`, Batch{MilliCPU: 0, Memory: math.MaxInt64}, false},
	}
	for _, tc := range tests {
		got, err := DecodeOriginBatch(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("DecodeOriginBatch(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !errors.Is(err, ErrBadOrigin) {
			t.Errorf("DecodeOriginBatch(%q) error %v does not wrap ErrBadOrigin", tc.in, err)
		}
	}
}

func TestTransformRecords(t *testing.T) {
	p := mkPod("yarn", "nm", "n1", "1000", "1Gi", nodeManager("sc-1"))
	out, err := transform(p)
	if err != nil {
		t.Fatal(err)
	}
	rec := out.(*podRecord)
	if rec.Namespace != "yarn" || rec.Name != "nm" || rec.node != "n1" || rec.facts != factsOfPod(p) {
		t.Errorf("pod record %+v", rec)
	}
	if rec.facts.clusterID != "sc-1" || rec.facts.nodeID != "n1:8041" || !rec.facts.nodeManager {
		t.Errorf("pod record lost NodeManager identity: %+v", rec.facts)
	}
	if again, _ := transform(rec); again != any(rec) {
		t.Error("a record is transformed again")
	}
	n := mkNode("n1", refOrigin)
	nout, _ := transform(n)
	if nr := nout.(*nodeRecord); nr.Name != "n1" || nr.facts != factsOfNode(n) || nr.facts.origin != (Batch{MilliCPU: 60646, Memory: 245976973438}) {
		t.Errorf("node record %+v", nr)
	}
	if c := rec.DeepCopyObject().(*podRecord); c == rec || c.facts != rec.facts || c.Name != rec.Name {
		t.Error("DeepCopyObject")
	}
}
