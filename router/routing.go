package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
)

// The four routing patterns of Hadoop's FederationClientInterceptor:
// onAny (new ids), submit (policy + home row, submit.go), onHome (per-app
// calls) and fanout (list and cluster-wide calls, merged by merge.go).

// window is how long to wait for a routable sub-cluster after lastErr. An
// application error means an RM answered and refused: waiting will not help.
func (r *Router) window(lastErr error) time.Duration {
	if lastErr == nil || rmDown(lastErr) {
		return r.cfg.FailoverWait.D()
	}
	return 0
}

// onAny runs do on a random routable sub-cluster, retrying on others
// (getNewApplication, getNewReservation): Hadoop's numSubmitRetries with a
// per-request blacklist and RetryInterval pauses.
func (r *Router) onAny(ctx context.Context, method string, do func(sc SubClusterInfo) error) error {
	bl := r.newBlacklist()
	var lastErr error
	for try := 0; try < r.cfg.SubmitRetries; try++ {
		if try > 0 {
			r.metrics.retries.WithLabelValues(method).Inc()
			if err := sleep(ctx, r.cfg.RetryInterval.D()); err != nil {
				return err
			}
		}
		var cands []SubClusterInfo
		err := r.members.waitFor(ctx, r.window(lastErr), func() bool {
			cands = r.members.candidates(bl)
			return len(cands) > 0
		})
		if err != nil {
			return r.unroutable(firstErr(lastErr, err))
		}
		sc := cands[rand.IntN(len(cands))]
		if err := do(sc); err != nil {
			r.log.Warn("call failed, trying another sub-cluster", "method", method, "subcluster", sc.ID, "try", try, "err", err)
			lastErr = err
			bl.add(sc)
			continue
		}
		return nil
	}
	return r.unroutable(lastErr)
}

// homeOf returns the home of app: the cache, then the store, then asking
// every routable sub-cluster (and re-inserting the row it finds).
func (r *Router) homeOf(ctx context.Context, app *yarnpb.ApplicationIdProto) (SubClusterID, bool, error) {
	key := yarnid.AppIDString(app)
	if sc, ok := r.homes.get(key); ok {
		r.metrics.homeLookup.WithLabelValues("cache").Inc()
		return sc, true, nil
	}
	sc, err := r.store.GetApplicationHome(ctx, key)
	if err == nil {
		r.metrics.homeLookup.WithLabelValues("store").Inc()
		r.homes.put(key, sc)
		return sc, false, nil
	}
	noRow := errors.Is(err, ErrNoHome)
	if !noRow {
		// The store is unreachable: asking the RMs still answers the client.
		r.log.Warn("app home lookup failed, asking every sub-cluster", "app", key, "err", err)
	}
	r.metrics.homeLookup.WithLabelValues("fanout").Inc()
	found, ferr := r.findApp(ctx, app)
	if ferr != nil {
		if noRow {
			return "", false, ferr
		}
		return "", false, fmt.Errorf("%w; store: %w", ferr, err)
	}
	if noRow {
		if stored, _, _, err := r.store.AddApplicationHome(ctx, key, found, nil); err == nil {
			found = stored
		} else {
			r.log.Warn("re-inserting app home failed", "app", key, "subcluster", found, "err", err)
		}
	}
	r.homes.put(key, found)
	return found, false, nil
}

// findApp asks every routable sub-cluster for app and returns the one that
// runs its (managed) AM; UAM copies of a federated app exist elsewhere.
func (r *Router) findApp(ctx context.Context, app *yarnpb.ApplicationIdProto) (SubClusterID, error) {
	req := &yarnpb.GetApplicationReportRequestProto{ApplicationId: app}
	res, err := fanout(ctx, r, "getApplicationReport", req, func() *yarnpb.GetApplicationReportResponseProto {
		return &yarnpb.GetApplicationReportResponseProto{}
	}, true)
	if err != nil && len(res) == 0 {
		var re *hadoopipc.RemoteError
		if errors.As(err, &re) && re.Class == hadoopipc.ClassApplicationNotFound {
			return "", appNotFound(app)
		}
		return "", err
	}
	if len(res) == 0 {
		return "", appNotFound(app)
	}
	for _, x := range res {
		if !merge.IsUAMReport(x.resp.GetApplicationReport()) {
			return x.sc, nil
		}
	}
	// Only unmanaged-AM copies answered: the home is down or gone.
	// Recording a UAM's sub-cluster as the home would send kills and
	// moves to the wrong RM, so refuse instead.
	var where []string
	for _, x := range res {
		where = append(where, string(x.sc))
	}
	return "", hadoopipc.Errorf(hadoopipc.ClassYarnException,
		"%s: its home sub-cluster is unknown; only its unmanaged AMs answered (in %s)", yarnid.AppIDString(app), strings.Join(where, ", "))
}

// onHome forwards a per-application call to the app's home sub-cluster. A
// cached home that the RM does not know is re-read once; an RM that is down
// is waited for (failover window) and retried once it proves liveness.
func (r *Router) onHome(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req, resp proto.Message) error {
	if app == nil {
		return hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "%s: missing ApplicationId", method)
	}
	bl := r.newBlacklist()
	var lastErr error
	// All waiting for the home to come back shares one failover window.
	deadline := time.Now().Add(r.cfg.FailoverWait.D())
	for attempt := 0; attempt < 1+r.cfg.SubmitRetries; attempt++ {
		id, cached, err := r.homeOf(ctx, app)
		if err != nil {
			return err
		}
		var sc SubClusterInfo
		window := min(r.window(lastErr), max(0, time.Until(deadline)))
		// The home need not be routable for new work: a sub-cluster that is
		// decommissioning, deregistered or reported unhealthy may still run
		// the app, and its users must be able to see and kill it (Hadoop's
		// router calls the home whatever its state). Only an open breaker,
		// or this call's own failures, make it wait.
		err = r.members.waitFor(ctx, window, func() bool {
			var ok bool
			sc, ok = r.members.get(id)
			return ok && !r.brk.open(id) && !bl.excludes(sc)
		})
		if err != nil {
			if ctx.Err() != nil {
				return firstErr(lastErr, err)
			}
			if lastErr != nil {
				return r.homeDown(id, lastErr)
			}
			state := "not registered"
			if cur, ok := r.members.get(id); ok {
				state = cur.State.String()
				if r.brk.open(id) {
					state += ", circuit open"
				}
			}
			return r.homeDown(id, fmt.Errorf("home sub-cluster %s of %s is unavailable (%s): %w", id, yarnid.AppIDString(app), state, err))
		}
		auditOf(ctx).SC = sc.ID
		err = r.callSC(ctx, sc, method, req, resp)
		if err == nil {
			return nil
		}
		lastErr = err
		switch {
		case cached && isClass(err, hadoopipc.ClassApplicationNotFound):
			r.homes.drop(yarnid.AppIDString(app)) // stale cache: re-read the store
		case timedOut(err):
			bl.addHung(sc)
		case rmDown(err):
			bl.add(sc)
		default:
			return err
		}
	}
	var sce *SubClusterError
	if rmDown(lastErr) && errors.As(lastErr, &sce) {
		return r.homeDown(sce.SubCluster, lastErr)
	}
	return lastErr
}

// homeDown marks err, a failure to reach home id after the failover
// window, as retriable while id is expected back (registered, not in a
// final state): a client talking to that RM directly would keep retrying
// its connection, so a client of the router must not get a final error
// while the RM restarts or fails over. A sub-cluster that is gone for good
// gives the error as it is.
func (r *Router) homeDown(id SubClusterID, err error) error {
	sc, ok := r.members.get(id)
	if !ok || final(sc.State) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrSubClusterDown, err)
}

// timedOut: a call that got no answer in time (fed.TimedOut).
func timedOut(err error) bool { return fed.TimedOut(err) }

// final reports whether a sub-cluster in state s is not expected back
// without an operator (Hadoop's isFinal: LOST, UNREGISTERED, DECOMMISSIONED).
func final(s SubClusterState) bool {
	switch s {
	case StateLost, StateUnregistered, StateDecommissioned:
		return true
	}
	return false
}

type scResult[Resp any] struct {
	sc   SubClusterID
	resp Resp
}

// fanout calls every routable sub-cluster concurrently. With partial
// results off, any failure fails the call (Hadoop's default); with them on,
// failures are skipped unless all fail. Sub-clusters out of routing (store
// state, open breaker) are not asked, so one dead RM does not fail lists.
func fanout[Resp proto.Message](ctx context.Context, r *Router, method string, req proto.Message, newResp func() Resp, partial bool) ([]scResult[Resp], error) {
	cands, err := r.routableNow(ctx)
	if err != nil {
		return nil, r.unroutable(err)
	}
	ok, failed := fanOut(ctx, r.cfg.fan(), cands, func(ctx context.Context, sc SubClusterInfo) (scResult[Resp], error) {
		resp := newResp()
		if err := r.callSC(ctx, sc, method, req, resp); err != nil {
			return scResult[Resp]{}, err
		}
		return scResult[Resp]{sc: sc.ID, resp: resp}, nil
	})
	if len(failed) > 0 && (!partial || len(ok) == 0) {
		return ok, r.unroutable(joinSC(failed))
	}
	r.partialAnswer(ctx, method, failed)
	return ok, nil
}

// partialAnswer reports a fan-out answered without the sub-clusters of
// failed (partial results on): as Hadoop's Router, a log line naming them
// and a counter; the REST wrapper also names them in a response header
// (through the call's audit record). Nothing when none failed.
func (r *Router) partialAnswer(ctx context.Context, method string, failed []error) {
	if len(failed) == 0 {
		return
	}
	ids := fed.FailedIDs(failed)
	r.metrics.leftOut.WithLabelValues(method).Add(float64(len(failed)))
	fed.AuditOf(ctx).AddLeftOut(ids...)
	r.log.Warn("partial answer: sub-clusters left out", "method", method, "left_out", ids, "err", joinSC(failed))
}

// routableNow is the sub-clusters a fan-out asks, waiting up to
// FailoverWait for at least one to be routable.
func (r *Router) routableNow(ctx context.Context) ([]SubClusterInfo, error) {
	var cands []SubClusterInfo
	err := r.members.waitFor(ctx, r.cfg.FailoverWait.D(), func() bool {
		cands = r.members.candidates(nil)
		return len(cands) > 0
	})
	return cands, err
}

// fanOut runs fn on every sub-cluster, bounded by fan (fed.FanOut).
func fanOut[T any](ctx context.Context, fan fed.Fan, scs []SubClusterInfo, fn func(context.Context, SubClusterInfo) (T, error)) (ok []T, failed []error) {
	return fed.FanOut(ctx, fan, scs, fn)
}

// unroutable marks err, a call that found no sub-cluster to serve it (none
// routable within the failover window, or the ones tried were down), as
// retriable while some registered sub-cluster is expected back (not in a
// final state): as for a home that is down (homeDown), the client retries
// as it would retry an RM it talks to directly. Errors an RM answered
// with, and a federation with nothing left to come back, stay as they are.
func (r *Router) unroutable(err error) error {
	if err == nil || errors.Is(err, ErrSubClusterDown) {
		return err
	}
	if !errors.Is(err, ErrNoActiveSubCluster) && !fed.SubClusterDown(err) {
		return err
	}
	for _, sc := range r.members.all() {
		if !final(sc.State) {
			return fmt.Errorf("%w: %w", ErrSubClusterDown, err)
		}
	}
	return err
}

// joinSC names every failing sub-cluster, keeping the first error's class (fed.Join).
func joinSC(errs []error) error { return fed.Join(errs) }

func isClass(err error, class string) bool {
	var re *hadoopipc.RemoteError
	return errors.As(err, &re) && re.Class == class
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// appNotFound reads like an RM's ApplicationNotFoundException message,
// saying that every sub-cluster was asked.
func appNotFound(app *yarnpb.ApplicationIdProto) error {
	//lint:ignore ST1005 the text of the RM's own ApplicationNotFoundException
	return fmt.Errorf("Application with id '%s' doesn't exist in RM (no sub-cluster knows it): %w", yarnid.AppIDString(app), ErrAppNotFound)
}

// responses are the answers of res, in order (the merge functions need
// no sub-cluster ids).
func responses[Resp any](res []scResult[Resp]) []Resp {
	out := make([]Resp, len(res))
	for i, x := range res {
		out[i] = x.resp
	}
	return out
}

func (r *Router) mergeApplications(res []scResult[*yarnpb.GetApplicationsResponseProto]) *yarnpb.GetApplicationsResponseProto {
	lists := make([][]*yarnpb.ApplicationReportProto, len(res))
	for i, x := range res {
		lists[i] = x.resp.GetApplications()
	}
	return &yarnpb.GetApplicationsResponseProto{Applications: merge.Applications(lists, r.cfg.PartialResults)}
}
