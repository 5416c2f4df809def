package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// cache holds the membership list and the policy list. It serves them only
// while the watch stream is live (after SYNCED): any change event empties
// the affected list and the next read reloads it with a linearizable read.
// Writes through this client drop what they change at once, so a client
// reads its own writes. A generation number stops a load that raced with an event from storing
// what it read before the change. Cached reads are as fresh as the
// watched replica, which is milliseconds behind the leader.
type cache struct {
	mu         sync.Mutex
	synced     bool
	membership entry[[]*pb.SubClusterInfo]
	policies   entry[[]*pb.PolicyConfiguration]
	// memberSubs are told (after the list is dropped, under mu) whenever
	// the membership list may have changed: see MembershipChanges.
	memberSubs map[chan struct{}]struct{}
}

type entry[T any] struct {
	gen uint64
	ok  bool
	val T
}

func newCache() *cache { return &cache{memberSubs: map[chan struct{}]struct{}{}} }

// dropMembershipLocked empties the membership list and then tells the
// subscribers, so a read a subscriber makes after the signal cannot be
// served the list from before the change. c.mu must be held.
func (c *cache) dropMembershipLocked() {
	c.membership.invalidate()
	for ch := range c.memberSubs {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending: it covers this change too
		}
	}
}

func (e *entry[T]) invalidate() {
	var zero T
	e.gen++
	e.ok, e.val = false, zero
}

func (e *entry[T]) load(ctx context.Context, c *cache, fetch func(context.Context) (T, error)) (T, error) {
	c.mu.Lock()
	if c.synced && e.ok {
		v := e.val
		c.mu.Unlock()
		return v, nil
	}
	gen, synced := e.gen, c.synced
	c.mu.Unlock()
	v, err := fetch(ctx)
	if err != nil || !synced {
		return v, err
	}
	c.mu.Lock()
	if c.synced && e.gen == gen {
		e.ok, e.val = true, v
	}
	c.mu.Unlock()
	return v, nil
}

// wrote drops what a successful write through this client changed, so
// the client reads its own writes even before the watch reports them.
func (c *cache) wrote(membership, policies bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if membership {
		c.dropMembershipLocked()
	}
	if policies {
		c.policies.invalidate()
	}
}

func (c *cache) setSynced(s bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = s
	c.dropMembershipLocked()
	c.policies.invalidate()
}

func (c *cache) apply(e *pb.WatchEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.GetKind() {
	case pb.WatchEvent_SUB_CLUSTER_PUT, pb.WatchEvent_SUB_CLUSTER_DELETED:
		c.dropMembershipLocked()
	case pb.WatchEvent_POLICY_PUT, pb.WatchEvent_POLICY_DELETED:
		c.policies.invalidate()
	case pb.WatchEvent_RESET:
		c.dropMembershipLocked()
		c.policies.invalidate()
	case pb.WatchEvent_SYNCED:
		c.synced = true
		c.dropMembershipLocked()
		c.policies.invalidate()
	}
}

// MembershipChanges returns a channel that receives a value whenever the
// client's membership list may have changed: a sub-cluster event on the
// cache's watch stream, a RESET, the stream (re)synced or gone down, or a
// membership write through this client. Signals coalesce (the channel
// holds one); the first is there at once, so a consumer starts with a
// read and misses no change made before it subscribed. The signal is sent
// after the cached list is dropped, so a ListSubClusters made after
// receiving it reads the store, never the list from before the change
// (while the stream is down reads bypass the cache; the consumer's own
// poll covers that gap). This is how a consumer that keeps its own view
// (the router's membership) follows the store without a second watch
// stream racing the cache's. The channel is never closed; the
// subscription ends with ctx. ErrCacheDisabled if the client has no cache
// (and so no watch).
func (c *Client) MembershipChanges(ctx context.Context) (<-chan struct{}, error) {
	if c.cfg.DisableCache {
		return nil, ErrCacheDisabled
	}
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	c.cache.mu.Lock()
	c.cache.memberSubs[ch] = struct{}{}
	c.cache.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
		case <-c.closed:
		}
		c.cache.mu.Lock()
		delete(c.cache.memberSubs, ch)
		c.cache.mu.Unlock()
	}()
	return ch, nil
}

// Synced reports whether the cache is currently backed by a live watch
// (for health checks and tests).
func (c *Client) Synced() bool {
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	return c.cache.synced
}

// watchLoop keeps a watch stream open to some replica, moving to the next
// one on failure or when the stream goes quiet (a replica cut off from the
// leader stops sending PROGRESS). While it is down the cache is bypassed.
func (c *Client) watchLoop(ctx context.Context) {
	defer c.wg.Done()
	idx := 0
	backoff := 10 * time.Millisecond
	for ctx.Err() == nil {
		err := c.watchOnce(ctx, c.reps[idx%len(c.reps)])
		c.cache.setSynced(false)
		if ctx.Err() != nil {
			return
		}
		c.logger.Debug("statestore client: watch interrupted", "error", err)
		idx++
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (c *Client) watchOnce(ctx context.Context, rep replica) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := rep.Watch(sctx, &pb.WatchRequest{Membership: true, Policies: true})
	if err != nil {
		return err
	}
	events := make(chan *pb.WatchEvent)
	errc := make(chan error, 1)
	go func() {
		for {
			e, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case events <- e:
			case <-sctx.Done():
				errc <- sctx.Err()
				return
			}
		}
	}()
	quiet := time.NewTimer(c.cfg.WatchSilence)
	defer quiet.Stop()
	for {
		select {
		case e := <-events:
			c.cache.apply(e)
			quiet.Reset(c.cfg.WatchSilence)
		case <-quiet.C:
			cancel()
			<-errc
			return fmt.Errorf("%w: watch stream silent for %v", ErrUnavailable, c.cfg.WatchSilence)
		case err := <-errc:
			return err
		}
	}
}

// WatchEvents opens a raw watch stream on the replica in use, for
// components that keep their own view (for example of application homes).
// The channel closes when ctx ends or the stream fails; on a RESET event
// the receiver must reload its view.
func (c *Client) WatchEvents(ctx context.Context, r *pb.WatchRequest) (<-chan *pb.WatchEvent, error) {
	stream, err := c.Raw().Watch(ctx, r)
	if err != nil {
		return nil, fromStatus(err)
	}
	ch := make(chan *pb.WatchEvent, 64)
	go func() {
		defer close(ch)
		for {
			e, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case ch <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
