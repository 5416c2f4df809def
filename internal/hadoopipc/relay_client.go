package hadoopipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// ErrRelayProtection: the login asks for a SASL quality of protection other
// than "auth". A relay has no session key, so it can neither check nor
// produce auth-int/auth-conf wrapped packets; the peers must use
// hadoop.rpc.protection=authentication.
var ErrRelayProtection = errors.New("hadoopipc: only SASL qop auth (hadoop.rpc.protection=authentication) can be relayed")

// RelayConfig configures the upstream half of a relayed TOKEN login.
type RelayConfig struct {
	// Addr is the upstream server, "host:port" (DialingRelay fills it).
	Addr string
	// Protocol is sent in the connection context and in every call, e.g.
	// ProtocolApplicationMaster.
	Protocol string
	// Version of Protocol (default 1).
	Version uint64
	// Timeout bounds DialRelay (connect and NEGOTIATE) and Complete each,
	// on top of their contexts (default 10 s).
	Timeout time.Duration
	// MaxFrameBytes bounds one reply packet (default DefaultMaxFrameBytes).
	MaxFrameBytes int
	Logger        *slog.Logger
}

// RelayConn is one upstream connection whose SASL TOKEN step is driven from
// outside: DialRelay connects and gets the upstream's DIGEST-MD5 challenge,
// Complete forwards a digest-response some other party computed (the real
// client's, relayed by our Server), and from then on the connection makes
// ordinary calls as the identity the upstream accepted. Calls are pipelined
// on this one connection with Client.Call's semantics but no failover: if
// the connection dies, Done is closed and every call fails; the login is
// not repeated (only the token holder can answer a new challenge).
//
// RelayConn implements RelayedLogin. It is safe for concurrent use.
type RelayConn struct {
	cfg       RelayConfig
	c         *clientConn
	br        *bufio.Reader
	auth      *commonpb.RpcSaslProto_SaslAuth // the upstream's TOKEN auth, challenge removed
	challenge []byte

	mu    sync.Mutex // serialises Complete
	state atomic.Int32
}

const (
	relayNegotiated int32 = iota // challenge received; Complete not yet called
	relayReady                   // login done; calls allowed
	relayFailed                  // Complete failed or was called twice
)

// DialRelay connects to cfg.Addr, asks for SASL and reads the upstream's
// NEGOTIATE reply. It fails with an error wrapping ErrAuth if the upstream
// offers no TOKEN/DIGEST-MD5 login, a *RemoteError if it refuses us, and
// ErrDial otherwise.
func DialRelay(ctx context.Context, cfg RelayConfig) (*RelayConn, error) {
	if cfg.Addr == "" || cfg.Protocol == "" {
		return nil, errors.New("hadoopipc: RelayConfig needs Addr and Protocol")
	}
	if cfg.Version == 0 {
		cfg.Version = 1
	}
	setDefault(&cfg.Timeout, 10*time.Second)
	setDefault(&cfg.MaxFrameBytes, DefaultMaxFrameBytes)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	nc, err := dialTCP(dctx, cfg.Addr)
	if err != nil {
		return nil, err
	}
	// No idle timeout: the login lives as long as the client connection it
	// serves, whose own idle timeout applies.
	c := newClientConn(NewPool(), connKey{addr: cfg.Addr, protocol: cfg.Protocol, auth: authMethodToken},
		connConfig{protocol: cfg.Protocol, maxFrame: cfg.MaxFrameBytes, log: cfg.Logger}, nc)
	rc := &RelayConn{cfg: cfg, c: c, br: bufio.NewReaderSize(nc, 16<<10)}
	release := boundHandshake(dctx, nc)
	err = rc.negotiate()
	release()
	if err != nil {
		c.close(err)
		return nil, handshakeError(ctx, cfg.Addr, err)
	}
	return rc, nil
}

// negotiate: preamble (SASL), NEGOTIATE, and the upstream's reply, which
// must offer TOKEN/DIGEST-MD5 with a challenge.
func (rc *RelayConn) negotiate() error {
	pre := preamble{magic: rpcMagic, version: rpcVersion, authProtocol: authProtocolSASL}.bytes()
	if _, err := rc.c.nc.Write(pre[:]); err != nil {
		return err
	}
	if err := rc.c.saslSend(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()}); err != nil {
		return err
	}
	m, err := rc.c.saslRecv(rc.br)
	if err != nil {
		return err
	}
	if m.GetState() == commonpb.RpcSaslProto_NEGOTIATE {
		for _, a := range m.GetAuths() {
			if a.GetMethod() == authMethodToken && a.GetMechanism() == mechDigestMD5 && len(a.GetChallenge()) > 0 {
				rc.challenge = append([]byte(nil), a.GetChallenge()...)
				rc.auth = proto.Clone(a).(*commonpb.RpcSaslProto_SaslAuth)
				rc.auth.Challenge = nil // echoed without it, as Java does
				return nil
			}
		}
	}
	return fmt.Errorf("%w: %s offers no TOKEN/DIGEST-MD5 login with a challenge (SASL state %v)", ErrAuth, rc.cfg.Addr, m.GetState())
}

// Addr is the upstream's address.
func (rc *RelayConn) Addr() string { return rc.cfg.Addr }

// Challenge returns the upstream's first digest-challenge (the TOKEN
// auth's challenge in its NEGOTIATE reply).
func (rc *RelayConn) Challenge() []byte { return append([]byte(nil), rc.challenge...) }

// Complete forwards response (a client's DIGEST-MD5 digest-response to
// Challenge) as the upstream INITIATE and returns the upstream's rspauth
// from its SUCCESS. It then sends the connection context (protocol only:
// the token names the user) and the connection is ready for Call.
//
// A response choosing a qop other than auth is refused before anything is
// sent (ErrRelayProtection). The upstream's refusal is a *RemoteError with
// its class and message. Any failure closes the RelayConn. Complete may be
// called once.
func (rc *RelayConn) Complete(ctx context.Context, response []byte) ([]byte, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !rc.state.CompareAndSwap(relayNegotiated, relayFailed) {
		return nil, fmt.Errorf("%w: Complete called twice", ErrAuth)
	}
	rspauth, err := rc.complete(ctx, response)
	if err != nil {
		rc.c.close(err)
		return nil, err
	}
	rc.state.Store(relayReady)
	return rspauth, nil
}

func (rc *RelayConn) complete(ctx context.Context, response []byte) ([]byte, error) {
	if _, err := relayableResponse(response); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, rc.cfg.Timeout)
	defer cancel()
	release := boundHandshake(dctx, rc.c.nc)
	rspauth, err := rc.initiate(response)
	release()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var re *RemoteError
		if errors.As(err, &re) || errors.Is(err, ErrAuth) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: SASL: %v", ErrConnectionClosed, rc.cfg.Addr, err)
	}
	rc.c.start(rc.br)
	return rspauth, nil
}

func (rc *RelayConn) initiate(response []byte) ([]byte, error) {
	err := rc.c.saslSend(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*commonpb.RpcSaslProto_SaslAuth{rc.auth}, Token: response})
	if err != nil {
		return nil, err
	}
	m, err := rc.c.saslRecv(rc.br)
	if err != nil {
		return nil, err
	}
	if m.GetState() != commonpb.RpcSaslProto_SUCCESS {
		// DIGEST-MD5 completes in one round trip; anything else is a server
		// we do not understand.
		return nil, fmt.Errorf("%w: %s answered the digest-response with SASL state %v, want SUCCESS", ErrAuth, rc.cfg.Addr, m.GetState())
	}
	if rc.br.Buffered() > 0 {
		return nil, fmt.Errorf("%w: unexpected data after SASL success", ErrMalformed)
	}
	if err := rc.c.sendContext(nil, false); err != nil {
		return nil, err
	}
	rspauth := m.GetToken()
	if rspauth == nil {
		rspauth = []byte{}
	}
	return rspauth, nil
}

// Call invokes method on the upstream as the relayed identity. Errors are
// as Client.Call's; there is no retry or failover.
func (rc *RelayConn) Call(ctx context.Context, method string, req, resp proto.Message) error {
	if req == nil || resp == nil {
		return errors.New("hadoopipc: Call needs non-nil req and resp messages")
	}
	switch rc.state.Load() {
	case relayReady:
	case relayNegotiated:
		return fmt.Errorf("%w: relayed login not complete", ErrAuth)
	default:
		return fmt.Errorf("%w: relayed login failed", ErrConnectionClosed)
	}
	return rc.c.call(ctx, rc.c.pool.nextCallID(), 0, rc.cfg.Protocol, rc.cfg.Version, method, req, resp)
}

// Done is closed when the upstream connection is closed, for any reason.
func (rc *RelayConn) Done() <-chan struct{} { return rc.c.done }

// Err says why the connection closed (nil while it is open).
func (rc *RelayConn) Err() error {
	rc.c.mu.Lock()
	defer rc.c.mu.Unlock()
	return rc.c.err
}

// Close closes the upstream connection; pending calls fail.
func (rc *RelayConn) Close() error {
	rc.c.close(ErrClientClosed)
	return nil
}

// DialingRelay is a TokenRelay that opens one RelayConn per login to the
// address addr returns at that moment (e.g. the current active RM's
// scheduler address, for RM HA).
type DialingRelay struct {
	addr func(ctx context.Context) (string, error)
	cfg  RelayConfig
}

// NewDialingRelay returns a TokenRelay dialling addr(ctx) with cfg (whose
// Addr is ignored). An error from addr fails the login: a *RemoteError
// reaches the client with its class, any other as RetriableException.
func NewDialingRelay(addr func(ctx context.Context) (string, error), cfg RelayConfig) *DialingRelay {
	return &DialingRelay{addr: addr, cfg: cfg}
}

// StartLogin implements TokenRelay.
func (d *DialingRelay) StartLogin(ctx context.Context) (RelayedLogin, error) {
	addr, err := d.addr(ctx)
	if err != nil {
		return nil, err
	}
	cfg := d.cfg
	cfg.Addr = addr
	rc, err := DialRelay(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return rc, nil
}
