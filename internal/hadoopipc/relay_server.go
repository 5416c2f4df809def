package hadoopipc

import (
	"context"
	"encoding/base64"
	"errors"

	"google.golang.org/protobuf/proto"
)

// TokenRelay authenticates TOKEN logins by relaying DIGEST-MD5 to an
// upstream server that holds the token secrets (ServerConfig.TokenRelay).
// NewDialingRelay is the ready-made implementation.
type TokenRelay interface {
	// StartLogin begins one upstream login for a new client connection and
	// returns it holding the upstream's first digest-challenge. The server
	// bounds ctx with ServerConfig.TokenRelayTimeout. A *RemoteError
	// reaches the client with its class; any other error as
	// RetriableException (the upstream is unavailable: try again later).
	StartLogin(ctx context.Context) (RelayedLogin, error)
}

// RelayedLogin is one upstream login bound to one client connection. After
// the login succeeds, handlers find it with RelayedLoginFrom and make
// upstream calls over it as the identity the upstream accepted. *RelayConn
// implements it.
type RelayedLogin interface {
	// Challenge is the upstream's first digest-challenge.
	Challenge() []byte
	// Complete forwards the client's digest-response and returns the
	// upstream's rspauth; the login is then ready for Call. The upstream's
	// refusal is a *RemoteError with the upstream's class and message.
	Complete(ctx context.Context, response []byte) (rspauth []byte, err error)
	// Call invokes a method on the upstream over this login.
	Call(ctx context.Context, method string, req, resp proto.Message) error
	// Done is closed when the upstream connection ends.
	Done() <-chan struct{}
	// Err says why it ended.
	Err() error
	// Close ends the login and its upstream connection.
	Close() error
}

type relayKey struct{}

// RelayedLoginFrom returns, inside a handler, the upstream login that
// authenticated the caller's connection (ServerConfig.TokenRelay). The
// token identifier is in UserFromContext(ctx).TokenID.
func RelayedLoginFrom(ctx context.Context) (RelayedLogin, bool) {
	l, ok := ctx.Value(relayKey{}).(RelayedLogin)
	return l, ok && l != nil
}

// relayMech is the server side of one relayed TOKEN login, shaped as a
// tokenMech so the SASL state machine is the same as for local logins.
type relayMech struct {
	c     *serverConn
	login RelayedLogin
	slot  bool // holds one of Server.relaySlots
}

// errRelayBusy: every pending-login slot is taken.
var errRelayBusy = errors.New("too many TOKEN logins in progress; retry later")

func (m *relayMech) Challenge() ([]byte, error) {
	if m.login != nil {
		return m.login.Challenge(), nil
	}
	s := m.c.srv
	select {
	case s.relaySlots <- struct{}{}:
		m.slot = true
	default:
		s.metrics.rejected.WithLabelValues("relay_busy").Inc()
		return nil, Errorf(ClassRetriable, "%v", errRelayBusy)
	}
	ctx, cancel := context.WithTimeout(m.c.ctx, s.cfg.TokenRelayTimeout)
	login, err := s.cfg.TokenRelay.StartLogin(ctx)
	cancel()
	if err != nil {
		return nil, relayFailure("starting the upstream TOKEN login", err)
	}
	m.login = login
	ch := login.Challenge()
	if err := relayableChallenge(ch); err != nil {
		return nil, relayFailure("upstream TOKEN login", err)
	}
	return ch, nil
}

func (m *relayMech) Respond(response []byte) ([]byte, error) {
	if m.login == nil {
		return nil, Errorf(ClassSaslException, "no relayed SASL exchange in progress")
	}
	id, err := relayableResponse(response)
	if err != nil {
		return nil, relayFailure("relayed TOKEN login", err)
	}
	s := m.c.srv
	var name string
	if s.cfg.RelayUser != nil {
		if name, err = s.cfg.RelayUser(id); err != nil {
			var re *RemoteError
			if errors.As(err, &re) {
				return nil, err
			}
			return nil, Errorf(ClassInvalidToken, "can't retrieve username from token identifier: %v", err)
		}
	} else {
		name = base64.StdEncoding.EncodeToString(id)
	}
	ctx, cancel := context.WithTimeout(m.c.ctx, s.cfg.TokenRelayTimeout)
	rspauth, err := m.login.Complete(ctx, response)
	cancel()
	m.releaseSlot()
	if err != nil {
		return nil, relayFailure("upstream TOKEN login", err)
	}
	m.c.saslUser = &User{Name: name, AuthMethod: authMethodToken, TokenID: id}
	return rspauth, nil
}

// Result: a relayed login is always qop auth, without a security layer.
func (m *relayMech) Result() ([]byte, string, securityLayer) {
	if u := m.c.saslUser; u != nil {
		return u.TokenID, "auth", nil
	}
	return nil, "auth", nil
}

func (m *relayMech) releaseSlot() {
	if m.slot {
		m.slot = false
		<-m.c.srv.relaySlots
	}
}

// close ends the upstream login (the client connection is closing or
// switched to SIMPLE).
func (m *relayMech) close() {
	m.releaseSlot()
	if m.login != nil {
		m.login.Close()
	}
}

// relayFailure turns a relay error into the FATAL the client gets. The
// upstream's own refusal keeps its class and message (InvalidToken,
// Standby, ...); a qop the relay cannot serve names the setting to change;
// an unreachable upstream is RetriableException, which Hadoop's RMProxy
// retry policy retries (and which Client.setupIOstreams passes up from the
// SASL step as is), while a SaslException would fail the AM at once.
func relayFailure(what string, err error) *RemoteError {
	var re *RemoteError
	switch {
	case errors.As(err, &re):
		return &RemoteError{Class: re.Class, Message: re.Message}
	case errors.Is(err, ErrRelayProtection):
		return Errorf(ClassSaslException, "%s: %v; set hadoop.rpc.protection=authentication for the client and the upstream server", what, err)
	case errors.Is(err, errTokenLookup):
		return Errorf(ClassInvalidToken, "%s: %v", what, err)
	case errors.Is(err, ErrAuth):
		return Errorf(ClassSaslException, "%s: %v", what, err)
	}
	return Errorf(ClassRetriable, "%s: upstream unavailable: %v", what, err)
}

// watchRelay closes the client connection when the upstream login ends, so
// the client reconnects and logs in again; handlers in flight see their
// context cancelled. It stops when the connection ends.
func (c *serverConn) watchRelay(login RelayedLogin) {
	go func() {
		select {
		case <-login.Done():
			if c.ctx.Err() == nil {
				c.srv.metrics.rejected.WithLabelValues("relay_lost").Inc()
				c.srv.log.Info("ipc upstream of a relayed TOKEN login ended; closing the client connection",
					"remote", c.remote, "err", login.Err())
			}
			c.abort()
		case <-c.ctx.Done():
		}
	}()
}
