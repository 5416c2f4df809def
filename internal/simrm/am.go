package simrm

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
	"time"
)

// The ApplicationMasterProtocol half of the core, with the exact
// responseId rules of Hadoop 3.4's ApplicationMasterService:
//   - an attempt enters the AMS cache with responseId -1 (not registered);
//   - register sets it to 0; registering twice is
//     InvalidApplicationMasterRequestException("Application Master is
//     already registered : <appId>");
//   - allocate before register is ApplicationMasterNotRegisteredException;
//   - allocate with responseId == last-1 (mod 2^31) resends the last
//     response unchanged; any other responseId but last is
//     InvalidApplicationMasterRequestException; the new response carries
//     last+1, wrapping from MaxInt32 to 0;
//   - after finish (or the attempt's end) the attempt leaves the cache and
//     allocate is ApplicationAttemptNotFoundException.

// nextResponseID loops between 0 and MaxInt32, as Hadoop does.
func nextResponseID(id int32) int32 { return (id + 1) & math.MaxInt32 }

// cached returns the attempt if the ApplicationMasterService still knows it
// (Hadoop's responseMap), else nil.
func (c *core) cached(id AttemptID) *attempt {
	a, ok := c.apps[id.App]
	if !ok || id.Attempt < 1 || int(id.Attempt) > len(a.attempts) || a.attempts[id.Attempt-1].last == nil {
		return nil
	}
	return a.attempts[id.Attempt-1]
}

// Register is registerApplicationMaster.
func (c *core) Register(id AttemptID, req RegisterRequest) (RegisterResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registerLocked(id, req)
}

func (c *core) registerLocked(id AttemptID, req RegisterRequest) (RegisterResponse, error) {
	at := c.cached(id)
	if at == nil {
		return RegisterResponse{}, errorf(ErrInvalidAMRequest, "Application doesn't exist in cache %s", id)
	}
	a := at.app
	if at.last.ResponseID >= 0 && !(a.unmanaged && a.keep) {
		// Hadoop 3.4 lets an unmanaged, keep-containers attempt register
		// again (a federation proxy re-attaching a UAM); anyone else is
		// refused.
		return RegisterResponse{}, errorf(ErrInvalidAMRequest, "Application Master is already registered : %s", id.App)
	}
	at.last = &AllocateResponse{ResponseID: 0, Attempt: id}
	at.host, at.rpcPort, at.trackingURL = req.Host, req.RPCPort, req.TrackingURL
	at.state = AttemptRunning
	at.lastBeat = c.now()
	a.state = AppRunning
	a.diagnostics = ""
	if a.launched == 0 {
		a.launched = c.nowMS()
	}
	resp := RegisterResponse{MaxCapability: c.maxAlloc(), Queue: queuePath(a.queue), SchedulerResourceTypes: []string{"MEMORY", "CPU"},
		Attempt: id, User: a.user}
	if a.keep {
		// Hadoop's getTransferredContainers: every live container of the
		// application but the AM's, earlier attempts' and (re-register of
		// an unmanaged AM) the attempt's own, with an NM token per node.
		nodes := map[string]bool{}
		for _, x := range a.attempts {
			for _, ct := range x.live {
				if ct.am || ct.state == ContainerComplete {
					continue
				}
				resp.ContainersFromPrevious = append(resp.ContainersFromPrevious, c.containerInfo(ct))
				if !nodes[ct.node.id.Host] {
					nodes[ct.node.id.Host] = true
					at.nmTokens[ct.node.id.Host] = true
					resp.NMTokenNodes = append(resp.NMTokenNodes, ct.node.id)
				}
			}
		}
		if len(resp.ContainersFromPrevious) > 0 {
			// As Hadoop 3.4's DefaultAMSProcessor: only when containers are
			// handed over does the RM forget which nodes the attempt holds
			// NM tokens for (the same attempt id when an unmanaged AM
			// registers again), then mint tokens for their nodes alone.
			clear(at.nmTokens)
			for _, n := range resp.NMTokenNodes {
				at.nmTokens[n.Host] = true
			}
		}
		sort.Slice(resp.ContainersFromPrevious, func(i, j int) bool {
			return resp.ContainersFromPrevious[i].ID.ID < resp.ContainersFromPrevious[j].ID.ID
		})
	}
	return resp, nil
}

// Allocate is the AM heartbeat. The returned response is shared (it is
// what a duplicate heartbeat gets back): callers must not modify it.
func (c *core) Allocate(id AttemptID, req AllocateRequest) (*AllocateResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allocateLocked(id, req)
}

func (c *core) allocateLocked(id AttemptID, req AllocateRequest) (*AllocateResponse, error) {
	at := c.cached(id)
	if at == nil {
		return nil, errorf(ErrAttemptNotFound, "Application attempt %s doesn't exist in ApplicationMasterService cache.", id)
	}
	at.lastBeat = c.now()
	last := at.last
	if last.ResponseID < 0 {
		return nil, errorf(ErrAMNotRegistered, "AM is not registered for known application attempt: %s or RM had restarted after AM registered.  AM should re-register.", id)
	}
	if nextResponseID(req.ResponseID) == last.ResponseID {
		return last, nil
	}
	if req.ResponseID != last.ResponseID {
		return nil, errorf(ErrInvalidAMRequest, "Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d", id, last.ResponseID, req.ResponseID)
	}
	// Validate everything before changing anything: a rejected heartbeat
	// leaves the attempt as it was.
	if req.SchedulingRequests > 0 {
		return nil, errorf(ErrInvalidRequest, "Found non empty SchedulingRequest of AllocateRequest for application=%s, however the configured processor is disabled", id)
	}
	for _, rel := range req.Releases {
		if rel.Attempt.App != id.App {
			return nil, errorf(ErrInvalidContainerRelease, "Cannot release container : %s not belonging to this application attempt : %s", rel, id)
		}
	}
	if err := c.updateAsks(at, req.Asks); err != nil {
		return nil, err
	}
	a := at.app
	if p := req.Progress; !math.IsNaN(float64(p)) {
		a.progress = float32(math.Max(0, math.Min(1, float64(p))))
	}
	if req.TrackingURL != "" {
		at.trackingURL = req.TrackingURL
	}
	for _, h := range req.BlacklistAdd {
		at.blacklist[h] = true
	}
	for _, h := range req.BlacklistRemove {
		delete(at.blacklist, h)
	}
	now := c.nowMS()
	for _, rel := range req.Releases {
		for _, x := range a.attempts {
			if ct, ok := x.live[rel.ID]; ok && ct.id == rel && !ct.am {
				c.completeContainer(ct, ExitAborted, "Container released by application", now)
			}
		}
	}
	resp := &AllocateResponse{
		ResponseID:      nextResponseID(last.ResponseID),
		Attempt:         id,
		User:            a.user,
		Priority:        a.priority,
		NumClusterNodes: int32(len(c.nodes)) - c.lostNodes,
		Available:       c.headroom(c.queueByName[a.queue]),
	}
	if len(at.newly) > 0 {
		resp.Allocated = make([]ContainerInfo, 0, len(at.newly))
		for _, ct := range at.newly {
			if ct.state == ContainerComplete {
				continue // released or ended before the AM saw it
			}
			resp.Allocated = append(resp.Allocated, c.containerInfo(ct))
			if !at.nmTokens[ct.node.id.Host] {
				at.nmTokens[ct.node.id.Host] = true
				resp.NMTokenNodes = append(resp.NMTokenNodes, ct.node.id)
			}
		}
		at.newly = at.newly[:0]
	}
	if len(at.completed) > 0 {
		resp.Completed = at.completed
		at.completed = nil
	}
	if c.nodeSeq > at.nodeSeq {
		resp.UpdatedNodes = c.updatedNodes(at.nodeSeq, now)
		at.nodeSeq = c.nodeSeq
	}
	at.last = resp
	if len(req.Asks) > 0 {
		c.kickScheduler()
	}
	return resp, nil
}

// Finish is finishApplicationMaster. It reports whether the unregister is
// complete; here it always is once accepted.
func (c *core) Finish(id AttemptID, req FinishRequest) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finishLocked(id, req)
}

func (c *core) finishLocked(id AttemptID, req FinishRequest) (bool, error) {
	a, ok := c.apps[id.App]
	if !ok {
		return false, appNotFound(id.App)
	}
	// Hadoop answers true first if the final state is already stored, so
	// a retried finish after success is not an error.
	if a.state.Final() {
		return true, nil
	}
	at := c.cached(id)
	if at == nil {
		return false, errorf(ErrInvalidAMRequest, "Application doesn't exist in cache %s", id)
	}
	if at.last.ResponseID < 0 {
		return false, errorf(ErrAMNotRegistered, "Application Master is trying to unregister before registering for: %s", id.App)
	}
	if req.TrackingURL != "" {
		at.trackingURL = req.TrackingURL
	}
	at.finalStatus = req.FinalStatus
	at.diagnostics = req.Diagnostics
	// The application's final status is what its AM reported.
	c.endApp(a, AppFinished, req.FinalStatus, AttemptFinished, req.Diagnostics, ExitKilledAfterAppDone)
	return true, nil
}

// ---- time: container ends, AM liveness, scheduling, simulated AMs ----

// tick advances the simulation to now. The run loop calls it every
// TickInterval and when kicked; tests call it directly.
func (c *core) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	ms := now.UnixMilli()
	for c.expiry.Len() > 0 && c.expiry[0].expiresAt <= ms {
		ct := heap.Pop(&c.expiry).(*container)
		c.completeContainer(ct, ExitSuccess, "", ms)
	}
	c.checkLiveness(now)
	c.schedule()
	c.stepSimAMs(now)
}

// checkLiveness fails attempts whose AM stopped heartbeating
// (yarn.am.liveness-monitor.expiry-interval-ms). Built-in AMs never expire.
func (c *core) checkLiveness(now time.Time) {
	if c.cfg.AMLivenessTimeout <= 0 {
		return
	}
	for _, a := range c.liveAMs() {
		at := a.current()
		if a.sim != nil || at == nil || at.state.final() || at.needsAM {
			continue
		}
		if now.Sub(at.lastBeat) > c.cfg.AMLivenessTimeout.D() {
			c.failAttempt(at, fmt.Sprintf("ApplicationMaster for attempt %s timed out", at.id))
		}
	}
}

// markLaunched records that a's current attempt has its AM up.
func (c *core) markLaunched(a *app) {
	if c.launchedSet == nil {
		c.launchedSet = map[*app]bool{}
	}
	if !c.launchedSet[a] {
		c.launchedSet[a] = true
		c.launched = append(c.launched, a)
	}
}

// liveAMs drops applications whose AM is no longer up and returns the rest,
// in launch order. The returned slice stays valid while the caller ends or
// fails attempts: only a later liveAMs call compacts it.
func (c *core) liveAMs() []*app {
	keep := c.launched[:0]
	for _, a := range c.launched {
		if at := a.current(); a.state.Final() || at == nil || at.state.final() || at.needsAM {
			delete(c.launchedSet, a)
			continue
		}
		keep = append(keep, a)
	}
	clear(c.launched[len(keep):])
	c.launched = keep
	return keep[:len(keep):len(keep)]
}

// failAttempt ends an attempt as FAILED and starts another if the
// application has attempts left; unmanaged applications are never retried.
func (c *core) failAttempt(at *attempt, diag string) {
	a := at.app
	now := c.nowMS()
	if a.unmanaged || int32(len(a.attempts)) >= a.maxAttempts {
		c.endApp(a, AppFailed, FinalFailed, AttemptFailed,
			fmt.Sprintf("Application %s failed %d times due to %s. Failing the application.", a.id, len(a.attempts), diag), ExitAborted)
		return
	}
	exit := ExitAborted
	if a.keep {
		// Keep the workers, end only the AM container.
		at.state, at.finished, at.diagnostics, at.last, at.needsAM = AttemptFailed, now, diag, nil, false
		c.clearAsks(at)
		if at.amContainer != nil {
			c.completeContainer(at.amContainer, exit, diag, now)
		}
	} else {
		c.endAttempt(at, AttemptFailed, diag, exit, now)
	}
	a.state = AppAccepted
	c.newAttempt(a, now)
	if a.sim != nil {
		a.sim = &simAM{}
	}
}

// FailAttempt is failApplicationAttempt, and the chaos hook for AM crashes.
func (c *core) FailAttempt(id AttemptID, diag string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, err := c.findAttempt(id)
	if err != nil {
		return err
	}
	if at.state.final() || at.app.state.Final() {
		return errorf(ErrInvalidRequest, "Attempt %s is already in a final state %s", id, at.state)
	}
	if at != at.app.current() {
		return errorf(ErrInvalidRequest, "Attempt %s is not the current attempt", id)
	}
	c.failAttempt(at, diag)
	return nil
}

// ForgetRegistrations models an RM restart with work-preserving recovery:
// every AM must register again (its next allocate gets
// ApplicationMasterNotRegisteredException, on which AMRMClient re-registers).
func (c *core) ForgetRegistrations() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.keys.rollNMKey(int32(c.epoch))
	c.forgetNMTokenNodes("") // a new NM-token secret manager
	for _, a := range c.apps {
		if at := a.current(); at != nil && at.last != nil {
			at.last = &AllocateResponse{ResponseID: -1, Attempt: at.id}
			if a.sim != nil && a.sim.registered {
				a.sim.registered = false
			}
		}
	}
}

// RollNMTokenKey models the RM activating its next NM-token master key
// (yarn.resourcemanager.nm-tokens.master-key-rolling-interval-secs): NM
// tokens made from now on carry the new key id, and every attempt's set of
// nodes it holds tokens for is forgotten (Hadoop's
// NMTokenSecretManagerInRM.activateNextMasterKey), so each attempt gets a
// node's token again with its next container there.
func (c *core) RollNMTokenKey() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, id := c.keys.ids()
	c.keys.rollNMKey(id + 1)
	c.forgetNMTokenNodes("")
}

// forgetNMTokenNodes drops host (every node when empty) from the node set
// of every attempt: the next container there comes with a fresh NM token.
func (c *core) forgetNMTokenNodes(host string) {
	for _, a := range c.apps {
		for _, at := range a.attempts {
			if host == "" {
				clear(at.nmTokens)
			} else {
				delete(at.nmTokens, host)
			}
		}
	}
}

// simAM is the built-in ApplicationMaster of a managed application: it
// registers once its container is launched, asks for SimAM.Containers
// containers, waits for them to complete, and finishes SUCCEEDED.
type simAM struct {
	launchedAt int64
	nextBeat   time.Time
	registered bool
	asked      bool
	responseID int32
	got        int
	done       int
}

func (c *core) stepSimAMs(now time.Time) {
	for _, a := range c.liveAMs() {
		if a.sim == nil || a.state.Final() {
			continue
		}
		at := a.current()
		if at == nil || at.state != AttemptLaunched && at.state != AttemptRunning {
			continue
		}
		if now.Before(a.sim.nextBeat) {
			continue
		}
		a.sim.nextBeat = now.Add(c.cfg.SimAM.Heartbeat.D())
		c.stepSimAM(a, at)
	}
}

func (c *core) stepSimAM(a *app, at *attempt) {
	s := a.sim
	host := at.amContainer.node.id.Host
	if !s.registered {
		if at.last != nil && at.last.ResponseID >= 0 {
			s.registered = true // registered before an RM restart
		} else if _, err := c.registerLocked(at.id, RegisterRequest{Host: host, RPCPort: -1, TrackingURL: ""}); err != nil {
			c.cfg.Logger.Warn("simulated AM register failed", "attempt", at.id, "err", err)
			return
		}
		s.registered = true
		s.responseID = at.last.ResponseID
	}
	want := c.cfg.SimAM.Containers
	req := AllocateRequest{ResponseID: s.responseID, Progress: progress(s.done, want)}
	if !s.asked && want > 0 {
		req.Asks = []ResourceRequest{{Priority: 1, ResourceName: AnyResource, Capability: c.cfg.SimAM.Resource, NumContainers: int32(want), RelaxLocality: true}}
		s.asked = true
	}
	resp, err := c.allocateLocked(at.id, req)
	if err != nil {
		c.cfg.Logger.Warn("simulated AM allocate failed", "attempt", at.id, "err", err)
		s.registered = false
		return
	}
	s.responseID = resp.ResponseID
	s.got += len(resp.Allocated)
	s.done += len(resp.Completed)
	if s.done >= want && (want > 0 || c.nowMS()-s.launchedAt >= c.cfg.SimAM.ContainerRuntime.D().Milliseconds()) {
		if _, err := c.finishLocked(at.id, FinishRequest{FinalStatus: FinalSucceeded, Diagnostics: ""}); err != nil {
			c.cfg.Logger.Warn("simulated AM finish failed", "attempt", at.id, "err", err)
		}
	}
}

func progress(done, want int) float32 {
	if want == 0 {
		return 0.5
	}
	return float32(done) / float32(want)
}
