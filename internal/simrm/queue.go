package simrm

import (
	"slices"
	"sort"
)

// A leaf queue's live applications are kept in two lists, both in the
// queue's FIFO order (application priority first, then submission, then
// arrival in the queue):
//
//   - running: the current attempt has its AM (launched, registered or
//     finishing; unmanaged AMs from submission on);
//   - waiting: the current attempt waits for an AM container (ACCEPTED).
//
// The scheduler pass merges the two in that order, which is the order one
// list of every live application had. The split is what keeps a pass
// proportional to what can change: under sustained submissions thousands of
// applications wait for an AM, all of them blocked the moment one AM size
// finds no room, and a pass stops looking at them then (waitSizes says
// whether any size could still fit) instead of visiting each one per tick.
type queue struct {
	cfg    QueueConfig
	used   Resource
	nconts int32

	running, waiting []*app
	// waitSizes counts the AM sizes of the waiting applications.
	waitSizes map[Resource]int
}

// qList says which of its queue's lists an application is in.
type qList uint8

const (
	qNone qList = iota
	qRunning
	qWaiting
)

// appBefore is the queue order: higher priority first, then earlier
// submission, then earlier arrival in the queue (qseq), as a stable sort by
// (priority, submission) of a list appended to in arrival order would give.
func appBefore(a, b *app) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.submitted != b.submitted {
		return a.submitted < b.submitted
	}
	return a.qseq < b.qseq
}

func (q *queue) list(l qList) *[]*app {
	if l == qWaiting {
		return &q.waiting
	}
	return &q.running
}

// insert puts a into list l at its place in the queue order (the end, for
// a new submission).
func (q *queue) insert(a *app, l qList) {
	s := q.list(l)
	i := sort.Search(len(*s), func(i int) bool { return appBefore(a, (*s)[i]) })
	*s = slices.Insert(*s, i, a)
	a.qlist = l
	if l == qWaiting {
		if q.waitSizes == nil {
			q.waitSizes = map[Resource]int{}
		}
		q.waitSizes[a.amResource]++
	}
}

// remove takes a out of whichever list holds it.
func (q *queue) remove(a *app) {
	if a.qlist == qNone {
		return
	}
	s := q.list(a.qlist)
	i := sort.Search(len(*s), func(i int) bool { return !appBefore((*s)[i], a) })
	if i < len(*s) && (*s)[i] == a {
		*s = slices.Delete(*s, i, i+1)
	} else {
		// Not where the order says (cannot happen while priorities change
		// only through resort); fall back to a scan rather than leak it.
		*s = slices.DeleteFunc(*s, func(x *app) bool { return x == a })
	}
	if a.qlist == qWaiting {
		if q.waitSizes[a.amResource]--; q.waitSizes[a.amResource] <= 0 {
			delete(q.waitSizes, a.amResource)
		}
	}
	a.qlist = qNone
}

// place puts a (already in this queue) in the list its current attempt
// calls for.
func (q *queue) place(a *app) {
	want := qRunning
	if at := a.current(); at != nil && at.needsAM {
		want = qWaiting
	}
	if a.qlist == want {
		return
	}
	q.remove(a)
	q.insert(a, want)
}

// resort restores the order after a priority change.
func (q *queue) resort() {
	for _, s := range [][]*app{q.running, q.waiting} {
		sort.SliceStable(s, func(i, j int) bool { return appBefore(s[i], s[j]) })
	}
}

// size is the number of live applications in the queue.
func (q *queue) size() int { return len(q.running) + len(q.waiting) }

// each calls fn for every live application in queue order.
func (q *queue) each(fn func(*app)) {
	i, j := 0, 0
	for i < len(q.running) || j < len(q.waiting) {
		if j >= len(q.waiting) || (i < len(q.running) && appBefore(q.running[i], q.waiting[j])) {
			fn(q.running[i])
			i++
		} else {
			fn(q.waiting[j])
			j++
		}
	}
}

// amBlocked reports whether an AM of size res surely cannot be placed in
// this pass: the queue's limit, the cluster's free total, or a size that
// already found no node says so (each is a check placeAny or the pass makes
// before placing, with no side effect when it fails). All of them only
// tighten during a pass (nothing is freed), so a blocked size stays blocked
// until the pass ends.
func (c *core) amBlocked(res Resource, q *queue, limit Resource, failed []Resource) bool {
	if !limit.fits(q.used.add(res)) || !c.total.sub(c.used).fits(res) {
		return true
	}
	for _, f := range failed {
		if res.atLeast(f) {
			return true
		}
	}
	return false
}

// allWaitingBlocked reports whether no waiting application of q can get
// its AM in this pass.
func (c *core) allWaitingBlocked(q *queue, limit Resource, failed []Resource) bool {
	for res := range q.waitSizes {
		if !c.amBlocked(res, q, limit, failed) {
			return false
		}
	}
	return true
}
