package digestmd5

import (
	"crypto/md5"
	"crypto/subtle"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ClientConfig configures one client-side exchange.
type ClientConfig struct {
	// Username and Password are the credentials; for a Hadoop token,
	// HadoopUsername(identifier) and HadoopPassword(password).
	Username string
	Password []byte
	// AuthzID, if non-empty, is sent as authzid (Hadoop token clients send
	// none).
	AuthzID string
	// Protocol and ServerName form the digest-uri Protocol + "/" +
	// ServerName; for Hadoop take them from the server's NEGOTIATE auth
	// (protocol "" and serverId "default"). ServerName is required.
	Protocol   string
	ServerName string
	// Realm to answer with. Empty means the first realm the server offers
	// (what Hadoop's client callback picks), or "" if it offers none. If set,
	// it must be one the server offered (when it offered any).
	Realm string
	// QOPs acceptable to the client, most preferred first. Empty means
	// {QOPAuth}.
	QOPs []QOP
	// Ciphers acceptable for auth-conf, most preferred first. Empty means the
	// JDK client's default preference: 3des, rc4, des, rc4-56, rc4-40.
	Ciphers []Cipher
	// MaxBuf is the receive maxbuf sent to the server; zero means
	// DefaultMaxBuf.
	MaxBuf int
	// Rand is the cnonce source; nil means crypto/rand.
	Rand io.Reader
}

// Client is the client side of one DIGEST-MD5 exchange: Respond to the
// server's challenge, then Verify the server's rspauth. Not safe for
// concurrent use; the SecurityLayer it yields is.
type Client struct {
	cfg     ClientConfig
	state   int
	cnonce  string // tests may preset it
	rspauth string // expected server proof
	ha1     [md5.Size]byte
	qop     QOP
	cipher  Cipher
	peerMax int
	layer   *SecurityLayer
}

// NewClient returns a client for one exchange. Configuration errors are
// reported by Respond (wrapping ErrConfig).
func NewClient(cfg ClientConfig) *Client {
	return &Client{cfg: cfg}
}

func (c *Client) validate() error {
	cfg := &c.cfg
	if cfg.ServerName == "" {
		return fmt.Errorf("%w: ServerName is required (Hadoop: %q)", ErrConfig, HadoopServerName)
	}
	if cfg.Username == "" {
		return fmt.Errorf("%w: Username is required", ErrConfig)
	}
	if len(cfg.QOPs) == 0 {
		cfg.QOPs = []QOP{QOPAuth}
	}
	for _, q := range cfg.QOPs {
		if !q.valid() {
			return fmt.Errorf("%w: unknown qop %q", ErrConfig, q)
		}
	}
	if len(cfg.Ciphers) == 0 {
		cfg.Ciphers = javaCipherOrder
	}
	for _, ci := range cfg.Ciphers {
		if !ci.valid() {
			return fmt.Errorf("%w: unknown cipher %q", ErrConfig, ci)
		}
	}
	if cfg.MaxBuf == 0 {
		cfg.MaxBuf = DefaultMaxBuf
	}
	if cfg.MaxBuf < 0 || cfg.MaxBuf > maxMaxBuf {
		return fmt.Errorf("%w: MaxBuf %d out of range 1..%d", ErrConfig, cfg.MaxBuf, maxMaxBuf)
	}
	return nil
}

// serverChallenge holds the directives of a digest-challenge.
type serverChallenge struct {
	realms                                       []string
	nonce, qop, maxbuf, charset, algorithm, ciph string
	has                                          map[string]bool
}

// parseChallenge applies the digest-challenge rules of RFC 2831 2.1.1:
// realm may repeat, every other known directive appears at most once,
// nonce and algorithm are required, unknown directives are ignored.
func parseChallenge(b []byte) (*serverChallenge, error) {
	if len(b) > MaxChallengeSize {
		return nil, fmt.Errorf("%w: digest-challenge of %d bytes exceeds %d", ErrTooLarge, len(b), MaxChallengeSize)
	}
	ds, err := parseDirectives(b)
	if err != nil {
		return nil, err
	}
	ch := &serverChallenge{has: make(map[string]bool, len(ds))}
	for _, d := range ds {
		var dst *string
		switch d.name {
		case "realm":
			ch.realms = append(ch.realms, d.value)
			continue
		case "nonce":
			dst = &ch.nonce
		case "qop":
			dst = &ch.qop
		case "maxbuf":
			dst = &ch.maxbuf
		case "charset":
			dst = &ch.charset
		case "algorithm":
			dst = &ch.algorithm
		case "cipher":
			dst = &ch.ciph
		case "stale":
			// Only meaningful for subsequent authentication; ignored.
			continue
		default:
			continue
		}
		if ch.has[d.name] {
			return nil, fmt.Errorf("%w: digest-challenge has more than one %s directive", ErrMalformed, d.name)
		}
		ch.has[d.name] = true
		*dst = d.value
	}
	if !ch.has["nonce"] || ch.nonce == "" {
		return nil, fmt.Errorf("%w: digest-challenge lacks a nonce", ErrMalformed)
	}
	if !ch.has["algorithm"] {
		return nil, fmt.Errorf("%w: digest-challenge lacks the algorithm directive", ErrMalformed)
	}
	if !strings.EqualFold(ch.algorithm, "md5-sess") {
		return nil, fmt.Errorf("%w: algorithm %q (only md5-sess is defined)", ErrMalformed, ch.algorithm)
	}
	if ch.has["charset"] && !strings.EqualFold(ch.charset, "utf-8") {
		return nil, fmt.Errorf("%w: charset %q (only utf-8 is defined)", ErrMalformed, ch.charset)
	}
	return ch, nil
}

// splitList splits a qop-list or cipher list ("auth, auth-int").
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\n' })
}

// Respond answers the server's digest-challenge with a digest-response
// (for Hadoop, the token of the INITIATE message).
func (c *Client) Respond(challenge []byte) ([]byte, error) {
	if c.state != stateInitial {
		return nil, fmt.Errorf("%w: Respond called twice", ErrState)
	}
	c.state = stateFailed
	if err := c.validate(); err != nil {
		return nil, err
	}
	ch, err := parseChallenge(challenge)
	if err != nil {
		return nil, err
	}
	utf8Charset := ch.has["charset"]

	// qop: the client's most preferred one that the server offers.
	offered := []string{string(QOPAuth)}
	if ch.has["qop"] {
		offered = splitList(ch.qop)
	}
	c.qop = firstOffered(c.cfg.QOPs, offered)
	if c.qop == "" {
		return nil, fmt.Errorf("%w: server offers qop %q, client accepts %q", ErrNegotiation, ch.qop, joinNames(c.cfg.QOPs))
	}
	if c.qop == QOPAuthConf {
		if !ch.has["cipher"] {
			return nil, fmt.Errorf("%w: server offers auth-conf without a cipher directive", ErrMalformed)
		}
		c.cipher = firstOffered(c.cfg.Ciphers, splitList(ch.ciph))
		if c.cipher == "" {
			return nil, fmt.Errorf("%w: server offers ciphers %q, client accepts %q", ErrNegotiation, ch.ciph, joinNames(c.cfg.Ciphers))
		}
	}

	realm := c.cfg.Realm
	switch {
	case realm == "" && len(ch.realms) > 0:
		realm = ch.realms[0]
	case realm != "" && len(ch.realms) > 0 && !containsString(ch.realms, realm):
		return nil, fmt.Errorf("%w: realm %q not among the offered %q", ErrNegotiation, realm, ch.realms)
	}

	c.peerMax = DefaultMaxBuf
	if ch.has["maxbuf"] {
		if c.peerMax, err = parseMaxBuf(ch.maxbuf); err != nil {
			return nil, err
		}
	}
	if c.cnonce == "" {
		if c.cnonce, err = newNonce(c.cfg.Rand); err != nil {
			return nil, err
		}
	}
	digestURI := c.cfg.Protocol + "/" + c.cfg.ServerName
	in := sessionInput{
		nonce: ch.nonce, cnonce: c.cnonce, nc: ncValue, qop: c.qop, digestURI: digestURI,
		authzid: c.cfg.AuthzID, hasAuthzid: c.cfg.AuthzID != "",
	}
	if in.username, err = encodeText(c.cfg.Username, utf8Charset); err != nil {
		return nil, err
	}
	if in.realm, err = encodeText(realm, utf8Charset); err != nil {
		return nil, err
	}
	if in.password, err = encodeText(string(c.cfg.Password), utf8Charset); err != nil {
		return nil, err
	}
	c.ha1 = in.sessionKey()
	c.rspauth = in.responseValue(c.ha1, "")

	// Directive order follows the JDK client, which servers in the wild
	// have been tested against.
	var b []byte
	if utf8Charset {
		b = appendBare(b, "charset", "utf-8")
		b = append(b, ',')
	}
	b = appendQuoted(b, "username", c.cfg.Username)
	b = append(b, ',')
	if realm != "" {
		b = appendQuoted(b, "realm", realm)
		b = append(b, ',')
	}
	b = appendQuoted(b, "nonce", ch.nonce)
	b = append(b, ',')
	b = appendBare(b, "nc", ncValue)
	b = append(b, ',')
	b = appendQuoted(b, "cnonce", c.cnonce)
	b = append(b, ',')
	b = appendQuoted(b, "digest-uri", digestURI)
	b = append(b, ',')
	b = appendBare(b, "maxbuf", strconv.Itoa(c.cfg.MaxBuf))
	b = append(b, ',')
	b = appendBare(b, "response", in.responseValue(c.ha1, "AUTHENTICATE"))
	b = append(b, ',')
	b = appendBare(b, "qop", string(c.qop))
	if c.cipher != "" {
		b = append(b, ',')
		b = appendQuoted(b, "cipher", string(c.cipher))
	}
	if in.hasAuthzid {
		b = append(b, ',')
		b = appendQuoted(b, "authzid", c.cfg.AuthzID)
	}
	if len(b) > MaxResponseSize {
		return nil, fmt.Errorf("%w: digest-response of %d bytes exceeds %d (username too long?)", ErrTooLarge, len(b), MaxResponseSize)
	}
	c.state = stateStarted
	return b, nil
}

// Verify checks the server's final token "rspauth=<32 hex>" (mutual
// authentication). Only after it returns nil is the exchange complete and
// the SecurityLayer available.
func (c *Client) Verify(rspauth []byte) error {
	if c.state != stateStarted {
		return fmt.Errorf("%w: Verify must follow a successful Respond and be called once", ErrState)
	}
	c.state = stateFailed
	if len(rspauth) > MaxChallengeSize {
		return fmt.Errorf("%w: response-auth of %d bytes exceeds %d", ErrTooLarge, len(rspauth), MaxChallengeSize)
	}
	ds, err := parseDirectives(rspauth)
	if err != nil {
		return err
	}
	var got string
	n := 0
	for _, d := range ds {
		if d.name == "rspauth" {
			got = d.value
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: response-auth must hold exactly one rspauth directive, has %d", ErrMalformed, n)
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.rspauth)) != 1 {
		return fmt.Errorf("%w: server's rspauth does not match (server does not know the password)", ErrAuthFailed)
	}
	if c.qop != QOPAuth {
		c.layer = newSecurityLayer(c.ha1, c.qop, c.cipher, true, min(c.peerMax, DefaultMaxBuf))
	}
	c.state = stateDone
	return nil
}

// Complete reports whether Verify succeeded.
func (c *Client) Complete() bool { return c.state == stateDone }

// NegotiatedQOP is the qop chosen in Respond; "" before.
func (c *Client) NegotiatedQOP() QOP { return c.qop }

// NegotiatedCipher is the auth-conf cipher, "" for other qops.
func (c *Client) NegotiatedCipher() Cipher { return c.cipher }

// SecurityLayer returns the auth-int/auth-conf layer, nil for qop auth or
// before Complete.
func (c *Client) SecurityLayer() *SecurityLayer { return c.layer }

// firstOffered is the first of the client's preferences (most preferred
// first) that the server offers, or "" when it offers none of them.
func firstOffered[T ~string](prefs []T, offered []string) T {
	for _, want := range prefs {
		if containsString(offered, string(want)) {
			return want
		}
	}
	return ""
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
