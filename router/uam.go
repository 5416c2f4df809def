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
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/rest"
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

// uamPart is an application's report from one secondary sub-cluster
// (router/rest renders it in a REST document's span).
type uamPart = rest.UAMPart

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
		parts[i].SC = u.SubCluster
		wg.Go(func() {
			sc, ok := r.members.get(u.SubCluster)
			if !ok {
				parts[i].Err = fmt.Errorf("sub-cluster %s is not registered", u.SubCluster)
				return
			}
			resp := &yarnpb.GetApplicationReportResponseProto{}
			if err := r.callSC(ctx, sc, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp); err != nil {
				parts[i].Err = err
				return
			}
			if rep := resp.GetApplicationReport(); merge.IsUAMReport(rep) {
				parts[i].Rep = rep
			} else {
				parts[i].Err = fmt.Errorf("sub-cluster %s reports %s as a managed application, not a UAM", u.SubCluster, yarnid.AppIDString(id))
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
		if p.Rep != nil {
			merge.FoldUAM(home, p.Rep)
		}
	}
}
