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
		cfg := nmpush.DefaultConfig()
		cfg.Name, cfg.User = "e2e", user
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		cfg.RMs = nmpush.StaticRMs{"SC-E2E": {loopback(mc.info.Admin)}}
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
