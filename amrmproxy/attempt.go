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
	// resync: an RM forgot our registration (restart); the AM's next
	// allocate is answered ApplicationMasterNotRegisteredException so it
	// re-registers and re-sends its whole state.
	resync atomic.Bool
	// lastCall is when the AM last called (unix nanoseconds), for expiry.
	lastCall atomic.Int64
	// delivery (recovered attempts only) is the last answer that carried
	// containers before the restart; redeliver holds what the AM turned
	// out not to have received, handed out after it re-registers.
	delivery        *state.Delivery
	redeliver       []*yarnpb.ContainerProto
	redeliverTokens []*yarnpb.NMTokenProto
}

func newAttempt(p *Proxy, id AttemptID, home string) *attempt {
	a := &attempt{p: p, id: id, home: home, uams: map[string]*uamConn{}, containers: map[containerKey]string{},
		headroom: map[string]*yarnpb.ResourceProto{}, nodes: map[string]int32{}, uamFinished: map[string]bool{}}
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
	resp, err := rm.Register(ctx, req)
	if err != nil {
		return nil, err
	}
	a.regReq, a.regResp = proto.Clone(req).(*yarnpb.RegisterApplicationMasterRequestProto), resp
	a.queue = resp.GetQueue()
	a.user = a.p.appUser(ctx, sc, a.id)
	a.homeRel = newRelayer(rm, true)
	a.homeRel.setRegister(a.regReq)
	a.homeLastOK = time.Now()
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
		a.homeRel = newRelayer(rm, false) // recovered: the RM's sequence is unknown
		a.homeRel.setRegister(a.regReq)
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
	homeResp, err := a.homeRel.allocate(ctx, homeReq)
	a.p.metrics.rmAllocate.WithLabelValues(a.home).Observe(time.Since(hstart).Seconds())
	if errors.Is(err, errRMForgotRegistration) {
		a.registered = false
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
	a.uams[old.sc] = u
	go u.reattach(a.p, tok, registered)
	return u
}

// timedOut lists secondaries silent past the timeout or behind an open
// breaker: no new asks, no headroom.
func (a *attempt) timedOut(now time.Time) []policies.SubClusterID {
	var out []policies.SubClusterID
	for sc, u := range a.uams {
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

func isClosed(c chan struct{}) bool {
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
		AllocatedContainers: a.redeliver, NmTokens: a.redeliverTokens,
	}
	a.redeliver, a.redeliverTokens = nil, nil
	add := map[string]string{}
	var del []string
	take := func(sc string, r *yarnpb.AllocateResponseProto) {
		for _, c := range r.AllocatedContainers {
			k := keyOf(c.GetId())
			if _, dup := a.containers[k]; dup {
				continue
			}
			a.containers[k] = sc
			add[k.String()] = sc
			out.AllocatedContainers = append(out.AllocatedContainers, c)
			a.p.metrics.containers.WithLabelValues(sc).Inc()
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
	take(a.home, home)
	scs := make([]string, 0, len(a.uams))
	for sc := range a.uams {
		scs = append(scs, sc)
	}
	sort.Strings(scs)
	for _, sc := range scs {
		for _, r := range a.uams[sc].take() {
			take(sc, r)
		}
	}
	// Headroom and node counts: the home and every secondary not timed out.
	excluded := map[string]bool{}
	for _, sc := range a.timedOut(time.Now()) {
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
	var d *state.Delivery
	if len(out.AllocatedContainers) > 0 {
		d = &state.Delivery{ResponseID: responseID}
		for _, c := range out.AllocatedContainers {
			d.Containers = append(d.Containers, mustMarshal(c))
		}
		for _, t := range out.NmTokens {
			d.NMTokens = append(d.NMTokens, mustMarshal(t))
		}
	}
	if err := a.p.state.UpdateContainers(a.id.String(), add, del, d); err != nil {
		a.p.log.Error("cannot persist container ownership; will retry", "attempt", a.id, "err", err)
		a.p.metrics.stateErrors.Inc()
		a.unsaved, a.unsavedDel = add, del
	} else {
		a.unsaved, a.unsavedDel = nil, nil
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
	a.p.log.Info("AM never received containers handed out before the restart; redelivering", "attempt", a.id, "containers", len(a.redeliver))
}

func mustParse(k string) containerKey {
	ck, _ := parseContainerKey(k)
	return ck
}

// finish unregisters every UAM, then the home. If a UAM did not
// unregister the AM is told isUnregistered=false and retries.
func (a *attempt) finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.regResp == nil {
		return nil, false, fmt.Errorf("%w: Application Master is trying to unregister before registering for: %s", ErrNotRegistered, a.id.AppKey())
	}
	var todo []*uamConn
	for sc, u := range a.uams {
		if !a.uamFinished[sc] {
			todo = append(todo, u)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	for _, u := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := u.finish(ctx, a.p, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, fmt.Errorf("%s: %w", u.sc, err))
				return
			}
			a.uamFinished[u.sc] = true
		}()
	}
	wg.Wait()
	rm, _, err := a.homeRM(ctx)
	if err != nil {
		return nil, false, err
	}
	resp, err := rm.Finish(ctx, req)
	if err != nil {
		return nil, false, err
	}
	if len(failed) > 0 {
		a.p.log.Warn("UAM unregister failed; telling the AM to retry finish", "attempt", a.id, "err", errors.Join(failed...))
		return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(false)}, false, nil
	}
	return resp, resp.GetIsUnregistered(), nil
}

func (a *attempt) close() {
	for _, u := range a.uams {
		u.close()
	}
}
