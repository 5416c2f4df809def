package hadoopipc

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// tokenMech is the server side of one TOKEN (DIGEST-MD5) login. It is an
// interface so the IPC layer does not depend on how DIGEST-MD5 is done.
type tokenMech interface {
	// Challenge is the first digest-challenge (sent in the NEGOTIATE reply).
	Challenge() ([]byte, error)
	// Respond checks the client's digest-response and returns rspauth.
	Respond(response []byte) ([]byte, error)
	// Result is valid after a successful Respond: the token identifier the
	// client logged in with, the negotiated qop, and the security layer
	// (nil for "auth").
	Result() (identifier []byte, qop string, layer securityLayer)
}

// securityLayer protects every packet after an auth-int/auth-conf login.
// Wrap and Unwrap are each called from one goroutine at a time, in wire
// order (sequence numbers depend on it).
type securityLayer interface {
	Wrap(p []byte) ([]byte, error)
	Unwrap(p []byte) ([]byte, error)
}

// newTokenMech creates a DIGEST-MD5 server; nil when no implementation is
// linked in (TOKEN is then not offered).
var newTokenMech func(lookup func(identifier []byte) ([]byte, error), qops []string) (tokenMech, error)

// tokenEnabled reports whether TOKEN logins are offered.
func (s *Server) tokenEnabled() bool {
	return s.cfg.TokenRelay != nil || s.cfg.Secrets != nil && newTokenMech != nil
}

// authMethods lists the enabled methods in NEGOTIATE order (TOKEN first).
func (s *Server) authMethods() []string {
	var out []string
	if s.tokenEnabled() {
		out = append(out, authMethodToken)
	}
	if s.cfg.Kerberos != nil {
		out = append(out, AuthMethodKerberos)
	}
	if s.cfg.AllowSimple {
		out = append(out, authMethodSimple)
	}
	return out
}

// advertised returns the auths of the NEGOTIATE reply, without challenge.
func (s *Server) advertised() []*commonpb.RpcSaslProto_SaslAuth {
	var out []*commonpb.RpcSaslProto_SaslAuth
	if s.tokenEnabled() {
		out = append(out, &commonpb.RpcSaslProto_SaslAuth{
			Method: proto.String(authMethodToken), Mechanism: proto.String(mechDigestMD5),
			Protocol: proto.String(""), ServerId: proto.String(saslDefaultRealm),
		})
	}
	if s.cfg.Kerberos != nil {
		out = append(out, s.kerberosAuth())
	}
	if s.cfg.AllowSimple {
		out = append(out, &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(authMethodSimple), Mechanism: proto.String("")})
	}
	return out
}

// SASL exchange, server side (all packets call id -33):
//
//	client                                   server
//	NEGOTIATE                         ->
//	                                  <-     NEGOTIATE auths=[TOKEN(challenge), SIMPLE]
//	                                         (SIMPLE only: SUCCESS = "go simple")
//	INITIATE auths=[TOKEN] token=resp ->
//	                                  <-     SUCCESS token=rspauth
//	INITIATE auths=[SIMPLE]           ->     (no reply: simple from now on)
//
// then the connection context (-3) and calls, wrapped as -33 WRAP packets
// when the negotiated qop is auth-int or auth-conf.
func (c *serverConn) sasl(body []byte) *RemoteError {
	msg := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(body, msg); err != nil {
		return fatal(fatalDeserializing, ClassRpcServerException, "error decoding RpcSaslProto: %v", err)
	}
	if msg.GetState() == commonpb.RpcSaslProto_WRAP {
		if !c.saslDone || c.layer == nil {
			return fatal(fatalInvalidRPCHeader, ClassSaslException, "server is not wrapping data")
		}
		return c.unwrapPackets(msg.GetToken())
	}
	if c.saslDone {
		return fatal(fatalInvalidRPCHeader, ClassSaslException, "negotiation is already complete")
	}
	reply, re := c.saslStep(msg)
	if re != nil {
		c.srv.metrics.authFailure.Inc()
		return re
	}
	if reply != nil {
		c.saslReply(reply)
	}
	return nil
}

// saslStep answers one SASL message of the handshake (nil reply: nothing
// to send).
func (c *serverConn) saslStep(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	switch msg.GetState() {
	case commonpb.RpcSaslProto_NEGOTIATE:
		if c.sentNegotiate {
			return nil, fatal(fatalUnauthorized, ClassAccessControl, "client already attempted negotiation")
		}
		return c.negotiateReply()
	case commonpb.RpcSaslProto_INITIATE:
		return c.initiate(msg)
	case commonpb.RpcSaslProto_RESPONSE:
		if c.krb != nil {
			return c.kerberosStep(msg)
		}
		if c.token == nil {
			return nil, fatal(fatalUnauthorized, ClassSaslException, "no SASL exchange in progress")
		}
		return c.tokenResponse(msg)
	}
	return nil, fatal(fatalUnauthorized, ClassSaslException, "client sent unsupported state %v", msg.GetState())
}

// initiate answers INITIATE: the client chose one of the mechanisms we
// advertise (a client that skipped NEGOTIATE and chose another learns what
// we offer).
func (c *serverConn) initiate(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	if len(msg.GetAuths()) != 1 {
		return nil, fatal(fatalUnauthorized, ClassSaslException, "client mechanism is malformed")
	}
	auth := msg.GetAuths()[0]
	var chosen *commonpb.RpcSaslProto_SaslAuth
	for _, a := range c.srv.advertised() {
		if proto.Equal(a, auth) {
			chosen = a
		}
	}
	switch {
	case chosen == nil && c.sentNegotiate:
		return nil, fatal(fatalUnauthorized, ClassAccessControl,
			"%s authentication is not enabled. Available: %v", auth.GetMethod(), c.srv.authMethods())
	case chosen == nil:
		return c.negotiateReply()
	case chosen.GetMethod() == authMethodSimple:
		c.switchToSimple()
		return nil, nil
	case chosen.GetMethod() == AuthMethodKerberos:
		return c.initiateKerberos(msg)
	}
	return c.initiateToken(msg)
}

// initiateKerberos starts a KERBEROS exchange. The TOKEN mechanism
// NEGOTIATE prepared (its challenge) is not the one chosen: it is dropped,
// as Hadoop replaces its SaslServer.
func (c *serverConn) initiateKerberos(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	if c.krb != nil {
		return nil, fatal(fatalUnauthorized, ClassSaslException, "a SASL exchange is already in progress")
	}
	c.token = nil
	if c.relay != nil {
		c.relay.close()
		c.relay = nil
	}
	return c.kerberosStep(msg)
}

// initiateToken starts a TOKEN (DIGEST-MD5) exchange, or goes on with the
// one NEGOTIATE prepared. DIGEST-MD5 has no initial response: a fresh
// exchange answers with its challenge.
func (c *serverConn) initiateToken(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	if c.token != nil {
		return c.tokenResponse(msg)
	}
	if err := c.newToken(); err != nil {
		return nil, err
	}
	if len(msg.GetToken()) != 0 {
		return nil, fatal(fatalUnauthorized, ClassSaslException, "DIGEST-MD5 must not have an initial response")
	}
	ch, err := c.token.Challenge()
	if err != nil {
		return nil, mechFailure(err)
	}
	return &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_CHALLENGE.Enum(), Token: ch}, nil
}

func (c *serverConn) negotiateReply() (*commonpb.RpcSaslProto, *RemoteError) {
	c.sentNegotiate = true
	auths := c.srv.advertised()
	if len(auths) == 0 {
		return nil, fatal(fatalUnauthorized, ClassAccessControl, "no authentication method is enabled")
	}
	if len(auths) == 1 && auths[0].GetMethod() == authMethodSimple {
		// A SIMPLE-only server answers SUCCESS: "carry on without SASL".
		c.switchToSimple()
		return &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()}, nil
	}
	if auths[0].GetMethod() == authMethodToken {
		if err := c.newToken(); err != nil {
			return nil, err
		}
		ch, err := c.token.Challenge()
		if err != nil {
			return nil, mechFailure(err)
		}
		auths[0].Challenge = ch
	}
	return &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum(), Auths: auths}, nil
}

// mechFailure is the FATAL for a mechanism that could not produce its
// challenge: a *RemoteError keeps its class (a relayed login's upstream
// decides), anything else is a SaslException.
func mechFailure(err error) *RemoteError {
	var re *RemoteError
	if errors.As(err, &re) {
		return fatal(fatalUnauthorized, re.Class, "%s", re.Message)
	}
	return fatal(fatalUnauthorized, ClassSaslException, "%v", err)
}

func (c *serverConn) newToken() *RemoteError {
	if c.srv.cfg.TokenRelay != nil {
		c.relay = &relayMech{c: c}
		c.token = c.relay
		return nil
	}
	// lookupErr keeps the SecretManager's own error so its class can reach
	// the client (Standby/Retriable tunnel through, as in Hadoop).
	lookup := func(id []byte) ([]byte, error) {
		pw, user, err := c.srv.cfg.Secrets.RetrievePassword(id)
		if err != nil {
			return nil, err
		}
		c.saslUser = &User{Name: user, AuthMethod: authMethodToken, TokenID: append([]byte(nil), id...)}
		return pw, nil
	}
	m, err := newTokenMech(lookup, c.srv.cfg.QOPs)
	if err != nil {
		return fatal(fatalUnauthorized, ClassSaslException, "%v", err)
	}
	c.token = m
	return nil
}

func (c *serverConn) tokenResponse(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	if msg.Token == nil {
		return nil, fatal(fatalUnauthorized, ClassSaslException, "client did not send a token")
	}
	c.saslUser = nil
	rspauth, err := c.token.Respond(msg.GetToken())
	if err != nil {
		c.saslUser = nil
		var re *RemoteError
		if errors.As(err, &re) {
			return nil, fatal(fatalUnauthorized, re.Class, "%s", re.Message)
		}
		if errors.Is(err, errTokenLookup) {
			return nil, fatal(fatalUnauthorized, ClassInvalidToken, "%v", err)
		}
		return nil, fatal(fatalUnauthorized, ClassSaslException, "DIGEST-MD5: %v", err)
	}
	if c.saslUser == nil {
		return nil, fatal(fatalUnauthorized, ClassAccessControl, "can't retrieve username from token identifier")
	}
	_, qop, layer := c.token.Result()
	c.saslDone = true
	if c.relay != nil {
		c.watchRelay(c.relay.login)
	}
	// The SUCCESS reply goes out unwrapped; the layer applies afterwards.
	c.saslReply(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum(), Token: rspauth})
	if qop != "" && qop != "auth" && layer != nil {
		c.w.mu.Lock()
		c.layer = layer
		c.w.mu.Unlock()
	}
	c.token = nil
	return nil, nil
}

// errTokenLookup marks a SecretManager failure inside the mechanism.
var errTokenLookup = errors.New("invalid token")

func (c *serverConn) switchToSimple() {
	c.authProtocol = authProtocolNone
	c.token = nil
	c.krb = nil
	if c.relay != nil {
		c.relay.close()
		c.relay = nil
	}
}

// unwrapPackets unwraps a -33 WRAP token and processes the packets inside.
// Inner packets may span WRAP tokens; each inner length is bounded by the
// same frame limit.
func (c *serverConn) unwrapPackets(token []byte) *RemoteError {
	plain, err := c.layer.Unwrap(token)
	if err != nil {
		return fatal(fatalInvalidRPCHeader, ClassSaslException, "SASL unwrap failed: %v", err)
	}
	buf := append(c.unwrapPending, plain...)
	c.unwrapPending = nil
	for len(buf) >= 4 {
		n := int(uint32(buf[0])<<24 | uint32(buf[1])<<16 | uint32(buf[2])<<8 | uint32(buf[3]))
		if n < 0 || n > c.srv.cfg.MaxFrameBytes {
			return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "%v", fmt.Errorf("%w: wrapped length prefix %d, limit %d", ErrFrameTooLarge, n, c.srv.cfg.MaxFrameBytes))
		}
		if len(buf)-4 < n {
			break
		}
		inner := buf[4 : 4+n]
		buf = buf[4+n:]
		if re := c.processInner(inner); re != nil {
			return re
		}
	}
	if len(buf) > 0 {
		c.unwrapPending = append([]byte(nil), buf...)
	}
	return nil
}

// processInner handles one unwrapped packet; FATAL replies are sent by the
// outer processPacket, with the outer (-33) call id as Hadoop does.
func (c *serverConn) processInner(frame []byte) *RemoteError {
	hdr, rest, err := decodeReqHeader(frame)
	if err != nil {
		return fatal(fatalDeserializing, ClassRpcServerException, "error decoding RpcRequestHeaderProto: %v", err)
	}
	if hdr.callID == callIDSASL {
		return fatal(fatalInvalidRPCHeader, ClassSaslException, "SASL packet nested in a WRAP packet")
	}
	return c.dispatch(&hdr, rest)
}
