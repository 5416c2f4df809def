package digestmd5

import (
	"crypto/subtle"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultMaxBuf is the RFC 2831 default maxbuf (and the JDK's).
const DefaultMaxBuf = 65536

// maxMaxBuf is the largest maxbuf RFC 2831 allows (2^24 - 1).
const maxMaxBuf = 16777215

// ServerConfig configures one server-side exchange.
type ServerConfig struct {
	// ServerName is the host part of the digest-uri the client must use;
	// Hadoop: "default" (HadoopServerName). Required.
	ServerName string
	// Protocol is the serv-type of the digest-uri; Hadoop: "" (HadoopProtocol).
	Protocol string
	// Realm offered in the challenge. Empty means ServerName, as in the JDK
	// (which is how Hadoop ends up with realm "default").
	Realm string
	// QOPs offered, in the order listed in the challenge. Empty means
	// {QOPAuth}.
	QOPs []QOP
	// Ciphers offered when QOPs includes QOPAuthConf. Empty means all five,
	// in the JDK's order (3des, rc4, des, rc4-56, rc4-40).
	Ciphers []Cipher
	// MaxBuf is the largest wrapped message this side will accept,
	// advertised as maxbuf when it differs from DefaultMaxBuf. Zero means
	// DefaultMaxBuf. Advisory: Unwrap does not enforce it (see SecurityLayer).
	MaxBuf int
	// LookupPassword returns the password for a username (for Hadoop tokens:
	// HadoopPassword of the token's password; DecodeHadoopUsername gives the
	// identifier). An error fails the exchange with ErrAuthFailed wrapping
	// it, so callers can also errors.Is their own sentinel (e.g. an expired
	// token). Required.
	LookupPassword func(username string) (password []byte, err error)
	// Authorize decides whether username may act as authzid. Nil means
	// authzid must be absent or equal to username (what Hadoop's
	// SaslDigestCallbackHandler requires of tokens).
	Authorize func(username, authzid string) error
	// Rand is the nonce source; nil means crypto/rand.
	Rand io.Reader
}

// Server is the server side of one DIGEST-MD5 exchange:
// Challenge, then Respond once. It is not safe for concurrent use; the
// SecurityLayer it yields is.
type Server struct {
	cfg       ServerConfig
	state     int
	nonce     string
	username  string
	authzid   string
	qop       QOP
	cipher    Cipher
	layer     *SecurityLayer
	challenge []byte
}

const (
	stateInitial = iota
	stateStarted // server: challenge sent; client: response sent
	stateDone
	stateFailed
)

// NewServer returns a server for one exchange. Configuration errors are
// reported by Challenge (wrapping ErrConfig).
func NewServer(cfg ServerConfig) *Server {
	return &Server{cfg: cfg}
}

func (s *Server) validate() error {
	c := &s.cfg
	if c.ServerName == "" {
		return fmt.Errorf("%w: ServerName is required (Hadoop: %q)", ErrConfig, HadoopServerName)
	}
	if c.LookupPassword == nil {
		return fmt.Errorf("%w: LookupPassword is required", ErrConfig)
	}
	if c.Realm == "" {
		c.Realm = c.ServerName
	}
	if len(c.QOPs) == 0 {
		c.QOPs = []QOP{QOPAuth}
	}
	for _, q := range c.QOPs {
		if !q.valid() {
			return fmt.Errorf("%w: unknown qop %q", ErrConfig, q)
		}
	}
	if len(c.Ciphers) == 0 {
		c.Ciphers = javaCipherOrder
	}
	for _, ci := range c.Ciphers {
		if !ci.valid() {
			return fmt.Errorf("%w: unknown cipher %q", ErrConfig, ci)
		}
	}
	if c.MaxBuf == 0 {
		c.MaxBuf = DefaultMaxBuf
	}
	if c.MaxBuf < 0 || c.MaxBuf > maxMaxBuf {
		return fmt.Errorf("%w: MaxBuf %d out of range 1..%d", ErrConfig, c.MaxBuf, maxMaxBuf)
	}
	return nil
}

// Challenge returns the first digest-challenge, for Hadoop the token of
// the TOKEN auth in the NEGOTIATE reply. It is shaped like the JDK's:
//
//	realm="default",nonce="<40 chars>",qop="auth",charset=utf-8,algorithm=md5-sess
//
// Calling it again returns the same challenge.
func (s *Server) Challenge() ([]byte, error) {
	switch s.state {
	case stateStarted:
		return append([]byte(nil), s.challenge...), nil
	case stateInitial:
	default:
		return nil, fmt.Errorf("%w: Challenge after the exchange ended", ErrState)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.nonce == "" { // tests may preset it
		n, err := newNonce(s.cfg.Rand)
		if err != nil {
			return nil, err
		}
		s.nonce = n
	}
	b := appendQuoted(nil, "realm", s.cfg.Realm)
	b = append(b, ',')
	b = appendQuoted(b, "nonce", s.nonce)
	b = append(b, ',')
	b = appendQuoted(b, "qop", joinNames(s.cfg.QOPs))
	b = append(b, ',')
	if s.cfg.MaxBuf != DefaultMaxBuf {
		b = appendBare(b, "maxbuf", strconv.Itoa(s.cfg.MaxBuf))
		b = append(b, ',')
	}
	b = appendBare(b, "charset", "utf-8")
	b = append(b, ',')
	if s.offers(QOPAuthConf) {
		b = appendQuoted(b, "cipher", joinNames(s.cfg.Ciphers))
		b = append(b, ',')
	}
	b = appendBare(b, "algorithm", "md5-sess")
	if len(b) > MaxChallengeSize {
		return nil, fmt.Errorf("%w: challenge of %d bytes exceeds %d (realm too long?)", ErrConfig, len(b), MaxChallengeSize)
	}
	s.challenge = b
	s.state = stateStarted
	return append([]byte(nil), b...), nil
}

func (s *Server) offers(q QOP) bool {
	for _, o := range s.cfg.QOPs {
		if o == q {
			return true
		}
	}
	return false
}

// clientResponse holds the directives of a digest-response.
type clientResponse struct {
	username, realm, nonce, cnonce, nc, qop, digestURI string
	response, maxbuf, charset, cipher, authzid         string
	has                                                map[string]bool
}

// parseResponse applies the digest-response rules of RFC 2831 2.1.2:
// each known directive at most once; unknown directives ignored.
func parseResponse(b []byte) (*clientResponse, error) {
	if len(b) > MaxResponseSize {
		return nil, fmt.Errorf("%w: digest-response of %d bytes exceeds %d", ErrTooLarge, len(b), MaxResponseSize)
	}
	ds, err := parseDirectives(b)
	if err != nil {
		return nil, err
	}
	r := &clientResponse{has: make(map[string]bool, len(ds))}
	for _, d := range ds {
		var dst *string
		switch d.name {
		case "username":
			dst = &r.username
		case "realm":
			dst = &r.realm
		case "nonce":
			dst = &r.nonce
		case "cnonce":
			dst = &r.cnonce
		case "nc":
			dst = &r.nc
		case "qop":
			dst = &r.qop
		case "digest-uri":
			dst = &r.digestURI
		case "response":
			dst = &r.response
		case "maxbuf":
			dst = &r.maxbuf
		case "charset":
			dst = &r.charset
		case "cipher":
			dst = &r.cipher
		case "authzid":
			dst = &r.authzid
		default:
			continue // auth-param: must be ignored
		}
		if r.has[d.name] {
			return nil, fmt.Errorf("%w: digest-response has more than one %s directive", ErrMalformed, d.name)
		}
		r.has[d.name] = true
		*dst = d.value
	}
	for _, req := range []string{"username", "nonce", "cnonce", "nc", "digest-uri", "response"} {
		if !r.has[req] {
			return nil, fmt.Errorf("%w: digest-response lacks the %s directive", ErrMalformed, req)
		}
	}
	return r, nil
}

// Respond verifies the client's digest-response and returns the final
// server token "rspauth=<32 hex>", which Hadoop sends in the SUCCESS
// message. Any error ends the exchange (one attempt per Server, as in the
// JDK); the exchange succeeded only if err == nil.
func (s *Server) Respond(response []byte) (rspauth []byte, err error) {
	if s.state != stateStarted {
		return nil, fmt.Errorf("%w: Respond must follow Challenge and be called once", ErrState)
	}
	s.state = stateFailed // until proven otherwise
	r, err := parseResponse(response)
	if err != nil {
		return nil, err
	}
	if r.has["charset"] && !strings.EqualFold(r.charset, "utf-8") {
		return nil, fmt.Errorf("%w: charset %q (only utf-8 is defined)", ErrMalformed, r.charset)
	}
	// The server offered charset=utf-8, so text directives are UTF-8.
	if !utf8.ValidString(r.username) || !utf8.ValidString(r.realm) {
		return nil, fmt.Errorf("%w: username or realm is not valid UTF-8", ErrMalformed)
	}
	if r.realm != s.cfg.Realm {
		return nil, fmt.Errorf("%w: realm %q was not offered (want %q)", ErrNegotiation, r.realm, s.cfg.Realm)
	}
	if subtle.ConstantTimeCompare([]byte(r.nonce), []byte(s.nonce)) != 1 {
		return nil, fmt.Errorf("%w: nonce does not match this server's challenge (replayed response?)", ErrAuthFailed)
	}
	if r.cnonce == "" {
		return nil, fmt.Errorf("%w: empty cnonce", ErrMalformed)
	}
	if r.nc != ncValue {
		return nil, fmt.Errorf("%w: nonce-count %q, want %s (subsequent authentication is not supported)", ErrAuthFailed, r.nc, ncValue)
	}
	qop := QOPAuth
	if r.has["qop"] {
		qop = QOP(r.qop)
	}
	if !qop.valid() || !s.offers(qop) {
		return nil, fmt.Errorf("%w: qop %q was not offered (offered %q)", ErrNegotiation, r.qop, joinNames(s.cfg.QOPs))
	}
	var ciph Cipher
	if qop == QOPAuthConf {
		if !r.has["cipher"] {
			return nil, fmt.Errorf("%w: qop auth-conf without a cipher directive", ErrMalformed)
		}
		ciph = Cipher(r.cipher)
		if !ciph.valid() || !containsCipher(s.cfg.Ciphers, ciph) {
			return nil, fmt.Errorf("%w: cipher %q was not offered", ErrNegotiation, r.cipher)
		}
	}
	if want := s.cfg.Protocol + "/" + s.cfg.ServerName; !strings.EqualFold(r.digestURI, want) {
		return nil, fmt.Errorf("%w: digest-uri %q, want %q", ErrNegotiation, r.digestURI, want)
	}
	if !isLowerHex32(r.response) {
		return nil, fmt.Errorf("%w: response is not 32 lower-case hex digits", ErrMalformed)
	}
	peerMax := DefaultMaxBuf
	if r.has["maxbuf"] {
		if peerMax, err = parseMaxBuf(r.maxbuf); err != nil {
			return nil, err
		}
	}

	password, err := s.cfg.LookupPassword(r.username)
	if err != nil {
		return nil, fmt.Errorf("%w: no password for user %q: %w", ErrAuthFailed, r.username, err)
	}
	in := sessionInput{
		nonce: s.nonce, cnonce: r.cnonce, nc: ncValue, qop: qop,
		digestURI: r.digestURI, authzid: r.authzid, hasAuthzid: r.has["authzid"],
	}
	if in.username, err = encodeText(r.username, true); err != nil {
		return nil, err
	}
	if in.realm, err = encodeText(r.realm, true); err != nil {
		return nil, err
	}
	if in.password, err = encodeText(string(password), true); err != nil {
		return nil, err
	}
	ha1 := in.sessionKey()
	want := in.responseValue(ha1, "AUTHENTICATE")
	if subtle.ConstantTimeCompare([]byte(want), []byte(r.response)) != 1 {
		return nil, fmt.Errorf("%w: response does not match for user %q (wrong password?)", ErrAuthFailed, r.username)
	}
	authorize := s.cfg.Authorize
	if authorize == nil {
		authorize = authorizeSelf
	}
	authzid := r.username
	if in.hasAuthzid {
		authzid = r.authzid
	}
	if err := authorize(r.username, authzid); err != nil {
		return nil, fmt.Errorf("%w: %q may not act as %q: %w", ErrAuthFailed, r.username, authzid, err)
	}

	if qop != QOPAuth {
		s.layer = newSecurityLayer(ha1, qop, ciph, false, min(peerMax, s.cfg.MaxBuf))
	}
	s.username, s.authzid, s.qop, s.cipher = r.username, authzid, qop, ciph
	s.state = stateDone
	return appendBare(nil, "rspauth", in.responseValue(ha1, "")), nil
}

var errNotSelf = fmt.Errorf("authzid differs from the authentication id")

func authorizeSelf(username, authzid string) error {
	if authzid != username {
		return errNotSelf
	}
	return nil
}

// Complete reports whether Respond succeeded.
func (s *Server) Complete() bool { return s.state == stateDone }

// Username is the authenticated username (for Hadoop: base64 of the token
// identifier); "" until Complete.
func (s *Server) Username() string { return s.username }

// AuthzID is the authorization id: the client's authzid, or Username when
// it sent none; "" until Complete.
func (s *Server) AuthzID() string { return s.authzid }

// NegotiatedQOP is the qop the client chose; "" until Complete.
func (s *Server) NegotiatedQOP() QOP { return s.qop }

// NegotiatedCipher is the auth-conf cipher, "" for other qops.
func (s *Server) NegotiatedCipher() Cipher { return s.cipher }

// SecurityLayer returns the auth-int/auth-conf layer, nil for qop auth or
// before Complete.
func (s *Server) SecurityLayer() *SecurityLayer { return s.layer }

// joinNames is a qop or cipher list as the challenge writes it.
func joinNames[T ~string](names []T) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

func containsCipher(cs []Cipher, c Cipher) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func isLowerHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func parseMaxBuf(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxMaxBuf || v[0] == '+' {
		return 0, fmt.Errorf("%w: maxbuf %q is not a number in 1..%d", ErrMalformed, v, maxMaxBuf)
	}
	return n, nil
}
