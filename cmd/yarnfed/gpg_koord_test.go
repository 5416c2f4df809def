package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// TestGPGKoordinatorLoopTimings runs `yarnfed gpg` with the node-resource
// push (min_change 0: a pod is replaced by delete + create, and the
// in-between figure, 6 % above the final one, would otherwise stay on the
// RM until max_age) and the thirdPartyAllocations write-back on (both every
// 200 ms) over
// a real kube-apiserver, a 3-replica Raft store and two simrm sub-clusters,
// and measures the co-location loop's stages over 20 changes each:
//   - a batch pod replaced with another size -> the published capacity in
//     the store, the stored weights, the NodeManager's totalResource on the
//     RM;
//   - an application started or killed on the co-location RM -> every
//     Node's thirdPartyAllocations equal to what its NodeManager holds in
//     the RM.
//
// Each stage must complete (the truths are asserted); the times are logged
// (median, max) for gpg/DESIGN.md, never asserted.
func TestGPGKoordinatorLoopTimings(t *testing.T) {
	kc := kubetest.Start(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, fedOptions{Replicas: 3, SubClusters: []fedSubCluster{{"SC-1", 2}, {"SC-K8S", 2}}, Probe: 200 * time.Millisecond, LongRunning: true})
	cl, sc, rm := f.Store, f.SC, f.RMs[1]
	hosts := rm.NodeHosts()
	slices.Sort(hosts)
	k := newKoordCluster(t, kc)
	k.node(hosts[0], "32000", "32Gi")
	k.pod("yarn", "nm-0", hosts[0], "", "", "SC-K8S")
	k.pod("spark", "a", hosts[0], "2000", "2Gi", "")
	k.node(hosts[1], "8000", "8Gi")
	k.pod("yarn", "nm-1", hosts[1], "", "", "SC-K8S")

	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "gpg.json")
	if err := os.WriteFile(cfgFile, []byte(`{"interval":"1h","kubernetes":[
		{"name":"k8s-test","kubeconfig":"`+kc.WriteKubeconfig(t, kc.AdminToken)+`","default_sub_cluster":"SC-K8S",
		 "node_resource_push":{"enabled":true,"user":"yarn","interval":"200ms","min_change":0},
		 "third_party_allocations":{"enabled":true,"interval":"200ms"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGPGCmd(t, ctx, cl, cfgFile, "gpg-k")

	// Two sizes of pod "a", alternating: hosts[0] usable 30 vcores/30720 MiB
	// (2000 milli, 2Gi) or 0 (32000, 32Gi); hosts[1] 8/8192 always. Against
	// SC-1's 16/16384 the capacity policy's target moves by more than the
	// 5 % hysteresis each time (1/2 <-> 1/3 at least).
	sizes := []struct {
		cpu, mem string
		usable   capacity.Resources
	}{{"32000", "32Gi", capacity.Resources{}}, {"2000", "2Gi", capacity.Resources{VCores: 30, MemoryMB: 30720}}}
	nm0 := hosts[0] + ":8041"
	published := func() bool {
		info, err := sc.GetSubCluster(ctx, "SC-K8S")
		p := info.GetPublishedCapacity()
		return err == nil && p.GetMemoryMb() == 38912 && p.GetVcores() == 38
	}
	for deadline := time.Now().Add(60 * time.Second); !published() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !published() {
		info, _ := sc.GetSubCluster(ctx, "SC-K8S")
		t.Fatalf("published %v (want 38 vcores, 38912 MiB); hosts %v; /prom:\n%s", info.GetPublishedCapacity(), hosts, grepLines(getText(t, "http://"+g.web+"/prom"), "kube"))
	}
	var store, weights, rmTotal []time.Duration
	for i := range 20 {
		s := sizes[i%2]
		truth := capacity.SubCluster{ID: "SC-K8S", Usable: capacity.Resources{VCores: s.usable.VCores + 8, MemoryMB: s.usable.MemoryMB + 8192}, Nodes: 2}
		before := storedWeights(t, sc)["SC-K8S"]
		start := time.Now()
		k.replacePod("spark", "a", hosts[0], s.cpu, s.mem)
		var tStore, tWeights, tRM time.Duration
		stages := func() bool {
			now := time.Since(start)
			if tStore == 0 {
				info, err := sc.GetSubCluster(ctx, "SC-K8S")
				if p := info.GetPublishedCapacity(); err == nil && p != nil && p.GetMemoryMb() == truth.Usable.MemoryMB && p.GetVcores() == truth.Usable.VCores {
					tStore = now
				}
			}
			if tWeights == 0 && storedWeights(t, sc)["SC-K8S"] != before {
				tWeights = now
			}
			if tRM == 0 {
				n, err := rmrest.NewClient(rm.Addrs().Web).GetNode(ctx, nm0)
				if err == nil && n.TotalResource.Memory == s.usable.MemoryMB && int64(n.TotalResource.VCores) == s.usable.VCores {
					tRM = now
				}
			}
			return tStore > 0 && tWeights > 0 && tRM > 0
		}
		for deadline := time.Now().Add(60 * time.Second); !stages(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				info, _ := sc.GetSubCluster(ctx, "SC-K8S")
				n, err := rmrest.NewClient(rm.Addrs().Web).GetNode(ctx, nm0)
				var st gpg.Status
				getJSON(t, "http://"+g.web+"/gpg/v1/status", &st)
				t.Fatalf("change %d: store %v (published %v), weights %v (%v, before %v), RM %v (%+v, %v); status %+v", i, tStore, info.GetPublishedCapacity(),
					tWeights, storedWeights(t, sc), before, tRM, n.TotalResource, err, st)
			}
		}
		store, weights, rmTotal = append(store, tStore), append(weights, tWeights), append(rmTotal, tRM)
	}

	// Containers start (an application on the co-location RM) -> every
	// Node's entry equals its NodeManager's used resources.
	acp, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer acp.Close()
	entry := func(node string) string {
		n, err := k.c.Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Annotations[kube.AnnotationThirdPartyAllocations]
	}
	usedEntry := func(n rmrest.Node) string {
		return fmt.Sprintf(`{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":%q,"kubernetes.io/batch-memory":%q}}]}`,
			resource.NewQuantity(n.UsedVirtualCores*1000, resource.DecimalSI).String(), resource.NewQuantity(n.UsedMemoryMB<<20, resource.BinarySI).String())
	}
	var annotation []time.Duration
	var app *yarnpb.ApplicationIdProto
	for i := range 20 {
		var before int64
		nodes, err := rmrest.NewClient(rm.Addrs().Web).GetNodes(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			before += n.UsedMemoryMB
		}
		var start time.Time
		if i%2 == 0 { // containers start: an application
			var na yarnpb.GetNewApplicationResponseProto
			if err := acp.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &na); err != nil {
				t.Fatal(err)
			}
			app, start = na.ApplicationId, time.Now()
			if err := acp.Call(ctx, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
				ApplicationId: na.ApplicationId, ApplicationType: proto.String("SPARK"),
				AmContainerResourceRequest: []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"),
					Capability: &yarnpb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}},
			}}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
				t.Fatal(err)
			}
		} else { // containers stop: it is killed
			start = time.Now()
			if err := acp.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: app}, &yarnpb.KillApplicationResponseProto{}); err != nil {
				t.Fatal(err)
			}
		}
		// Done when YARN's holding changed and every Node's entry says
		// exactly what its NodeManager holds, read in one pass.
		var diag string
		done := func() bool {
			nodes, err := rmrest.NewClient(rm.Addrs().Web).GetNodes(ctx, "")
			if err != nil {
				return false
			}
			diag = ""
			for _, n := range nodes {
				diag += fmt.Sprintf("\n%s: RM used %d MB/%d vcores, entry %s", n.NodeHostName, n.UsedMemoryMB, n.UsedVirtualCores, entry(n.NodeHostName))
			}
			var used int64
			for _, n := range nodes {
				used += n.UsedMemoryMB
				host := n.NodeHostName
				// Nothing written yet counts as 0, as koord-manager reads it.
				if got := entry(host); got != usedEntry(n) && (got != "" || n.UsedMemoryMB != 0) {
					return false
				}
			}
			return used != before
		}
		for deadline := time.Now().Add(60 * time.Second); !done(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				var st gpg.Status
				getJSON(t, "http://"+g.web+"/gpg/v1/status", &st)
				t.Fatalf("change %d (before %d MB): %s\nstatus %+v\n%s", i, before, diag, st.Kubernetes, grepLines(getText(t, "http://"+g.web+"/prom"), "third_party"))
			}
		}
		annotation = append(annotation, time.Since(start))
	}
	stat := func(d []time.Duration) string {
		s := slices.Clone(d)
		slices.Sort(s)
		return fmt.Sprintf("median %v, max %v", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	t.Logf("pod replaced -> published capacity in the store: %s", stat(store))
	t.Logf("pod replaced -> stored weights changed:          %s", stat(weights))
	t.Logf("pod replaced -> RM totalResource of the NM:      %s", stat(rmTotal))
	t.Logf("containers started/stopped -> every Node's thirdPartyAllocations = the RM's used: %s", stat(annotation))
}
