package simrm

import (
	"container/heap"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// core is the simulated RM's state machine: nodes, queues, applications,
// attempts, containers and the scheduler, behind one mutex. Every exported
// operation is O(size of its request) except the scheduling pass (once per
// tick) and the listing calls, so AM heartbeats and metrics stay cheap at
// 10,000 nodes and 1,000 running applications.
type core struct {
	cfg Config

	// launched indexes the applications whose current attempt has an AM up
	// (launched, registered or finishing): per-tick AM work walks these, not
	// every application waiting in a queue. Entries are added at launch and
	// pruned lazily by liveAMs; launchedSet keeps them unique.
	launched    []*app
	launchedSet map[*app]bool

	mu        sync.Mutex
	epoch     int64
	clusterTS int64
	startedOn int64

	nodes      []*node
	hosts      map[string]*node
	racks      map[string][]*node
	rackNames  []string
	rackCursor map[string]int
	cursor     int
	total      Resource
	used       Resource
	// nodeMaxAlloc is the configured maximum allocation capped at the
	// largest node (all simulated nodes register at start).
	nodeMaxAlloc Resource

	queues      []*queue
	queueByName map[string]*queue

	apps      map[AppID]*app
	appOrder  []*app // submission order; may hold forgotten apps until compacted
	completed []*app // finished applications, oldest first
	forgotten int    // forgotten apps still in appOrder
	qseqNext  int64  // next app.qseq
	nextAppID int32

	expiry expiryHeap // containers that end by themselves

	// Node state changes: nodeSeq numbers them, changedNodes lists them in
	// order, so each AM learns the nodes changed since its last heartbeat
	// (AllocateResponse.updated_nodes).
	nodeSeq      int64
	changedNodes []nodeChange
	lostNodes    int32

	// Scheduler memo: sizes no node could take, valid while freeGen (bumped
	// whenever a container ends) equals failedGen.
	failed             []Resource
	freeGen, failedGen int64

	// Metric counters (cluster-wide, Hadoop's root queue metrics).
	appsSubmitted, appsCompleted, appsFailed, appsKilled int32
	containersAllocated                                  int32
	pendingContainers                                    int32
	pendingResource                                      Resource

	keys *secrets // AMRMToken, NM token and container token keys

	kick chan struct{}
	now  func() time.Time
}

type node struct {
	id       NodeID
	httpAddr string
	rack     string
	total    Resource
	used     Resource
	nconts   int32
	lost     bool  // NodeManager LOST: no capacity, no placements
	changed  int64 // nodeSeq of its last state change
}

func (n *node) free() Resource { return n.total.sub(n.used) }

type nodeChange struct {
	n   *node
	seq int64
}

type app struct {
	id          AppID
	name, user  string
	queue       string
	appType     string
	tags        []string
	priority    int32
	unmanaged   bool
	amResource  Resource
	maxAttempts int32
	keep        bool
	amNodeLabel string

	state       AppState
	finalStatus FinalStatus
	diagnostics string
	progress    float32

	submitted, started, launched, finished int64

	// qseq orders applications of equal priority and submission time by
	// arrival in their queue; qlist is the queue list holding it.
	qseq  int64
	qlist qList

	attempts    []*attempt
	memSeconds  int64
	vcoreSecond int64

	sim *simAM // the built-in AM of a managed application
}

func (a *app) current() *attempt {
	if len(a.attempts) == 0 {
		return nil
	}
	return a.attempts[len(a.attempts)-1]
}

type schedKey struct {
	priority   int32
	allocReqID int64
}

type askSet struct {
	key        schedKey
	capability Resource
	byName     map[string]int32
	relax      map[string]bool
}

func (s *askSet) any() int32 { return s.byName[AnyResource] }

type attempt struct {
	id    AttemptID
	app   *app
	state AttemptState

	amContainer *container
	needsAM     bool // waiting for the scheduler to place the AM container

	// last is the AllocateResponseLock of Hadoop's ApplicationMasterService:
	// nil once the attempt left the cache, ResponseID -1 before register.
	last *AllocateResponse

	host        string
	rpcPort     int32
	trackingURL string
	diagnostics string
	finalStatus FinalStatus
	started     int64
	finished    int64
	lastBeat    time.Time

	asks      map[schedKey]*askSet
	askKeys   []schedKey // sorted: priority, then allocation request id
	blacklist map[string]bool

	nodeSeq   int64        // node changes this AM has been told about
	newly     []*container // allocated, not yet handed to the AM
	completed []ContainerStatus
	live      map[int64]*container
	all       []*container // every container of the attempt, for reports
	nmTokens  map[string]bool
	nextSeq   int64
}

type container struct {
	id          ContainerID
	at          *attempt
	node        *node
	res         Resource
	priority    int32
	allocReqID  int64
	state       ContainerState
	exitStatus  int32
	diagnostics string
	created     int64
	finished    int64
	am          bool
	expiresAt   int64 // ms; 0 = never
	heapIndex   int
}

func newCore(cfg Config) *core {
	c := &core{
		cfg:         cfg,
		epoch:       cfg.Epoch,
		clusterTS:   cfg.ClusterTimestamp,
		hosts:       make(map[string]*node, cfg.Nodes),
		racks:       map[string][]*node{},
		rackCursor:  map[string]int{},
		queueByName: map[string]*queue{},
		apps:        map[AppID]*app{},
		nextAppID:   1,
		kick:        make(chan struct{}, 1),
		now:         cfg.Now,
	}
	c.startedOn = c.now().UnixMilli()
	key := cfg.MasterKey
	if len(key) == 0 {
		key = make([]byte, 20)
		_, _ = rand.Read(key)
	}
	c.keys = newSecrets(key, int32(c.epoch))
	for i := 0; i < cfg.Nodes; i++ {
		rack := "/rack-" + itoa(int64(i%cfg.Racks))
		host := cfg.HostPrefix + pad(int64(i), 5)
		n := &node{
			id:       NodeID{Host: host, Port: 8041},
			httpAddr: host + ":8042",
			rack:     rack,
			total:    Resource{MemoryMB: cfg.NodeMemoryMB, VCores: cfg.NodeVCores},
		}
		c.nodes = append(c.nodes, n)
		c.hosts[host] = n
		if _, ok := c.racks[rack]; !ok {
			c.rackNames = append(c.rackNames, rack)
		}
		c.racks[rack] = append(c.racks[rack], n)
		c.total = c.total.add(n.total)
	}
	c.nodeMaxAlloc = cfg.MaxAllocation
	if cfg.Nodes > 0 {
		c.nodeMaxAlloc = minRes(cfg.MaxAllocation, Resource{MemoryMB: cfg.NodeMemoryMB, VCores: cfg.NodeVCores})
	}
	for _, qc := range cfg.Queues {
		if qc.MaxCapacity == 0 {
			qc.MaxCapacity = 100
		}
		q := &queue{cfg: qc}
		c.queues = append(c.queues, q)
		c.queueByName[qc.Name] = q
	}
	return c
}

func (c *core) nowMS() int64 { return c.now().UnixMilli() }

// kickScheduler asks the run loop for a scheduling pass soon, without
// blocking: new asks should not wait a whole tick.
func (c *core) kickScheduler() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// ---- ApplicationClientProtocol ----

// NewApplication hands out the next application id and the largest
// container the cluster can grant.
func (c *core) NewApplication() (AppID, Resource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := AppID{ClusterTimestamp: c.clusterTS, ID: c.nextAppID}
	c.nextAppID++
	return id, c.maxAlloc()
}

// maxAlloc is the largest container the scheduler grants, as
// ClusterNodeTracker.getMaxAllowedAllocation answers: the configured
// maximum until MaxAllocationWait after start (nodes may still be
// registering), then capped at the largest node.
func (c *core) maxAlloc() Resource {
	if c.now().UnixMilli()-c.startedOn < c.cfg.MaxAllocationWait.D().Milliseconds() {
		return c.cfg.MaxAllocation
	}
	return c.nodeMaxAlloc
}

// normalize rounds a request up to a multiple of the minimum allocation, as
// the capacity scheduler's resource calculator does.
func (c *core) normalize(r Resource) Resource {
	minA := c.cfg.MinAllocation
	if r.MemoryMB < minA.MemoryMB {
		r.MemoryMB = minA.MemoryMB
	}
	if r.VCores < minA.VCores {
		r.VCores = minA.VCores
	}
	if rem := r.MemoryMB % minA.MemoryMB; rem != 0 {
		r.MemoryMB += minA.MemoryMB - rem
	}
	return r
}

func (c *core) validateResource(r Resource) error {
	maxA := c.maxAlloc()
	if r.MemoryMB < 0 || r.VCores < 0 {
		return errorf(ErrInvalidResourceRequest, "Invalid resource request, requested resource type=[memory-mb] < 0 or greater than maximum allowed allocation. Requested resource=%v, maximum allowed allocation=%v", r, maxA)
	}
	if !maxA.fits(r) {
		dim := "memory-mb"
		if r.MemoryMB <= maxA.MemoryMB {
			dim = "vcores"
		}
		return errorf(ErrInvalidResourceRequest, "Invalid resource request! Cannot allocate containers as requested resource is greater than maximum allowed allocation. Requested resource type=[%s], Requested resource=%v, maximum allowed allocation=%v, please note that maximum allowed allocation is calculated by scheduler based on maximum resource of registered NodeManagers, which might be less than configured maximum allocation=%v", dim, r, maxA, c.cfg.MaxAllocation)
	}
	return nil
}

// Submit accepts an application. Resubmitting a known id succeeds without
// effect, as ClientRMService does (clients retry submissions).
func (c *core) Submit(req SubmitRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.apps[req.ID]; ok {
		return nil
	}
	if req.ID.ID <= 0 {
		return errorf(ErrInvalidRequest, "Invalid application id %s", req.ID)
	}
	if !req.Unmanaged {
		if err := c.validateResource(req.AMResource); err != nil {
			return err
		}
	}
	now := c.nowMS()
	a := &app{
		id:          req.ID,
		name:        req.Name,
		user:        req.User,
		queue:       req.Queue,
		appType:     req.Type,
		priority:    req.Priority,
		unmanaged:   req.Unmanaged,
		amResource:  c.normalize(req.AMResource),
		maxAttempts: req.MaxAttempts,
		keep:        req.KeepContainers,
		amNodeLabel: req.AMNodeLabel,
		submitted:   now,
		started:     now,
		state:       AppNew,
	}
	if a.name == "" {
		a.name = "N/A"
	}
	if a.appType == "" {
		a.appType = "YARN"
	}
	if a.queue == "" {
		a.queue = "default"
	}
	a.queue = strings.TrimPrefix(a.queue, "root.")
	if a.maxAttempts <= 0 || a.maxAttempts > c.cfg.MaxAppAttempts {
		a.maxAttempts = c.cfg.MaxAppAttempts
	}
	for _, t := range req.Tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(a.tags, t) {
			a.tags = append(a.tags, t)
		}
	}
	if req.ID.ClusterTimestamp == c.clusterTS && req.ID.ID >= c.nextAppID {
		c.nextAppID = req.ID.ID + 1
	}
	c.apps[a.id] = a
	c.appOrder = append(c.appOrder, a)
	c.appsSubmitted++

	// NEW -> NEW_SAVING -> SUBMITTED happen at once: the state store is memory.
	q, ok := c.queueByName[a.queue]
	if !ok {
		a.state = AppFailed
		a.finalStatus = FinalFailed
		a.finished = now
		a.diagnostics = fmt.Sprintf("Application %s submitted by user %s to unknown queue: %s", a.id, a.user, a.queue)
		c.appsFailed++
		c.retire(a)
		return nil
	}
	if limit := c.maxQueueApps(q); limit > 0 && q.size() >= limit {
		// The capacity scheduler's yarn.scheduler.capacity.maximum-applications:
		// the submission call succeeds and the application is rejected
		// (FAILED, the reason in its diagnostics, which YarnClient raises).
		a.state = AppFailed
		a.finalStatus = FinalFailed
		a.finished = now
		a.diagnostics = fmt.Sprintf("org.apache.hadoop.security.AccessControlException: Queue %s already has %d applications, cannot accept submission of application: %s", queuePath(q.cfg.Name), q.size(), a.id)
		c.appsFailed++
		c.retire(a)
		return nil
	}
	a.state = AppAccepted
	c.enqueue(q, a)
	c.newAttempt(a, now)
	if !a.unmanaged && !c.cfg.SimAM.Off {
		a.sim = &simAM{}
	}
	c.kickScheduler()
	return nil
}

// maxQueueApps is a queue's share of MaxApplications (the capacity
// scheduler gives each leaf maximum-applications x its absolute capacity);
// 0 means no limit.
func (c *core) maxQueueApps(q *queue) int {
	if c.cfg.MaxApplications <= 0 {
		return 0
	}
	return max(1, int(float64(c.cfg.MaxApplications)*float64(q.cfg.Capacity)/100))
}

// enqueue makes a the newest arrival in q; newAttempt then files it as
// waiting or running.
func (c *core) enqueue(q *queue, a *app) {
	c.qseqNext++
	a.qseq = c.qseqNext
	a.qlist = qNone
}

func (c *core) newAttempt(a *app, now int64) *attempt {
	at := &attempt{
		id:        AttemptID{App: a.id, Attempt: int32(len(a.attempts) + 1)},
		app:       a,
		state:     AttemptScheduled,
		last:      &AllocateResponse{ResponseID: -1},
		started:   now,
		asks:      map[schedKey]*askSet{},
		blacklist: map[string]bool{},
		live:      map[int64]*container{},
		nmTokens:  map[string]bool{},
		lastBeat:  c.now(),
		nodeSeq:   c.nodeSeq,
	}
	if prev := a.current(); prev != nil && a.keep {
		at.nextSeq = prev.nextSeq
	}
	a.attempts = append(a.attempts, at)
	if a.unmanaged {
		// An unmanaged AM needs no container: the attempt is launched at
		// once and its AMRMToken shows in the application report.
		at.state = AttemptLaunched
		a.diagnostics = diagLaunched
		c.markLaunched(a)
	} else {
		at.needsAM = true
		a.diagnostics = diagWaitingForAM
	}
	if q := c.queueByName[a.queue]; q != nil {
		q.place(a)
	}
	return at
}

// Diagnostics an ACCEPTED application shows, in Hadoop's words.
const (
	diagWaitingForAM = "Application is Activated, waiting for resources to be assigned for AM."
	diagLaunched     = "AM container is launched, waiting for AM container to Register with RM"
)

func (c *core) lookup(id AppID) (*app, error) {
	a, ok := c.apps[id]
	if !ok {
		return nil, appNotFound(id)
	}
	return a, nil
}

// AppReport returns one application's report.
func (c *core) AppReport(id AppID) (AppReport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.lookup(id)
	if err != nil {
		return AppReport{}, err
	}
	return c.report(a), nil
}

func (c *core) report(a *app) AppReport {
	r := AppReport{
		ID: a.id, User: a.user, Queue: queuePath(a.queue), Name: a.name, Type: a.appType,
		Host: "N/A", RPCPort: -1, Diagnostics: a.diagnostics, State: a.state,
		FinalStatus: a.finalStatus, Progress: a.progress, Tags: a.tags, Priority: a.priority,
		Unmanaged: a.unmanaged, Submitted: a.submitted, Started: a.started, Launched: a.launched,
		Finished: a.finished, MemorySeconds: a.memSeconds, VCoreSeconds: a.vcoreSecond,
		ClusterTimestamp: c.clusterTS, AMNodeLabel: a.amNodeLabel,
	}
	if a.state == AppFinished {
		r.Progress = 1
	}
	at := a.current()
	if at == nil {
		return r
	}
	id := at.id
	r.CurrentAttempt = &id
	if at.state == AttemptRunning || at.state == AttemptFinished {
		r.Host, r.RPCPort, r.TrackingURL = at.host, at.rpcPort, at.trackingURL
		if r.Host == "" {
			r.Host = "N/A"
		}
	}
	if at.amContainer != nil {
		ci := c.containerInfo(at.amContainer)
		r.AMContainer = &ci
	}
	var used Resource
	var running int32
	for _, ct := range at.live {
		used = used.add(ct.res)
		running++
	}
	r.UsedResources, r.RunningContainer = used, running
	for _, s := range at.asks {
		n := s.any()
		r.NeededResources = r.NeededResources.add(Resource{MemoryMB: s.capability.MemoryMB * int64(n), VCores: s.capability.VCores * n})
	}
	r.NeededResources = r.NeededResources.add(used)
	if c.total.MemoryMB > 0 {
		r.ClusterUsagePct = float32(used.MemoryMB) * 100 / float32(c.total.MemoryMB)
		if q := c.queueByName[a.queue]; q != nil && q.cfg.Capacity > 0 {
			r.QueueUsagePct = r.ClusterUsagePct * 100 / q.cfg.Capacity
		}
	}
	// Hadoop hands the token out only while the attempt is LAUNCHED (the
	// unmanaged AM has not registered yet), and only to the owner: the
	// binding checks the caller.
	if a.unmanaged && at.state == AttemptLaunched && at.last != nil {
		t := c.keys.amrmToken(at.id, c.cfg.SchedulerAddr)
		r.AMRMToken = &t
	}
	return r
}

// Apps lists applications matching f, in submission order.
func (c *core) Apps(f AppFilter) []AppReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []AppReport
	for _, a := range c.appOrder {
		if f.Limit > 0 && int64(len(out)) >= f.Limit {
			break
		}
		if c.forgotten > 0 && c.apps[a.id] != a {
			continue
		}
		if f.matches(a) {
			out = append(out, c.report(a))
		}
	}
	return out
}

func (f *AppFilter) matches(a *app) bool {
	if len(f.Types) > 0 && !slices.ContainsFunc(f.Types, func(t string) bool { return equalFold(t, a.appType) }) {
		return false
	}
	if len(f.States) > 0 && !slices.Contains(f.States, a.state) {
		return false
	}
	if len(f.Users) > 0 && !slices.Contains(f.Users, a.user) {
		return false
	}
	if f.OwnUser != "" && a.user != f.OwnUser {
		return false
	}
	if len(f.Queues) > 0 && !slices.ContainsFunc(f.Queues, func(q string) bool { return strings.TrimPrefix(q, "root.") == a.queue }) {
		return false
	}
	if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, func(t string) bool { return slices.Contains(a.tags, strings.ToLower(t)) }) {
		return false
	}
	if f.Name != "" && f.Name != a.name {
		return false
	}
	if a.started < f.StartBegin || (f.StartEnd > 0 && a.started > f.StartEnd) {
		return false
	}
	if f.FinishBegin > 0 || f.FinishEnd > 0 {
		if a.finished == 0 || a.finished < f.FinishBegin || (f.FinishEnd > 0 && a.finished > f.FinishEnd) {
			return false
		}
	}
	return true
}

// Kill ends an application. It reports whether the kill is complete; it
// always is here, since the state store is memory.
func (c *core) Kill(id AppID, user, diagnostics string) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.lookup(id)
	if err != nil {
		return false, err
	}
	if a.state.Final() {
		return true, nil
	}
	// ClientRMService's wording; callers pass what the client sent.
	msg := fmt.Sprintf("Application %s was killed by user %s", a.id, user)
	if d := strings.TrimSpace(diagnostics); d != "" {
		msg += " with diagnostic message: " + d
	}
	c.endApp(a, AppKilled, FinalKilled, AttemptKilled, msg, ExitKilledByRM)
	return true, nil
}

// endApp moves an application to a final state and releases everything it
// holds.
func (c *core) endApp(a *app, st AppState, fs FinalStatus, ast AttemptState, diag string, exit int32) {
	now := c.nowMS()
	if at := a.current(); at != nil && !at.state.final() {
		c.endAttempt(at, ast, diag, exit, now)
	}
	a.state, a.finalStatus, a.diagnostics, a.finished = st, fs, diag, now
	if st == AppFinished {
		a.progress = 1
	}
	switch st {
	case AppFinished:
		c.appsCompleted++
	case AppFailed:
		c.appsFailed++
	case AppKilled:
		c.appsKilled++
	}
	if q := c.queueByName[a.queue]; q != nil {
		q.remove(a)
	}
	a.sim = nil
	c.retire(a)
}

// retire remembers a finished application and forgets the oldest ones
// beyond MaxCompletedApps, as the RMAppManager does.
func (c *core) retire(a *app) {
	c.completed = append(c.completed, a)
	for len(c.completed) > c.cfg.MaxCompletedApps {
		old := c.completed[0]
		c.completed[0] = nil
		c.completed = c.completed[1:]
		delete(c.apps, old.id)
		c.forgotten++
	}
	if c.forgotten > 0 && c.forgotten >= len(c.appOrder)/2 {
		c.appOrder = slices.DeleteFunc(c.appOrder, func(x *app) bool { return c.apps[x.id] != x })
		c.forgotten = 0
	}
}

// endAttempt finishes an attempt: drops it from the AMS cache, clears its
// asks and completes its containers.
func (c *core) endAttempt(at *attempt, st AttemptState, diag string, exit int32, now int64) {
	at.state = st
	at.finished = now
	if at.diagnostics == "" {
		at.diagnostics = diag
	}
	at.last = nil
	at.needsAM = false
	c.clearAsks(at)
	for _, ct := range at.live {
		d := "Container killed by the ApplicationMaster's end: " + diag
		if ct.am {
			d = diag
		}
		c.completeContainer(ct, exit, d, now)
	}
}

func (c *core) clearAsks(at *attempt) {
	for _, s := range at.asks {
		c.adjustPending(s, -s.any())
	}
	clear(at.asks)
	at.askKeys = at.askKeys[:0]
}

// Move moves an application to another queue on behalf of user.
func (c *core) Move(id AppID, target, user string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.lookup(id)
	if err != nil {
		return err
	}
	// ClientRMService checks the target queue first (as an ACL question,
	// wrapped in a YarnException), then the application's state.
	dst, ok := c.queueByName[strings.TrimPrefix(target, "root.")]
	if !ok {
		return errorf(ErrInvalidRequest, "org.apache.hadoop.security.AccessControlException: User %s cannot submit applications to target queue or the target queue doesn't exist: %s while moving %s", user, target, a.id)
	}
	target = dst.cfg.Name
	if a.state.Final() {
		return errorf(ErrInvalidRequest, "App in %s state cannot be moved.", a.state)
	}
	if a.queue == target {
		return nil
	}
	src := c.queueByName[a.queue]
	var used Resource
	var n int32
	if at := a.current(); at != nil {
		for _, ct := range at.live {
			used = used.add(ct.res)
			n++
		}
	}
	if src != nil {
		src.remove(a)
		src.used = src.used.sub(used)
		src.nconts -= n
	}
	c.enqueue(dst, a)
	dst.place(a)
	dst.used = dst.used.add(used)
	dst.nconts += n
	a.queue = target
	return nil
}

// UpdatePriority sets the application priority, capped at the cluster
// maximum (Hadoop's yarn.cluster.max-application-priority, default 0 —
// simrm allows 0..10) and returns the priority in effect.
func (c *core) UpdatePriority(id AppID, prio int32) (int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.lookup(id)
	if err != nil {
		return 0, err
	}
	if a.state.Final() {
		// Hadoop skips the update for finished applications rather than
		// failing, and answers the priority they have.
		return a.priority, nil
	}
	const maxPriority = 10
	if prio > maxPriority {
		prio = maxPriority
	}
	if prio < 0 {
		prio = 0
	}
	a.priority = prio
	if q := c.queueByName[a.queue]; q != nil {
		q.resort()
	}
	return prio, nil
}

// Attempts lists the attempts of an application.
func (c *core) Attempts(id AppID) ([]AttemptReport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.lookup(id)
	if err != nil {
		return nil, err
	}
	out := make([]AttemptReport, 0, len(a.attempts))
	for _, at := range a.attempts {
		out = append(out, c.attemptReport(at))
	}
	return out, nil
}

// Attempt reports one attempt.
func (c *core) Attempt(id AttemptID) (AttemptReport, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, err := c.findAttempt(id)
	if err != nil {
		return AttemptReport{}, err
	}
	return c.attemptReport(at), nil
}

func (c *core) findAttempt(id AttemptID) (*attempt, error) {
	a, err := c.lookup(id.App)
	if err != nil {
		return nil, err
	}
	if id.Attempt < 1 || int(id.Attempt) > len(a.attempts) {
		return nil, errorf(ErrAttemptNotFound, "ApplicationAttempt with id '%s' doesn't exist in RM.", id)
	}
	return a.attempts[id.Attempt-1], nil
}

func (c *core) attemptReport(at *attempt) AttemptReport {
	r := AttemptReport{
		ID: at.id, State: at.state, Host: at.host, RPCPort: at.rpcPort, TrackingURL: at.trackingURL,
		Diagnostics: at.diagnostics, FinalStatus: at.finalStatus, Started: at.started, Finish: at.finished,
	}
	if r.Host == "" {
		r.Host, r.RPCPort = "N/A", -1
	}
	if at.amContainer != nil {
		id := at.amContainer.id
		r.AMContainer = &id
		r.AMNode = at.amContainer.node.id
		r.AMNodeHTTP = at.amContainer.node.httpAddr
	}
	return r
}

// Containers lists the containers of an attempt (live and completed).
func (c *core) Containers(id AttemptID) ([]ContainerInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, err := c.findAttempt(id)
	if err != nil {
		return nil, err
	}
	out := make([]ContainerInfo, 0, len(at.all))
	for _, ct := range at.all {
		out = append(out, c.containerInfo(ct))
	}
	return out, nil
}

// Container reports one container.
func (c *core) Container(id ContainerID) (ContainerInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, err := c.findAttempt(id.Attempt)
	if err != nil {
		return ContainerInfo{}, err
	}
	for _, ct := range at.all {
		if ct.id == id {
			return c.containerInfo(ct), nil
		}
	}
	return ContainerInfo{}, errorf(ErrContainerNotFound, "Container with id '%s' doesn't exist in RM.", id)
}

func (c *core) containerInfo(ct *container) ContainerInfo {
	return ContainerInfo{
		ID: ct.id, Node: ct.node.id, NodeHTTPAddress: ct.node.httpAddr, Resource: ct.res,
		Priority: ct.priority, AllocationRequestID: ct.allocReqID, State: ct.state,
		ExitStatus: ct.exitStatus, Diagnostics: ct.diagnostics, Created: ct.created,
		Finished: ct.finished, AM: ct.am, User: ct.at.app.user,
	}
}

// Nodes reports every simulated node. They are all RUNNING: simrm does not
// simulate node failures (see DESIGN.md).
func (c *core) Nodes() []NodeReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.nowMS()
	out := make([]NodeReport, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, c.nodeReport(n, now))
	}
	return out
}

func (c *core) nodeReport(n *node, now int64) NodeReport {
	st := "RUNNING"
	if n.lost {
		st = "LOST"
	}
	return NodeReport{
		ID: n.id, HTTPAddress: n.httpAddr, Rack: n.rack, State: st, Total: n.total,
		Used: n.used, NumContainers: n.nconts, HealthReport: "", LastHealthUpdate: now,
	}
}

// SetNodeLost marks a simulated NodeManager LOST (true) or RUNNING again.
// Losing a node completes its containers with ABORTED ("Container released
// on a *lost* node"), fails attempts whose AM ran there, and removes its
// capacity; every AM hears of the change in updated_nodes.
func (c *core) SetNodeLost(host string, lost bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.hosts[host]
	if !ok {
		return errorf(ErrInvalidRequest, "unknown node %s", host)
	}
	if n.lost == lost {
		return nil
	}
	now := c.nowMS()
	if lost {
		var failedAMs []*attempt
		for _, a := range c.apps {
			for _, at := range a.attempts {
				for _, ct := range at.live {
					if ct.node != n {
						continue
					}
					if ct.am && at == a.current() && !at.state.final() {
						failedAMs = append(failedAMs, at)
					}
					c.completeContainer(ct, ExitAborted, "Container released on a *lost* node", now)
				}
			}
		}
		n.lost = true
		c.total = c.total.sub(n.total)
		c.lostNodes++
		for _, at := range failedAMs {
			c.failAttempt(at, fmt.Sprintf("AM Container for %s exited with exitCode: %d: Container released on a *lost* node", at.id, ExitAborted))
		}
	} else {
		n.lost = false
		c.total = c.total.add(n.total)
		c.lostNodes--
		c.freeGen++ // capacity came back: forget remembered failures
	}
	// Hadoop's removeNodeKey: a node that goes down or reconnects is
	// dropped from every attempt's NM-token node set.
	c.forgetNMTokenNodes(host)
	c.nodeSeq++
	n.changed = c.nodeSeq
	c.changedNodes = append(c.changedNodes, nodeChange{n: n, seq: c.nodeSeq})
	c.compactChangedNodes()
	return nil
}

// compactChangedNodes bounds the change list: only each node's latest
// change matters to anyone.
func (c *core) compactChangedNodes() {
	if len(c.changedNodes) > 2*len(c.nodes)+64 {
		c.changedNodes = slices.DeleteFunc(c.changedNodes, func(e nodeChange) bool { return e.seq != e.n.changed })
	}
}

// UpdateNodeResource sets NodeManagers' total capability, as the RM admin
// call updateNodeResource does. As Hadoop's AdminService, a request naming
// a node the RM does not know (or one that is LOST: Hadoop keeps those
// apart from its running nodes) changes nothing and fails as a whole.
// Running containers stay where they are (overCommitTimeout -1, Hadoop's
// default: no preemption), so a node shrunk below its usage has no free
// capacity until enough of them end. The cluster total follows, and every
// AM hears of the node in updated_nodes.
func (c *core) UpdateNodeResource(updates map[NodeID]Resource) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodes := make(map[NodeID]*node, len(updates))
	for id, r := range updates {
		n, ok := c.hosts[id.Host]
		if !ok || n.id != id || n.lost {
			return errorf(ErrInvalidRequest, "Resource update get failed on all nodes due to change resource on an unrecognized node: %s", id)
		}
		if r.MemoryMB < 0 || r.VCores < 0 {
			return errorf(ErrInvalidRequest, "invalid resource %s for node %s", r, id)
		}
		nodes[id] = n
	}
	for id, n := range nodes {
		r := updates[id]
		if r == n.total {
			continue
		}
		c.total = c.total.sub(n.total).add(r)
		n.total = r
		c.freeGen++ // sizes that did not fit before may fit now
		c.nodeSeq++
		n.changed = c.nodeSeq
		c.changedNodes = append(c.changedNodes, nodeChange{n: n, seq: c.nodeSeq})
	}
	c.compactChangedNodes()
	return nil
}

// updatedNodes reports the nodes changed after seq, each once.
func (c *core) updatedNodes(seq int64, now int64) []NodeReport {
	var out []NodeReport
	for i := len(c.changedNodes) - 1; i >= 0 && c.changedNodes[i].seq > seq; i-- {
		if e := c.changedNodes[i]; e.seq == e.n.changed {
			out = append(out, c.nodeReport(e.n, now))
		}
	}
	return out
}

// NodeCounts is (total, active, lost) NodeManagers.
func (c *core) NodeCounts() (total, active, lost int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int32(len(c.nodes)), int32(len(c.nodes)) - c.lostNodes, c.lostNodes
}

// Metrics summarizes the cluster for /ws/v1/cluster/metrics.
func (c *core) Metrics() ClusterMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := ClusterMetrics{
		AppsSubmitted: c.appsSubmitted, AppsCompleted: c.appsCompleted, AppsFailed: c.appsFailed,
		AppsKilled: c.appsKilled, Total: c.total, Allocated: c.used, Available: c.total.sub(c.used),
		Pending: c.pendingResource, ContainersAllocated: c.containersAllocated,
		ContainersPending: c.pendingContainers, TotalNodes: int32(len(c.nodes)), ActiveNodes: int32(len(c.nodes)) - c.lostNodes, LostNodes: c.lostNodes,
	}
	for _, q := range c.queues {
		q.each(func(a *app) {
			if a.state == AppRunning {
				m.AppsRunning++
			} else {
				m.AppsPending++
			}
		})
	}
	return m
}

// Queues reports root and its leaf queues.
func (c *core) Queues() QueueReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	root := QueueReport{Name: "root", Capacity: 1, MaxCapacity: 1, State: "RUNNING", Used: c.used}
	if c.total.MemoryMB > 0 {
		root.CurrentCapacity = float32(c.used.MemoryMB) / float32(c.total.MemoryMB)
		root.AbsoluteUsed = root.CurrentCapacity
	}
	for _, q := range c.queues {
		qr := c.queueReport(q, true)
		root.NumApps += qr.NumApps
		root.NumContainers += qr.NumContainers
		root.PendingContainers += qr.PendingContainers
		root.Children = append(root.Children, qr)
	}
	return root
}

// Queue reports one queue by name ("root" included).
func (c *core) Queue(name string, withApps bool) (QueueReport, error) {
	if name == "root" || name == "" {
		r := c.Queues()
		if !withApps {
			for i := range r.Children {
				r.Children[i].Apps = nil
			}
		}
		return r, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q, ok := c.queueByName[strings.TrimPrefix(name, "root.")]
	if !ok {
		return QueueReport{}, errorf(ErrQueueNotFound, "Unknown queue: %s", name)
	}
	return c.queueReport(q, withApps), nil
}

func (c *core) queueReport(q *queue, withApps bool) QueueReport {
	r := QueueReport{
		Name: q.cfg.Name, Capacity: q.cfg.Capacity / 100, MaxCapacity: q.cfg.MaxCapacity / 100,
		State: "RUNNING", Used: q.used, NumApps: int32(q.size()), NumContainers: q.nconts,
	}
	guaranteed := float32(c.total.MemoryMB) * q.cfg.Capacity / 100
	if guaranteed > 0 {
		r.CurrentCapacity = float32(q.used.MemoryMB) / guaranteed
	}
	if c.total.MemoryMB > 0 {
		r.AbsoluteUsed = float32(q.used.MemoryMB) / float32(c.total.MemoryMB)
	}
	q.each(func(a *app) {
		if a.state == AppRunning {
			r.NumActive++
		} else {
			r.NumPending++
		}
		if at := a.current(); at != nil {
			for _, s := range at.asks {
				r.PendingContainers += s.any()
			}
		}
		if withApps {
			r.Apps = append(r.Apps, a.id)
		}
	})
	return r
}

// QueueNames lists the leaf queues.
func (c *core) QueueNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.queues))
	for _, q := range c.queues {
		out = append(out, q.cfg.Name)
	}
	return out
}

// ---- containers ----

func (c *core) completeContainer(ct *container, exit int32, diag string, now int64) {
	if ct.state == ContainerComplete {
		return
	}
	ct.state = ContainerComplete
	ct.exitStatus = exit
	ct.diagnostics = diag
	ct.finished = now
	if ct.heapIndex >= 0 && ct.expiresAt > 0 {
		heap.Remove(&c.expiry, ct.heapIndex)
	}
	at := ct.at
	delete(at.live, ct.id.ID)
	c.freeGen++
	ct.node.used = ct.node.used.sub(ct.res)
	ct.node.nconts--
	c.used = c.used.sub(ct.res)
	if q := c.queueByName[at.app.queue]; q != nil {
		q.used = q.used.sub(ct.res)
		q.nconts--
	}
	secs := (now - ct.created) / 1000
	at.app.memSeconds += ct.res.MemoryMB * secs
	at.app.vcoreSecond += int64(ct.res.VCores) * secs
	// A container kept across attempts is reported to the current AM.
	to := at
	if cur := at.app.current(); cur != nil && cur != at {
		to = cur
	}
	if !ct.am && to.last != nil {
		to.completed = append(to.completed, ContainerStatus{
			ID: ct.id, State: ContainerComplete, ExitStatus: exit, Diagnostics: diag, Resource: ct.res,
		})
	}
}

// expiryHeap orders containers by the time they end by themselves.
type expiryHeap []*container

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiresAt < h[j].expiresAt }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}
func (h *expiryHeap) Push(x any) {
	ct := x.(*container)
	ct.heapIndex = len(*h)
	*h = append(*h, ct)
}
func (h *expiryHeap) Pop() any {
	old := *h
	ct := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	ct.heapIndex = -1
	return ct
}

// queuePath is the full queue path the capacity scheduler reports for a
// leaf queue (Hadoop 3.4 reports "root.default", not "default").
func queuePath(leaf string) string {
	if leaf == "" || leaf == "root" || strings.HasPrefix(leaf, "root.") {
		return leaf
	}
	return "root." + leaf
}

// CurrentAMRMToken returns the AMRMToken of app's current attempt, as the
// RM puts it in the AM container's credentials (the way an external AM of
// a managed application gets it; SimAM.Off).
func (c *core) CurrentAMRMToken(app AppID) (AttemptID, Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.apps[app]
	if !ok {
		return AttemptID{}, Token{}, appNotFound(app)
	}
	at := a.current()
	if at == nil || at.state.final() {
		return AttemptID{}, Token{}, errorf(ErrInvalidRequest, "application %s has no live attempt", app)
	}
	return at.id, c.keys.amrmToken(at.id, c.cfg.SchedulerAddr), nil
}
