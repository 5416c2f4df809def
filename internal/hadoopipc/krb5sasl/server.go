package krb5sasl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"
)

// QOP is a SASL quality of protection (RFC 4752 security layer).
type QOP string

// The three layers, by their SASL names (Hadoop's hadoop.rpc.protection
// authentication, integrity, privacy).
const (
	QOPAuth     QOP = "auth"
	QOPAuthInt  QOP = "auth-int"
	QOPAuthConf QOP = "auth-conf"
)

// RFC 4752 section 3.3 security-layer bits.
const (
	layerNone      = 1
	layerIntegrity = 2
	layerConf      = 4
)

func qopBit(q QOP) (byte, error) {
	switch q {
	case QOPAuth:
		return layerNone, nil
	case QOPAuthInt:
		return layerIntegrity, nil
	case QOPAuthConf:
		return layerConf, nil
	}
	return 0, fmt.Errorf("krb5sasl: unknown qop %q (want auth, auth-int or auth-conf)", q)
}

func bitQOP(b byte) QOP {
	switch b {
	case layerIntegrity:
		return QOPAuthInt
	case layerConf:
		return QOPAuthConf
	}
	return QOPAuth
}

// DefaultMaxBuf is the largest wrapped message we announce we can receive
// (Hadoop's javax.security.sasl.maxbuffer default).
const DefaultMaxBuf = 65536

// ErrAuth marks a failed authentication (bad ticket, wrong key, replay,
// refused layer): the peer is not who it claims or did not follow the
// protocol.
var ErrAuth = errors.New("krb5sasl: authentication failed")

// ServerConfig configures the acceptor.
type ServerConfig struct {
	// Keytab holds the service principal's keys.
	Keytab *keytab.Keytab
	// Principal is the service principal, e.g. "rm/host.example.com@REALM"
	// (realm optional: the ticket's realm is used). Tickets for any other
	// principal are refused.
	Principal string
	// QOPs offered; empty means {QOPAuth}.
	QOPs []QOP
	// MaxClockSkew defaults to 5 minutes (Kerberos' usual bound).
	MaxClockSkew time.Duration
	// MaxBuf announced to the client; zero means DefaultMaxBuf.
	MaxBuf int
}

// Server is the acceptor side of one exchange. Feed each client token to
// Step until Done. Not safe for concurrent use; the SecurityLayer is.
type Server struct {
	cfg    ServerConfig
	offer  byte
	state  int
	client string // authenticated client principal, name@REALM
	ctx    *context
	qop    QOP
	layer  *SecurityLayer
	endsAt time.Time
}

const (
	srvWantAPReq = iota
	srvWantEmpty
	srvWantLayer
	srvDone
)

// NewServer checks the configuration and starts an exchange.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Keytab == nil || cfg.Principal == "" {
		return nil, errors.New("krb5sasl: the server needs a keytab and its service principal")
	}
	if len(cfg.QOPs) == 0 {
		cfg.QOPs = []QOP{QOPAuth}
	}
	s := &Server{cfg: cfg}
	for _, q := range cfg.QOPs {
		b, err := qopBit(q)
		if err != nil {
			return nil, err
		}
		s.offer |= b
	}
	if s.cfg.MaxClockSkew <= 0 {
		s.cfg.MaxClockSkew = 5 * time.Minute
	}
	if s.cfg.MaxBuf <= 0 || s.cfg.MaxBuf > 1<<24-1 {
		s.cfg.MaxBuf = DefaultMaxBuf
	}
	return s, nil
}

// Step consumes one client token and returns the reply token. done is true
// once the exchange succeeded; the last reply is then nil (Hadoop sends
// SUCCESS without a token).
func (s *Server) Step(in []byte) (out []byte, done bool, err error) {
	// gokrb5 panics on some malformed input (e.g. a ciphertext shorter
	// than a block); the peer is unauthenticated, so a panic is just a
	// failed login.
	defer func() {
		if p := recover(); p != nil {
			out, done, err = nil, false, fmt.Errorf("%w: malformed Kerberos message (%v)", ErrAuth, p)
			s.state = srvDone + 1
		}
	}()
	switch s.state {
	case srvWantAPReq:
		return s.acceptAPReq(in)
	case srvWantEmpty:
		// The client's GSS context completed on our AP-REP and had nothing
		// to send: an empty token.
		if len(in) != 0 {
			return nil, false, fmt.Errorf("%w: expected an empty response after the AP-REP, got %d bytes", ErrAuth, len(in))
		}
		out, err := s.layerOffer()
		return out, false, err
	case srvWantLayer:
		return nil, true, s.acceptLayer(in)
	}
	return nil, false, fmt.Errorf("%w: exchange already finished", ErrAuth)
}

func (s *Server) acceptAPReq(in []byte) ([]byte, bool, error) {
	req, err := ParseContextToken(in)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrAuth, err)
	}
	want, realm := types.ParseSPNString(s.cfg.Principal)
	if realm != "" && realm != req.Ticket.Realm {
		return nil, false, fmt.Errorf("%w: ticket is for realm %s, this server is in %s", ErrAuth, req.Ticket.Realm, realm)
	}
	if !req.Ticket.SName.Equal(want) {
		return nil, false, fmt.Errorf("%w: ticket is for %s, this server is %s", ErrAuth, req.Ticket.SName.PrincipalNameString(), want.PrincipalNameString())
	}
	settings := service.NewSettings(s.cfg.Keytab,
		service.MaxClockSkew(s.cfg.MaxClockSkew),
		service.DecodePAC(false),
		service.KeytabPrincipal(want.PrincipalNameString()))
	ok, creds, err := service.VerifyAPREQ(req, settings)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("AP-REQ not valid")
		}
		return nil, false, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	s.client = creds.CName().PrincipalNameString() + "@" + creds.Domain()
	s.endsAt = req.Ticket.DecryptedEncPart.EndTime
	auth := &req.Authenticator
	// RFC 4121 4.1.1: the authenticator checksum carries the GSS flags.
	if auth.Cksum.CksumType != 0x8003 || len(auth.Cksum.Checksum) < 24 || binary.LittleEndian.Uint32(auth.Cksum.Checksum[:4]) != 16 {
		return nil, false, fmt.Errorf("%w: authenticator lacks the GSS-API checksum (type 0x8003)", ErrAuth)
	}
	key := req.Ticket.DecryptedEncPart.Key
	if len(auth.SubKey.KeyValue) > 0 {
		key = auth.SubKey
	}
	seqN, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return nil, false, err
	}
	mySeq := seqN.Int64()
	if s.ctx, err = newContext(key, true, false, mySeq, auth.SeqNumber); err != nil {
		return nil, false, err
	}
	if types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) {
		rep, err := buildAPRep(auth, req.Ticket.DecryptedEncPart.Key, mySeq)
		if err != nil {
			return nil, false, err
		}
		s.state = srvWantEmpty
		return rep, false, nil
	}
	out, err := s.layerOffer()
	return out, false, err
}

// layerOffer is the RFC 4752 server token: wrap(layers bitmask | maxbuf:3).
func (s *Server) layerOffer() ([]byte, error) {
	msg := []byte{s.offer, byte(s.cfg.MaxBuf >> 16), byte(s.cfg.MaxBuf >> 8), byte(s.cfg.MaxBuf)}
	out, err := s.ctx.wrap(msg, false)
	if err != nil {
		return nil, err
	}
	s.state = srvWantLayer
	return out, nil
}

// acceptLayer reads the client's choice: wrap(layer | maxbuf:3 | authzid).
func (s *Server) acceptLayer(in []byte) error {
	p, _, err := s.ctx.unwrap(in)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	if len(p) < 4 {
		return fmt.Errorf("%w: security layer reply of %d bytes", ErrAuth, len(p))
	}
	choice := p[0]
	if choice != layerNone && choice != layerIntegrity && choice != layerConf || choice&s.offer == 0 {
		return fmt.Errorf("%w: client chose security layer 0x%02x, offered 0x%02x", ErrAuth, choice, s.offer)
	}
	if authz := string(p[4:]); authz != "" && authz != s.client {
		// Hadoop's callback authorizes only authzid == authenticated id;
		// acting for someone else is the connection context's business.
		return fmt.Errorf("%w: authorization id %q differs from the authenticated %q", ErrAuth, authz, s.client)
	}
	s.qop = bitQOP(choice)
	if choice != layerNone {
		s.layer = &SecurityLayer{ctx: s.ctx, conf: choice == layerConf}
	}
	s.state = srvDone
	return nil
}

// Done reports whether the exchange succeeded.
func (s *Server) Done() bool { return s.state == srvDone }

// ClientPrincipal is the authenticated client, "name[/instance]@REALM".
func (s *Server) ClientPrincipal() string { return s.client }

// TicketEnd is when the client's service ticket expires.
func (s *Server) TicketEnd() time.Time { return s.endsAt }

// NegotiatedQOP is the chosen layer (after Done).
func (s *Server) NegotiatedQOP() QOP { return s.qop }

// SecurityLayer is nil for QOPAuth.
func (s *Server) SecurityLayer() *SecurityLayer { return s.layer }
