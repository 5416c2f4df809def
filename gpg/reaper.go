package gpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sort"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM reaper. An AMRMProxy spans an application over other
// sub-clusters with unmanaged AMs (UAMs) that carry the application's own
// id. When the application ends without its proxy unregistering them (the
// proxy died, the AM was killed, a secondary RM restarted and recovered a
// UAM nobody heartbeats), they keep their containers until the RM's AM
// liveness expires them (900 s and more with Hadoop 3.4). Each round the
// reaper lists every usable RM's live unmanaged applications, looks up each
// one's home, asks the home RM about the application and kills the UAMs
// of applications that are over. See DESIGN.md, "UAM reaper".

// liveAppStates are the YarnApplicationStates of a live application.
var liveAppStates = []string{"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING"}

// Why a UAM was killed.
const (
	reapHomeFinal   = "home_final"   // the home RM reports the application FINISHED, FAILED or KILLED
	reapHomeUnknown = "home_unknown" // the home RM answered completely and does not know it
)

// Why a UAM the reaper examined was left running.
const (
	keepHomeLive       = "home_live"        // the home RM lists the application live
	keepHomeUnanswered = "home_unanswered"  // the home RM did not answer completely (down, standby, restarted, partial), or the home left the federation
	keepHomeNotRunning = "home_not_running" // unknown to a home whose sub-cluster is not RUNNING
	keepHomeRecovering = "home_recovering"  // unknown to a home RM up for less than min_rm_uptime
	keepYoung          = "young"            // unknown to its home, but the UAM or the home row is younger than the grace
	keepNoHome         = "no_home"          // no application home in the store: not (or no longer) a federated application
	keepStoreError     = "store_error"      // the home row could not be read
	keepCapped         = "capped"           // beyond max_per_round; next round
	keepKillFailed     = "kill_failed"      // the RM refused or did not answer the kill; next round
)

// errHomeGone: the home sub-cluster has no row or left the federation
// (DECOMMISSIONED, UNREGISTERED): its address may name another RM now.
var errHomeGone = errors.New("gpg: the home sub-cluster is not registered in the federation")

// maxPendingUAMDeletes bounds the registry deletes remembered for a retry.
const maxPendingUAMDeletes = 10000

// reapResult is what one reaper round did.
type reapResult struct {
	Candidates int            // live UAMs of federated applications examined
	Reaped     []reapedUAM    // killed (in dry-run: would be)
	Kept       map[string]int // examined and left running, by reason
}

type reapedUAM struct {
	App, SubCluster, Home, Reason string
}

// liveUAM is one live unmanaged application an RM listed.
type liveUAM struct {
	app     rmrest.App
	sc      string
	rm      *rmrest.Client // the active RM that listed it: kills go there
	started time.Time
}

type homeVerdict int

const (
	homeLive homeVerdict = iota
	homeFinal
	homeUnknown
)

// homeAnswer is what the home RM said of one application.
type homeAnswer struct {
	verdict    homeVerdict
	state      string
	finishedAt time.Time
}

// reapScanned reports whether the reaper looks for UAMs in a sub-cluster
// of this state: the usable ones (NEW, RUNNING, UNHEALTHY) and one being
// decommissioned (its leftover UAMs are what keeps it from draining). A
// LOST sub-cluster's agent is silent and its address may be stale.
func reapScanned(s pb.SubClusterState) bool {
	switch s {
	case pb.SubClusterState_SC_NEW, pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY, pb.SubClusterState_SC_DECOMMISSIONING:
		return true
	}
	return false
}

// reapUAMs runs one reaper round. The caller checked that this GPG holds
// the lease; every kill checks it again.
func (g *GPG) reapUAMs(ctx context.Context) (reapResult, error) {
	cfg := g.cfg.UAMReaper
	now := g.now()
	graceCut := now.Add(-cfg.Grace.D())
	res := reapResult{Kept: map[string]int{}}
	keep := func(reason string) {
		res.Kept[reason]++
		g.metrics.uamsKept.WithLabelValues(reason).Inc()
	}
	if !cfg.DryRun {
		g.retryUAMDeletes(ctx)
	}
	scs, err := g.store.ListSubClusters(ctx, false)
	if err != nil {
		return res, fmt.Errorf("list sub-clusters: %w", err)
	}
	byID := make(map[string]*pb.SubClusterInfo, len(scs))
	for _, sc := range scs {
		byID[sc.GetSubClusterId()] = sc
	}

	// 1. Every usable RM's live unmanaged applications, concurrently. An
	// RM that fails is skipped: its UAMs wait for the next round.
	var scanned []*pb.SubClusterInfo
	for _, sc := range scs {
		if reapScanned(sc.GetState()) {
			scanned = append(scanned, sc)
		}
	}
	var uams []liveUAM
	for _, found := range askEachRM(ctx, cfg.RMTimeout.D(), scanned, func(cctx context.Context, sc *pb.SubClusterInfo) []liveUAM {
		found, err := g.reapRMs.liveUnmanaged(cctx, sc)
		if err != nil {
			g.metrics.uamErrors.WithLabelValues("list").Inc()
			if ctx.Err() == nil {
				g.log.Warn("gpg uam reaper: cannot list the RM's unmanaged applications; its UAMs wait for the next round",
					"subcluster", sc.GetSubClusterId(), "err", err)
			}
			return nil
		}
		return found
	}) {
		uams = append(uams, found...)
	}
	// Oldest first: the cap keeps the longest-running leftovers first.
	sort.Slice(uams, func(i, j int) bool {
		a, b := uams[i], uams[j]
		if !a.started.Equal(b.started) {
			return a.started.Before(b.started)
		}
		if a.app.ID != b.app.ID {
			return a.app.ID < b.app.ID
		}
		return a.sc < b.sc
	})

	// 2. Homes. A UAM of a federated application runs outside the home the
	// store names; an unmanaged application in its own home is the
	// application itself.
	type candidate struct {
		u    liveUAM
		home *pb.ApplicationHome
	}
	var cands []candidate
	homes := map[string]*pb.ApplicationHome{} // nil value: no home row
	ids := map[string][]string{}              // home -> application ids to ask about, oldest UAM first
	asking := map[string]bool{}
	for _, u := range uams {
		h, seen := homes[u.app.ID]
		if !seen {
			got, err := g.store.GetApplicationHome(ctx, u.app.ID, false)
			switch {
			case errors.Is(err, client.ErrNotFound):
			case err != nil:
				g.metrics.uamErrors.WithLabelValues("home_lookup").Inc()
				g.log.Warn("gpg uam reaper: cannot read the application's home; keeping its UAM", "app", u.app.ID, "subcluster", u.sc, "err", err)
				keep(keepStoreError)
				continue
			default:
				h = got
			}
			homes[u.app.ID] = h
		}
		if h == nil {
			// Not placed by a router of this federation (an unmanaged AM
			// submitted straight to the RM), or its home is gone: not ours
			// to judge. The RM's own AM liveness still ends it if abandoned.
			keep(keepNoHome)
			continue
		}
		home := h.GetHomeSubClusterId()
		if home == u.sc {
			continue
		}
		if !asking[u.app.ID] {
			asking[u.app.ID] = true
			ids[home] = append(ids[home], u.app.ID)
		}
		cands = append(cands, candidate{u: u, home: h})
	}
	res.Candidates = len(cands)
	g.metrics.uamCandidates.Set(float64(len(cands)))

	// 3. Ask each home RM about its applications, concurrently.
	type homeReply struct {
		apps       map[string]homeAnswer
		recovering bool
		err        error
	}
	gone := make(map[string]homeReply)
	var homeRMs []*pb.SubClusterInfo
	for home := range ids {
		sc := byID[home]
		if sc == nil {
			gone[home] = homeReply{err: errHomeGone}
			continue
		}
		if ask, _ := asked(sc.GetState()); !ask {
			gone[home] = homeReply{err: fmt.Errorf("%w: %s is %s", errHomeGone, home, sc.GetState())}
			continue
		}
		homeRMs = append(homeRMs, sc)
	}
	replies := askEachRM(ctx, cfg.RMTimeout.D(), homeRMs, func(cctx context.Context, sc *pb.SubClusterInfo) homeReply {
		apps, recovering, err := g.reapRMs.homeStates(cctx, sc, ids[sc.GetSubClusterId()], cfg.MaxPerRound)
		return homeReply{apps: apps, recovering: recovering, err: err}
	})
	maps.Copy(replies, gone)
	for home, r := range replies {
		if r.err != nil && !errors.Is(r.err, errHomeGone) {
			g.metrics.uamErrors.WithLabelValues("home_rm").Inc()
			if ctx.Err() == nil {
				g.log.Warn("gpg uam reaper: the home RM did not answer completely; keeping the UAMs of its applications",
					"home", home, "uams", len(ids[home]), "err", r.err)
			}
		}
	}

	// 4. Decide, oldest UAM first.
	type decision struct {
		candidate
		reason string
		answer homeAnswer
	}
	var reap []decision
	for _, c := range cands {
		home := c.home.GetHomeSubClusterId()
		r := replies[home]
		if r.err != nil {
			keep(keepHomeUnanswered)
			continue
		}
		a, ok := r.apps[c.u.app.ID]
		if !ok {
			keep(keepCapped) // not classified this round (the per-round bound)
			continue
		}
		var reason string
		switch a.verdict {
		case homeLive:
			keep(keepHomeLive)
			continue
		case homeFinal:
			reason = reapHomeFinal
		case homeUnknown:
			switch {
			case byID[home].GetState() != pb.SubClusterState_SC_RUNNING:
				keep(keepHomeNotRunning)
				continue
			case r.recovering:
				keep(keepHomeRecovering)
				continue
			case !c.u.started.Before(graceCut) || !time.UnixMilli(c.home.GetCreateTimeMs()).Before(graceCut):
				keep(keepYoung)
				continue
			}
			reason = reapHomeUnknown
		}
		if len(reap) >= cfg.MaxPerRound {
			keep(keepCapped)
			continue
		}
		reap = append(reap, decision{candidate: c, reason: reason, answer: a})
	}

	// 5. Act. Kills cannot be fenced on the RM: the lease is checked
	// before each, and any GPG would make the same decision.
	for _, d := range reap {
		attrs := []any{"operation", "reapUAM", "target", "GPGUAMReaper", "app", d.u.app.ID, "subcluster", d.u.sc,
			"home", d.home.GetHomeSubClusterId(), "reason", d.reason, "home_state", d.answer.state,
			"uam_state", d.u.app.State, "uam_user", d.u.app.User, "uam_queue", d.u.app.Queue,
			"uam_started", d.u.started.UTC(), "dry_run", cfg.DryRun}
		if cfg.DryRun {
			g.log.Info("audit", append(attrs, "result", "DRY_RUN")...)
			g.metrics.uamsDryRun.WithLabelValues(d.reason).Inc()
			res.Reaped = append(res.Reaped, reapedUAM{d.u.app.ID, d.u.sc, d.home.GetHomeSubClusterId(), d.reason})
			continue
		}
		if !g.lease.holding() {
			return res, errNotLeader
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.RMTimeout.D())
		err := g.reapRMs.kill(cctx, d.u.rm, d.u.app.ID)
		cancel()
		if err != nil {
			g.metrics.uamErrors.WithLabelValues("kill").Inc()
			g.log.Warn("audit", append(attrs, "result", "FAILURE", "err", err.Error())...)
			keep(keepKillFailed)
			continue
		}
		g.log.Info("audit", append(attrs, "result", "SUCCESS")...)
		g.metrics.uamsReaped.WithLabelValues(d.reason).Inc()
		if !d.answer.finishedAt.IsZero() {
			g.metrics.uamReapDelay.Observe(g.now().Sub(d.answer.finishedAt).Seconds())
		}
		res.Reaped = append(res.Reaped, reapedUAM{d.u.app.ID, d.u.sc, d.home.GetHomeSubClusterId(), d.reason})
		g.deleteUAMRow(ctx, uamKey{d.u.app.ID, d.u.sc})
	}
	return res, nil
}

// uamKey names one UAM registry row.
type uamKey struct{ app, sc string }

// deleteUAMRow deletes the registry row of a UAM just killed. The reaper
// finds UAMs on the RMs, not in the registry (which it may not read), so a
// row whose delete failed would never be seen again: it is remembered and
// retried at the start of the next rounds (in memory: a new lease holder
// does not know it; the row then stays until a proxy or router deletes it).
func (g *GPG) deleteUAMRow(ctx context.Context, k uamKey) {
	cctx, cancel := context.WithTimeout(ctx, g.cfg.UAMReaper.RMTimeout.D())
	_, err := g.uams.DeleteUAM(cctx, k.app, k.sc)
	cancel()
	g.metrics.storeWrite("delete_uam", err)
	g.reapMu.Lock()
	defer g.reapMu.Unlock()
	if err == nil {
		delete(g.pendingUAMDeletes, k)
		return
	}
	g.metrics.uamErrors.WithLabelValues("delete_uam").Inc()
	if _, ok := g.pendingUAMDeletes[k]; !ok && len(g.pendingUAMDeletes) >= maxPendingUAMDeletes {
		g.log.Error("gpg uam reaper: cannot delete the UAM registry row and too many retries are pending; the row stays",
			"app", k.app, "subcluster", k.sc, "err", err)
		return
	}
	g.pendingUAMDeletes[k] = struct{}{}
	g.log.Warn("gpg uam reaper: UAM killed but its registry row not deleted; retrying next round", "app", k.app, "subcluster", k.sc, "err", err)
}

// retryUAMDeletes resends the registry deletes that failed earlier
// (DeleteUAM is idempotent).
func (g *GPG) retryUAMDeletes(ctx context.Context) {
	g.reapMu.Lock()
	keys := make([]uamKey, 0, len(g.pendingUAMDeletes))
	for k := range g.pendingUAMDeletes {
		keys = append(keys, k)
	}
	g.reapMu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].app < keys[j].app || keys[i].app == keys[j].app && keys[i].sc < keys[j].sc
	})
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		g.deleteUAMRow(ctx, k)
	}
}

// ReapOnce runs one UAM reaper round now if this GPG holds the lease.
func (g *GPG) ReapOnce(ctx context.Context) {
	if g.lease.fence() == nil {
		g.metrics.uamRounds.WithLabelValues("standby").Inc()
		return
	}
	res, err := g.reapUAMs(ctx)
	g.mu.Lock()
	g.lastReap, g.reapResult, g.reapErr = g.now(), res, err
	g.mu.Unlock()
	if err != nil {
		g.metrics.uamRounds.WithLabelValues("error").Inc()
		if ctx.Err() == nil {
			g.log.Warn("gpg uam reaper round failed", "err", err)
		}
		return
	}
	g.metrics.uamRounds.WithLabelValues("done").Inc()
	lvl := slog.LevelDebug
	if len(res.Reaped) > 0 {
		lvl = slog.LevelInfo
	}
	g.log.Log(ctx, lvl, "gpg uam reaper round", "candidates", res.Candidates, "reaped", len(res.Reaped), "kept", res.Kept,
		"dry_run", g.cfg.UAMReaper.DryRun)
}

// reapRMs is how the reaper reads and acts on the RMs: their REST API, as
// the cleaner (SPNEGO under Kerberos, user.name otherwise).
type reapRMs struct{ *restLister }

// liveUnmanaged lists the live unmanaged applications of sc's active RM.
// Nothing is decided from an absence here, so no incarnation check.
func (r reapRMs) liveUnmanaged(ctx context.Context, sc *pb.SubClusterInfo) ([]liveUAM, error) {
	c, _, err := r.active(ctx, sc)
	if err != nil {
		return nil, err
	}
	apps, err := c.GetApps(ctx, rmrest.AppsQuery{States: liveAppStates, DeSelects: []string{"resourceRequests"}})
	if err != nil {
		return nil, fmt.Errorf("%s: list live applications: %w", c.BaseURL, err)
	}
	var out []liveUAM
	for _, a := range apps {
		if a.UnmanagedApplication {
			out = append(out, liveUAM{app: a, sc: sc.GetSubClusterId(), rm: c, started: time.UnixMilli(a.StartedTime)})
		}
	}
	return out, nil
}

// homeStates asks sc's active RM about the applications ids: live (in its
// list of live applications), final, or unknown (404). At most limit
// applications not listed live are looked up one by one; the others are
// left out of the answer. The answer is trusted only from one ACTIVE
// incarnation of the RM before and after (YARN-11387: a list taken across
// a restart is partial); recovering reports an RM up for less than
// min_rm_uptime, whose "unknown" may be an application not yet recovered.
func (r reapRMs) homeStates(ctx context.Context, sc *pb.SubClusterInfo, ids []string, limit int) (map[string]homeAnswer, bool, error) {
	c, before, err := r.active(ctx, sc)
	if err != nil {
		return nil, false, err
	}
	recovering := r.now().Sub(time.UnixMilli(before.StartedOn)) < r.minUptime
	live, err := c.GetApps(ctx, rmrest.AppsQuery{States: liveAppStates, DeSelects: []string{"resourceRequests"}})
	if err != nil {
		return nil, recovering, fmt.Errorf("%s: list live applications: %w", c.BaseURL, err)
	}
	liveSet := make(map[string]bool, len(live))
	for _, a := range live {
		liveSet[a.ID] = true
	}
	out := make(map[string]homeAnswer, len(ids))
	looked := 0
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		if liveSet[id] {
			out[id] = homeAnswer{verdict: homeLive}
			continue
		}
		if looked >= limit {
			continue
		}
		looked++
		a, err := c.GetApp(ctx, id)
		var re *rmrest.Error
		switch {
		case errors.As(err, &re) && re.Status == http.StatusNotFound && re.JavaClassName == rmrest.ClassNotFound:
			out[id] = homeAnswer{verdict: homeUnknown}
		case err != nil:
			return nil, recovering, fmt.Errorf("%s: application %s: %w", c.BaseURL, id, err)
		case finalState(a.State):
			ans := homeAnswer{verdict: homeFinal, state: a.State}
			if a.FinishedTime > 0 {
				ans.finishedAt = time.UnixMilli(a.FinishedTime)
			}
			out[id] = ans
		default:
			// Submitted or recovered since the list: live.
			out[id] = homeAnswer{verdict: homeLive, state: a.State}
		}
	}
	if err := sameIncarnation(ctx, c, before); err != nil {
		return nil, recovering, err
	}
	return out, recovering, nil
}

// kill asks the RM that listed the UAM to kill it (REST PUT state KILLED;
// the RM answers 200 when done, 202 while the kill proceeds). An
// application the RM no longer knows is gone already.
func (r reapRMs) kill(ctx context.Context, c *rmrest.Client, appID string) error {
	_, err := c.KillApp(ctx, appID)
	var re *rmrest.Error
	if errors.As(err, &re) && re.Status == http.StatusNotFound && re.JavaClassName == rmrest.ClassNotFound {
		return nil
	}
	return err
}
