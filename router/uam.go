package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/yarnid"
)

// Applications that span sub-clusters (issue 19). An AMRMProxy runs an
// application's unmanaged AM (UAM, same ApplicationId) on each secondary
// sub-cluster it uses and records it in the state store's UAM registry
// (UAMAPI.md). The router reads the registry to kill an application
// everywhere and to show where it runs.

// uamMetrics are the kill fan-out's and the registry's series.
type uamMetrics struct {
	kills    *prometheus.CounterVec // subcluster, outcome: killed, gone, failed
	fanout   prometheus.Histogram
	registry *prometheus.CounterVec // op: GetUAMs, DeleteUAM
}

func newUAMMetrics(reg prometheus.Registerer) *uamMetrics {
	m := &uamMetrics{
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_uam_kills_total",
			Help: "Unmanaged AMs of killed applications killed on secondary sub-clusters, by sub-cluster and outcome (killed, gone: the RM no longer knew it, failed: left to the GPG and the AMRMProxy).",
		}, []string{"subcluster", "outcome"}),
		fanout: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "yarnfed_router_kill_fanout_seconds",
			Help:    "Time from a kill reaching the router to the last secondary's answer to the kill of the application's unmanaged AM (kills of spanning applications only).",
			Buckets: []float64{.001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		registry: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yarnfed_router_uam_registry_errors_total",
			Help: "Failed UAM registry calls to the state store, by operation (GetUAMs, DeleteUAM).",
		}, []string{"op"}),
	}
	if reg != nil {
		reg.MustRegister(m.kills, m.fanout, m.registry)
	}
	return m
}

// --- Kill ---

// forceKillApplication is the IPC kill: the application ACLs exactly as
// for any per-app call, then killApp.
func (r *Router) forceKillApplication(ctx context.Context, req *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
	id := req.GetApplicationId()
	if id != nil {
		auditOf(ctx).App = yarnid.AppIDString(id)
	}
	if err := r.checkAppCall(ctx, "forceKillApplication", id, req); err != nil {
		return &yarnpb.KillApplicationResponseProto{}, err
	}
	return r.killApp(ctx, id)
}

// killApp kills app at its home and, once the home took the kill, the
// app's UAM on every secondary the registry lists (killUAMs). The client
// gets the home's answer whatever the secondaries say: a home that refused
// (its ACLs, reached as the caller) or could not be reached kills nothing
// anywhere, so a refused caller cannot kill through a secondary whose RM
// checks less.
func (r *Router) killApp(ctx context.Context, id *yarnpb.ApplicationIdProto) (*yarnpb.KillApplicationResponseProto, error) {
	start := time.Now()
	resp := &yarnpb.KillApplicationResponseProto{}
	if err := r.onHome(ctx, "forceKillApplication", id, &yarnpb.KillApplicationRequestProto{ApplicationId: id}, resp); err != nil {
		return resp, err
	}
	home, _, err := r.homeOf(ctx, id) // cached by onHome
	if err != nil {
		home = ""
	}
	r.killUAMs(ctx, id, home, start)
	return resp, nil
}

// killUAMs reads app's rows (linearizable: a row written before the home
// kill is seen), kills the app on each listed secondary concurrently, each
// through that RM's breaker and as the calling user, and then deletes the
// rows of the UAMs that are gone. A secondary that fails keeps its row:
// the GPG's reaper and the AMRMProxy end that UAM later.
func (r *Router) killUAMs(ctx context.Context, id *yarnpb.ApplicationIdProto, home SubClusterID, start time.Time) {
	key := yarnid.AppIDString(id)
	// The client hanging up after the home kill must not stop the rest.
	ctx = context.WithoutCancel(ctx)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout.D())
	rows, err := r.store.GetUAMs(rctx, key, false)
	cancel()
	if err != nil {
		r.uam.registry.WithLabelValues("GetUAMs").Inc()
		r.log.Warn("kill: reading the UAM registry failed; the application's unmanaged AMs are left to the GPG", "app", key, "err", err)
		r.auditUAMKill(ctx, key, home, nil, nil, err, time.Since(start))
		return
	}
	rows = slices.DeleteFunc(rows, func(u UAMRow) bool { return u.SubCluster == home })
	if len(rows) == 0 {
		return
	}
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, u := range rows {
		wg.Go(func() { errs[i] = r.killUAM(ctx, id, u.SubCluster) })
	}
	wg.Wait()
	took := time.Since(start)
	r.uam.fanout.Observe(took.Seconds())
	var killed, failed []SubClusterID
	for i, u := range rows {
		if errs[i] != nil {
			failed = append(failed, u.SubCluster)
			r.log.Warn("kill: the application's unmanaged AM was not killed; its row stays for the GPG and the AMRMProxy",
				"app", key, "subcluster", u.SubCluster, "err", errs[i])
		} else {
			killed = append(killed, u.SubCluster)
		}
	}
	// One delete for the whole application when every UAM is gone (the
	// lead's API); else only the rows of the killed ones.
	var derr error
	dctx, dcancel := context.WithTimeout(ctx, r.cfg.CallTimeout.D())
	defer dcancel()
	if len(failed) == 0 {
		_, derr = r.store.DeleteUAM(dctx, key, "")
	} else {
		for _, sc := range killed {
			if _, err := r.store.DeleteUAM(dctx, key, sc); err != nil {
				derr = errors.Join(derr, err)
			}
		}
	}
	if derr != nil {
		r.uam.registry.WithLabelValues("DeleteUAM").Inc()
		r.log.Warn("kill: deleting UAM rows failed (the UAMs are killed; the GPG or the AMRMProxy removes the rows)", "app", key, "err", derr)
	}
	var ferr error
	for _, e := range errs {
		if e != nil {
			ferr = errors.Join(ferr, e)
		}
	}
	r.auditUAMKill(ctx, key, home, killed, failed, ferr, took)
}

// killUAM kills the application on one secondary. An RM that no longer
// knows it (it expired the UAM, or lost it in a restart without recovery)
// counts as killed.
func (r *Router) killUAM(ctx context.Context, id *yarnpb.ApplicationIdProto, scID SubClusterID) error {
	sc, ok := r.members.get(scID)
	if !ok {
		r.uam.kills.WithLabelValues(string(scID), "failed").Inc()
		return fmt.Errorf("sub-cluster %s is not registered", scID)
	}
	err := r.callSC(ctx, sc, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
	switch {
	case err == nil:
		r.uam.kills.WithLabelValues(string(scID), "killed").Inc()
	case isClass(err, hadoopipc.ClassApplicationNotFound):
		r.uam.kills.WithLabelValues(string(scID), "gone").Inc()
		err = nil
	default:
		r.uam.kills.WithLabelValues(string(scID), "failed").Inc()
	}
	return err
}

// auditUAMKill is the fan-out's audit line: who killed which application's
// UAMs where, and which secondaries did not take the kill.
func (r *Router) auditUAMKill(ctx context.Context, app string, home SubClusterID, killed, failed []SubClusterID, err error, took time.Duration) {
	if !r.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	join := func(ids []SubClusterID) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = string(id)
		}
		return strings.Join(s, ",")
	}
	attrs := []slog.Attr{slog.String("user", u.Name), slog.String("operation", "killUnmanagedAMs"),
		slog.String("target", "RouterClientRMService"), slog.String("app", app), slog.String("home", string(home)),
		slog.String("killed", join(killed)), slog.String("failed", join(failed)), slog.Duration("took", took)}
	if err != nil {
		attrs = append(attrs, slog.String("result", "FAILURE"), slog.String("err", err.Error()))
	} else {
		attrs = append(attrs, slog.String("result", "SUCCESS"))
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

// --- Where an application runs ---

// uamPart is an application's report from one secondary sub-cluster.
type uamPart struct {
	sc  SubClusterID
	rep *yarnpb.ApplicationReportProto
	err error
}

// mayHaveUAMs says whether an application in this state can have UAMs
// worth a registry read: its AM registered (RUNNING), a later attempt is
// starting (ACCEPTED after attempt 1), or it is final (its UAMs may
// linger, which is what an operator looks for). A fresh submission
// (ACCEPTED, first attempt) has none, so the submit-then-report path
// costs nothing more.
func mayHaveUAMs(rep *yarnpb.ApplicationReportProto) bool {
	switch rep.GetYarnApplicationState() {
	case yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.YarnApplicationStateProto_FINISHED,
		yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return true
	case yarnpb.YarnApplicationStateProto_ACCEPTED:
		return rep.GetCurrentApplicationAttemptId().GetAttemptId() > 1
	}
	return false
}

// restMayHaveUAMs is mayHaveUAMs for an RM's REST document (which has no
// attempt number: every ACCEPTED app is read).
func restMayHaveUAMs(state string) bool {
	switch state {
	case "NEW", "NEW_SAVING", "SUBMITTED":
		return false
	}
	return true
}

// uamParts reads app's registry rows (a replica's copy: this is display
// only) and asks each listed secondary for its report of the app,
// concurrently, as the caller. A registry that cannot be read gives no
// parts (the home's report is still right, just not summed).
func (r *Router) uamParts(ctx context.Context, id *yarnpb.ApplicationIdProto, home SubClusterID) []uamPart {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout.D())
	rows, err := r.store.GetUAMs(rctx, yarnid.AppIDString(id), true)
	cancel()
	if err != nil {
		r.uam.registry.WithLabelValues("GetUAMs").Inc()
		r.log.Debug("report: reading the UAM registry failed", "app", yarnid.AppIDString(id), "err", err)
		return nil
	}
	rows = slices.DeleteFunc(rows, func(u UAMRow) bool { return u.SubCluster == home })
	parts := make([]uamPart, len(rows))
	var wg sync.WaitGroup
	for i, u := range rows {
		parts[i].sc = u.SubCluster
		wg.Go(func() {
			sc, ok := r.members.get(u.SubCluster)
			if !ok {
				parts[i].err = fmt.Errorf("sub-cluster %s is not registered", u.SubCluster)
				return
			}
			resp := &yarnpb.GetApplicationReportResponseProto{}
			if err := r.callSC(ctx, sc, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp); err != nil {
				parts[i].err = err
				return
			}
			if rep := resp.GetApplicationReport(); merge.IsUAMReport(rep) {
				parts[i].rep = rep
			} else {
				parts[i].err = fmt.Errorf("sub-cluster %s reports %s as a managed application, not a UAM", u.SubCluster, yarnid.AppIDString(id))
			}
		})
	}
	wg.Wait()
	return parts
}

// foldUAMParts sums the secondaries' usage (containers, resources,
// resource-seconds) into the home's report, as getApplications does for a
// list (Hadoop's router folds UAMs into the home app the same way).
func foldUAMParts(home *yarnpb.ApplicationReportProto, parts []uamPart) {
	for _, p := range parts {
		if p.rep != nil {
			merge.FoldUAM(home, p.rep)
		}
	}
}

// appSubCluster is one sub-cluster's line of an application's span.
func appSubCluster(sc SubClusterID, home bool, a rmrest.App) rmrest.AppSubCluster {
	return rmrest.AppSubCluster{SubClusterID: string(sc), Home: home, State: a.State, RunningContainers: a.RunningContainers,
		AllocatedMB: a.AllocatedMB, AllocatedVCores: a.AllocatedVCores}
}

// spanREST folds the secondaries' parts into a home REST document and
// lists the span: the home first, then each secondary (with the error of
// one that did not answer). Without parts the document is left as the RM
// sent it, unless always (the web UI's page shows the home alone).
func spanREST(app *rmrest.App, home SubClusterID, parts []uamPart, always bool) {
	if len(parts) == 0 && !always {
		return
	}
	span := &rmrest.AppSubClusters{SubCluster: []rmrest.AppSubCluster{appSubCluster(home, true, *app)}}
	now := time.Now()
	for _, p := range parts {
		if p.err != nil {
			span.SubCluster = append(span.SubCluster, rmrest.AppSubCluster{SubClusterID: string(p.sc), Error: p.err.Error()})
			continue
		}
		u := AppInfo(p.rep, now)
		foldAppInfo(app, u)
		span.SubCluster = append(span.SubCluster, appSubCluster(p.sc, false, u))
	}
	app.SubClusters = span
}

// foldAppInfo adds a UAM's REST document into its home app's
// (allocations, containers and resource-seconds summed, tags joined).
func foldAppInfo(home *rmrest.App, u rmrest.App) {
	home.AllocatedMB += u.AllocatedMB
	home.AllocatedVCores += u.AllocatedVCores
	home.ReservedMB += u.ReservedMB
	home.ReservedVCores += u.ReservedVCores
	home.RunningContainers += u.RunningContainers
	home.MemorySeconds += u.MemorySeconds
	home.VCoreSeconds += u.VCoreSeconds
	home.QueueUsagePercentage += u.QueueUsagePercentage
	home.ClusterUsagePercentage += u.ClusterUsagePercentage
	tags := strings.Split(home.ApplicationTags, ",")
	for _, t := range strings.Split(u.ApplicationTags, ",") {
		if t != "" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	home.ApplicationTags = strings.Trim(strings.Join(tags, ","), ",")
}

// MergeAppInfosBySC is MergeAppInfos over lists that say which
// sub-cluster each came from: an app with UAM copies also gets its span
// (home and secondaries, with each one's containers) in SubClusters.
func MergeAppInfosBySC(ids []SubClusterID, lists [][]rmrest.App, partial bool) []rmrest.App {
	merged := MergeAppInfos(lists, partial)
	isUAM := func(a *rmrest.App) bool { return a.UnmanagedApplication && strings.HasPrefix(a.Name, merge.UAMName) }
	type where struct {
		home  SubClusterID
		homeA *rmrest.App
		uams  []rmrest.AppSubCluster
	}
	var spans map[string]*where
	for i, l := range lists {
		for j := range l {
			a := &l[j]
			if !isUAM(a) {
				continue
			}
			if spans == nil {
				spans = map[string]*where{}
			}
			w := spans[a.ID]
			if w == nil {
				w = &where{}
				spans[a.ID] = w
			}
			w.uams = append(w.uams, appSubCluster(ids[i], false, *a))
		}
	}
	if spans == nil {
		return merged
	}
	for i, l := range lists {
		for j := range l {
			a := &l[j]
			if w := spans[a.ID]; w != nil && w.homeA == nil && !isUAM(a) {
				w.home, w.homeA = ids[i], a
			}
		}
	}
	for i := range merged {
		w := spans[merged[i].ID]
		if w == nil {
			continue
		}
		var sub []rmrest.AppSubCluster
		if w.homeA != nil {
			sub = append(sub, appSubCluster(w.home, true, *w.homeA))
		}
		merged[i].SubClusters = &rmrest.AppSubClusters{SubCluster: append(sub, w.uams...)}
	}
	return merged
}

// --- Cluster metrics ---

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
func (r *Router) withoutUAMs(ctx context.Context, sc SubClusterInfo, m *rmrest.ClusterMetrics) {
	uams, err := r.appsOf(ctx, sc, rmrest.AppsQuery{Name: merge.UAMName})
	if err != nil {
		r.log.Warn("metrics: listing the sub-cluster's unmanaged AMs failed; its application counts include them", "subcluster", sc.ID, "err", err)
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
