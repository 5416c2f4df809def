package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/state"
	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// uamConn is the application's unmanaged AM on one secondary sub-cluster:
// launched once, then heartbeated asynchronously so a slow RM never holds
// the AM's heartbeat longer than Config.SecondaryWait.
type uamConn struct {
	a  *attempt
	sc string

	ready chan struct{} // closed when launch+register ended (ok or not)

	mu       sync.Mutex
	err      error // launch or register failure (after ready)
	rel      *relayer
	client   *hadoopipc.Client
	token    *commonpb.TokenProto
	pending  *yarnpb.AllocateRequestProto
	pendDone chan struct{} // closed when pending has been answered (or failed)
	inflight bool
	results  []rmAnswer
	// held: answers whose NM tokens are not saved yet; handed to merge
	// (results) once they are (releaseHeld).
	held     []rmAnswer
	lastOK   time.Time
	failedAt time.Time // when launch or re-attach failed
	// unansweredSince is when the oldest call the RM has not answered
	// since its last answer started (zero: none). Silence is measured
	// from calls made, not from the last answer, so an AM that heartbeats
	// rarely does not make a healthy secondary look lost.
	unansweredSince time.Time
	addr            string // the AMRM address(es) the client dials
	finished        bool
	closed          bool
	// registered: the UAM's registration is done (at the RM and on disk).
	registered bool
	// tokenUnsaved: a rolled AMRMToken not yet on disk and in the
	// registry (saveToken retries it).
	tokenUnsaved bool
	// rowStale: the registry row does not name this proxy and attempt yet
	// (a re-attach whose update failed); retried like tokenUnsaved.
	rowStale bool
	// finishing is closed when the unregister in flight ended, with
	// finishErr its result.
	finishing chan struct{}
	finishErr error
	// nm: the latest NM token per node the secondary sent this UAM (in
	// any AM attempt), for attempts the RM will not send them to again;
	// nmGen counts its changes, nmSaved is the generation on disk and in
	// the registry row (nmtokens.go).
	nm      nmTokenSet
	nmGen   uint64
	nmSaved uint64
}

func newUAMConn(a *attempt, sc string) *uamConn {
	return &uamConn{a: a, sc: sc, ready: make(chan struct{}), lastOK: time.Now()}
}

// stateRecord is u's local record: its token, whether it registered and
// its NM tokens.
func (u *uamConn) stateRecord(registered bool) state.UAM {
	u.mu.Lock()
	defer u.mu.Unlock()
	rec := state.UAM{SubCluster: u.sc, Registered: registered, NMTokens: marshalNMTokens(u.nm.list())}
	if u.token != nil {
		rec.Token = mustMarshal(u.token)
	}
	return rec
}

// launch submits the UAM to the secondary, takes its AMRMToken, registers
// it (with retries) and persists each step, so a restarted proxy
// re-attaches instead of submitting again.
func (u *uamConn) launch(ctx context.Context, p *Proxy) {
	u.callStarted(time.Now())
	err := u.doLaunch(ctx, p)
	u.callEnded(err)
	result := "ok"
	if err != nil {
		result = "error"
		p.log.Warn("unmanaged AM launch failed", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		if !errors.Is(err, ErrRegistry) {
			p.metrics.rmErrors.WithLabelValues(u.sc).Inc()
		}
	}
	p.metrics.uamLaunches.WithLabelValues(u.sc, result).Inc()
	p.audit.Info("uam-launch", "attempt", u.a.id.String(), "subcluster", u.sc, "result", result)
	u.up(p, err)
}

// up ends a launch or re-attach: err (nil when the UAM is usable) is
// recorded, waiters on ready are released, and what was queued meanwhile
// is sent.
func (u *uamConn) up(p *Proxy, err error) {
	u.mu.Lock()
	u.err = err
	u.lastOK = time.Now()
	if err != nil {
		u.failedAt = time.Now()
	}
	u.mu.Unlock()
	close(u.ready)
	if err == nil {
		p.metrics.uams.Inc()
		u.kick()
	}
}

func (u *uamConn) doLaunch(ctx context.Context, p *Proxy) error {
	sc, ok := p.members.get(u.sc)
	if !ok {
		return fmt.Errorf("%w: %s not in membership", ErrSubClusterUnavailable, u.sc)
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.UAMLaunchTimeout.D())
	defer cancel()
	// Recorded before it exists: a proxy that dies right after the submit
	// must leave a row the router, the GPG and the next AM attempt can find.
	// Not recorded, not submitted.
	if err := u.putRow(ctx, false); err != nil {
		return err
	}
	var tok *commonpb.TokenProto
	err := p.brk.do(u.sc, func() error {
		// As the submitter (doAs with Kerberos): the RM hands the UAM's
		// AMRMToken to the application's owner only.
		c, err := p.clientRM(hostport.SplitList(sc.ClientRMServiceAddress), u.a.user)
		if err != nil {
			return err
		}
		defer c.Close()
		tok, err = uam.Launch(ctx, c, uam.Spec{App: u.a.id.ApplicationIDProto(), Queue: u.a.queue})
		return err
	})
	if err != nil {
		return err
	}
	// Held from here on: if a write below fails, a later retry re-attaches
	// with it (the RM will not hand it out again once registered).
	u.mu.Lock()
	u.token = tok
	u.mu.Unlock()
	if err := p.state.PutUAM(u.a.id.String(), u.stateRecord(false)); err != nil {
		return fmt.Errorf("persist UAM token: %w", err)
	}
	if err := u.putRow(ctx, false); err != nil {
		return err
	}
	if err := u.attach(p, tok, false); err != nil {
		return err
	}
	return u.register(ctx, p)
}

// attach makes the UAM's AMRM connection from its token.
func (u *uamConn) attach(p *Proxy, tok *commonpb.TokenProto, known bool) error {
	sc, ok := p.members.get(u.sc)
	if !ok {
		return fmt.Errorf("%w: %s not in membership", ErrSubClusterUnavailable, u.sc)
	}
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: hostport.SplitList(sc.AMRMServiceAddress),
		Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok, DialTimeout: p.cfg.DialTimeout.D(), Logger: p.log})
	if err != nil {
		return err
	}
	u.mu.Lock()
	old := u.client
	u.client, u.token, u.addr = c, tok, sc.AMRMServiceAddress
	if u.rel == nil {
		u.rel = newRelayer(CallerAMRM{C: c}, known)
	} else {
		u.rel.setRM(CallerAMRM{C: c})
	}
	u.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return nil
}

func (u *uamConn) register(ctx context.Context, p *Proxy) error {
	req := proto.Clone(u.a.regReq).(*yarnpb.RegisterApplicationMasterRequestProto)
	u.rel.setRegister(req)
	var resp *yarnpb.RegisterApplicationMasterResponseProto
	err := uam.Retry(ctx, p.cfg.UAMRegisterRetries, p.cfg.UAMRegisterBackoff.D(), func(err error) bool {
		// An RM's application error will not change on retry.
		return remoteClass(err) != "" && !rmDown(err)
	}, func() error {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
		defer cancel()
		return p.brk.do(u.sc, func() error {
			var err error
			resp, err = u.rel.rm.Register(cctx, req)
			return err
		})
	})
	if err != nil && !alreadyRegistered(err) {
		return fmt.Errorf("register UAM: %w", err)
	}
	u.mu.Lock()
	u.registered = true
	u.mu.Unlock()
	rec := u.stateRecord(true)
	if resp != nil {
		rec.Response = mustMarshal(resp)
		u.rel.registered()
	}
	if err := p.state.PutUAM(u.a.id.String(), rec); err != nil {
		return fmt.Errorf("persist UAM registration: %w", err)
	}
	return u.putRow(ctx, true)
}

// alreadyRegistered: the RM says this attempt registered before (a
// re-attach after a proxy restart).
func alreadyRegistered(err error) bool {
	return remoteClass(err) == hadoopipc.ClassInvalidApplicationMasterRequest
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err) // generated messages always marshal
	}
	return b
}

// enqueue adds req to what goes to this RM next and returns a channel
// closed when that request has been answered (or failed).
func (u *uamConn) enqueue(req *yarnpb.AllocateRequestProto) <-chan struct{} {
	u.mu.Lock()
	u.pending = mergeRequest(u.pending, req)
	if u.pendDone == nil {
		u.pendDone = make(chan struct{})
	}
	done := u.pendDone
	u.mu.Unlock()
	u.kick()
	return done
}

// kick starts a heartbeat if one is pending, the UAM is ready and none is
// in flight (the RM's responseId rules allow one at a time).
func (u *uamConn) kick() {
	select {
	case <-u.ready:
	default:
		return
	}
	u.mu.Lock()
	if u.inflight || u.pending == nil || u.err != nil || u.closed {
		if u.err != nil && u.pendDone != nil {
			close(u.pendDone)
			u.pending, u.pendDone = nil, nil
		}
		u.mu.Unlock()
		return
	}
	req, done := u.pending, u.pendDone
	u.pending, u.pendDone = nil, nil
	u.inflight = true
	u.mu.Unlock()
	go u.heartbeat(req, done)
}

func (u *uamConn) heartbeat(req *yarnpb.AllocateRequestProto, done chan struct{}) {
	p := u.a.p
	u.followMembership(p)
	if !u.releaseHeld(p) {
		// An answer is held back (its NM tokens are not saved yet) and the
		// save failed again: keep the UAM alive at its RM without moving
		// its sequence on, so that answer stays the RM's last one, the one
		// a restarted proxy fetches again. The request waits.
		u.keepAlive(p)
		u.mu.Lock()
		u.inflight = false
		u.pending = mergeRequest(req, orEmpty(u.pending))
		if u.pendDone == nil {
			u.pendDone = make(chan struct{})
		}
		u.mu.Unlock()
		close(done)
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.CallTimeout.D())
	start := time.Now()
	u.callStarted(start)
	var resp, replayed *yarnpb.AllocateResponseProto
	err := p.brk.do(u.sc, func() error {
		var err error
		resp, replayed, err = u.rel.allocate(ctx, req)
		return err
	})
	cancel()
	u.callEnded(err)
	p.metrics.rmAllocate.WithLabelValues(u.sc).Observe(time.Since(start).Seconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		p.metrics.rmErrors.WithLabelValues(u.sc).Inc()
	}
	var answers []rmAnswer
	if replayed != nil {
		// The RM's last answer before the proxy restarted, fetched again:
		// the proxy may never have seen it (killed while it was on its
		// way), and the RM will not send its NM tokens again.
		p.log.Info("fetched the secondary's last answer again after a restart", "attempt", u.a.id, "subcluster", u.sc,
			"containers", len(replayed.GetAllocatedContainers()), "nm_tokens", len(replayed.GetNmTokens()))
		answers = append(answers, rmAnswer{resp: replayed, replayed: true})
	}
	if err == nil {
		answers = append(answers, rmAnswer{resp: resp})
	}
	for _, r := range answers {
		u.takeRolledToken(p, r.resp)
		// Kept for later AM attempts, which the RM will not send them;
		// saved below before the AM can see the containers they go with.
		u.learnNMTokens(r.resp.GetNmTokens())
	}
	saveErr := u.saveToken(p)
	u.mu.Lock()
	u.inflight = false
	if u.nmGen != u.nmSaved {
		// Not handed to the AM until its NM tokens are saved (on disk and
		// in the registry row): a crash would otherwise lose the only copy
		// a later AM attempt could get.
		u.held = append(u.held, answers...)
		p.log.Error("holding back the secondary's answer until its NM tokens are saved", "attempt", u.a.id, "subcluster", u.sc, "err", saveErr)
	} else {
		u.results = append(u.results, answers...)
	}
	if err == nil {
		u.lastOK = time.Now()
	} else if errors.Is(err, errRMForgotRegistration) {
		// The secondary restarted: its asks are gone. The AM re-sends its
		// whole state after re-registering, which re-splits everything.
		u.a.resync.Store(true)
		// Releases are the proxy's own business too (containers of a lost
		// sub-cluster): keep them; the AM re-sends its asks itself.
		if len(req.Release) > 0 {
			u.pending = mergeRequest(&yarnpb.AllocateRequestProto{Release: req.Release}, orEmpty(u.pending))
		}
		p.log.Info("secondary RM forgot the UAM's registration; asking the AM to re-register", "attempt", u.a.id, "subcluster", u.sc)
	} else if !errors.Is(err, context.Canceled) {
		// The request is lost to this RM; keep its releases and asks for
		// the next try (asks are absolute, so re-sending is harmless).
		u.pending = mergeRequest(req, orEmpty(u.pending))
		if u.pendDone == nil {
			u.pendDone = make(chan struct{})
		}
		p.log.Debug("UAM heartbeat failed", "attempt", u.a.id, "subcluster", u.sc, "err", err)
	}
	retry := err == nil && u.pending != nil && len(u.held) == 0
	u.mu.Unlock()
	close(done)
	if retry {
		u.kick()
	}
}

// takeRolledToken: the secondary rolled its master key and sent the UAM a
// new AMRMToken. Use and keep it, on disk and in the registry; the write
// is retried on every heartbeat until it succeeds (saveToken).
func (u *uamConn) takeRolledToken(p *Proxy, r *yarnpb.AllocateResponseProto) {
	t := r.GetAmRmToken()
	if t == nil || len(t.GetIdentifier()) == 0 {
		return
	}
	u.mu.Lock()
	same := proto.Equal(t, u.token)
	u.mu.Unlock()
	if same {
		return // a replayed answer with the token already in use
	}
	if err := u.attach(p, t, true); err != nil {
		p.log.Error("cannot use the UAM's rolled AMRMToken", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		return
	}
	u.mu.Lock()
	u.tokenUnsaved = true
	u.mu.Unlock()
}

// releaseHeld saves what held answers need and hands them on; it reports
// whether nothing is held any more.
func (u *uamConn) releaseHeld(p *Proxy) bool {
	u.mu.Lock()
	n := len(u.held)
	u.mu.Unlock()
	if n == 0 {
		return true
	}
	err := u.saveToken(p)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.nmGen != u.nmSaved {
		p.log.Debug("secondary's answer still held back: its NM tokens cannot be saved", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		return false
	}
	u.results = append(u.results, u.held...)
	u.held = nil
	return true
}

// keepAlive resends the RM's last answer request (see relayer.resendLast)
// as the UAM's heartbeat while an answer is held.
func (u *uamConn) keepAlive(p *Proxy) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.CallTimeout.D())
	defer cancel()
	u.callStarted(time.Now())
	err := p.brk.do(u.sc, func() error { return u.rel.resendLast(ctx) })
	u.callEnded(err)
	if err != nil && !errors.Is(err, context.Canceled) {
		p.metrics.rmErrors.WithLabelValues(u.sc).Inc()
		p.log.Debug("UAM keep-alive failed", "attempt", u.a.id, "subcluster", u.sc, "err", err)
	}
}

func orEmpty(r *yarnpb.AllocateRequestProto) *yarnpb.AllocateRequestProto {
	if r == nil {
		return &yarnpb.AllocateRequestProto{}
	}
	return r
}

// followMembership re-dials when the sub-cluster's AMRM address changed
// in the store (RM HA failover reported by its agent). The token and the
// responseId sequence carry over: HA RMs share the attempt's state.
func (u *uamConn) followMembership(p *Proxy) {
	sc, ok := p.members.get(u.sc)
	u.mu.Lock()
	moved := ok && sc.AMRMServiceAddress != "" && sc.AMRMServiceAddress != u.addr && u.token != nil
	tok := u.token
	u.mu.Unlock()
	if moved {
		if err := u.attach(p, tok, true); err != nil {
			p.log.Warn("cannot follow the RM failover of a UAM", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		} else {
			p.log.Info("UAM follows RM failover", "attempt", u.a.id, "subcluster", u.sc, "address", sc.AMRMServiceAddress)
		}
	}
}

// failedLongAgo: launch or re-attach failed and the breaker's open period
// has passed, so another launch may be tried.
func (u *uamConn) failedLongAgo(now time.Time, after time.Duration) bool {
	if !isClosed(u.ready) {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err != nil && now.Sub(u.failedAt) > after
}

// rmAnswer is an RM's answer to a UAM heartbeat; replayed: the RM's last
// answer before a restart, fetched again (relayer.replayLost), which may
// repeat what the AM already has.
type rmAnswer struct {
	resp     *yarnpb.AllocateResponseProto
	replayed bool
}

// take returns and clears the responses received since the last merge.
func (u *uamConn) take() []rmAnswer {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := u.results
	u.results = nil
	return out
}

func (u *uamConn) timedOut(now time.Time, timeout time.Duration) bool {
	u.mu.Lock()
	failed := u.err != nil
	u.mu.Unlock()
	return failed || u.unansweredFor(now) > timeout
}

// callStarted notes a call to the RM (heartbeat, launch, re-attach,
// finish) for the silence clock.
func (u *uamConn) callStarted(now time.Time) {
	u.mu.Lock()
	if u.unansweredSince.IsZero() {
		u.unansweredSince = now
	}
	u.mu.Unlock()
}

// callEnded stops the silence clock when the RM answered, even with an
// application error (that proves it alive).
func (u *uamConn) callEnded(err error) {
	if err != nil && rmDown(err) {
		return
	}
	u.mu.Lock()
	u.unansweredSince = time.Time{}
	u.mu.Unlock()
}

// unansweredFor is how long the RM has left a call unanswered (0: none).
func (u *uamConn) unansweredFor(now time.Time) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.unansweredSince.IsZero() {
		return 0
	}
	return now.Sub(u.unansweredSince)
}

// release queues releases for this RM; they go with the next heartbeat
// that reaches it (failed heartbeats keep them).
func (u *uamConn) release(ids []*yarnpb.ContainerIdProto) {
	if len(ids) == 0 {
		return
	}
	u.enqueue(&yarnpb.AllocateRequestProto{Release: ids})
}

func (u *uamConn) isReady() bool {
	select {
	case <-u.ready:
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.err == nil
	default:
		return false
	}
}

// startFinish starts an unregister unless one is in flight, and returns
// a channel closed when it ends (see finishResult). It runs under the
// proxy's context, not the AM's call: an AM call cut short by finish_wait
// does not cancel it.
func (u *uamConn) startFinish(p *Proxy, req *yarnpb.FinishApplicationMasterRequestProto) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.finishing != nil && !isClosed(u.finishing) {
		return u.finishing
	}
	done := make(chan struct{})
	u.finishing = done
	go func() {
		err := u.finish(p.ctx, p, req)
		u.mu.Lock()
		u.finishErr = err
		u.mu.Unlock()
		close(done)
	}()
	return done
}

// submitted: the UAM got its token, so it exists on its RM.
func (u *uamConn) submitted() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.token != nil
}

func (u *uamConn) finishResult() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.finishErr
}

// finish unregisters the UAM.
func (u *uamConn) finish(ctx context.Context, p *Proxy, req *yarnpb.FinishApplicationMasterRequestProto) error {
	select {
	case <-u.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	u.mu.Lock()
	if u.finished {
		u.mu.Unlock()
		return nil
	}
	err := u.err
	rel := u.rel
	u.mu.Unlock()
	if err != nil {
		return nil // never launched: nothing to unregister
	}
	if rel == nil {
		return fmt.Errorf("%w: no connection to the UAM on %s", ErrSubClusterUnavailable, u.sc)
	}
	var resp *yarnpb.FinishApplicationMasterResponseProto
	u.callStarted(time.Now())
	err = p.brk.do(u.sc, func() error {
		cctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout.D())
		defer cancel()
		rel.mu.Lock()
		rm := rel.rm
		rel.mu.Unlock()
		var err error
		resp, err = rm.Finish(cctx, req)
		return err
	})
	u.callEnded(err)
	if err != nil {
		p.metrics.rmErrors.WithLabelValues(u.sc).Inc()
		return err
	}
	if !resp.GetIsUnregistered() {
		return fmt.Errorf("UAM on %s not unregistered yet", u.sc)
	}
	u.mu.Lock()
	u.finished = true
	u.mu.Unlock()
	p.deleteRow(ctx, u.a.id.AppKey(), u.sc)
	return nil
}

// saveToken writes a rolled AMRMToken or new NM tokens (or a stale row)
// to disk and to the registry; on failure they stay pending (nmGen above
// nmSaved, tokenUnsaved, rowStale) for the next heartbeat, and the error
// is returned. Never dropped: a restarted proxy, the next AM attempt and
// the router's kill need the current token, and the next AM attempt the
// NM tokens (an answer that brought new ones is held until they are saved,
// see heartbeat). Nothing is written when nothing changed, nor before the
// UAM has a token (no heartbeat runs before it has one).
func (u *uamConn) saveToken(p *Proxy) error {
	u.mu.Lock()
	gen := u.nmGen
	dirty, stale, tok, registered := u.tokenUnsaved || gen != u.nmSaved, u.rowStale, u.token, u.registered
	u.mu.Unlock()
	if !dirty && !stale || tok == nil {
		return nil
	}
	var err error
	if dirty {
		err = p.state.PutUAM(u.a.id.String(), u.stateRecord(registered))
		if err != nil {
			p.metrics.stateErrors.Inc()
			err = fmt.Errorf("persist UAM tokens: %w", err)
		}
	}
	if err == nil {
		err = u.putRow(p.ctx, registered)
	}
	if err != nil {
		p.log.Error("cannot save the UAM's current AMRMToken and NM tokens; will retry", "attempt", u.a.id, "subcluster", u.sc, "err", err)
		return err
	}
	u.mu.Lock()
	if u.token == tok {
		u.tokenUnsaved, u.rowStale = false, false
	}
	if u.nmSaved < gen {
		u.nmSaved = gen
	}
	u.mu.Unlock()
	return nil
}

func (u *uamConn) close() {
	u.mu.Lock()
	u.closed = true
	c := u.client
	u.client = nil
	u.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}
