// Package client is how yarnfed components use the state store: typed
// calls with Hadoop's FederationStateStore semantics, retries across
// replicas and leader changes, sentinel errors, and a membership and policy
// cache kept fresh by the store's watch stream.
//
// Any replica address works: replicas forward writes and linearizable reads
// to the leader. The client moves to the next address when one is down.
package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Sentinel errors; every error a call returns wraps one of these or a
// context error.
var (
	ErrNotFound        = errors.New("statestore: not found")
	ErrAlreadyExists   = errors.New("statestore: already exists")
	ErrInvalidArgument = errors.New("statestore: invalid argument")
	// ErrUnavailable: no replica could serve the call within RetryTimeout.
	ErrUnavailable = errors.New("statestore: unavailable")
	// ErrUnknownOutcome: a write may or may not have been applied
	// (leadership was lost while it was in flight, the connection broke
	// after the request was sent, or the attempt timed out). Returned for
	// non-idempotent writes, which are not resent then; a read can tell
	// what the store holds now.
	ErrUnknownOutcome = errors.New("statestore: outcome unknown")
	// ErrIncompatibleVersion: the stored data has another major version.
	ErrIncompatibleVersion = errors.New("statestore: incompatible data version")
	// ErrFenced: a fenced write's caller no longer holds its lease; nothing
	// was written.
	ErrFenced = errors.New("statestore: lease not held")
	// ErrPermissionDenied: the replica refused the caller's certificate
	// (missing, or its roles do not allow the call).
	ErrPermissionDenied = errors.New("statestore: permission denied")
	// ErrInternal: anything else the server reported.
	ErrInternal = errors.New("statestore: internal error")
	// ErrCacheDisabled: the call needs the watch-fed cache, which
	// Config.DisableCache turned off.
	ErrCacheDisabled = errors.New("statestore: cache disabled")
)

// Config configures a Client.
type Config struct {
	// Addrs are replica gRPC addresses (host:port); at least one.
	Addrs []string
	// TLS, when set, dials the replicas with mutual TLS (see
	// security.ClientFlags); nil is plaintext. Ignored when DialOptions is
	// set.
	TLS *tls.Config
	// DialOptions replace the default options (transport credentials from
	// TLS, a 64 MiB receive limit).
	DialOptions []grpc.DialOption
	// CallTimeout bounds one attempt when ctx has no earlier deadline
	// (default 5s).
	CallTimeout time.Duration
	// RetryTimeout bounds all attempts of one call across leader changes
	// (default 15s; an election takes about a second).
	RetryTimeout time.Duration
	// DisableCache turns off the watch-backed membership and policy cache.
	DisableCache bool
	// DisableBatching sends every application-home insert as its own RPC.
	DisableBatching bool
	// WatchSilence is how long the cache's watch stream may stay silent
	// before the client moves to another replica (default 3.5s; replicas
	// send PROGRESS every second while in touch with a leader).
	WatchSilence time.Duration
	Logger       *slog.Logger
}

// Client is safe for concurrent use.
type Client struct {
	cfg    Config
	logger *slog.Logger
	conns  []*grpc.ClientConn
	reps   []replica
	cur    atomic.Uint32

	cache  *cache
	addCh  chan *addReq
	closed chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New connects lazily to cfg.Addrs and, unless disabled, starts the watch
// that keeps the cache fresh. It does not wait for a replica to answer.
func New(cfg Config) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no state store addresses", ErrInvalidArgument)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 5 * time.Second
	}
	if cfg.RetryTimeout <= 0 {
		cfg.RetryTimeout = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.WatchSilence <= 0 {
		cfg.WatchSilence = 3500 * time.Millisecond
	}
	if len(cfg.DialOptions) == 0 {
		creds := insecure.NewCredentials()
		if cfg.TLS != nil {
			creds = credentials.NewTLS(cfg.TLS)
		}
		cfg.DialOptions = []grpc.DialOption{
			grpc.WithTransportCredentials(creds),
			// A batch answer carries the stored contexts of inserts that
			// found an existing row.
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)),
		}
	}
	c := &Client{cfg: cfg, logger: cfg.Logger, cache: newCache(), addCh: make(chan *addReq, maxBatchItems), closed: make(chan struct{})}
	dial := append(append([]grpc.DialOption(nil), cfg.DialOptions...), grpc.WithChainUnaryInterceptor(trackSent))
	for _, a := range cfg.Addrs {
		conn, err := grpc.NewClient(a, dial...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: state store address %q: %w", ErrInvalidArgument, a, err)
		}
		c.conns = append(c.conns, conn)
		c.reps = append(c.reps, replica{pb.NewStateStoreClient(conn), pb.NewClusterClient(conn)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if !cfg.DisableCache {
		c.wg.Add(1)
		go c.watchLoop(ctx)
	}
	if !cfg.DisableBatching {
		c.wg.Add(1)
		go c.runAddBatcher(ctx)
	}
	return c, nil
}

// Close stops the watch and closes connections.
func (c *Client) Close() error {
	select {
	case <-c.closed:
		return nil
	default:
		close(c.closed)
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	var err error
	for _, conn := range c.conns {
		err = errors.Join(err, conn.Close())
	}
	return err
}

// Raw returns a generated stub for the replica currently in use (for tools
// and tests that need a call this package does not wrap).
func (c *Client) Raw() pb.StateStoreClient { return c.reps[int(c.cur.Load())%len(c.reps)] }

// replica is one address's stubs.
type replica struct {
	pb.StateStoreClient
	admin pb.ClusterClient
}

// fromStatus maps a gRPC status back to a sentinel.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var s error
	switch st.Code() {
	case codes.NotFound:
		s = ErrNotFound
	case codes.AlreadyExists:
		s = ErrAlreadyExists
	case codes.InvalidArgument:
		s = ErrInvalidArgument
	case codes.Unavailable:
		s = ErrUnavailable
	case codes.Aborted:
		s = ErrUnknownOutcome
	case codes.FailedPrecondition:
		s = ErrFenced
	case codes.PermissionDenied, codes.Unauthenticated:
		s = ErrPermissionDenied
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", context.DeadlineExceeded, st.Message())
	case codes.Canceled:
		return fmt.Errorf("%w: %s", context.Canceled, st.Message())
	default:
		s = ErrInternal
	}
	return fmt.Errorf("%w: %s", s, st.Message())
}

// attemptInfo records what one RPC attempt got as far as; trackSent fills it.
type attemptInfo struct{ sent bool }

type attemptKey struct{}

// trackSent notes whether gRPC gave the call a transport stream. Without
// one the request never left this process (for example a fail-fast call
// to a replica that is down); with one it may have reached the server,
// whatever the error says. gRPC's transparent retry resends only streams
// the server provably did not process, so the last attempt decides.
func trackSent(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	a, _ := ctx.Value(attemptKey{}).(*attemptInfo)
	if a == nil {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	var p peer.Peer
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
	a.sent = p.Addr != nil
	return err
}

// classify maps one attempt's error to a sentinel. Unavailable means "not
// applied" only when a replica said so (storepb.NotApplied) or the request
// never left: gRPC answers a bare Unavailable too when a connection breaks
// mid-call, after the server may have applied the write and lost the
// reply.
func classify(err error, sent bool) error {
	if status.Code(err) == codes.Unavailable && sent && !pb.IsNotApplied(err) {
		return fmt.Errorf("%w: connection lost after the request was sent: %s", ErrUnknownOutcome, status.Convert(err).Message())
	}
	err = fromStatus(err)
	if sent && errors.Is(err, context.DeadlineExceeded) {
		// The attempt timed out after sending: it may yet be applied.
		err = fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
	return err
}

// call runs fn against replicas until it succeeds, fails for a reason a
// retry cannot fix, or RetryTimeout passes. A call that was provably not
// applied (see classify) is always retried on the next replica; one whose
// outcome is unknown (a broken connection, a timeout, leadership lost
// mid-commit) only when the operation is idempotent: resending a write
// that may have taken effect could undo a concurrent caller's write or
// report an error for the caller's own success.
func call[T any](ctx context.Context, c *Client, idempotent bool, fn func(context.Context, replica) (T, error)) (T, error) {
	var zero T
	deadline := time.Now().Add(c.cfg.RetryTimeout)
	backoff := 2 * time.Millisecond
	var last error
	unknown := false // some attempt may have been applied
	for attempt := 0; ; attempt++ {
		i := int(c.cur.Load()) % len(c.reps)
		a := &attemptInfo{}
		actx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, a), c.cfg.CallTimeout)
		out, err := fn(actx, c.reps[i])
		cancel()
		if err == nil {
			return out, nil
		}
		err = classify(err, a.sent)
		maybe := errors.Is(err, ErrUnknownOutcome)
		notApplied := !maybe && (errors.Is(err, ErrUnavailable) ||
			// timed out before a stream (still connecting): never sent
			(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil))
		retry := notApplied || (idempotent && maybe && ctx.Err() == nil)
		if !retry {
			if maybe {
				// Not resent, but this replica just hung or dropped the
				// call (frozen, partitioned, lost leadership): the
				// caller's next call starts on another one, or every
				// call would wait out the same dead replica.
				c.cur.CompareAndSwap(uint32(i), uint32((i+1)%len(c.reps)))
			}
			return zero, err
		}
		unknown = unknown || maybe
		last = err
		// Another replica may be up (or be the leader); spread retries.
		c.cur.CompareAndSwap(uint32(i), uint32((i+1)%len(c.reps)))
		if time.Now().Add(backoff).After(deadline) {
			if unknown {
				// Only idempotent calls get here after an unknown
				// outcome, so calling again is safe; say both.
				return zero, fmt.Errorf("%w after %d attempts, %w: %w", ErrUnavailable, attempt+1, ErrUnknownOutcome, last)
			}
			return zero, fmt.Errorf("%w after %d attempts: %w", ErrUnavailable, attempt+1, last)
		}
		select {
		case <-ctx.Done():
			return zero, errors.Join(ctx.Err(), last)
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// ReadOption tunes a read.
type ReadOption func(*pb.ReadOptions)

// Stale serves the read from whichever replica answers, without
// confirming leadership: faster, may miss the newest writes.
func Stale() ReadOption { return func(o *pb.ReadOptions) { o.Stale = true } }

func readOpts(opts []ReadOption) *pb.ReadOptions {
	if len(opts) == 0 {
		return nil
	}
	o := &pb.ReadOptions{}
	for _, f := range opts {
		f(o)
	}
	return o
}
