package router

import (
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// homeCache is a small LRU of app -> home with a TTL. Homes change only when
// a submission is retried elsewhere, and a stale entry shows up as
// ApplicationNotFound from the RM, which invalidates it, so caching is safe
// and keeps the store off the per-app call path. A TTL of zero or less
// turns it off (nil lru).
//
// expirable.LRU (golang-lru v2.0.7) starts a goroutine that purges expired
// entries every ttl/100 and that nothing can stop: one per Router for the
// life of the process (the goleak check in this package ignores it).
type homeCache struct {
	lru *expirable.LRU[string, SubClusterID]
}

func newHomeCache(ttl time.Duration, max int) *homeCache {
	if ttl <= 0 {
		return &homeCache{}
	}
	// expirable treats a size of 0 as unbounded; Config.Validate requires
	// at least 1 when the TTL is on.
	return &homeCache{lru: expirable.NewLRU[string, SubClusterID](max, nil, ttl)}
}

func (c *homeCache) get(app string) (SubClusterID, bool) {
	if c.lru == nil {
		return "", false
	}
	return c.lru.Get(app)
}

func (c *homeCache) put(app string, sc SubClusterID) {
	if c.lru != nil {
		c.lru.Add(app, sc)
	}
}

func (c *homeCache) drop(app string) {
	if c.lru != nil {
		c.lru.Remove(app)
	}
}
