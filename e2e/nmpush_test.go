//go:build interop

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/gpg/kube/nmpush"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"google.golang.org/protobuf/proto"
)

// gpgAdminUser is the user the GPG's node-resource push claims; the RM's
// yarn.admin.acl names it.
const gpgAdminUser = "yarnfed-gpg"

// fixedNodes is a fake nmpush.NodeSource: one NodeManager with a set
// usable capacity, standing in for the Kubernetes source.
type fixedNodes map[string]kube.NodeResult

func (f fixedNodes) Nodes() map[string]kube.NodeResult { return f }

// TestRealRMNodeResourcePush: nmpush's pusher, over our Hadoop IPC client,
// sets a real Hadoop 3.4 RM's NodeManager to exactly the pushed capacity
// (its REST /ws/v1/cluster/nodes totalResource, MiB and vcores), as a user
// in yarn.admin.acl, even beside a NodeManager the RM does not know; a user
// outside the ACL changes nothing.
func TestRealRMNodeResourcePush(t *testing.T) {
	needJava(t)
	mc := newCluster(t, clusterOptions{clusterID: "e2e-nmpush", epoch: 31, nms: 1,
		set: []string{"yarn.admin.acl=" + gpgAdminUser}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rest := rmrest.NewClient(loopback(mc.info.Web))
	nodes, err := rest.GetNodes(ctx, "")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("RM nodes %v, err %v", nodes, err)
	}
	nm := nodes[0]
	before := fmt.Sprintf("%d/%d", nm.TotalResource.Memory, nm.TotalResource.VCores)
	t.Logf("NodeManager %s registered with %s (MiB/vcores)", nm.ID, before)

	// An odd figure, different from the NodeManager's own size in both.
	usable := capacity.Resources{MemoryMB: 2345, VCores: 3}
	// A second NodeManager the RM does not know (its NM never
	// registered): a Hadoop RM refuses a whole request naming it, so the
	// pusher must retry the known one alone.
	src := fixedNodes{
		"k8s-node-0": {SubCluster: "SC-E2E", NodeID: nm.ID, Status: kube.NodeContributing, Usable: usable},
		"k8s-node-1": {SubCluster: "SC-E2E", NodeID: "localhost:1", Status: kube.NodeContributing, Usable: usable},
	}
	var logs strings.Builder // PushOnce logs why a call failed
	push := func(user string) int {
		cfg := nmpush.Config{PushConfig: kube.DefaultPushConfig()}
		cfg.Name, cfg.User = "e2e", user
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.RMs = staticRMs(map[string][]string{"SC-E2E": {loopback(mc.info.Admin)}})
		p, err := nmpush.New(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		return p.PushOnce(ctx)
	}
	total := func() string {
		nodes, err := rest.GetNodes(ctx, "")
		if err != nil || len(nodes) != 1 {
			t.Fatalf("RM nodes %v, err %v", nodes, err)
		}
		return fmt.Sprintf("%d/%d", nodes[0].TotalResource.Memory, nodes[0].TotalResource.VCores)
	}

	// Outside the admin ACL: refused, nothing changes.
	if n := push("mallory"); n != 0 || !strings.Contains(logs.String(), "AccessControlException") {
		t.Fatalf("a user outside yarn.admin.acl pushed %d NodeManagers; log:\n%s", n, logs.String())
	}
	if got := total(); got != before {
		t.Fatalf("a refused push changed the node to %s", got)
	}

	// The admin user: accepted, and the node's total becomes the figure
	// (the RM applies it through its dispatcher: poll).
	if n := push(gpgAdminUser); n != 1 || !strings.Contains(logs.String(), "unrecognized node") {
		t.Fatalf("pushed %d NodeManagers, want 1 (the registered one); log:\n%s", n, logs.String())
	}
	want := fmt.Sprintf("%d/%d", usable.MemoryMB, usable.VCores)
	deadline := time.Now().Add(30 * time.Second)
	for got := total(); got != want; got = total() {
		if time.Now().After(deadline) {
			t.Fatalf("RM shows node %s total %s, want %s", nm.ID, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("RM shows node %s total %s after the push", nm.ID, want)
}

// TestRealRMDrainAndUsed: against a real Hadoop 3.4 RM, the two halves of
// the co-location loop's RM side.
//   - What the write-back reads: the RM's REST usedMemoryMB and
//     usedVirtualCores of the NodeManager hold the containers an AM was
//     given (kube.RMNodesFromREST reads them as they are).
//   - A reset node's drain: nmpush sends 0 with overCommitTimeout -1; the
//     RM's totalResource becomes 0/0, and the allocated containers stay:
//     the NodeManager still holds them and the AM hears of no completed
//     container over the following heartbeats.
func TestRealRMDrainAndUsed(t *testing.T) {
	needJava(t)
	mc := newCluster(t, clusterOptions{clusterID: "e2e-drain", epoch: 32, nms: 1,
		set: []string{"yarn.admin.acl=" + gpgAdminUser}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rest := rmrest.NewClient(loopback(mc.info.Web))
	rc := rmClient(t, mc)
	id := submitUnmanaged(t, rc, "e2e-drain")
	am := amClient(t, mc, waitAMRMToken(t, rc, id))
	call(t, am, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
		Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(0), TrackingUrl: proto.String(""),
	}, &yarnpb.RegisterApplicationMasterResponseProto{})
	responseID := int32(0)
	ask := []*yarnpb.ResourceRequestProto{{
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		NumContainers: proto.Int32(2), RelaxLocality: proto.Bool(true),
	}}
	var got int
	heartbeat := func() *yarnpb.AllocateResponseProto {
		resp := call(t, am, "allocate", &yarnpb.AllocateRequestProto{Ask: ask, ResponseId: proto.Int32(responseID), Progress: proto.Float32(0.1)},
			&yarnpb.AllocateResponseProto{})
		ask, responseID = nil, resp.GetResponseId()
		got += len(resp.GetAllocatedContainers())
		return resp
	}
	poll(t, 60*time.Second, "two containers", func() bool { heartbeat(); return got >= 2 })

	// What the write-back reads.
	reader := kube.RMNodesFromREST(func(ctx context.Context, _ string) ([]rmrest.Node, error) { return rest.GetNodes(ctx, "") })
	nodes, err := reader.RMNodes(ctx, "SC-E2E")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("RM nodes %v, err %v", nodes, err)
	}
	var nmID string
	var used capacity.Resources
	for id, n := range nodes {
		nmID, used = id, n.Used
	}
	if used != (capacity.Resources{MemoryMB: 2048, VCores: 2}) {
		t.Fatalf("the RM's used resources on %s = %+v, want the two containers' 2048 MB / 2 vcores", nmID, used)
	}
	t.Logf("NodeManager %s: used %+v (what the write-back writes as 2k batch-cpu, 2Gi batch-memory)", nmID, used)

	// The drain.
	cfg := nmpush.Config{PushConfig: kube.DefaultPushConfig()}
	cfg.Name, cfg.User = "e2e", gpgAdminUser
	cfg.RMs = staticRMs(map[string][]string{"SC-E2E": {loopback(mc.info.Admin)}})
	p, err := nmpush.New(cfg, fixedNodes{"k8s-node-0": {SubCluster: "SC-E2E", NodeID: nmID, Status: kube.NodeBatchReset}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := p.PushOnce(ctx); n != 1 {
		t.Fatalf("drain pushed %d NodeManagers, want 1", n)
	}
	poll(t, 30*time.Second, "the RM's totalResource 0/0", func() bool {
		n, err := rest.GetNode(ctx, nmID)
		return err == nil && n.TotalResource.Memory == 0 && n.TotalResource.VCores == 0
	})
	for range 10 { // NodeManager heartbeats are 1 s in MiniYARNCluster's default; watch a few
		if c := heartbeat().GetCompletedContainerStatuses(); len(c) > 0 {
			t.Fatalf("a container completed after the drain: %v", c)
		}
		time.Sleep(300 * time.Millisecond)
	}
	n, err := rest.GetNode(ctx, nmID)
	if err != nil || n.UsedMemoryMB != 2048 || n.NumContainers != 2 {
		t.Fatalf("after the drain the NodeManager holds %d MB in %d containers (err %v), want 2048 MB in 2", n.UsedMemoryMB, n.NumContainers, err)
	}
	t.Logf("drained: total 0/0, still holding %d MB in %d containers", n.UsedMemoryMB, n.NumContainers)

	// The application ends; nothing of it may stay on the RM (an unmanaged
	// AM left RUNNING, or containers of a finished application).
	call(t, am, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(),
	}, &yarnpb.FinishApplicationMasterResponseProto{})
	checkNoLeaks(t, []leakTarget{{name: "e2e-drain", rmWeb: loopback(mc.info.Web)}}, time.Time{}, leakCheckTimeout)
	poll(t, 30*time.Second, "the NodeManager holding nothing after the application ended", func() bool {
		n, err := rest.GetNode(ctx, nmID)
		return err == nil && n.NumContainers == 0 && n.UsedMemoryMB == 0
	})
}

// staticRMs is a fixed nmpush.RMs.
func staticRMs(m map[string][]string) nmpush.RMs {
	return nmpush.RMsFunc(func(context.Context) (map[string][]string, error) { return m, nil })
}
