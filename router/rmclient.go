package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/rmbreaker"
)

// RMClient is one connection (or HA connection set) to a sub-cluster RM's
// ApplicationClientProtocol. *hadoopipc.Client satisfies it.
type RMClient interface {
	Call(ctx context.Context, method string, req, resp proto.Message) error
	Close() error
}

// DialFunc opens an RMClient to sc acting for user. The default dials
// hadoopipc with sc.ClientRMServiceAddress (comma-separated = HA list).
type DialFunc func(ctx context.Context, sc SubClusterInfo, user string) (RMClient, error)

func clientAddr(sc SubClusterInfo) string { return sc.ClientRMServiceAddress }
func adminAddr(sc SubClusterInfo) string  { return sc.RMAdminServiceAddress }

// hadoopDialer is the production DialFunc for protocol (New picks it when
// Config.Dial is nil). Each client owns its connections (they are per
// server and credentials anyway, and the pool keeps one client per user),
// so closing an evicted client closes its sockets at once instead of after
// the connection idle time.
func hadoopDialer(protocol string, addrOf func(SubClusterInfo) string, dialTimeout time.Duration, log *slog.Logger) DialFunc {
	return func(_ context.Context, sc SubClusterInfo, user string) (RMClient, error) {
		if user == "" {
			user = "yarnfed" // in-process callers without an IPC identity
		}
		return newHadoopClient(protocol, addrOf(sc), sc, user, dialTimeout, log, nil)
	}
}

// newHadoopClient is the Hadoop IPC client both dialers build: to the
// sub-cluster's RM address list for protocol, as user, with Kerberos when krb
// is set.
func newHadoopClient(protocol, addr string, sc SubClusterInfo, user string, dialTimeout time.Duration, log *slog.Logger, krb *hadoopipc.KerberosClientConfig) (RMClient, error) {
	addrs := hostport.SplitList(addr)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("sub-cluster %s has no RM address for %s", sc.ID, protocol)
	}
	return hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses:   addrs,
		Protocol:    protocol,
		Version:     1,
		User:        user,
		DialTimeout: dialTimeout,
		Logger:      log,
		Kerberos:    krb,
	})
}

// RMCaller is the client-side interceptor contract: what a call to a
// sub-cluster looks like to the routing code.
type RMCaller func(ctx context.Context, sc SubClusterInfo, user, method string, req, resp proto.Message) error

// pool keeps one RMClient per (sub-cluster, RM address, user): the router
// forwards as the calling user, like Hadoop's per-user proxies. A changed
// address (RM HA failover reported by the agent) gets a fresh client.
//
// User names come from callers the router has not vetted (SIMPLE auth
// takes any name), so the pool is an LRU of at most max clients: cycling
// user names costs the least recently used user a re-dial, never memory or
// descriptors. An evicted client may still carry calls; it is closed when
// the last of them ends (refs), so eviction never fails a call.
type pool struct {
	dial   DialFunc
	addrOf func(SubClusterInfo) string // the address the clients dial
	mu     sync.Mutex
	lru    *simplelru.LRU[poolKey, *pooled]
	// doomed collects clients to close once mu is released (onEvict runs
	// under mu; Close may block on sockets).
	doomed []RMClient
	// evictions counts clients dropped for the size bound (for metrics).
	evictions func()
}

type poolKey struct {
	sc   SubClusterID
	addr string
	user string
}

// pooled is one client and the calls using it; both fields are guarded by
// pool.mu.
type pooled struct {
	c       RMClient
	refs    int  // calls in flight on c
	dropped bool // no longer in the pool: close when refs reaches 0
}

func newPool(dial DialFunc, addrOf func(SubClusterInfo) string, max int) *pool {
	p := &pool{dial: dial, addrOf: addrOf, evictions: func() {}}
	l, err := simplelru.NewLRU[poolKey, *pooled](max, p.onEvict)
	if err != nil {
		panic(fmt.Sprintf("router: client pool of size %d: %v", max, err)) // Validate refuses max < 1
	}
	p.lru = l
	return p
}

// onEvict runs under mu for every client leaving the pool (size bound,
// retain, close).
func (p *pool) onEvict(_ poolKey, e *pooled) {
	e.dropped = true
	if e.refs == 0 {
		p.doomed = append(p.doomed, e.c)
	}
}

// unlock releases mu and closes the clients that left the pool meanwhile.
func (p *pool) unlock() {
	doomed := p.doomed
	p.doomed = nil
	p.mu.Unlock()
	for _, c := range doomed {
		_ = c.Close()
	}
}

// acquire returns the client for (sc, user), dialling it if needed, with a
// reference the caller gives back with release.
func (p *pool) acquire(ctx context.Context, sc SubClusterInfo, user string) (*pooled, error) {
	k := poolKey{sc.ID, p.addrOf(sc), user}
	p.mu.Lock()
	defer p.unlock()
	if e, ok := p.lru.Get(k); ok {
		e.refs++
		return e, nil
	}
	c, err := p.dial(ctx, sc, user)
	if err != nil {
		return nil, err
	}
	e := &pooled{c: c, refs: 1}
	if p.lru.Add(k, e) {
		p.evictions()
	}
	return e, nil
}

func (p *pool) release(e *pooled) {
	p.mu.Lock()
	defer p.unlock()
	if e.refs--; e.refs == 0 && e.dropped {
		p.doomed = append(p.doomed, e.c)
	}
}

// retain drops clients whose sub-cluster vanished or moved address.
func (p *pool) retain(current map[SubClusterID]SubClusterInfo) {
	p.mu.Lock()
	defer p.unlock()
	for _, k := range p.lru.Keys() {
		if sc, ok := current[k.sc]; !ok || p.addrOf(sc) != k.addr {
			p.lru.Remove(k)
		}
	}
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.unlock()
	p.lru.Purge()
}

func (p *pool) call(ctx context.Context, sc SubClusterInfo, user, method string, req, resp proto.Message) error {
	e, err := p.acquire(ctx, sc, user)
	if err != nil {
		return fmt.Errorf("%w: dial %s: %w", errNotSent, p.addrOf(sc), err)
	}
	defer p.release(e)
	return e.c.Call(ctx, method, req, resp)
}

// breakers holds one gobreaker per sub-cluster. A breaker counts only
// failures that say the RM is unreachable or not serving; an application
// error (ApplicationNotFound, AccessControl, ...) proves the RM is alive.
type breakers struct {
	settings func(name string) gobreaker.Settings
	onChange func(sc SubClusterID, to gobreaker.State)
	mu       sync.Mutex
	m        map[SubClusterID]*gobreaker.CircuitBreaker[struct{}]
	addr     map[SubClusterID]string // the RM address each breaker judges
	genMu    sync.Mutex
	gen      map[SubClusterID]uint64 // times each breaker left the open state
}

// generation counts how often id's breaker has moved towards letting calls
// through again (to half-open or closed).
func (b *breakers) generation(id SubClusterID) uint64 {
	b.genMu.Lock()
	defer b.genMu.Unlock()
	return b.gen[id]
}

func newBreakers(cfg BreakerConfig, onChange func(SubClusterID, gobreaker.State)) *breakers {
	b := &breakers{m: map[SubClusterID]*gobreaker.CircuitBreaker[struct{}]{}, addr: map[SubClusterID]string{},
		onChange: onChange, gen: map[SubClusterID]uint64{}}
	b.settings = func(name string) gobreaker.Settings {
		rc := rmbreaker.Config{ConsecutiveFailures: cfg.ConsecutiveFailures, OpenFor: cfg.OpenFor.D(), Interval: cfg.Interval.D()}
		return rmbreaker.Settings(name, rc, func(name string, _, to gobreaker.State) {
			if to != gobreaker.StateOpen { // half-open (a probe may go) or closed
				b.genMu.Lock()
				b.gen[SubClusterID(name)]++
				b.genMu.Unlock()
			}
			if b.onChange != nil {
				b.onChange(SubClusterID(name), to)
			}
		})
	}
	return b
}

// get returns sc's breaker. A breaker judges one RM: when the sub-cluster's
// RM address changes (an HA failover its agent registered) retain gives
// the new RM a fresh, closed breaker instead of the old one's open
// interval. get itself never replaces one: a call still holding the old
// address must not reset the new RM's breaker.
func (b *breakers) get(sc SubClusterInfo) *gobreaker.CircuitBreaker[struct{}] {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb, ok := b.m[sc.ID]
	if !ok {
		cb = gobreaker.NewCircuitBreaker[struct{}](b.settings(string(sc.ID)))
		b.m[sc.ID], b.addr[sc.ID] = cb, sc.ClientRMServiceAddress
	}
	return cb
}

// retain gives every sub-cluster whose RM address changed in current a
// fresh breaker, so the new active RM is routable at once, and forgets
// the breakers of sub-clusters that are gone.
func (b *breakers) retain(current map[SubClusterID]SubClusterInfo) {
	var renewed []SubClusterID
	b.mu.Lock()
	for id := range b.m {
		sc, ok := current[id]
		switch {
		case !ok:
			delete(b.m, id)
			delete(b.addr, id)
		case b.addr[id] != sc.ClientRMServiceAddress:
			b.m[id] = gobreaker.NewCircuitBreaker[struct{}](b.settings(string(id)))
			b.addr[id] = sc.ClientRMServiceAddress
			renewed = append(renewed, id)
		}
	}
	b.mu.Unlock()
	for _, id := range renewed {
		b.renewed(id)
	}
}

// renewed records that id's breaker was replaced by a closed one.
func (b *breakers) renewed(id SubClusterID) {
	b.genMu.Lock()
	b.gen[id]++
	b.genMu.Unlock()
	if b.onChange != nil {
		b.onChange(id, gobreaker.StateClosed)
	}
}

// open reports whether routing must skip id. Half-open counts as routable so
// that a probe can close the breaker again.
func (b *breakers) open(id SubClusterID) bool {
	b.mu.Lock()
	cb, ok := b.m[id]
	b.mu.Unlock()
	return ok && cb.State() == gobreaker.StateOpen
}

// intercept wraps next with the per-sub-cluster breaker and maps its refusals
// to ErrSubClusterUnavailable.
func (b *breakers) intercept(next RMCaller) RMCaller {
	return func(ctx context.Context, sc SubClusterInfo, user, method string, req, resp proto.Message) error {
		_, err := b.get(sc).Execute(func() (struct{}, error) {
			return struct{}{}, next(ctx, sc, user, method, req, resp)
		})
		if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
			return fmt.Errorf("%w: %w", ErrSubClusterUnavailable, err)
		}
		return err
	}
}

// rmDown classifies a call error: true when the RM did not serve the call
// (the federation-wide rule, internal/rmbreaker).
func rmDown(err error) bool { return rmbreaker.RMDown(err) }

// definitive reports whether err proves the RM did not act on the request
// (a reply came back, or nothing was sent), as opposed to an ambiguous
// failure where the RM may have applied it before the reply was lost.
func definitive(err error) bool {
	if answered(err) {
		return true
	}
	// A refused connection never carried the request.
	return errors.Is(err, ErrSubClusterUnavailable) || errors.Is(err, errNotSent) ||
		errors.Is(err, hadoopipc.ErrDial) || errors.Is(err, syscall.ECONNREFUSED)
}

// answered reports whether the RM itself replied with an application error
// (so it is alive and refused this call). Standby and retriable replies say
// nothing about the application.
func answered(err error) bool {
	var re *hadoopipc.RemoteError
	return errors.As(err, &re) && (refusedLogin(re) || !re.Fatal && re.Class != hadoopipc.ClassStandby && re.Class != hadoopipc.ClassRetriable)
}

// refusedLogin: the RM is alive and refused this login
// (FATAL_UNAUTHORIZED); see rmbreaker.RefusedLogin.
func refusedLogin(re *hadoopipc.RemoteError) bool { return rmbreaker.RefusedLogin(re) }

// errNotSent marks failures that happened before the request left the
// router (dial errors).
var errNotSent = errors.New("request not sent")
