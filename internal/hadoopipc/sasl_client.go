package hadoopipc

import (
	"bufio"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/krb5sasl"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// The client half of Hadoop's SASL exchange, as a small state machine:
//
//	client                                   server
//	NEGOTIATE                          ->
//	                                   <-    NEGOTIATE [auths offered]
//	                                         (or SUCCESS: a SIMPLE-only server; go on with SIMPLE)
//	choose from the offer: TOKEN/DIGEST-MD5 (holding a token), else KERBEROS/GSSAPI (logged in),
//	else SIMPLE (never for a Kerberos client)
//	INITIATE [auth chosen] token       ->    (SIMPLE: nothing comes back; go on with SIMPLE)
//	                                   <-    CHALLENGE token     } as many rounds as
//	RESPONSE token                     ->                        } the mechanism needs
//	                                   <-    SUCCESS [final token, checked by the mechanism]
//
// saslClient keeps the state (which mechanism, if any, was chosen); each
// server message goes to the function for its state (onNegotiate,
// onChallenge, onSuccess). What differs between mechanisms is behind
// saslClientMech: digestClientMech and kerberosClientMech.

// saslOutcome is what one server message leaves the exchange at.
type saslOutcome int

const (
	saslContinue      saslOutcome = iota // read the server's next message
	saslSimple                           // go on without SASL: the connection context names the user
	saslAuthenticated                    // SUCCESS checked; the mechanism's security layer is installed
)

// saslClientMech is one mechanism's client side, once chosen from the
// server's offer. Errors it returns already wrap ErrAuth.
type saslClientMech interface {
	// method is the SASL auth method (TOKEN, KERBEROS).
	method() string
	// initiate returns the auth echoed in INITIATE and its token.
	initiate() (*commonpb.RpcSaslProto_SaslAuth, []byte, error)
	// respond answers one CHALLENGE.
	respond(challenge []byte) ([]byte, error)
	// finish checks SUCCESS's token; it returns the security layer to
	// install on the connection, nil for none.
	finish(token []byte) (securityLayer, error)
}

// tokenClientMech is the client side of one DIGEST-MD5 login.
type tokenClientMech interface {
	// Respond answers the server's digest-challenge.
	Respond(challenge []byte) ([]byte, error)
	// Verify checks the server's rspauth; after it, Result is valid.
	Verify(rspauth []byte) error
	Result() (qop string, layer securityLayer)
}

// newTokenClientMech creates a DIGEST-MD5 client for a token; nil when no
// implementation is linked in.
var newTokenClientMech func(token *commonpb.TokenProto, protocol, serverID string, qops []string) (tokenClientMech, error)

// saslClient is one client SASL exchange.
type saslClient struct {
	c    *clientConn
	br   *bufio.Reader
	mech saslClientMech // nil until the server's NEGOTIATE had one we can use
}

// sasl runs the client side of the SASL exchange. It reports whether the
// server told us to go on with SIMPLE.
func (c *clientConn) sasl() (simple bool, err error) {
	s := &saslClient{c: c, br: bufio.NewReader(c.nc)}
	if err := s.send(commonpb.RpcSaslProto_NEGOTIATE, nil, nil); err != nil {
		return false, err
	}
	for {
		m, err := c.saslRecv(s.br)
		if err != nil {
			return false, err
		}
		out, err := s.step(m)
		if err != nil {
			return false, err
		}
		if out != saslContinue {
			return out == saslSimple, nil
		}
	}
}

// step handles one server message.
func (s *saslClient) step(m *commonpb.RpcSaslProto) (saslOutcome, error) {
	switch m.GetState() {
	case commonpb.RpcSaslProto_NEGOTIATE:
		return s.onNegotiate(m.GetAuths())
	case commonpb.RpcSaslProto_CHALLENGE:
		return saslContinue, s.onChallenge(m.GetToken())
	case commonpb.RpcSaslProto_SUCCESS:
		return s.onSuccess(m.GetToken())
	default:
		return saslContinue, fmt.Errorf("%w: unexpected SASL state %v", ErrAuth, m.GetState())
	}
}

// send writes one SASL message; auth and token are left out when nil.
func (s *saslClient) send(state commonpb.RpcSaslProto_SaslState, auth *commonpb.RpcSaslProto_SaslAuth, token []byte) error {
	m := &commonpb.RpcSaslProto{State: state.Enum(), Token: token}
	if auth != nil {
		m.Auths = []*commonpb.RpcSaslProto_SaslAuth{auth}
	}
	return s.c.saslSend(m)
}

// onNegotiate chooses a mechanism from the server's offer and sends
// INITIATE, or INITIATE SIMPLE when only SIMPLE is left and allowed.
func (s *saslClient) onNegotiate(auths []*commonpb.RpcSaslProto_SaslAuth) (saslOutcome, error) {
	if s.mech != nil {
		return saslContinue, fmt.Errorf("%w: server negotiated twice", ErrAuth)
	}
	mech, simpleAuth, err := s.c.chooseMech(auths)
	if err != nil {
		return saslContinue, err
	}
	if mech == nil {
		// The server does not take our credential but accepts SIMPLE.
		return saslSimple, s.send(commonpb.RpcSaslProto_INITIATE, simpleAuth, nil)
	}
	auth, token, err := mech.initiate()
	if err != nil {
		return saslContinue, err
	}
	s.mech = mech
	return saslContinue, s.send(commonpb.RpcSaslProto_INITIATE, auth, token)
}

// onChallenge answers one CHALLENGE with the chosen mechanism.
func (s *saslClient) onChallenge(token []byte) error {
	if s.mech == nil {
		return fmt.Errorf("%w: challenge before negotiation", ErrAuth)
	}
	resp, err := s.mech.respond(token)
	if err != nil {
		return err
	}
	return s.send(commonpb.RpcSaslProto_RESPONSE, nil, resp)
}

// onSuccess ends the exchange: a SUCCESS before any mechanism was chosen is
// a SIMPLE-only server; otherwise the mechanism checks the final token.
func (s *saslClient) onSuccess(token []byte) (saslOutcome, error) {
	if s.mech == nil {
		if s.c.cfg.krb != nil {
			// Hadoop: ipc.client.fallback-to-simple-auth-allowed=false.
			return saslContinue, fmt.Errorf("%w: server asks us to fall back to SIMPLE auth, but this client is configured to only allow secure connections", ErrAuth)
		}
		// SIMPLE-only server: carry on without SASL.
		return saslSimple, nil
	}
	layer, err := s.mech.finish(token)
	if err != nil {
		return saslContinue, err
	}
	if layer != nil {
		s.c.layer = layer
	}
	// A server sends nothing after SUCCESS until we call: bytes already
	// here would be lost (the read loop gets a fresh reader) or, under a
	// security layer, would have bypassed it.
	if s.br.Buffered() > 0 {
		return saslContinue, fmt.Errorf("%w: unexpected data after SASL success", ErrMalformed)
	}
	s.c.krbDone = s.mech.method() == AuthMethodKerberos
	return saslAuthenticated, nil
}

// offer is what a NEGOTIATE offers that this client can use: the first
// auth of each kind.
type offer struct {
	token, kerberos, simple *commonpb.RpcSaslProto_SaslAuth
}

func (c *clientConn) usableAuths(auths []*commonpb.RpcSaslProto_SaslAuth) offer {
	var o offer
	for _, a := range auths {
		switch {
		case isAuth(a, authMethodToken, mechDigestMD5) && o.token == nil && c.cfg.token != nil:
			o.token = a
		case isAuth(a, AuthMethodKerberos, mechGSSAPI) && o.kerberos == nil && c.cfg.krb != nil:
			o.kerberos = a
		case a.GetMethod() == authMethodSimple && o.simple == nil:
			o.simple = a
		}
	}
	return o
}

func isAuth(a *commonpb.RpcSaslProto_SaslAuth, method, mech string) bool {
	return a.GetMethod() == method && a.GetMechanism() == mech
}

// chooseMech picks TOKEN, else KERBEROS, from what the server offers. It
// returns a nil mechanism and the SIMPLE auth when the client should go on
// with SIMPLE; a Kerberos client never does.
func (c *clientConn) chooseMech(auths []*commonpb.RpcSaslProto_SaslAuth) (saslClientMech, *commonpb.RpcSaslProto_SaslAuth, error) {
	o := c.usableAuths(auths)
	switch {
	case o.token != nil:
		m, err := c.newDigestClientMech(o.token)
		return m, nil, err
	case o.kerberos != nil:
		m, err := c.newKerberosClientMech(o.kerberos)
		return m, nil, err
	case c.cfg.krb != nil:
		// A Kerberos client never falls back to SIMPLE (Hadoop:
		// ipc.client.fallback-to-simple-auth-allowed=false).
		return nil, nil, fmt.Errorf("%w: server does not offer KERBEROS (offers %v)", ErrAuth, authNames(auths))
	case o.simple != nil:
		return nil, o.simple, nil
	default:
		return nil, nil, fmt.Errorf("%w: server offers no TOKEN/DIGEST-MD5 or SIMPLE auth", ErrAuth)
	}
}

// digestClientMech is TOKEN/DIGEST-MD5: the challenge comes inline in the
// server's NEGOTIATE, SUCCESS carries rspauth.
type digestClientMech struct {
	auth *commonpb.RpcSaslProto_SaslAuth // as offered, challenge included
	m    tokenClientMech
}

func (c *clientConn) newDigestClientMech(a *commonpb.RpcSaslProto_SaslAuth) (*digestClientMech, error) {
	if newTokenClientMech == nil {
		return nil, fmt.Errorf("%w: DIGEST-MD5 is not available", ErrAuth)
	}
	m, err := newTokenClientMech(c.cfg.token, a.GetProtocol(), a.GetServerId(), c.cfg.qops)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return &digestClientMech{auth: a, m: m}, nil
}

func (d *digestClientMech) method() string { return authMethodToken }

// initiate answers the inline challenge and echoes the auth without it
// (the server compares the echo with what it advertised). The token is
// sent even when empty.
func (d *digestClientMech) initiate() (*commonpb.RpcSaslProto_SaslAuth, []byte, error) {
	resp := []byte{}
	if d.auth.Challenge != nil {
		r, err := d.respond(d.auth.GetChallenge())
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			resp = r
		}
	}
	echo := proto.Clone(d.auth).(*commonpb.RpcSaslProto_SaslAuth)
	echo.Challenge = nil
	return echo, resp, nil
}

func (d *digestClientMech) respond(challenge []byte) ([]byte, error) {
	resp, err := d.m.Respond(challenge)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return resp, nil
}

// finish verifies the server's rspauth (mutual authentication); a layer
// is installed only for auth-int and auth-conf.
func (d *digestClientMech) finish(token []byte) (securityLayer, error) {
	if err := d.m.Verify(token); err != nil {
		return nil, fmt.Errorf("%w: server proof: %v", ErrAuth, err)
	}
	if qop, layer := d.m.Result(); qop != "" && qop != "auth" && layer != nil {
		return layer, nil
	}
	return nil, nil
}

// kerberosClientMech is KERBEROS/GSSAPI: INITIATE carries the AP-REQ, the
// challenges the AP-REP and the RFC 4752 layer negotiation, SUCCESS no
// token.
type kerberosClientMech struct {
	auth *commonpb.RpcSaslProto_SaslAuth
	k    *krb5sasl.Client
}

func (c *clientConn) newKerberosClientMech(a *commonpb.RpcSaslProto_SaslAuth) (*kerberosClientMech, error) {
	k, err := c.startKerberos(a)
	if err != nil {
		return nil, err
	}
	return &kerberosClientMech{auth: a, k: k}, nil
}

func (m *kerberosClientMech) method() string { return AuthMethodKerberos }

func (m *kerberosClientMech) initiate() (*commonpb.RpcSaslProto_SaslAuth, []byte, error) {
	init, err := m.k.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return m.auth, init, nil
}

func (m *kerberosClientMech) respond(challenge []byte) ([]byte, error) {
	resp, err := m.k.Step(challenge)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return resp, nil
}

// finish: the GSSAPI exchange must be complete (the server proved itself
// with the AP-REP and the layers were agreed) and SUCCESS carries nothing.
func (m *kerberosClientMech) finish(token []byte) (securityLayer, error) {
	if !m.k.Done() || len(token) != 0 {
		return nil, fmt.Errorf("%w: server claimed success before the GSSAPI exchange finished", ErrAuth)
	}
	if l := m.k.SecurityLayer(); l != nil {
		return l, nil
	}
	return nil, nil
}
