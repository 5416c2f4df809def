package hadoopipc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	Addresses   []string             // one or more "host:port"; >1 = RM HA failover list
	Protocol    string               // e.g. ProtocolApplicationClient
	Version     uint64               // default 1
	User        string               // effective user for SIMPLE auth
	Token       *commonpb.TokenProto // if set: SASL TOKEN / DIGEST-MD5 with this token
	DialTimeout time.Duration
	Logger      *slog.Logger

	// RealUser, for SIMPLE auth, is the user acting for User (a proxy
	// user, Hadoop's doAs): the server must allow it in its
	// hadoop.proxyuser.* settings. Empty or equal to User: no proxying.
	RealUser string

	// Pool shares connections between clients; nil gives the client a
	// private pool closed by Client.Close.
	Pool *Pool
	// MaxFrameBytes bounds one reply packet (default DefaultMaxFrameBytes).
	MaxFrameBytes int
	// IdleTimeout closes a pooled connection with no calls for this long
	// (default 10 s, Hadoop's ipc.client.connection.maxidletime).
	IdleTimeout time.Duration
	// FailoverAttempts bounds tries of one call across Addresses on
	// StandbyException, RetriableException or connection failure (default
	// 2 per address, at least 2).
	FailoverAttempts int
	// FailoverBackoff is the pause after each full round over Addresses,
	// doubled per round up to 2 s (default 100 ms).
	FailoverBackoff time.Duration
	// NoRetryAfterSend disables retrying a call whose connection broke after
	// the request was written (it may have run). YARN's client and AM
	// protocols are idempotent or deduplicated by (clientId, callId), so the
	// default is to retry, keeping both and raising retryCount as Java does.
	NoRetryAfterSend bool
	// QOPs acceptable for TOKEN logins, most preferred first (default
	// {"auth", "auth-int", "auth-conf"}: cheapest first, but follow a
	// server that requires integrity or privacy).
	QOPs []string
	// Kerberos, when set, logs in with SASL KERBEROS (GSSAPI) as its
	// principal; User, if set, is then the user to act for (doAs: the
	// server must allow the principal as a proxy user), else the principal
	// itself. Exclusive with Token.
	Kerberos *KerberosClientConfig
	// Interceptors wrap every Call, outermost first, around the whole
	// failover loop (e.g. a circuit breaker per sub-cluster RM).
	Interceptors []ClientInterceptor
}

// Invoker performs a call (the rest of the client chain).
type Invoker func(ctx context.Context, method string, req, resp proto.Message) error

// ClientInterceptor wraps client calls, in the style of gRPC unary client
// interceptors.
type ClientInterceptor func(ctx context.Context, method string, req, resp proto.Message, invoker Invoker) error

// chainClient composes interceptors around final; the first is outermost.
func chainClient(ics []ClientInterceptor, final Invoker) Invoker {
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], final
		final = func(ctx context.Context, method string, req, resp proto.Message) error {
			return ic(ctx, method, req, resp, next)
		}
	}
	return final
}

// Client calls one protocol on one server or an HA set of servers. It is
// safe for concurrent use; calls are multiplexed over pooled connections.
type Client struct {
	cfg        ClientConfig
	log        *slog.Logger
	pool       *Pool
	ownPool    bool
	authKey    string
	active     atomic.Int32 // index into Addresses of the last server that worked
	closed     atomic.Bool
	clientConf connConfig
	invoke     Invoker
}

// NewClient validates cfg and returns a client. No connection is made until
// the first call.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	c := &Client{cfg: cfg, log: cfg.Logger, pool: cfg.Pool, authKey: cfg.authKey()}
	if c.pool == nil {
		c.pool = NewPool()
		c.ownPool = true
	}
	c.clientConf = connConfig{
		protocol:    cfg.Protocol,
		user:        cfg.User,
		realUser:    cfg.RealUser,
		token:       cfg.Token,
		dialTimeout: cfg.DialTimeout,
		maxFrame:    cfg.MaxFrameBytes,
		idle:        cfg.IdleTimeout,
		qops:        cfg.QOPs,
		krb:         cfg.Kerberos,
		log:         cfg.Logger,
	}
	c.invoke = chainClient(cfg.Interceptors, c.callWithFailover)
	return c, nil
}

// validate reports the first mistake in cfg: where to connect, what to
// speak, and one way to log in.
func (cfg *ClientConfig) validate() error {
	switch {
	case len(cfg.Addresses) == 0:
		return errors.New("hadoopipc: ClientConfig.Addresses is empty")
	case cfg.Protocol == "":
		return errors.New("hadoopipc: ClientConfig.Protocol is empty")
	case cfg.Token == nil && cfg.User == "" && cfg.Kerberos == nil:
		return errors.New("hadoopipc: ClientConfig needs a User (SIMPLE), a Token or Kerberos")
	case cfg.Kerberos != nil && cfg.Token != nil:
		return errors.New("hadoopipc: ClientConfig.Token and Kerberos are exclusive")
	case cfg.Kerberos != nil:
		return cfg.Kerberos.validate()
	case cfg.Token != nil && len(cfg.Token.GetIdentifier()) == 0:
		return errors.New("hadoopipc: ClientConfig.Token has no identifier")
	}
	return nil
}

// setDefaults fills what cfg leaves zero.
func (cfg *ClientConfig) setDefaults() {
	if cfg.Version == 0 {
		cfg.Version = 1
	}
	setDefault(&cfg.DialTimeout, 10*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.MaxFrameBytes, DefaultMaxFrameBytes)
	setDefault(&cfg.IdleTimeout, 10*time.Second)
	setDefault(&cfg.FailoverAttempts, max(2, 2*len(cfg.Addresses)))
	setDefault(&cfg.FailoverBackoff, 100*time.Millisecond)
}

// authKey names cfg's credentials in the pool's connection key:
// connections are shared only between identical credentials.
func (cfg *ClientConfig) authKey() string {
	switch {
	case cfg.Kerberos != nil:
		// One login per connection: share only within the same principal
		// (User, the doAs user, is part of the pool key already).
		return AuthMethodKerberos + ":" + cfg.Kerberos.principal() + ":" + cfg.Kerberos.ServerPrincipal
	case cfg.Token != nil:
		h := sha256.New()
		for _, b := range [][]byte{cfg.Token.GetIdentifier(), cfg.Token.GetPassword(), []byte(cfg.Token.GetKind()), []byte(cfg.Token.GetService())} {
			var l [4]byte
			l[0], l[1], l[2], l[3] = byte(len(b)>>24), byte(len(b)>>16), byte(len(b)>>8), byte(len(b))
			h.Write(l[:])
			h.Write(b)
		}
		return authMethodToken + ":" + hex.EncodeToString(h.Sum(nil))
	}
	return authMethodSimple
}

// Close closes the client; with a private pool its connections too.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.ownPool {
		return c.pool.Close()
	}
	return nil
}

// Call invokes method with req and fills resp. Errors: *RemoteError for
// error replies (errors.As), ErrDial / ErrConnectionClosed / ErrAuth (wrapped)
// for transport failures, or ctx's error.
func (c *Client) Call(ctx context.Context, method string, req, resp proto.Message) error {
	if c.closed.Load() {
		return ErrClientClosed
	}
	if req == nil || resp == nil {
		return errors.New("hadoopipc: Call needs non-nil req and resp messages")
	}
	return c.invoke(ctx, method, req, resp)
}

func (c *Client) callWithFailover(ctx context.Context, method string, req, resp proto.Message) error {
	// One call id and client id for every try, so a server retry cache can
	// recognise a retried call (Hadoop raises only retryCount).
	callID := c.pool.nextCallID()
	n := len(c.cfg.Addresses)
	start := int(c.active.Load())
	idx, pauses := start, 0
	var lastErr error
	for attempt := 0; attempt < c.cfg.FailoverAttempts; attempt++ {
		if attempt > 0 && (idx == start || IsRetriable(lastErr)) {
			// A full round failed, or the server asked us to come back
			// later: back off before trying again.
			pauses++
			d := min(c.cfg.FailoverBackoff<<(pauses-1), 2*time.Second)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			case <-t.C:
			}
		}
		addr := c.cfg.Addresses[idx]
		err := c.callOnce(ctx, addr, callID, int32(attempt), method, req, resp)
		if err == nil {
			if idx != start {
				c.active.CompareAndSwap(int32(start), int32(idx))
			}
			return nil
		}
		lastErr = err
		if ctx.Err() != nil || !c.retryable(err) {
			return err
		}
		if !IsRetriable(err) {
			// Standby or unreachable: fail over. RetriableException
			// means "this server, later", so it stays.
			idx = (idx + 1) % n
		}
		c.log.Debug("ipc call failed; retrying", "addr", addr, "next", c.cfg.Addresses[idx], "method", method, "attempt", attempt, "err", err)
	}
	return lastErr
}

func (c *Client) retryable(err error) bool {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Class == ClassStandby || re.Class == ClassRetriable
	}
	if errors.Is(err, ErrDial) {
		return true
	}
	if errors.Is(err, ErrConnectionClosed) {
		return !c.cfg.NoRetryAfterSend
	}
	return false
}

func (c *Client) callOnce(ctx context.Context, addr string, callID, retry int32, method string, req, resp proto.Message) error {
	key := connKey{addr: addr, protocol: c.cfg.Protocol, user: c.cfg.User, realUser: c.cfg.RealUser, auth: c.authKey}
	cc, err := c.pool.get(ctx, key, c.clientConf)
	if err != nil {
		return err
	}
	return cc.call(ctx, callID, retry, c.cfg.Protocol, c.cfg.Version, method, req, resp)
}

// Pool holds client connections keyed by (address, protocol, user, auth).
// Share one Pool between Clients to share connections, as Java's
// ipc.Client does.
type Pool struct {
	clientID []byte
	callID   atomic.Int32

	mu     sync.Mutex
	conns  map[connKey]*poolEntry
	closed bool
}

type connKey struct {
	addr, protocol, user, realUser, auth string
}

type poolEntry struct {
	ready chan struct{}
	conn  *clientConn
	err   error
}

// NewPool returns an empty pool with its own 16-byte client id.
func NewPool() *Pool {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	// An RFC 4122 version 4 UUID, like Java's ClientId.
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return &Pool{clientID: id, conns: make(map[connKey]*poolEntry)}
}

func (p *Pool) nextCallID() int32 {
	for {
		id := p.callID.Add(1) - 1
		if id >= 0 {
			return id
		}
		// Wrapped past MaxInt32: restart at 0 (call ids are non-negative).
		p.callID.CompareAndSwap(id+1, 0)
	}
}

// get returns a live connection for key, dialling at most once per key at
// a time.
func (p *Pool) get(ctx context.Context, key connKey, cfg connConfig) (*clientConn, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClientClosed
		}
		e := p.conns[key]
		if e == nil {
			e = &poolEntry{ready: make(chan struct{})}
			p.conns[key] = e
			p.mu.Unlock()
			conn, err := dialConn(ctx, p, key, cfg)
			// Publish under p.mu: the connection's read loop may already be
			// closing it, and removeConn reads e.conn under p.mu.
			p.mu.Lock()
			e.conn, e.err = conn, err
			p.mu.Unlock()
			if e.err != nil {
				p.remove(key, e)
			}
			close(e.ready)
			if e.err == nil && p.isClosed() {
				e.conn.close(ErrClientClosed)
				return nil, ErrClientClosed
			}
			return e.conn, e.err
		}
		p.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil && !e.conn.isClosed() {
			return e.conn, nil
		}
		// Failed dial (by another caller whose ctx may have ended) or a dead
		// connection: drop it and try ourselves.
		p.remove(key, e)
		if e.err != nil && ctx.Err() == nil && !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded) {
			return nil, e.err
		}
	}
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *Pool) remove(key connKey, e *poolEntry) {
	p.mu.Lock()
	if p.conns[key] == e {
		delete(p.conns, key)
	}
	p.mu.Unlock()
}

// Close closes every pooled connection; pending calls fail with
// ErrConnectionClosed.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	entries := make([]*poolEntry, 0, len(p.conns))
	for _, e := range p.conns {
		entries = append(entries, e)
	}
	p.conns = map[connKey]*poolEntry{}
	p.mu.Unlock()
	for _, e := range entries {
		select {
		case <-e.ready:
			if e.conn != nil {
				e.conn.close(ErrClientClosed)
			}
		default:
			// Still dialling: get() closes it when it sees the pool closed.
		}
	}
	return nil
}
