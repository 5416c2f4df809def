package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// TestGPGNodeResourcePush runs two `yarnfed gpg` commands with
// node_resource_push enabled over a real kube-apiserver, a 3-replica Raft
// store and a simrm sub-cluster registered by its agent. It checks that
//  1. each NodeManager's usable capacity, exact to the MiB, becomes the
//     node's total capability on the RM (the admin address taken from the
//     store's membership, which nothing in the config names);
//  2. the GPG that does not hold the lease makes no updateNodeResource call;
//  3. when the holder stops, the other takes over and pushes a new figure.
func TestGPGNodeResourcePush(t *testing.T) {
	kc := kubetest.Start(t, kubetest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := startFederation(t, fedOptions{Replicas: 3, SubClusters: []fedSubCluster{{"SC-K8S", 3}}, Probe: 200 * time.Millisecond})
	cl, rm := f.Store, f.RMs[0]
	hosts := rm.NodeHosts()

	// Kubernetes nodes named as the RM's NodeManagers (the NodeManager pods'
	// node-id annotation is <node>:8041, simrm's NodeId).
	k := newKoordCluster(t, kc)
	// hosts[0]: 16000-2500 = 13500 milli -> 13 vcores; 20000000000 bytes
	// - 2Gi = 17852516352 bytes -> 17025 MiB (floor of 17025.5, in 2^20
	// bytes; a 10^6 reading would say 17853).
	k.node(hosts[0], "16000", "20000000000")
	k.pod("yarn", "nm-0", hosts[0], "", "", "SC-K8S")
	k.pod("spark", "a", hosts[0], "2500", "2Gi", "")
	// hosts[1]: 6 vcores, 12288 MiB, nothing else on it.
	k.node(hosts[1], "6000", "12Gi")
	k.pod("yarn", "nm-1", hosts[1], "", "", "SC-K8S")
	// hosts[2] has no NodeManager pod: its RM figure is left alone.
	want := map[string]string{hosts[0] + ":8041": "17025/13", hosts[1] + ":8041": "12288/6", hosts[2] + ":8041": "8192/8"}

	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "gpg.json")
	kubeconfig := kc.WriteKubeconfig(t, kc.AdminToken)
	if err := os.WriteFile(cfgFile, []byte(`{"interval":"1h","lease_ttl":"3s","kubernetes":[
		{"name":"k8s-test","kubeconfig":"`+kubeconfig+`","default_sub_cluster":"SC-K8S",
		 "node_resource_push":{"enabled":true,"user":"yarn","interval":"200ms"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func(id string) *gpgCmd { return startGPGCmd(t, ctx, cl, cfgFile, id) }
	holding := func(p *gpgCmd) bool {
		var st gpg.Status
		getJSON(t, "http://"+p.web+"/gpg/v1/status", &st)
		return st.Holding
	}
	// The first holds the lease before the second starts.
	first := start("gpg-a")
	storetest.Poll(t, 30*time.Second, func() bool { return holding(first) })
	second := start("gpg-b")

	// 1. The pushed figures reach the RM.
	began := time.Now()
	waitNodeTotals(t, rm, want)
	t.Logf("pushed capacities on the RM %v after the second GPG started: %v", time.Since(began).Round(time.Millisecond), want)
	if m := promValue(t, first.web, `yarnfed_gpg_kube_node_resource_pushes_total{kubernetes_cluster="k8s-test",sub_cluster="SC-K8S"}`); m < 2 {
		t.Errorf("holder's pushes_total %v, want >= 2", m)
	}

	// 2. The standby made no call, though its pusher ran.
	storetest.Poll(t, 30*time.Second, func() bool {
		return promValue(t, second.web, `yarnfed_gpg_kube_node_resource_push_rounds_total{kubernetes_cluster="k8s-test",result="standby"}`) >= 3
	})
	if holding(second) {
		t.Fatal("both GPGs hold the lease")
	}
	prom := getText(t, "http://"+second.web+"/prom")
	if strings.Contains(prom, "yarnfed_gpg_kube_update_node_resource_calls_total{") ||
		!strings.Contains(prom, `yarnfed_gpg_kube_node_resource_push_rounds_total{kubernetes_cluster="k8s-test",result="pushed"} 0`) {
		t.Fatalf("the standby GPG pushed:\n%s", grepLines(prom, "node_resource"))
	}

	// 3. The holder stops (releasing the lease); the other takes over and
	// pushes what changed meanwhile: the batch pod grows.
	first.stop()
	k.replacePod("spark", "a", hosts[0], "10000", "8Gi") // 6 vcores; 20000000000 - 8Gi -> 10881 MiB
	want[hosts[0]+":8041"] = "10881/6"
	waitNodeTotals(t, rm, want)
	if !holding(second) {
		t.Fatal("the figure changed but the second GPG does not hold the lease")
	}
	if m := promValue(t, second.web, `yarnfed_gpg_kube_update_node_resource_calls_total{kubernetes_cluster="k8s-test",result="ok",sub_cluster="SC-K8S"}`); m < 1 {
		t.Errorf("new holder's ok calls %v", m)
	}
}

// waitNodeTotals polls the RM's REST /ws/v1/cluster/nodes until every
// node's totalResource is want[id] ("MiB/vcores").
func waitNodeTotals(t *testing.T, rm *simrm.RM, want map[string]string) {
	t.Helper()
	c := rmrest.NewClient(rm.Addrs().Web)
	var last map[string]string
	deadline := time.Now().Add(60 * time.Second)
	for {
		nodes, err := c.GetNodes(context.Background(), "")
		if err == nil {
			last = map[string]string{}
			for _, n := range nodes {
				last[n.ID] = fmt.Sprintf("%d/%d", n.TotalResource.Memory, n.TotalResource.VCores)
			}
			if fmt.Sprint(last) == fmt.Sprint(want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("RM node totals %v (err %v), want %v", last, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promValue reads one sample (full name with labels, as /prom prints it)
// from a role's /prom; 0 if absent.
func promValue(t *testing.T, web, sample string) float64 {
	t.Helper()
	for _, l := range strings.Split(getText(t, "http://"+web+"/prom"), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	return 0
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
