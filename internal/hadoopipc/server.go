package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"google.golang.org/protobuf/proto"
)

// SecretManager verifies SASL TOKEN (DIGEST-MD5) logins. Given the token
// identifier bytes (base64-decoded SASL username), return the password and
// the user the token stands for, or an error (login fails with
// FATAL_UNAUTHORIZED). Returning a *RemoteError chooses the Java class the
// client sees (e.g. ClassStandby or ClassRetriable, as Hadoop tunnels them);
// other errors are reported as SecretManager$InvalidToken.
type SecretManager interface {
	RetrievePassword(identifier []byte) (password []byte, user string, err error)
}

// ServerConfig configures a Server. Start from DefaultServerConfig.
type ServerConfig struct {
	Logger      *slog.Logger
	Registerer  prometheus.Registerer // nil: no metrics
	Secrets     SecretManager         // nil: TOKEN auth not offered (unless TokenRelay is set)
	AllowSimple bool                  // SIMPLE auth allowed (default true via DefaultServerConfig)
	// MaxFrameBytes bounds one packet; checked before allocating.
	MaxFrameBytes int
	// MaxInFlightPerConn bounds concurrently served calls per connection.
	// When reached the server stops reading that connection (TCP
	// back-pressure) until a call finishes.
	MaxInFlightPerConn int
	// IdleTimeout closes a connection with no calls in flight after this
	// long without a packet. It also bounds the handshake and each packet.
	IdleTimeout time.Duration
	// MaxConns caps open connections; further ones are closed on accept.
	MaxConns int
	// MaxConnsPerAddr caps open connections from one remote IP address, so
	// one host cannot take all MaxConns slots; further ones are closed on
	// accept. Default 512 (see DESIGN.md, "Limits": NAT gateways).
	MaxConnsPerAddr int
	// HandshakeTimeout bounds the whole handshake of a connection:
	// preamble, SASL and connection context, from accept. It is far
	// shorter than IdleTimeout because a peer that has not authenticated
	// has no reason to be slow. Default 10 s; at most IdleTimeout.
	HandshakeTimeout time.Duration
	// MaxPreAuthFrameBytes bounds one packet before the connection context
	// is read (SASL messages and the context are a few hundred bytes);
	// a longer length prefix is FATAL before anything is allocated.
	// Default 16 KiB; at most MaxFrameBytes.
	MaxPreAuthFrameBytes int
	// PreAuthBufferBytes bounds the bytes buffered, across all
	// connections, for packets above 1 KiB that arrive before the
	// connection context. A packet that does not fit is FATAL
	// RetriableException (legitimate handshake packets are smaller and are
	// always admitted). Default 32 MiB.
	PreAuthBufferBytes int64
	Interceptors       []Interceptor // extra middleware, outermost first (inside auth, outside recovery)

	// Kerberos, when set, offers SASL KERBEROS (GSSAPI) logins with the
	// server's service principal and keytab (after TOKEN, before SIMPLE, as
	// Hadoop orders them). It raises MaxPreAuthFrameBytes to at least 65 KiB
	// (an AP-REQ with an Active Directory PAC is large). Logins use QOPs.
	Kerberos *KerberosServerConfig

	// Authorize is consulted by the auth interceptor for every call; nil
	// allows every authenticated user.
	Authorize Authorizer
	// AuthorizeConnection is asked once per connection, after its context
	// names the user, as Hadoop's Server.authorizeConnection: an error
	// closes the connection with FATAL_UNAUTHORIZED (a *RemoteError keeps
	// its class, anything else is an AuthorizationException). Use
	// (*ProxyUsers).AuthorizeConnection for hadoop.proxyuser.* rules; nil
	// allows every connection, proxied or not.
	AuthorizeConnection func(ctx context.Context, u User, remote net.Addr) error
	// QOPs lists the SASL qualities of protection offered for TOKEN logins,
	// most preferred first: "auth" and, when the DIGEST-MD5 implementation
	// supports integrity, "auth-int". Empty means {"auth"}.
	QOPs []string

	// TokenRelay, when set, authenticates TOKEN logins by relaying the
	// DIGEST-MD5 exchange to an upstream server (see DESIGN.md, "Token
	// relay") instead of checking them with Secrets. The two are exclusive
	// (Validate); if both are set anyway, TokenRelay wins. Relayed logins
	// are always qop auth, so QOPs must be {"auth"}.
	TokenRelay TokenRelay
	// RelayUser names the caller of a relayed TOKEN login from its token
	// identifier (e.g. the application attempt of an AMRMToken). It runs
	// before the response is forwarded, on an identifier the upstream has
	// not yet verified, so it can refuse early; the name is used only once
	// the upstream accepts. An error refuses the login (a *RemoteError
	// with its class, else SecretManager$InvalidToken). Nil: the name is
	// the base64 identifier, i.e. the SASL username.
	RelayUser func(identifier []byte) (user string, err error)
	// TokenRelayTimeout bounds StartLogin and Complete of one relayed login
	// (default 15 s).
	TokenRelayTimeout time.Duration
	// MaxPendingRelayLogins caps relayed logins between StartLogin and the
	// upstream's answer: each holds an upstream connection for a peer that
	// has not authenticated yet. Beyond it, NEGOTIATE gets FATAL
	// RetriableException. Default 128.
	MaxPendingRelayLogins int
}

// Defaults for ServerConfig fields left zero.
const (
	DefaultMaxInFlightPerConn = 256
	DefaultIdleTimeout        = 2 * time.Minute
	DefaultMaxConns           = 10000
	DefaultMaxConnsPerAddr    = 512
	DefaultHandshakeTimeout   = 10 * time.Second
	DefaultMaxPreAuthFrame    = 16 << 10
	DefaultPreAuthBufferBytes = 32 << 20
	DefaultTokenRelayTimeout  = 15 * time.Second
	DefaultMaxPendingRelay    = 128
)

// DefaultServerConfig returns a config with SIMPLE auth allowed and the
// default limits.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		AllowSimple:          true,
		MaxFrameBytes:        DefaultMaxFrameBytes,
		MaxInFlightPerConn:   DefaultMaxInFlightPerConn,
		IdleTimeout:          DefaultIdleTimeout,
		MaxConns:             DefaultMaxConns,
		MaxConnsPerAddr:      DefaultMaxConnsPerAddr,
		HandshakeTimeout:     DefaultHandshakeTimeout,
		MaxPreAuthFrameBytes: DefaultMaxPreAuthFrame,
		PreAuthBufferBytes:   DefaultPreAuthBufferBytes,
		QOPs:                 []string{"auth"},
	}
}

// Validate reports configuration mistakes; NewServer applies defaults but
// does not fail, so call Validate first.
func (c ServerConfig) Validate() error {
	return errors.Join(c.validateLimits(), c.validateAuth(), c.validateRelay())
}

// validateLimits: no limit is negative, frames fit the wire, and the
// pre-authentication budget holds at least one frame.
func (c ServerConfig) validateLimits() error {
	var errs []error
	limits := []int64{
		int64(c.MaxFrameBytes), int64(c.MaxInFlightPerConn), int64(c.MaxConns), int64(c.IdleTimeout),
		int64(c.TokenRelayTimeout), int64(c.MaxPendingRelayLogins), int64(c.MaxConnsPerAddr),
		int64(c.HandshakeTimeout), int64(c.MaxPreAuthFrameBytes), c.PreAuthBufferBytes,
	}
	if slices.ContainsFunc(limits, func(v int64) bool { return v < 0 }) {
		errs = append(errs, errors.New("hadoopipc: negative limit in ServerConfig"))
	}
	if c.MaxFrameBytes > 1<<31-1 {
		errs = append(errs, fmt.Errorf("hadoopipc: MaxFrameBytes %d exceeds what the wire's signed length can carry", c.MaxFrameBytes))
	}
	if c.PreAuthBufferBytes > 0 && c.MaxPreAuthFrameBytes > 0 && c.PreAuthBufferBytes < int64(c.MaxPreAuthFrameBytes) {
		errs = append(errs, fmt.Errorf("hadoopipc: PreAuthBufferBytes %d is less than one MaxPreAuthFrameBytes (%d)", c.PreAuthBufferBytes, c.MaxPreAuthFrameBytes))
	}
	return errors.Join(errs...)
}

// validateAuth: some login is possible, and the Kerberos settings and the
// QOPs offered are sound.
func (c ServerConfig) validateAuth() error {
	var errs []error
	if !c.AllowSimple && c.Secrets == nil && c.TokenRelay == nil && c.Kerberos == nil {
		errs = append(errs, errors.New("hadoopipc: no authentication method enabled (AllowSimple is false and none of Secrets, TokenRelay, Kerberos is set)"))
	}
	if c.Kerberos != nil {
		errs = append(errs, c.Kerberos.validate())
	}
	if _, err := toQOPs(c.QOPs); err != nil {
		errs = append(errs, fmt.Errorf("hadoopipc: QOPs: %w", err))
	}
	return errors.Join(errs...)
}

// validateRelay: relayed TOKEN logins exclude local ones and can only be
// offered with qop auth.
func (c ServerConfig) validateRelay() error {
	if c.TokenRelay == nil {
		return nil
	}
	var errs []error
	if c.Secrets != nil {
		errs = append(errs, errors.New("hadoopipc: Secrets and TokenRelay are exclusive: TOKEN logins are either checked here or relayed"))
	}
	if i := slices.IndexFunc(c.QOPs, func(q string) bool { return q != "auth" }); i >= 0 {
		errs = append(errs, fmt.Errorf("hadoopipc: QOPs: relayed TOKEN logins are always qop auth, %q cannot be offered: %w", c.QOPs[i], ErrRelayProtection))
	}
	return errors.Join(errs...)
}

// Server serves Hadoop IPC (RPC version 9, protobuf engine).
type Server struct {
	cfg     ServerConfig
	log     *slog.Logger
	metrics *Metrics
	invoke  func(ctx context.Context, info *CallInfo, req proto.Message) (proto.Message, error)

	reg atomic.Pointer[registry]

	relaySlots chan struct{} // pending relayed logins (TokenRelay)
	krbMapper  *authtolocal.Mapper
	workers    *workerPool // runs calls; stops with baseCtx

	// preAuthBytes counts the bytes of packets being read or held before
	// connections' contexts (the PreAuthBufferBytes budget).
	preAuthBytes atomic.Int64
	// idleBusy counts idle deadlines a reader passed with calls in flight
	// (not idleness: the connection stays). Only tests read it: it is the
	// event that proves a slow call outlived the idle timeout.
	idleBusy atomic.Int64

	baseCtx    context.Context
	cancelBase context.CancelFunc

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	perAddr   map[string]int // open connections by remote IP
	connWG    sync.WaitGroup
}

// setDefault sets a limit left zero or negative to its default.
func setDefault[T ~int | ~int32 | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// NewServer builds a server; zero limits in cfg take the defaults.
func NewServer(cfg ServerConfig) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&cfg.MaxFrameBytes, DefaultMaxFrameBytes)
	setDefault(&cfg.MaxInFlightPerConn, DefaultMaxInFlightPerConn)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.MaxConns, DefaultMaxConns)
	if len(cfg.QOPs) == 0 {
		cfg.QOPs = []string{"auth"}
	}
	setDefault(&cfg.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	setDefault(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	// Neither limit can be looser before authentication than after.
	cfg.HandshakeTimeout = min(cfg.HandshakeTimeout, cfg.IdleTimeout)
	setDefault(&cfg.MaxPreAuthFrameBytes, DefaultMaxPreAuthFrame)
	if cfg.Kerberos != nil {
		cfg.MaxPreAuthFrameBytes = max(cfg.MaxPreAuthFrameBytes, minKerberosPreAuthFrame)
	}
	cfg.MaxPreAuthFrameBytes = min(cfg.MaxPreAuthFrameBytes, cfg.MaxFrameBytes)
	setDefault(&cfg.PreAuthBufferBytes, DefaultPreAuthBufferBytes)
	setDefault(&cfg.TokenRelayTimeout, DefaultTokenRelayTimeout)
	setDefault(&cfg.MaxPendingRelayLogins, DefaultMaxPendingRelay)
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		metrics:    newMetrics(cfg.Registerer),
		listeners:  make(map[net.Listener]struct{}),
		conns:      make(map[*serverConn]struct{}),
		perAddr:    make(map[string]int),
		relaySlots: make(chan struct{}, cfg.MaxPendingRelayLogins),
	}
	if cfg.Kerberos != nil {
		// Validate reports a bad principal; here an unusable one just
		// leaves every Kerberos login refused.
		if m, err := cfg.Kerberos.mapper(); err == nil {
			s.krbMapper = m
		} else {
			s.log.Error("hadoopipc: Kerberos disabled", "err", err)
			s.cfg.Kerberos = nil
		}
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.workers = newWorkerPool(maxWorkers, workerIdleTimeout, s.baseCtx.Done())
	s.reg.Store(newRegistry())
	// metrics -> logging -> auth -> (config) -> recovery innermost.
	ics := []Interceptor{MetricsInterceptor(s.metrics), LoggingInterceptor(s.log), AuthInterceptor(cfg.Authorize)}
	ics = append(ics, cfg.Interceptors...)
	ics = append(ics, RecoveryInterceptor(WithRecoveryLogger(s.log)))
	chain := Chain(ics...)
	s.invoke = func(ctx context.Context, info *CallInfo, req proto.Message) (proto.Message, error) {
		return chain(ctx, info, req, info.method.call)
	}
	return s
}

// Metrics returns the server's collectors (for tests and embedding).
func (s *Server) Metrics() *Metrics { return s.metrics }

// Register adds a protocol. It may be called while serving.
func (s *Server) Register(p Protocol) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.reg.Load().clone()
	if err := next.add(p); err != nil {
		return err
	}
	s.reg.Store(next)
	return nil
}

// Serve accepts connections on ln until Shutdown or Close; it then returns
// ErrServerClosed. It may be called for several listeners.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// Out of descriptors or a transient accept error: wait
				// instead of spinning.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("ipc accept failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-s.baseCtx.Done():
					return ErrServerClosed
				}
				continue
			}
			return fmt.Errorf("hadoopipc: accept: %w", err)
		}
		backoff = 0
		s.startConn(nc)
	}
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxConns {
		s.mu.Unlock()
		// Hadoop drops such connections without a reply as well; the
		// client sees EOF and retries elsewhere or later.
		s.metrics.rejected.WithLabelValues("max_conns").Inc()
		s.log.Warn("ipc connection cap reached; closing new connection", "remote", nc.RemoteAddr(), "max", s.cfg.MaxConns)
		nc.Close()
		return
	}
	ip := hostport.IP(nc.RemoteAddr())
	if s.perAddr[ip] >= s.cfg.MaxConnsPerAddr {
		s.mu.Unlock()
		s.metrics.rejected.WithLabelValues("max_conns_per_addr").Inc()
		s.log.Warn("ipc per-address connection cap reached; closing new connection", "remote", nc.RemoteAddr(), "max", s.cfg.MaxConnsPerAddr)
		nc.Close()
		return
	}
	s.perAddr[ip]++
	c := newServerConn(s, nc)
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	s.metrics.conns.Inc()
	s.metrics.connsTotal.Inc()
	go func() {
		defer s.connWG.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		if s.perAddr[ip]--; s.perAddr[ip] <= 0 {
			delete(s.perAddr, ip)
		}
		s.mu.Unlock()
		s.metrics.conns.Dec()
	}()
}

// PreAuthBufferedBytes reports the bytes currently buffered for packets of
// connections that have not sent their connection context (what
// PreAuthBufferBytes bounds).
func (s *Server) PreAuthBufferedBytes() int64 { return s.preAuthBytes.Load() }

// Shutdown stops accepting connections and reading new calls, waits for the
// calls in flight to finish and their replies to be written, then closes the
// connections. If ctx ends first, it closes everything (as Close) and
// returns ctx.Err().
func (s *Server) Shutdown(ctx context.Context) error {
	conns := s.stopAccepting()
	for _, c := range conns {
		c.drain()
	}
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancelBase()
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// stopAccepting closes the listeners, marks the server closing and returns
// the connections open at that moment.
func (s *Server) stopAccepting() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Close stops the server at once: listeners and connections are closed and
// the contexts of running handlers are cancelled.
func (s *Server) Close() error {
	conns := s.stopAccepting()
	s.cancelBase()
	for _, c := range conns {
		c.abort()
	}
	s.connWG.Wait()
	return nil
}
