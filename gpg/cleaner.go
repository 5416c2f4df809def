package gpg

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// cleanResult is what one cleaner round did.
type cleanResult struct {
	Complete   bool     // every required RM answered completely
	Reason     string   // why not, when !Complete
	Candidates int      // rows old enough to judge
	Deleted    []string // deleted (or, in dry-run, would be)
}

// asked classifies a sub-cluster for the cleaner.
func asked(s pb.SubClusterState) (ask, required bool) {
	switch s {
	case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY, pb.SubClusterState_SC_DECOMMISSIONING:
		// Registered and not final: its RM may run our applications, so
		// without its complete answer nothing is deleted.
		return true, true
	case pb.SubClusterState_SC_LOST:
		// Its agent went silent, its RM may still run applications: asked,
		// and rows homed there are kept unless it answers.
		return true, false
	}
	// UNREGISTERED, DECOMMISSIONED: the RM left the federation.
	return false, false
}

// askEachRM calls ask for every sub-cluster in scs at once, each call
// bounded by timeout under ctx, and gives each answer by sub-cluster id once
// all are in.
func askEachRM[T any](ctx context.Context, timeout time.Duration, scs []*pb.SubClusterInfo, ask func(context.Context, *pb.SubClusterInfo) T) map[string]T {
	out := make(map[string]T, len(scs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sc := range scs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			a := ask(cctx, sc)
			mu.Lock()
			out[sc.GetSubClusterId()] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// cleanApps runs one application-cleaner round. It deletes an
// application's home only when every registered sub-cluster's RM answered
// completely, the row is older than the grace period, and the application
// is unknown to every RM that answered or finished longer ago than the
// retention everywhere it is known. Rows homed in a LOST sub-cluster whose
// RM did not answer are kept.
func (g *GPG) cleanApps(ctx context.Context, fence *client.Fence) (cleanResult, error) {
	cfg := g.cfg.Cleaner
	now := g.now()
	cutoff := now.Add(-cfg.Grace.D())
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return cleanResult{}, fmt.Errorf("list sub-clusters: %w", err)
	}

	// Ask every RM concurrently; any failure of a required one ends the
	// round with no deletion.
	type answer struct {
		apps map[string]AppState
		err  error
	}
	states := make(map[string]pb.SubClusterState, len(scs))
	var ask []*pb.SubClusterInfo
	for _, sc := range scs {
		states[sc.GetSubClusterId()] = sc.GetState()
		if yes, _ := asked(sc.GetState()); yes {
			ask = append(ask, sc)
		}
	}
	answers := askEachRM(ctx, cfg.RMTimeout.D(), ask, func(cctx context.Context, sc *pb.SubClusterInfo) answer {
		apps, err := g.apps.ListApps(cctx, sc)
		return answer{apps, err}
	})
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := answers[id]
		if _, required := asked(states[id]); required && a.err != nil {
			g.metrics.blocked.WithLabelValues(id).Inc()
			return cleanResult{Reason: fmt.Sprintf("sub-cluster %s did not answer completely: %v", id, a.err)}, nil
		}
	}

	// Rows old enough to judge, oldest first.
	var rows []*pb.ApplicationHome
	var token []byte
	for {
		page, next, err := g.store.ListApplicationHomes(ctx, client.ListQuery{PageToken: token})
		if err != nil {
			return cleanResult{}, fmt.Errorf("list application homes: %w", err)
		}
		for _, h := range page {
			if h.GetCreateTimeMs() < cutoff.UnixMilli() {
				rows = append(rows, h)
			}
		}
		if len(next) == 0 {
			break
		}
		token = next
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].GetCreateTimeMs() < rows[j].GetCreateTimeMs() })

	res := cleanResult{Complete: true, Candidates: len(rows)}
	retained := now.Add(-cfg.Retention.D())
	for _, h := range rows {
		if len(res.Deleted) >= cfg.MaxPerRound {
			break
		}
		home := h.GetHomeSubClusterId()
		if a, ok := answers[home]; ok && a.err != nil {
			continue // a LOST home that did not answer: keep
		}
		known, deletable := false, true
		for _, id := range ids {
			a := answers[id]
			if a.err != nil {
				continue
			}
			st, ok := a.apps[h.GetApplicationId()]
			if !ok {
				continue
			}
			known = true
			if !st.Final || st.FinishedAt.IsZero() || st.FinishedAt.After(retained) {
				deletable = false
			}
		}
		if !deletable {
			continue
		}
		why := "finished before the retention period"
		if !known {
			why = "unknown to every RM"
		}
		g.log.Info("gpg cleaner: application home to delete", "app", h.GetApplicationId(), "home", home,
			"created", time.UnixMilli(h.GetCreateTimeMs()).UTC(), "reason", why, "dry_run", cfg.DryRun)
		res.Deleted = append(res.Deleted, h.GetApplicationId())
	}
	if cfg.DryRun || len(res.Deleted) == 0 {
		return res, nil
	}
	if !g.lease.holding() {
		return res, errNotLeader
	}
	deleted, err := g.store.DeleteApplicationHomes(ctx, res.Deleted, cutoff.UnixMilli(), fence)
	g.metrics.storeWrite("delete_application_homes", err)
	if err != nil {
		return res, fmt.Errorf("delete application homes: %w", err)
	}
	res.Deleted = deleted
	return res, nil
}
