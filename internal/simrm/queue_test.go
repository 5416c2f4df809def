package simrm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config"
)

// referenceOrder is the order the queue had as one list: a stable sort by
// (priority desc, submission) of the applications in arrival order.
func referenceOrder(arrivals []*app) []*app {
	out := slices.Clone(arrivals)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].priority != out[j].priority {
			return out[i].priority > out[j].priority
		}
		return out[i].submitted < out[j].submitted
	})
	return out
}

// TestQueueListsKeepOneOrder: the running and waiting lists, merged, are
// always in the order one sorted list of the queue's applications had,
// through arrivals, moves between the lists, priority changes and removals.
func TestQueueListsKeepOneOrder(t *testing.T) {
	c := &core{}
	rng := rand.New(rand.NewPCG(1, 2))
	q := &queue{}
	var arrivals []*app
	for i := 0; i < 2000; i++ {
		switch op := rng.IntN(10); {
		case op < 5 || len(arrivals) == 0:
			a := &app{priority: int32(rng.IntN(4)), submitted: int64(i / 3), amResource: Resource{MemoryMB: int64(1+rng.IntN(2)) * 1024, VCores: 1}} // equal times too
			a.attempts = []*attempt{{needsAM: rng.IntN(2) == 0}}
			c.enqueue(q, a)
			q.place(a)
			arrivals = append(arrivals, a)
		case op < 7:
			a := arrivals[rng.IntN(len(arrivals))]
			a.current().needsAM = !a.current().needsAM
			q.place(a)
		case op < 8:
			a := arrivals[rng.IntN(len(arrivals))]
			a.priority = int32(rng.IntN(4))
			q.resort()
		default:
			k := rng.IntN(len(arrivals))
			q.remove(arrivals[k])
			arrivals = slices.Delete(arrivals, k, k+1)
		}
		var got []*app
		q.each(func(a *app) { got = append(got, a) })
		if !slices.Equal(got, referenceOrder(arrivals)) {
			t.Fatalf("after %d steps the merged lists differ from one sorted list", i+1)
		}
		sizes := map[Resource]int{}
		for _, a := range q.waiting {
			if !a.current().needsAM {
				t.Fatalf("running application in the waiting list")
			}
			sizes[a.amResource]++
		}
		for _, a := range q.running {
			if a.current().needsAM {
				t.Fatalf("waiting application in the running list")
			}
		}
		if fmt.Sprint(sizes) != fmt.Sprint(q.waitSizes) {
			t.Fatalf("waitSizes %v, want %v", q.waitSizes, sizes)
		}
	}
}

// referenceSchedule is the scheduling pass as it was before the queue
// split: every live application of every queue visited in order, each
// checked on its own. TestSchedulerMatchesReference runs it side by side
// with schedule. Launching an AM and granting asks are shared: the two
// differ in the order they visit applications and the checks they make.
func (c *core) referenceSchedule() {
	if len(c.nodes) == 0 {
		return
	}
	now := c.nowMS()
	failed := c.failedSizes()
	order := slices.Clone(c.queues)
	sort.SliceStable(order, func(i, j int) bool { return c.queueShare(order[i]) < c.queueShare(order[j]) })
	for _, q := range order {
		limit := c.queueLimit(q)
		var all, placed []*app
		q.each(func(a *app) { all = append(all, a) })
		for _, a := range all {
			at := a.current()
			if at == nil || at.state.final() {
				continue
			}
			if at.needsAM {
				res := a.amResource
				if !limit.fits(q.used.add(res)) {
					continue
				}
				n := c.placeAny(at, res, failed)
				if n == nil {
					continue
				}
				c.launchAM(a, at, n, now)
				placed = append(placed, a)
				continue
			}
			c.grantAsks(at, q, limit, failed, now)
		}
		for _, a := range placed {
			q.place(a)
		}
	}
}

// TestSchedulerMatchesReference drives two identical RMs with the same
// random submissions (mixed AM sizes and priorities, managed and
// unmanaged with asks), kills, priority changes and container ends; one
// schedules with the split queues, the other with referenceSchedule. Every
// application must end up in the same state on the same nodes.
func TestSchedulerMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			mk := func() (*core, *clock) {
				return testCore(t, func(cfg *Config) {
					cfg.Queues = []QueueConfig{{Name: "a", Capacity: 60, MaxCapacity: 80}, {Name: "b", Capacity: 40, MaxCapacity: 100}}
					cfg.Nodes = 3
					cfg.ContainerRuntime = config.Duration(time.Hour)
					cfg.ClusterTimestamp = 1_700_000_000_000
				})
			}
			cNew, clkNew := mk()
			cRef, clkRef := mk()
			rng := rand.New(rand.NewPCG(seed, 7))
			var ids []AppID
			drivers := map[AppID][2]*amDriver{}
			for step := 0; step < 300; step++ {
				op := rng.IntN(20)
				switch {
				case op < 8:
					queue := []string{"a", "b"}[rng.IntN(2)]
					prio := int32(rng.IntN(3))
					mb := int64(1+rng.IntN(4)) * 1024
					unmanaged := rng.IntN(4) == 0
					asks := int32(1 + rng.IntN(6))
					var id AppID
					for i, c := range []*core{cNew, cRef} {
						id, _ = c.NewApplication()
						if err := c.Submit(SubmitRequest{ID: id, User: "u", Queue: queue, Priority: prio, Unmanaged: unmanaged, AMResource: Resource{MemoryMB: mb, VCores: 1}}); err != nil {
							t.Fatal(err)
						}
						if unmanaged {
							at := AttemptID{App: id, Attempt: 1}
							if _, err := c.Register(at, RegisterRequest{Host: "am", RPCPort: 1}); err != nil {
								t.Fatal(err)
							}
							d := &amDriver{t: t, c: c, at: at}
							d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(asks, mb)}})
							ds := drivers[id]
							ds[i] = d
							drivers[id] = ds
						}
					}
					ids = append(ids, id)
				case op < 10 && len(ids) > 0:
					id := ids[rng.IntN(len(ids))]
					for _, c := range []*core{cNew, cRef} {
						if _, err := c.Kill(id, "u", ""); err != nil {
							t.Fatal(err)
						}
					}
				case op < 12 && len(ids) > 0:
					id, p := ids[rng.IntN(len(ids))], int32(rng.IntN(3))
					for _, c := range []*core{cNew, cRef} {
						if _, err := c.UpdatePriority(id, p); err != nil {
							t.Fatal(err)
						}
					}
				case op < 13 && len(ids) > 0:
					id, to := ids[rng.IntN(len(ids))], []string{"a", "b"}[rng.IntN(2)]
					for _, c := range []*core{cNew, cRef} {
						_ = c.Move(id, to, "u")
					}
				case op < 15 && len(drivers) > 0:
					// A running unmanaged AM asks for more.
					id := ids[rng.IntN(len(ids))]
					if ds, ok := drivers[id]; ok && !ds[0].c.apps[id].state.Final() {
						n := int32(rng.IntN(5))
						for _, d := range ds {
							d.allocate(AllocateRequest{Asks: []ResourceRequest{anyAsk(n, 1024)}})
						}
					}
				default:
					clkNew.Advance(time.Duration(rng.IntN(400)) * time.Millisecond)
					clkRef.Advance(clkNew.Now().Sub(clkRef.Now()))
					cNew.mu.Lock()
					cNew.schedule()
					cNew.mu.Unlock()
					cRef.mu.Lock()
					cRef.referenceSchedule()
					cRef.mu.Unlock()
				}
				if a, b := schedState(cNew), schedState(cRef); a != b {
					t.Fatalf("step %d: split-queue scheduler and reference differ:\n%s\n---\n%s", step, a, b)
				}
			}
		})
	}
}

// schedState renders what scheduling decided: each application's state,
// AM node and containers per node.
func schedState(c *core) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, a := range c.appOrder {
		if c.apps[a.id] != a {
			continue
		}
		fmt.Fprintf(&b, "%s %s q=%s p=%d", a.id, a.state, a.queue, a.priority)
		if at := a.current(); at != nil {
			if at.amContainer != nil {
				fmt.Fprintf(&b, " am@%s", at.amContainer.node.id.Host)
			}
			var nodes []string
			for _, ct := range at.all {
				if !ct.am && ct.state != ContainerComplete {
					nodes = append(nodes, ct.node.id.Host)
				}
			}
			slices.Sort(nodes)
			fmt.Fprintf(&b, " %v", nodes)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
