package rest

import (
	"context"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
)

// restMayHaveUAMs is mayHaveUAMs for an RM's REST document (which has no
// attempt number: every ACCEPTED app is read).
func restMayHaveUAMs(state string) bool {
	switch state {
	case "NEW", "NEW_SAVING", "SUBMITTED":
		return false
	}
	return true
}

// spanREST folds the secondaries' parts into a home REST document and
// lists the span: the home first, then each secondary (with the error of
// one that did not answer). Without parts the document is left as the RM
// sent it, unless always (the web UI's page shows the home alone).
func spanREST(app *rmrest.App, home fed.SubClusterID, parts []UAMPart, always bool) {
	if len(parts) == 0 && !always {
		return
	}
	span := &rmrest.AppSubClusters{SubCluster: []rmrest.AppSubCluster{merge.AppSubCluster(home, true, *app)}}
	now := time.Now()
	for _, p := range parts {
		if p.Err != nil {
			span.SubCluster = append(span.SubCluster, rmrest.AppSubCluster{SubClusterID: string(p.SC), Error: p.Err.Error()})
			continue
		}
		u := AppInfo(p.Rep, now)
		merge.FoldAppInfo(app, u)
		span.SubCluster = append(span.SubCluster, merge.AppSubCluster(p.SC, false, u))
	}
	app.SubClusters = span
}

// withoutUAMs takes a sub-cluster's UAMs out of its application counts:
// the application is counted at its home, and a UAM is not another
// application (the RM counts it as one: appsRunning 2 for one spanning
// app). The UAMs are the RM's own list of applications named UnmanagedAM
// (the RM filters by name, so the list is small) that are unmanaged;
// counting from the RM's list rather than the registry keeps the counts
// exact when a row outlives its UAM or a UAM is not registered yet. A
// UAM leaves every count it entered: submitted, and pending, running or
// its final state's. A list that cannot be read leaves the counts as
// the RM sent them (logged).
func (r *API) withoutUAMs(ctx context.Context, sc fed.SubClusterInfo, m *rmrest.ClusterMetrics) {
	uams, err := r.appsOf(ctx, sc, rmrest.AppsQuery{Name: merge.UAMName})
	if err != nil {
		r.cfg.Log.Warn("metrics: listing the sub-cluster's unmanaged AMs failed; its application counts include them", "subcluster", sc.ID, "err", err)
		return
	}
	SubtractUAMs(m, uams)
}

// SubtractUAMs removes the UAMs among apps (one RM's list) from that RM's
// application counts, never below zero.
func SubtractUAMs(m *rmrest.ClusterMetrics, apps []rmrest.App) {
	dec := func(v *int32) { *v = max(0, *v-1) }
	for _, a := range apps {
		if !a.UnmanagedApplication || !strings.HasPrefix(a.Name, merge.UAMName) {
			continue
		}
		dec(&m.AppsSubmitted)
		switch a.State {
		case "RUNNING":
			dec(&m.AppsRunning)
		case "FINISHED":
			dec(&m.AppsCompleted)
		case "FAILED":
			dec(&m.AppsFailed)
		case "KILLED":
			dec(&m.AppsKilled)
		default: // NEW .. ACCEPTED
			dec(&m.AppsPending)
		}
	}
}
