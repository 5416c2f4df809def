package simrm

import (
	"container/heap"
	"slices"
	"sort"
	"strings"
)

// The scheduler: FIFO within each queue (application priority first, then
// submission order), queues served most-under-served first, each queue
// capped at its maximum capacity. Placement honours node-local, then
// rack-local, then off-switch asks, and the attempt's blacklist.
//
// It runs once per tick (the simulated NodeManager heartbeat) and when
// kicked by new asks, never inside an AM's allocate call: like Hadoop, an AM
// gets the containers of its asks on a later heartbeat, and allocate stays
// O(request).

// schedule runs one scheduling pass.
func (c *core) schedule() {
	if len(c.nodes) == 0 {
		return
	}
	now := c.nowMS()
	failed := c.failedSizes()
	order := make([]*queue, len(c.queues))
	copy(order, c.queues)
	sort.SliceStable(order, func(i, j int) bool { return c.queueShare(order[i]) < c.queueShare(order[j]) })
	for _, q := range order {
		c.scheduleQueue(q, failed, now)
	}
}

// scheduleQueue serves one queue in its FIFO order: the running and the
// waiting lists merged (see queue.go). Waiting applications are visited
// only while some AM size among them could still be placed; the rest of
// the list is skipped once none can, which is what the per-application
// checks would have concluded one by one.
func (c *core) scheduleQueue(q *queue, failed *[]Resource, now int64) {
	limit := c.queueLimit(q)
	var placed []*app // moved to running after the walk: the lists stay put while merged
	ri, wi := 0, 0
	waitOpen := len(q.waiting) > 0 && !c.allWaitingBlocked(q, limit, *failed)
	for {
		var a *app
		switch {
		case waitOpen && wi < len(q.waiting) && (ri >= len(q.running) || appBefore(q.waiting[wi], q.running[ri])):
			a = q.waiting[wi]
			wi++
		case ri < len(q.running):
			a = q.running[ri]
			ri++
		default:
			for _, p := range placed {
				q.waitSizes[p.amResource]++ // place counts it out again
				q.place(p)
			}
			return
		}
		at := a.current()
		if at == nil || at.state.final() {
			continue
		}
		if at.needsAM {
			res := a.amResource
			if c.amBlocked(res, q, limit, *failed) {
				continue
			}
			n := c.placeAny(at, res, failed)
			if n == nil {
				waitOpen = !c.allWaitingBlocked(q, limit, *failed)
				continue
			}
			c.launchAM(a, at, n, now)
			placed = append(placed, a)
			if q.waitSizes[res]--; q.waitSizes[res] <= 0 {
				delete(q.waitSizes, res)
			}
			// The queue's use grew: sizes that fitted may not any more.
			waitOpen = waitOpen && !c.allWaitingBlocked(q, limit, *failed)
			continue
		}
		before := q.used
		c.grantAsks(at, q, limit, failed, now)
		if waitOpen && q.used != before {
			// Containers granted to a running application took room a
			// waiting AM might have needed.
			waitOpen = !c.allWaitingBlocked(q, limit, *failed)
		}
	}
}

// failedSizes remembers sizes that found no node: a larger ask cannot fit
// either, so a full cluster costs one scan per size, not one per
// application. It stays valid across passes until resources are freed.
func (c *core) failedSizes() *[]Resource {
	if c.freeGen != c.failedGen {
		c.failed, c.failedGen = c.failed[:0], c.freeGen
	}
	return &c.failed
}

// launchAM gives the attempt its AM container on n: ALLOCATED -> LAUNCHED
// at once, since the simulated NodeManager starts it immediately.
func (c *core) launchAM(a *app, at *attempt, n *node, now int64) {
	at.amContainer = c.newContainer(at, n, a.amResource, 0, 0, true, now)
	at.needsAM = false
	at.state = AttemptLaunched
	c.markLaunched(a)
	a.launched = now
	a.diagnostics = diagLaunched
	if a.sim != nil {
		a.sim.launchedAt = now
	}
}

// grantAsks places the attempt's asks, in ask order, while the queue's use
// stays within limit and a node has room.
func (c *core) grantAsks(at *attempt, q *queue, limit Resource, failed *[]Resource, now int64) {
	for _, k := range at.askKeys {
		s := at.asks[k]
		for s.any() > 0 {
			if !limit.fits(q.used.add(s.capability)) {
				break
			}
			n := c.place(at, s, failed)
			if n == nil {
				break
			}
			ct := c.newContainer(at, n, s.capability, k.priority, k.allocReqID, false, now)
			at.newly = append(at.newly, ct)
			c.decrement(at, s, n)
		}
	}
	c.dropEmptyAsks(at)
}

// queueShare is used/guaranteed memory: the capacity scheduler serves the
// most under-served queue first.
func (c *core) queueShare(q *queue) float64 {
	g := float64(c.total.MemoryMB) * float64(q.cfg.Capacity) / 100
	if g <= 0 {
		return float64(q.used.MemoryMB) + 1e18
	}
	return float64(q.used.MemoryMB) / g
}

func (c *core) queueLimit(q *queue) Resource {
	f := float64(q.cfg.MaxCapacity) / 100
	return Resource{MemoryMB: int64(float64(c.total.MemoryMB) * f), VCores: int32(float64(c.total.VCores) * f)}
}

// headroom is what the queue may still grant: its limit less its use,
// bounded by the cluster's free resources.
func (c *core) headroom(q *queue) Resource {
	if q == nil {
		return Resource{}
	}
	return minRes(c.queueLimit(q).sub(q.used), c.total.sub(c.used)).clampZero()
}

func (c *core) blacklisted(at *attempt, n *node) bool {
	return len(at.blacklist) > 0 && (at.blacklist[n.id.Host] || at.blacklist[n.rack])
}

// place picks a node for one container of s: a requested host, then a
// requested rack, then anywhere if the ANY ask relaxes locality.
func (c *core) place(at *attempt, s *askSet, failed *[]Resource) *node {
	res := s.capability
	specific := false
	for name, cnt := range s.byName {
		if name == AnyResource || strings.HasPrefix(name, "/") {
			continue
		}
		specific = true
		if cnt <= 0 {
			continue
		}
		if n := c.hosts[name]; n != nil && !n.lost && !c.blacklisted(at, n) && n.free().fits(res) {
			return n
		}
	}
	for name, cnt := range s.byName {
		if !strings.HasPrefix(name, "/") {
			continue
		}
		specific = true
		if cnt <= 0 {
			continue
		}
		nodes := c.racks[name]
		start := c.rackCursor[name]
		for i := range nodes {
			n := nodes[(start+i)%len(nodes)]
			if !n.lost && !c.blacklisted(at, n) && n.free().fits(res) {
				c.rackCursor[name] = (start + i + 1) % len(nodes)
				return n
			}
		}
	}
	if specific {
		if relax, ok := s.relax[AnyResource]; ok && !relax {
			return nil
		}
	}
	return c.placeAny(at, res, failed)
}

// placeAny scans all nodes round-robin from a moving cursor, so load
// spreads across the cluster.
func (c *core) placeAny(at *attempt, res Resource, failed *[]Resource) *node {
	for _, f := range *failed {
		if res.atLeast(f) {
			return nil
		}
	}
	if !c.total.sub(c.used).fits(res) {
		return nil
	}
	nn := len(c.nodes)
	for i := 0; i < nn; i++ {
		n := c.nodes[(c.cursor+i)%nn]
		if !n.lost && n.free().fits(res) && !c.blacklisted(at, n) {
			c.cursor = (c.cursor + i + 1) % nn
			return n
		}
	}
	// A blacklist makes the failure this attempt's own, not the cluster's.
	if len(at.blacklist) == 0 {
		*failed = append(*failed, res)
	}
	return nil
}

func (c *core) newContainer(at *attempt, n *node, res Resource, prio int32, allocReqID int64, am bool, now int64) *container {
	at.nextSeq++
	ct := &container{
		id:         NewContainerID(at.id, c.epoch, at.nextSeq),
		at:         at,
		node:       n,
		res:        res,
		priority:   prio,
		allocReqID: allocReqID,
		state:      ContainerRunning,
		created:    now,
		am:         am,
		heapIndex:  -1,
	}
	n.used = n.used.add(res)
	n.nconts++
	c.used = c.used.add(res)
	if q := c.queueByName[at.app.queue]; q != nil {
		q.used = q.used.add(res)
		q.nconts++
	}
	c.containersAllocated++
	at.live[ct.id.ID] = ct
	at.all = append(at.all, ct)
	if !am {
		runtime := c.cfg.ContainerRuntime
		if at.app.sim != nil {
			runtime = c.cfg.SimAM.ContainerRuntime
		}
		if runtime > 0 {
			ct.expiresAt = now + runtime.D().Milliseconds()
			heap.Push(&c.expiry, ct)
		}
	}
	return ct
}

// decrement consumes one container from the ask at every locality level it
// satisfied, as AppSchedulingInfo.allocate does.
func (c *core) decrement(at *attempt, s *askSet, n *node) {
	c.adjustPending(s, -1)
	s.byName[AnyResource]--
	if s.byName[n.id.Host] > 0 {
		s.byName[n.id.Host]--
	}
	if s.byName[n.rack] > 0 {
		s.byName[n.rack]--
	}
}

func (c *core) adjustPending(s *askSet, delta int32) {
	c.pendingContainers += delta
	c.pendingResource = c.pendingResource.add(Resource{MemoryMB: s.capability.MemoryMB * int64(delta), VCores: s.capability.VCores * delta})
}

func (c *core) dropEmptyAsks(at *attempt) {
	changed := false
	for k, s := range at.asks {
		if s.any() <= 0 {
			delete(at.asks, k)
			changed = true
		}
	}
	if changed {
		at.askKeys = slices.DeleteFunc(at.askKeys, func(k schedKey) bool { _, ok := at.asks[k]; return !ok })
	}
}

// updateAsks applies an AM's asks with Hadoop's replace semantics: each
// (priority, allocation request id, resource name) carries the total
// outstanding count, not an increment.
func (c *core) updateAsks(at *attempt, asks []ResourceRequest) error {
	for i := range asks {
		r := &asks[i]
		if r.NumContainers < 0 {
			return errorf(ErrInvalidResourceRequest, "Invalid resource ask by application %s: num_containers %d < 0", at.app.id, r.NumContainers)
		}
		if r.ResourceName == "" {
			return errorf(ErrInvalidResourceRequest, "Invalid resource ask by application %s: empty resource name", at.app.id)
		}
		if err := c.validateResource(r.Capability); err != nil {
			return err
		}
	}
	for _, r := range asks {
		k := schedKey{priority: r.Priority, allocReqID: r.AllocationRequestID}
		s, ok := at.asks[k]
		if !ok {
			s = &askSet{key: k, byName: map[string]int32{}, relax: map[string]bool{}}
			at.asks[k] = s
			i, _ := slices.BinarySearchFunc(at.askKeys, k, cmpKey)
			at.askKeys = slices.Insert(at.askKeys, i, k)
		}
		if r.ResourceName == AnyResource {
			c.adjustPending(s, -s.any())
			s.capability = c.normalize(r.Capability)
			s.byName[AnyResource] = r.NumContainers
			c.adjustPending(s, r.NumContainers)
		} else if r.NumContainers == 0 {
			delete(s.byName, r.ResourceName)
		} else {
			s.byName[r.ResourceName] = r.NumContainers
			if s.capability == (Resource{}) {
				s.capability = c.normalize(r.Capability)
			}
		}
		s.relax[r.ResourceName] = r.RelaxLocality
	}
	c.dropEmptyAsks(at)
	return nil
}

func cmpKey(a, b schedKey) int {
	// Lower numbers are higher priority in YARN.
	if a.priority != b.priority {
		if a.priority < b.priority {
			return -1
		}
		return 1
	}
	switch {
	case a.allocReqID < b.allocReqID:
		return -1
	case a.allocReqID > b.allocReqID:
		return 1
	}
	return 0
}
