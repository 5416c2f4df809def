package amrmproxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Why an attempt's local state ended without its AM finishing (audit
// reason and the attempts_ended_total label).
const (
	endKilled  = "killed"  // the application was killed (router, yarn application -kill)
	endFailed  = "failed"  // the application failed, or another attempt is current
	endReaped  = "reaped"  // the application finished without this proxy, or its home no longer knows it
	endExpired = "expired" // attempt_expiry passed without a call (the home could not tell)
)

// dropAttempt forgets a (already out of p.attempts, UAM connections
// closed): metrics, the home connection, the state on disk.
func (p *Proxy) dropAttempt(a *attempt) {
	p.metrics.attempts.Dec()
	for _, u := range a.uams {
		if u.isReady() {
			p.metrics.uams.Dec()
		}
	}
	p.homes.Forget(a.id)
	if err := p.state.DeleteAttempt(a.id.String()); err != nil {
		p.log.Error("cannot delete the attempt's state", "attempt", a.id, "err", err)
		p.metrics.stateErrors.Inc()
	}
}

// supersede ends, on this proxy, every earlier attempt of a's application
// (its AM is gone: the RM started a) and returns the UAMs they held, for
// a to re-attach. Their UAMs are neither unregistered nor their rows
// deleted: they now belong to a.
func (p *Proxy) supersede(a *attempt) map[string]previousUAM {
	var old []*attempt
	p.mu.Lock()
	for id, b := range p.attempts {
		if b != a && id.ClusterTimestamp == a.id.ClusterTimestamp && id.App == a.id.App && id.Attempt < a.id.Attempt {
			delete(p.attempts, id)
			old = append(old, b)
		}
	}
	p.mu.Unlock()
	out := map[string]previousUAM{}
	for _, b := range old {
		b.mu.Lock() // wait out a call of the old AM in progress
		for sc, u := range b.uams {
			u.mu.Lock()
			tok, reg, nm := u.token, u.registered, u.nm.list()
			u.mu.Unlock()
			if tok != nil {
				out[sc] = previousUAM{sc: sc, token: tok, registered: reg, from: p.proxyID + "/" + b.id.String(),
					nmTokens: nm, amAttempt: b.id.Attempt}
			}
		}
		b.close()
		b.mu.Unlock()
		p.dropAttempt(b)
		p.metrics.attemptsEnded.WithLabelValues(endFailed).Inc()
		p.audit.Info("attempt-end", "attempt", b.id.String(), "reason", endFailed, "detail", "superseded by "+a.id.String()+" on this proxy",
			"uams_handed_over", len(b.uams))
	}
	return out
}

// checkSilent looks at every attempt whose AM has been silent for
// SilentAM (and not checked for as long): the home's application report
// says whether it is still worth keeping.
func (p *Proxy) checkSilent(now time.Time) {
	bound := p.cfg.SilentAM.D()
	var due []*attempt
	p.mu.Lock()
	for _, a := range p.attempts {
		if now.Sub(time.Unix(0, a.lastCall.Load())) >= bound && now.Sub(time.Unix(0, a.lastCheck.Load())) >= bound && a.checking.CompareAndSwap(false, true) {
			a.lastCheck.Store(now.UnixNano())
			due = append(due, a)
		}
	}
	p.mu.Unlock()
	for _, a := range due {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer a.checking.Store(false)
			p.checkAttempt(p.ctx, a)
		}()
	}
}

// homeReport is what the home RM says of a's application.
type homeReport struct {
	state   yarnpb.YarnApplicationStateProto
	final   yarnpb.FinalApplicationStatusProto
	current string // current attempt id
	unknown bool   // the home does not know the application
}

func (p *Proxy) homeReport(ctx context.Context, a *attempt) (homeReport, error) {
	home, ok := p.members.get(a.home)
	if !ok {
		return homeReport{}, fmt.Errorf("%w: home %s not in membership", ErrSubClusterUnavailable, a.home)
	}
	c, err := p.clientRM(hostport.SplitList(home.ClientRMServiceAddress), "")
	if err != nil {
		return homeReport{}, err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
	defer cancel()
	resp := &yarnpb.GetApplicationReportResponseProto{}
	err = c.Call(cctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: a.id.ApplicationIDProto()}, resp)
	if remoteClass(err) == hadoopipc.ClassApplicationNotFound {
		return homeReport{unknown: true}, nil
	}
	if err != nil {
		return homeReport{}, err
	}
	r := resp.GetApplicationReport()
	cur := ""
	if at := r.GetCurrentApplicationAttemptId(); at != nil {
		cur = AttemptID{ClusterTimestamp: at.GetApplicationId().GetClusterTimestamp(), App: at.GetApplicationId().GetId(), Attempt: at.GetAttemptId()}.String()
	}
	return homeReport{state: r.GetYarnApplicationState(), final: r.GetFinalApplicationStatus(), current: cur}, nil
}

// checkAttempt asks a's home about its application and ends the attempt
// here when it is over: application final -> its UAMs are unregistered
// (or killed), their rows deleted, the state ended; another attempt
// current -> the state ends, the UAMs are left for that attempt.
func (p *Proxy) checkAttempt(ctx context.Context, a *attempt) {
	rep, err := p.homeReport(ctx, a)
	if err != nil {
		p.log.Debug("cannot check a silent AM's application at its home; will retry", "attempt", a.id, "err", err)
		return
	}
	switch {
	case rep.unknown:
		p.endAttempt(ctx, a, endReaped, true, yarnpb.FinalApplicationStatusProto_APP_FAILED, "its home RM does not know the application")
	case rep.state == yarnpb.YarnApplicationStateProto_KILLED:
		p.endAttempt(ctx, a, endKilled, true, yarnpb.FinalApplicationStatusProto_APP_KILLED, "the application was killed")
	case rep.state == yarnpb.YarnApplicationStateProto_FAILED:
		p.endAttempt(ctx, a, endFailed, true, yarnpb.FinalApplicationStatusProto_APP_FAILED, "the application failed")
	case rep.state == yarnpb.YarnApplicationStateProto_FINISHED:
		st := rep.final
		if st == yarnpb.FinalApplicationStatusProto_APP_UNDEFINED {
			st = yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED
		}
		p.endAttempt(ctx, a, endReaped, true, st, "the application finished without this proxy")
	case rep.current != "" && rep.current != a.id.String():
		if p.registry == nil {
			// Only this attempt knows its UAMs' tokens: keep it for the
			// next attempt should it register here (supersede), until the
			// application ends or attempt_expiry.
			return
		}
		p.endAttempt(ctx, a, endFailed, false, 0, "attempt "+rep.current+" is current")
	}
}

// endAttempt ends attempt a here without its AM finishing. final: the
// application is over, so its UAMs go too (unregistered with status, or
// killed when they cannot unregister) and their registry rows are deleted.
// A kill through the router has usually killed them already: the RMs then
// answer that the application is final, which ends them quietly.
func (p *Proxy) endAttempt(ctx context.Context, a *attempt, reason string, final bool, status yarnpb.FinalApplicationStatusProto, why string) {
	p.mu.Lock()
	if p.attempts[a.id] != a {
		p.mu.Unlock()
		return // finished or superseded meanwhile
	}
	delete(p.attempts, a.id)
	p.mu.Unlock()
	p.rememberFinished(a.id)
	a.mu.Lock() // wait out a call in progress
	ended := 0
	if final {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, u := range a.uams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.endUAM(ctx, u, status, why) {
					mu.Lock()
					ended++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	a.close()
	a.mu.Unlock()
	p.dropAttempt(a)
	p.audit.Info("attempt-end", "attempt", a.id.String(), "reason", reason, "detail", why, "uams", len(a.uams), "uams_ended", ended)
	p.metrics.attemptsEnded.WithLabelValues(reason).Inc()
}

// endUAM unregisters u (or kills its application on its sub-cluster when
// it cannot: never registered, token lost) and deletes its registry row.
// It reports whether the UAM is gone.
func (p *Proxy) endUAM(ctx context.Context, u *uamConn, status yarnpb.FinalApplicationStatusProto, why string) bool {
	wctx, cancel := context.WithTimeout(ctx, p.cfg.UAMLaunchTimeout.D())
	defer cancel()
	select {
	case <-u.ready: // a launch in flight ends first (bounded by uam_launch_timeout)
	case <-wctx.Done():
	}
	if !u.submitted() {
		if !isClosed(u.ready) {
			return false
		}
		// The row was written before the submit: the UAM may exist.
		if err := p.killUAM(ctx, u, why); err != nil {
			return false
		}
		p.deleteRow(ctx, u.a.id.AppKey(), u.sc)
		return true
	}
	u.mu.Lock()
	u.err = nil // a failed launch with a token: unregister with it all the same
	u.mu.Unlock()
	req := &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: status.Enum(),
		Diagnostics: proto.String("Ended by the yarnfed AMRMProxy: " + why)}
	err := u.finish(ctx, p, req) // deletes the row on success
	if err == nil {
		return true
	}
	// Not registered (or the RM forgot it): kill the UAM's application.
	if kerr := p.killUAM(ctx, u, why); kerr != nil {
		p.log.Warn("cannot end the UAM of an ended attempt; the GPG reaper or the RM's AM liveness will", "attempt", u.a.id, "subcluster", u.sc,
			"unregister", err, "kill", kerr)
		return false
	}
	p.deleteRow(ctx, u.a.id.AppKey(), u.sc)
	return true
}

// killUAM kills the application on u's sub-cluster, as its user (an RM
// lets the owner kill). An application already final or unknown there
// counts as killed.
func (p *Proxy) killUAM(ctx context.Context, u *uamConn, why string) error {
	sc, ok := p.members.get(u.sc)
	if !ok {
		return fmt.Errorf("%w: %s not in membership", ErrSubClusterUnavailable, u.sc)
	}
	return p.brk.do(u.sc, func() error {
		c, err := p.clientRM(hostport.SplitList(sc.ClientRMServiceAddress), u.a.user)
		if err != nil {
			return err
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
		defer cancel()
		err = c.Call(cctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: u.a.id.ApplicationIDProto(),
			Diagnostics: proto.String("Killed by the yarnfed AMRMProxy: " + why)}, &yarnpb.KillApplicationResponseProto{})
		if remoteClass(err) == hadoopipc.ClassApplicationNotFound {
			return nil
		}
		return err
	})
}

// saveHeld retries, on the membership tick, the saves that UAM answers are
// held for (their NM tokens; see uamConn.heartbeat). UAM heartbeats ride
// the AM's: an AM that died while the registry could not be written must
// not leave the row without tokens only the proxy holds, which a later
// attempt on another proxy needs. An attempt busy with an AM call is
// skipped (its heartbeats retry); a UAM with a call in flight too.
func (p *Proxy) saveHeld() {
	p.mu.Lock()
	atts := make([]*attempt, 0, len(p.attempts))
	for _, a := range p.attempts {
		atts = append(atts, a)
	}
	p.mu.Unlock()
	for _, a := range atts {
		if !a.mu.TryLock() {
			continue
		}
		uams := make([]*uamConn, 0, len(a.uams))
		for _, u := range a.uams {
			uams = append(uams, u)
		}
		a.mu.Unlock()
		for _, u := range uams {
			u.mu.Lock()
			due := len(u.held) > 0 && !u.inflight && !u.closed
			if due {
				u.inflight = true // no heartbeat meanwhile
			}
			u.mu.Unlock()
			if !due {
				continue
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				u.releaseHeld(p)
				u.mu.Lock()
				u.inflight = false
				u.mu.Unlock()
				u.kick() // what the AM asked meanwhile
			}()
		}
	}
}
