package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/state"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// attempt is the proxy's view of one AM attempt (Hadoop's
// FederationInterceptor): the responseId sequence with the AM, the cached
// registration, the home relayer, the UAMs and the container -> sub-cluster
// map. mu serialises the AM's calls, as the RM does per attempt.
type attempt struct {
	p    *Proxy
	id   AttemptID
	home string

	mu          sync.Mutex
	regReq      *yarnpb.RegisterApplicationMasterRequestProto
	regResp     *yarnpb.RegisterApplicationMasterResponseProto
	registered  bool // the AM registered with this proxy process
	queue, user string
	last        *yarnpb.AllocateResponseProto // last answer to the AM
	homeRel     *relayer
	policy      policies.AMRMPolicy
	uams        map[string]*uamConn
	containers  map[containerKey]string
	headroom    map[string]*yarnpb.ResourceProto
	nodes       map[string]int32
	homeLastOK  time.Time
	unsaved     map[string]string // container adds a failed disk write left behind
	unsavedDel  []string
	uamFinished map[string]bool
	// aborted holds containers reported to the AM as ABORTED because their
	// sub-cluster was lost (container -> that sub-cluster). Should the RM
	// come back and report one again, the AM does not see it twice.
	aborted        map[containerKey]string
	unsavedAborted map[string]string
	// resync: an RM forgot our registration (restart); the AM's next
	// allocate is answered ApplicationMasterNotRegisteredException so it
	// re-registers and re-sends its whole state.
	resync atomic.Bool
	// lastCall is when the AM last called (unix nanoseconds), for expiry.
	lastCall atomic.Int64
	// lastCheck is when the home's report was last asked about this silent
	// attempt; checking is set while that runs (checkSilent).
	lastCheck atomic.Int64
	checking  atomic.Bool
	// homeReq/homeResp: the home took this register (kept for the AM's
	// retry when the rest of the register failed); inherited: UAMs of
	// earlier attempts this proxy held, handed over at register.
	homeReq   *yarnpb.RegisterApplicationMasterRequestProto
	homeResp  *yarnpb.RegisterApplicationMasterResponseProto
	inherited map[string]previousUAM
	// keep: the application keeps containers across attempts (learnt at
	// register, keepHow says from where).
	keep    bool
	keepHow string
	// delivery (recovered attempts only) is the last answer that carried
	// containers before the restart; redeliver holds what the AM turned
	// out not to have received, handed out after it re-registers.
	delivery        *state.Delivery
	redeliver       []*yarnpb.ContainerProto
	redeliverTokens []*yarnpb.NMTokenProto
	redeliverAborts []*yarnpb.ContainerStatusProto
	// nmGiven: the secondaries' nodes (givenKey) this attempt holds an NM
	// token for, from an RM's answer or from the proxy (nmtokens.go). Not
	// persisted: after a restart a token is given once more, which an AM
	// takes as an update.
	nmGiven map[string]bool
	// homeReplay: the home RM's last answer before a restart, fetched again
	// (relayer.replayLost); merged once, dropping what was delivered.
	homeReplay *yarnpb.AllocateResponseProto
}

func newAttempt(p *Proxy, id AttemptID, home string) *attempt {
	a := &attempt{p: p, id: id, home: home, uams: map[string]*uamConn{}, containers: map[containerKey]string{},
		headroom: map[string]*yarnpb.ResourceProto{}, nodes: map[string]int32{}, uamFinished: map[string]bool{},
		aborted: map[containerKey]string{}, inherited: map[string]previousUAM{}, nmGiven: map[string]bool{}}
	a.touch()
	return a
}

func (a *attempt) touch() { a.lastCall.Store(time.Now().UnixNano()) }

func nextResponseID(id int32) int32 { return (id + 1) & math.MaxInt32 }

func (a *attempt) homeRM(ctx context.Context) (AMRM, SubCluster, error) {
	sc, ok := a.p.members.get(a.home)
	if !ok {
		return nil, SubCluster{}, fmt.Errorf("%w: home %s is not in membership", ErrSubClusterUnavailable, a.home)
	}
	rm, err := a.p.homes.HomeRM(ctx, a.id, sc)
	return rm, sc, err
}

// register is registerApplicationMaster: the home only, once; a duplicate
// gets the cached answer, a different body is refused.
func (a *attempt) register(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.regResp != nil {
		if !proto.Equal(req, a.regReq) {
			return nil, fmt.Errorf("%w: Application Master is already registered : %s with a different request", ErrInvalidRequest, a.id.AppKey())
		}
		if !a.registered {
			// Re-registration after a proxy restart: the AM starts its
			// sequence again from 0 and re-sends everything it wants.
			a.registered = true
			a.last = &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0)}
		}
		return a.regResp, nil
	}
	rm, sc, err := a.homeRM(ctx)
	if err != nil {
		return nil, err
	}
	var resp *yarnpb.RegisterApplicationMasterResponseProto
	if a.homeResp != nil && proto.Equal(req, a.homeReq) {
		// The AM retries a register the home already took (the registry
		// could not be read last time): the home would say "already
		// registered".
		resp = a.homeResp
	} else {
		if resp, err = rm.Register(ctx, req); err != nil {
			a.p.metrics.rmErrors.WithLabelValues(a.home).Inc()
			return nil, err
		}
		a.homeReq, a.homeResp = proto.Clone(req).(*yarnpb.RegisterApplicationMasterRequestProto), resp
	}
	a.regReq = proto.Clone(req).(*yarnpb.RegisterApplicationMasterRequestProto)
	a.queue = resp.GetQueue()
	a.user = a.p.appUser(ctx, sc, a.id)
	a.homeRel = newRelayer(rm, true)
	a.homeRel.setRegister(a.regReq)
	a.homeLastOK = time.Now()
	// The UAMs of earlier attempts of this application (the registry, and
	// attempts this proxy itself held) are re-attached before the AM gets
	// its answer, with their containers or with those released.
	resp = proto.Clone(resp).(*yarnpb.RegisterApplicationMasterResponseProto)
	for sc, pu := range a.p.supersede(a) {
		a.inherited[sc] = pu
	}
	prev, perr := a.previousUAMs(ctx, a.inherited)
	if perr != nil {
		// Without the rows the earlier attempt's UAMs would be orphaned
		// (and their sub-clusters closed to this attempt: a UAM that
		// registered cannot be launched again). The AM retries a
		// RetriableException; the home registration is kept for it.
		a.p.log.Error("cannot read the UAM registry; asking the AM to retry its register", "attempt", a.id, "err", perr)
		return nil, fmt.Errorf("%w: %w", ErrSubClusterUnavailable, perr)
	}
	if len(prev) > 0 {
		a.keep, a.keepHow = a.keepContainers(ctx, resp)
		a.adoptPrevious(ctx, prev, resp)
	}
	a.regResp = resp
	a.registered = true
	a.last = &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0)}
	if err := a.p.state.PutAttempt(state.Attempt{Attempt: a.id.String(), Home: a.home, Queue: a.queue, User: a.user,
		Register: mustMarshal(req), Response: mustMarshal(resp)}); err != nil {
		// Registered at the RM but not on disk: a restart would not know
		// this attempt. Say so loudly; the AM goes on.
		a.p.log.Error("cannot persist registration", "attempt", a.id, "err", err)
		a.p.metrics.stateErrors.Inc()
	}
	return resp, nil
}

// allocate is the AM heartbeat.
func (a *attempt) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.resync.Swap(false) {
		a.registered = false
	}
	if !a.registered {
		a.decideRedelivery(req.GetResponseId())
		a.p.metrics.resyncs.Inc()
		//lint:ignore ST1005 the text of Hadoop's own ApplicationMasterNotRegisteredException, which clients show
		return nil, fmt.Errorf("%w: AM is not registered for known application attempt: %s or the AMRMProxy restarted after AM registered. AM should re-register.", ErrNotRegistered, a.id)
	}
	last := a.last.GetResponseId()
	if nextResponseID(req.GetResponseId()) == last {
		return a.last, nil // a resend: the AM lost our answer
	}
	if req.GetResponseId() != last {
		return nil, fmt.Errorf("%w: Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d",
			ErrInvalidRequest, a.id, last, req.GetResponseId())
	}
	start := time.Now()
	rm, _, err := a.homeRM(ctx)
	if err != nil {
		return nil, err
	}
	if a.homeRel == nil {
		// Recovered: the RM's sequence is unknown, and its last answer may
		// have been lost with the proxy: it is fetched again.
		a.homeRel = newRelayer(rm, false)
		a.homeRel.setRegister(a.regReq)
		a.homeRel.replayLost()
	} else {
		a.homeRel.setRM(rm)
	}

	perSC, err := a.split(ctx, req)
	if err != nil {
		return nil, err
	}
	// Secondaries first, asynchronously; then the home, synchronously.
	var waits []<-chan struct{}
	for sc, sub := range perSC {
		if sc == a.home {
			continue
		}
		u := a.uams[sc]
		if u != nil && u.failedLongAgo(time.Now(), a.p.cfg.Breaker.OpenFor.D()) && !a.p.brk.open(sc) {
			u = a.retryUAM(u) // the last try failed a while ago
		}
		if u == nil {
			u = newUAMConn(a, sc)
			a.uams[sc] = u
			go u.launch(a.p.ctx, a.p)
		}
		waits = append(waits, u.enqueue(sub))
	}
	for sc, u := range a.uams {
		if _, ok := perSC[sc]; !ok && u.isReady() {
			waits = append(waits, u.enqueue(emptyRequest(req))) // keep the UAM alive, collect its news
		}
	}
	homeReq := perSC[a.home]
	if homeReq == nil {
		homeReq = emptyRequest(req)
	}
	homeReq.TrackingUrl = req.TrackingUrl
	// Placement-constraint scheduling requests cannot be split by the AMRM
	// policies (Hadoop's FederationInterceptor does not split them either):
	// the home gets them, so an AM using them works as without federation.
	homeReq.SchedulingRequests = req.SchedulingRequests
	hstart := time.Now()
	homeResp, replayed, err := a.homeRel.allocate(ctx, homeReq)
	if replayed != nil {
		a.p.log.Info("fetched the home's last answer again after a restart", "attempt", a.id,
			"containers", len(replayed.GetAllocatedContainers()), "nm_tokens", len(replayed.GetNmTokens()))
		a.homeReplay = replayed // merged with the next answer, this one's if it succeeds
	}
	a.p.metrics.rmAllocate.WithLabelValues(a.home).Observe(time.Since(hstart).Seconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		a.p.metrics.rmErrors.WithLabelValues(a.home).Inc()
	}
	if errors.Is(err, errRMForgotRegistration) {
		a.registered = false
		a.p.metrics.resyncs.Inc()
		return nil, fmt.Errorf("%w: the home RM of %s restarted; AM should re-register", ErrNotRegistered, a.id)
	}
	if err != nil {
		return nil, err
	}
	a.homeLastOK = time.Now()

	// Bounded wait for the secondaries' answers; late ones are merged next time.
	if len(waits) > 0 {
		deadline := start.Add(a.p.cfg.SecondaryWait.D())
		if d := time.Until(deadline); d > 0 {
			t := time.NewTimer(d)
		wait:
			for _, w := range waits {
				select {
				case <-w:
				case <-t.C:
					break wait
				}
			}
			t.Stop()
		}
	}
	out := a.merge(homeResp, nextResponseID(last))
	a.last = out
	return out, nil
}

// retryUAM replaces a UAM whose launch or re-attach failed: one that has
// a token (it was submitted) is re-attached with it, since its RM will not
// hand out the token again once registered; otherwise nil (launch anew).
func (a *attempt) retryUAM(old *uamConn) *uamConn {
	old.mu.Lock()
	tok, registered := old.token, old.registered
	old.mu.Unlock()
	old.close()
	delete(a.uams, old.sc)
	if tok == nil {
		return nil
	}
	u := newUAMConn(a, old.sc)
	old.mu.Lock()
	u.unansweredSince = old.unansweredSince // the silence goes on
	u.nm.putAll(old.nm.list())
	u.nmGen, u.nmSaved = old.nmGen, old.nmSaved
	old.mu.Unlock()
	a.uams[old.sc] = u
	go u.reattach(a.p, tok, registered)
	return u
}

// timedOut lists secondaries silent past the timeout or behind an open
// breaker: no new asks, no headroom.
func (a *attempt) timedOut(now time.Time) []policies.SubClusterID {
	var out []policies.SubClusterID
	for sc, u := range a.uams {
		if u.failedLongAgo(now, a.p.cfg.Breaker.OpenFor.D()) && !a.p.brk.open(sc) {
			continue // its launch is tried again when asks go there
		}
		if a.p.brk.open(sc) || (u.isReady() || isClosed(u.ready)) && u.timedOut(now, a.p.cfg.SubClusterTimeout.D()) {
			out = append(out, policies.SubClusterID(sc))
		}
	}
	for _, id := range a.p.members.snapshot().Active() {
		if sc := string(id); sc != a.home && a.uams[sc] == nil && a.p.brk.open(sc) {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// split divides the AM's request among sub-clusters: asks by the queue's
// AMRM policy, releases and container updates to the owner of the
// container, blacklist entries to the node's sub-cluster.
func (a *attempt) split(ctx context.Context, req *yarnpb.AllocateRequestProto) (map[string]*yarnpb.AllocateRequestProto, error) {
	out := map[string]*yarnpb.AllocateRequestProto{}
	get := func(sc string) *yarnpb.AllocateRequestProto {
		r := out[sc]
		if r == nil {
			r = &yarnpb.AllocateRequestProto{Progress: req.Progress}
			out[sc] = r
		}
		return r
	}
	get(a.home)
	if len(req.Ask) > 0 {
		pol, err := a.p.facade.AMRMPolicy(ctx, a.queue, policies.SubClusterID(a.home), a.policy)
		if err != nil {
			return nil, fmt.Errorf("AMRM policy of queue %q: %w", a.queue, err)
		}
		a.policy = pol
		asks := make([]policies.ResourceRequest, len(req.Ask))
		for i, rr := range req.Ask {
			asks[i] = policies.ResourceRequest{
				AllocationRequestID: rr.GetAllocationRequestId(), Priority: rr.GetPriority().GetPriority(),
				ResourceName: rr.GetResourceName(), NumContainers: rr.GetNumContainers(), RelaxLocality: rr.GetRelaxLocality(),
				NodeLabelExpression: rr.GetNodeLabelExpression(),
				Capability:          policies.Resource{MemoryMB: rr.GetCapability().GetMemory(), VCores: rr.GetCapability().GetVirtualCores()},
				Ext:                 rr,
			}
		}
		parts, err := pol.SplitResourceRequests(ctx, a.p.members.snapshot(), asks, a.timedOut(time.Now()))
		if err != nil {
			return nil, fmt.Errorf("%w: splitting resource requests: %w", ErrInvalidRequest, err)
		}
		for sc, rrs := range parts {
			r := get(string(sc))
			for _, rr := range rrs {
				orig := rr.Ext.(*yarnpb.ResourceRequestProto)
				if orig.GetNumContainers() != rr.NumContainers {
					c := proto.Clone(orig).(*yarnpb.ResourceRequestProto)
					c.NumContainers = proto.Int32(rr.NumContainers)
					orig = c
				}
				r.Ask = append(r.Ask, orig)
			}
		}
	}
	for _, c := range req.Release {
		sc := a.owner(c)
		get(sc).Release = append(get(sc).Release, c)
	}
	for _, u := range req.UpdateRequests {
		sc := a.owner(u.GetContainerId())
		get(sc).UpdateRequests = append(get(sc).UpdateRequests, u)
	}
	if bl := req.GetBlacklistRequest(); bl != nil {
		for _, h := range bl.GetBlacklistAdditions() {
			r := get(a.nodeOwner(h))
			if r.BlacklistRequest == nil {
				r.BlacklistRequest = &yarnpb.ResourceBlacklistRequestProto{}
			}
			r.BlacklistRequest.BlacklistAdditions = append(r.BlacklistRequest.BlacklistAdditions, h)
		}
		for _, h := range bl.GetBlacklistRemovals() {
			r := get(a.nodeOwner(h))
			if r.BlacklistRequest == nil {
				r.BlacklistRequest = &yarnpb.ResourceBlacklistRequestProto{}
			}
			r.BlacklistRequest.BlacklistRemovals = append(r.BlacklistRequest.BlacklistRemovals, h)
		}
	}
	return out, nil
}

// owner is the sub-cluster that allocated c; unknown containers go home
// (the home RM then answers as an RM does for a foreign container).
func (a *attempt) owner(c *yarnpb.ContainerIdProto) string {
	if sc, ok := a.containers[keyOf(c)]; ok {
		return sc
	}
	return a.home
}

// nodeOwner maps a blacklisted node to its sub-cluster when it is the home
// or one with a UAM; anything else goes home.
func (a *attempt) nodeOwner(host string) string {
	sc, ok := a.p.resolver.SubClusterForNode(host)
	if !ok {
		return a.home
	}
	if string(sc) == a.home || a.uams[string(sc)] != nil {
		return string(sc)
	}
	return a.home
}

// merge builds the AM's answer from the home's response and whatever the
// secondaries answered since the last heartbeat, records container
// ownership (on disk before the AM sees the containers) and drops
// containers already delivered (an RM resending an old response).
func (a *attempt) merge(home *yarnpb.AllocateResponseProto, responseID int32) *yarnpb.AllocateResponseProto {
	out := &yarnpb.AllocateResponseProto{
		ResponseId: proto.Int32(responseID),
		AMCommand:  home.AMCommand, AmRmToken: home.AmRmToken, ApplicationPriority: home.ApplicationPriority,
		CollectorInfo: home.CollectorInfo, EnhancedHeadroom: home.EnhancedHeadroom,
		// Containers a crash kept from the AM come first (see decideRedelivery).
		AllocatedContainers: a.redeliver, NmTokens: a.redeliverTokens, CompletedContainerStatuses: a.redeliverAborts,
	}
	a.redeliver, a.redeliverTokens = nil, nil
	add := map[string]string{}
	var del []string
	aborted := map[string]string{}
	stale := map[string][]*yarnpb.ContainerIdProto{} // aborted containers an RM showed again: release them there
	take := func(sc string, r *yarnpb.AllocateResponseProto) {
		r.CompletedContainerStatuses = a.dropAborted(sc, r.CompletedContainerStatuses)
		if sc != a.home {
			for _, t := range r.NmTokens {
				a.nmGiven[givenKey(sc, t.GetNodeId())] = true
			}
		}
		for _, c := range r.AllocatedContainers {
			k := keyOf(c.GetId())
			if _, dup := a.containers[k]; dup {
				continue
			}
			if _, gone := a.aborted[k]; gone {
				stale[sc] = append(stale[sc], c.GetId())
				continue
			}
			a.containers[k] = sc
			add[k.String()] = sc
			out.AllocatedContainers = append(out.AllocatedContainers, c)
			a.p.metrics.containers.WithLabelValues(sc).Inc()
			if sc != a.home {
				// The secondary's RM sends a node's token once per attempt of
				// the UAM, not per AM attempt: give it if this one lacks it.
				if t := a.nmTokenToGive(sc, c); t != nil {
					out.NmTokens = append(out.NmTokens, t)
				}
			}
		}
		for _, s := range r.CompletedContainerStatuses {
			k := keyOf(s.GetContainerId())
			if _, ok := a.containers[k]; ok {
				delete(a.containers, k)
				delete(add, k.String())
				del = append(del, k.String())
			}
		}
		mergeResponse(out, r)
		if r.Limit != nil {
			a.headroom[sc] = r.Limit
		}
		if r.NumClusterNodes != nil {
			a.nodes[sc] = r.GetNumClusterNodes()
		}
		if a.policy != nil {
			var hr *policies.Resource
			if r.Limit != nil {
				hr = &policies.Resource{MemoryMB: r.Limit.GetMemory(), VCores: r.Limit.GetVirtualCores()}
			}
			_ = a.policy.NotifyOfResponse(policies.SubClusterID(sc), hr)
		}
	}
	if a.homeReplay != nil {
		take(a.home, a.trimReplay(a.homeReplay))
		a.homeReplay = nil
	}
	take(a.home, home)
	scs := make([]string, 0, len(a.uams))
	for sc := range a.uams {
		scs = append(scs, sc)
	}
	sort.Strings(scs)
	for _, sc := range scs {
		for _, r := range a.uams[sc].take() {
			if r.replayed {
				take(sc, a.trimReplay(r.resp))
			} else {
				take(sc, r.resp)
			}
		}
	}
	// Containers of a lost secondary: the AM hears they were ABORTED and
	// asks again; the RM, should it come back, is told to release them.
	now := time.Now()
	for _, sc := range scs {
		if why, lost := a.lostReason(sc, a.uams[sc], now); lost {
			for _, st := range a.abortContainers(sc, why, aborted) {
				delete(add, keyOf(st.GetContainerId()).String())
				stale[sc] = append(stale[sc], st.GetContainerId())
				out.CompletedContainerStatuses = append(out.CompletedContainerStatuses, st)
			}
		}
	}
	for sc, ids := range stale {
		if u := a.uams[sc]; u != nil {
			u.release(ids)
		}
	}
	// Headroom and node counts: the home and every secondary not timed out.
	excluded := map[string]bool{}
	for _, sc := range a.timedOut(now) {
		excluded[string(sc)] = true
	}
	var limit *yarnpb.ResourceProto
	var nodes int32
	for sc, hr := range a.headroom {
		if !excluded[sc] {
			limit = addResource(limit, hr)
		}
	}
	for sc, n := range a.nodes {
		if !excluded[sc] {
			nodes += n
		}
	}
	if limit == nil {
		limit = addResource(nil, &yarnpb.ResourceProto{})
	}
	out.Limit, out.NumClusterNodes = limit, proto.Int32(nodes)

	// Persist before answering: a restart must route releases of these
	// containers to the right RM. A failed write is retried next time.
	for k, v := range a.unsaved {
		if _, live := a.containers[mustParse(k)]; live {
			add[k] = v
		}
	}
	del = append(del, a.unsavedDel...)
	for k, v := range a.unsavedAborted {
		aborted[k] = v
	}
	var d *state.Delivery
	if len(out.AllocatedContainers) > 0 || len(a.redeliverAborts) > 0 || len(aborted) > 0 {
		// The aborted statuses made here (or redelivered) ride in d too: a
		// crash before the AM got this answer must not leave it waiting for
		// containers that are gone.
		d = &state.Delivery{ResponseID: responseID}
		for _, c := range out.AllocatedContainers {
			d.Containers = append(d.Containers, mustMarshal(c))
		}
		for _, t := range out.NmTokens {
			d.NMTokens = append(d.NMTokens, mustMarshal(t))
		}
		for _, st := range out.CompletedContainerStatuses {
			if _, ours := a.aborted[keyOf(st.GetContainerId())]; ours && st.GetExitStatus() == int32(yarnpb.ContainerExitStatusProto_ABORTED) {
				d.Aborted = append(d.Aborted, mustMarshal(st))
			}
		}
	}
	a.redeliverAborts = nil
	if err := a.p.state.UpdateContainers(a.id.String(), add, del, aborted, d); err != nil {
		a.p.log.Error("cannot persist container ownership; will retry", "attempt", a.id, "err", err)
		a.p.metrics.stateErrors.Inc()
		a.unsaved, a.unsavedDel, a.unsavedAborted = add, del, aborted
	} else {
		a.unsaved, a.unsavedDel, a.unsavedAborted = nil, nil, nil
	}
	return out
}

// trimReplay keeps of an RM's last answer fetched again after a restart
// (relayer.replayLost) what the AM may have missed and needs, without
// repeating what it has: allocated containers (merge drops those already
// recorded, which the AM got), the completions of containers still live
// here (a completion of one the proxy no longer holds was delivered), NM
// tokens (a repeated one is harmless), node updates and headroom. A
// container allocated and completed in that same answer is dropped either
// way. Preemption, container updates and their errors, rejected scheduling
// requests, an AMRMToken and an AM command are not repeated: the AM acted
// on them if it got them, and an RM repeats an AMRMToken roll-over itself
// while the old token is in use.
func (a *attempt) trimReplay(r *yarnpb.AllocateResponseProto) *yarnpb.AllocateResponseProto {
	out := &yarnpb.AllocateResponseProto{ResponseId: r.ResponseId, Limit: r.Limit, NumClusterNodes: r.NumClusterNodes,
		NmTokens: r.NmTokens, UpdatedNodes: r.UpdatedNodes}
	done := map[containerKey]bool{}
	for _, st := range r.GetCompletedContainerStatuses() {
		k := keyOf(st.GetContainerId())
		done[k] = true
		if _, live := a.containers[k]; live {
			out.CompletedContainerStatuses = append(out.CompletedContainerStatuses, st)
		}
	}
	for _, c := range r.GetAllocatedContainers() {
		if !done[keyOf(c.GetId())] {
			out.AllocatedContainers = append(out.AllocatedContainers, c)
		}
	}
	return out
}

// decideRedelivery runs on the first allocate of a recovered attempt (it
// is answered ApplicationMasterNotRegisteredException). The AM sends the
// id of the last answer it received: if that is the one before the last
// answer that carried containers, the AM never saw those containers (the
// proxy stopped between recording and answering), so they are handed out
// again after it re-registers. Any other id means it got them. Either way
// this is decided once.
func (a *attempt) decideRedelivery(amResponseID int32) {
	d := a.delivery
	a.delivery = nil
	if d == nil || nextResponseID(amResponseID) != d.ResponseID {
		return
	}
	for _, b := range d.Containers {
		c := &yarnpb.ContainerProto{}
		if err := proto.Unmarshal(b, c); err != nil {
			a.p.log.Error("stored container does not decode; cannot redeliver it", "attempt", a.id, "err", err)
			continue
		}
		if _, live := a.containers[keyOf(c.GetId())]; live {
			a.redeliver = append(a.redeliver, c)
		}
	}
	for _, b := range d.NMTokens {
		t := &yarnpb.NMTokenProto{}
		if proto.Unmarshal(b, t) == nil {
			a.redeliverTokens = append(a.redeliverTokens, t)
		}
	}
	for _, b := range d.Aborted {
		st := &yarnpb.ContainerStatusProto{}
		if proto.Unmarshal(b, st) == nil {
			a.redeliverAborts = append(a.redeliverAborts, st)
		}
	}
	a.p.log.Info("AM never received the last answer before the restart; redelivering", "attempt", a.id,
		"containers", len(a.redeliver), "aborted", len(a.redeliverAborts))
}

func mustParse(k string) containerKey {
	ck, _ := parseContainerKey(k)
	return ck
}

// finish unregisters every UAM, then the home. A UAM whose sub-cluster
// is lost (lostReason) is abandoned rather than waited for: the
// application finishes on the sub-clusters that can still hear it. A
// reachable UAM that has not unregistered within finish_wait (a slow or
// failing RM) makes the answer isUnregistered=false, so the AM retries.
func (a *attempt) finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.regResp == nil {
		return nil, false, fmt.Errorf("%w: Application Master is trying to unregister before registering for: %s", ErrNotRegistered, a.id.AppKey())
	}
	failed := a.finishUAMs(ctx, req, time.Now().Add(a.p.cfg.FinishWait.D()))
	rm, _, err := a.homeRM(ctx)
	if err != nil {
		return nil, false, err
	}
	resp, err := rm.Finish(ctx, req)
	if err != nil {
		a.p.metrics.rmErrors.WithLabelValues(a.home).Inc()
		return nil, false, err
	}
	if len(failed) > 0 {
		a.p.log.Warn("UAM unregister failed; telling the AM to retry finish", "attempt", a.id, "err", errors.Join(failed...))
		return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(false)}, false, nil
	}
	return resp, resp.GetIsUnregistered(), nil
}

// finishRetryEvery spaces the retries of a UAM unregister that failed
// fast (open breaker) within one finish call.
const finishRetryEvery = 200 * time.Millisecond

// finishUAMs unregisters every UAM not yet unregistered, abandoning those
// whose sub-cluster is lost, until all are done or the deadline passes,
// and returns what is still not unregistered. Unregisters run in the
// background (bounded by call_timeout each): one the deadline cuts short
// goes on, and the AM's retry picks up its result. Holding the AM's call
// up to finish_wait, rather than answering false at once, turns an AM's
// 100 ms retry loop into about one call per finish_wait.
func (a *attempt) finishUAMs(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto, deadline time.Time) []error {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		now := time.Now()
		inflight := map[*uamConn]<-chan struct{}{}
		for sc, u := range a.uams {
			if a.uamFinished[sc] {
				continue
			}
			if why, lost := a.lostReason(sc, u, now); lost {
				a.uamFinished[sc] = true
				if !u.submitted() {
					continue // never got onto that RM: nothing to abandon
				}
				// Its RM expires the attempt itself (AM liveness, or after
				// a restart with recovery); see DESIGN.md.
				a.p.metrics.uamsAbandoned.WithLabelValues(sc).Inc()
				a.p.audit.Info("uam-abandon", "attempt", a.id.String(), "subcluster", sc, "reason", why)
				a.p.log.Warn("finishing without unregistering the UAM of a lost secondary", "attempt", a.id, "subcluster", sc, "reason", why)
				continue
			}
			inflight[u] = u.startFinish(a.p, req)
		}
		var failed []error
		for u, done := range inflight {
			select {
			case <-done:
			case <-wctx.Done():
			}
			if !isClosed(done) {
				failed = append(failed, fmt.Errorf("%s: unregister still in flight", u.sc))
				continue
			}
			if err := u.finishResult(); err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", u.sc, err))
				continue
			}
			a.uamFinished[u.sc] = true
		}
		if len(failed) == 0 || wctx.Err() != nil {
			return failed
		}
		t := time.NewTimer(finishRetryEvery)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return failed
		}
	}
}

func (a *attempt) close() {
	for _, u := range a.uams {
		u.close()
	}
}

// finalState: membership says the sub-cluster is gone for good.
func finalState(s policies.SubClusterState) bool {
	return s == policies.StateLost || s == policies.StateUnregistered || s == policies.StateDecommissioned
}

// lostReason says whether secondary sc is lost to this attempt, and why:
// membership has it in a final state, or its RM has left a call
// unanswered for subcluster_timeout. A UAM still launching is never lost
// here (its launch is bounded by uam_launch_timeout).
func (a *attempt) lostReason(sc string, u *uamConn, now time.Time) (string, bool) {
	if u == nil || !isClosed(u.ready) {
		return "", false
	}
	if m, ok := a.p.members.get(sc); ok && finalState(m.State) {
		return fmt.Sprintf("sub-cluster %s is %s in the federation membership", sc, m.State), true
	}
	timeout := a.p.cfg.SubClusterTimeout.D()
	if d := u.unansweredFor(now); d > timeout {
		return fmt.Sprintf("the RM of sub-cluster %s has not answered for %s (subcluster_timeout %s)", sc, d.Round(time.Millisecond), timeout), true
	}
	return "", false
}

// abortContainers moves every live container of lost sub-cluster sc to
// the aborted set (and into persist, for the caller's state write) and
// returns the ABORTED statuses the AM must see: distributed shell asks
// again for ABORTED containers only, MapReduce reschedules the task.
func (a *attempt) abortContainers(sc, why string, persist map[string]string) []*yarnpb.ContainerStatusProto {
	var out []*yarnpb.ContainerStatusProto
	for k, owner := range a.containers {
		if owner != sc {
			continue
		}
		delete(a.containers, k)
		a.aborted[k] = sc
		persist[k.String()] = sc
		out = append(out, &yarnpb.ContainerStatusProto{
			ContainerId: k.proto(), State: yarnpb.ContainerStateProto_C_COMPLETE.Enum(),
			ExitStatus:  proto.Int32(int32(yarnpb.ContainerExitStatusProto_ABORTED)),
			Diagnostics: proto.String("Container aborted by the yarnfed AMRMProxy: " + why),
		})
	}
	if len(out) > 0 {
		sort.Slice(out, func(i, j int) bool { return out[i].GetContainerId().GetId() < out[j].GetContainerId().GetId() })
		a.p.metrics.containersAborted.WithLabelValues(sc).Add(float64(len(out)))
		a.p.audit.Info("subcluster-lost", "attempt", a.id.String(), "subcluster", sc, "containers_aborted", len(out), "reason", why)
		a.p.log.Warn("secondary lost; its containers are reported ABORTED to the AM", "attempt", a.id, "subcluster", sc,
			"containers", len(out), "reason", why)
	}
	return out
}

// dropAborted removes from an RM's completed statuses the containers the
// AM was already told were ABORTED: it must not count them twice.
func (a *attempt) dropAborted(sc string, in []*yarnpb.ContainerStatusProto) []*yarnpb.ContainerStatusProto {
	if len(a.aborted) == 0 {
		return in
	}
	out := in[:0:0]
	for _, st := range in {
		if _, gone := a.aborted[keyOf(st.GetContainerId())]; gone {
			a.p.log.Info("dropping a completion the AM already had as ABORTED", "attempt", a.id, "subcluster", sc,
				"container", keyOf(st.GetContainerId()).String(), "exit", st.GetExitStatus())
			continue
		}
		out = append(out, st)
	}
	return out
}
