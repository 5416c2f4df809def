package gpg

import (
	"context"
	"fmt"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// markLost marks usable sub-clusters (NEW, RUNNING, UNHEALTHY) whose last
// heartbeat is older than the expiry as SC_LOST (Hadoop's
// SubClusterCleaner, which checks isUsable: NEW and RUNNING; UNHEALTHY is
// added because an unhealthy sub-cluster that goes silent is just as
// gone). The store re-checks the heartbeat when it applies the change, so
// one that heartbeated meanwhile stays; a later heartbeat brings a lost
// sub-cluster back (Hadoop semantics).
func (g *GPG) markLost(ctx context.Context, fence *client.Fence) ([]string, error) {
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("list sub-clusters: %w", err)
	}
	cutoff := g.now().Add(-g.cfg.Liveness.Expiry.D())
	var ids []string
	for _, sc := range scs {
		switch sc.GetState() {
		case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY:
		default:
			continue
		}
		if time.UnixMilli(sc.GetLastHeartbeatMs()).Before(cutoff) {
			ids = append(ids, sc.GetSubClusterId())
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if fence == nil || !g.lease.holding() {
		return nil, errNotLeader
	}
	marked, err := g.store.MarkSubClustersLost(ctx, ids, cutoff.UnixMilli(), fence)
	g.metrics.storeWrite("mark_subclusters_lost", err)
	if err != nil {
		return nil, fmt.Errorf("mark sub-clusters lost: %w", err)
	}
	for _, id := range marked {
		g.log.Warn("gpg liveness: sub-cluster marked SC_LOST; its heartbeat is older than the expiry", "subcluster", id, "expiry", g.cfg.Liveness.Expiry.D())
	}
	g.metrics.markedLost.Add(float64(len(marked)))
	return marked, nil
}
