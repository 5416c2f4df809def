package router

import (
	"container/list"
	"sync"
	"time"
)

// homeCache is a small LRU of app -> home with a TTL. Homes change only when
// a submission is retried elsewhere, and a stale entry shows up as
// ApplicationNotFound from the RM, which invalidates it, so caching is safe
// and keeps the store off the per-app call path.
type homeCache struct {
	ttl time.Duration
	max int

	mu  sync.Mutex
	ll  *list.List
	idx map[string]*list.Element
}

type homeEntry struct {
	app string
	sc  SubClusterID
	exp time.Time
}

func newHomeCache(ttl time.Duration, max int) *homeCache {
	return &homeCache{ttl: ttl, max: max, ll: list.New(), idx: map[string]*list.Element{}}
}

func (c *homeCache) get(app string) (SubClusterID, bool) {
	if c.ttl <= 0 {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.idx[app]
	if !ok {
		return "", false
	}
	he := e.Value.(*homeEntry)
	if time.Now().After(he.exp) {
		c.ll.Remove(e)
		delete(c.idx, app)
		return "", false
	}
	c.ll.MoveToFront(e)
	return he.sc, true
}

func (c *homeCache) put(app string, sc SubClusterID) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := time.Now().Add(c.ttl)
	if e, ok := c.idx[app]; ok {
		he := e.Value.(*homeEntry)
		he.sc, he.exp = sc, exp
		c.ll.MoveToFront(e)
		return
	}
	c.idx[app] = c.ll.PushFront(&homeEntry{app: app, sc: sc, exp: exp})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.idx, old.Value.(*homeEntry).app)
	}
}

func (c *homeCache) drop(app string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.idx[app]; ok {
		c.ll.Remove(e)
		delete(c.idx, app)
	}
}
