package krb5sasl

import (
	"errors"
	"fmt"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// ClientConfig configures the initiator.
type ClientConfig struct {
	// Kerberos is a logged-in gokrb5 client (keytab or password); it gets
	// and caches the service ticket.
	Kerberos *client.Client
	// Service is the server's principal without realm, e.g.
	// "rm/host.example.com" (Hadoop: NEGOTIATE's protocol + "/" + serverId).
	Service string
	// QOPs acceptable, most preferred first; empty means auth, auth-int,
	// auth-conf (the cheapest the server allows).
	QOPs []QOP
	// MaxBuf announced to the server; zero means DefaultMaxBuf.
	MaxBuf int
}

// Client is the initiator side of one exchange: Start, then Step on each
// server token until Done. Not safe for concurrent use; the SecurityLayer is.
type Client struct {
	cfg        ClientConfig
	state      int
	auth       types.Authenticator
	sessionKey types.EncryptionKey
	ctx        *context
	qop        QOP
	layer      *SecurityLayer
}

const (
	cliStart = iota
	cliWantAPRep
	cliWantOffer
	cliDone
)

// NewClient checks the configuration.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Kerberos == nil || cfg.Service == "" {
		return nil, errors.New("krb5sasl: the client needs a logged-in Kerberos client and the service principal")
	}
	if len(cfg.QOPs) == 0 {
		cfg.QOPs = []QOP{QOPAuth, QOPAuthInt, QOPAuthConf}
	}
	for _, q := range cfg.QOPs {
		if _, err := qopBit(q); err != nil {
			return nil, err
		}
	}
	if cfg.MaxBuf <= 0 || cfg.MaxBuf > 1<<24-1 {
		cfg.MaxBuf = DefaultMaxBuf
	}
	return &Client{cfg: cfg}, nil
}

// Start gets a service ticket and returns the initial token (the AP-REQ,
// asking for mutual authentication).
func (c *Client) Start() ([]byte, error) {
	if c.state != cliStart {
		return nil, errors.New("krb5sasl: Start called twice")
	}
	tkt, key, err := c.cfg.Kerberos.GetServiceTicket(c.cfg.Service)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: service ticket for %s: %w", c.cfg.Service, err)
	}
	creds := c.cfg.Kerberos.Credentials
	auth, err := types.NewAuthenticator(creds.Domain(), creds.CName())
	if err != nil {
		return nil, err
	}
	// A fresh subkey and sequence number, as MIT and the JDK send: the
	// per-message tokens then use a key only this connection knows.
	if err := auth.GenerateSeqNumberAndSubKey(key.KeyType, len(key.KeyValue)); err != nil {
		return nil, err
	}
	// RFC 4121 4.1.1 checksum: Lgth 16, zero channel bindings, flags.
	gssFlags := uint32(gssapi.ContextFlagMutual | gssapi.ContextFlagInteg | gssapi.ContextFlagConf | gssapi.ContextFlagSequence)
	ck := make([]byte, 24)
	ck[0] = 16
	ck[20], ck[21], ck[22], ck[23] = byte(gssFlags), byte(gssFlags>>8), byte(gssFlags>>16), byte(gssFlags>>24)
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, err
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	c.auth, c.sessionKey = auth, key
	c.state = cliWantAPRep
	return frameToken(tokAPReq, b), nil
}

// Step consumes a server token and returns the response to send. After the
// last one (the security-layer choice) Done is true; the server then
// answers SUCCESS with no token.
func (c *Client) Step(in []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: malformed Kerberos message from the server (%v)", ErrToken, p)
			c.state = cliDone + 1
		}
	}()
	switch c.state {
	case cliWantAPRep:
		part, err := parseAPRep(in, &c.auth, c.sessionKey)
		if err != nil {
			return nil, err
		}
		key, acceptorSubkey := c.auth.SubKey, false
		if len(part.Subkey.KeyValue) > 0 {
			key, acceptorSubkey = part.Subkey, true
		}
		if c.ctx, err = newContext(key, false, acceptorSubkey, c.auth.SeqNumber, part.SequenceNumber); err != nil {
			return nil, err
		}
		c.state = cliWantOffer
		return []byte{}, nil
	case cliWantOffer:
		p, _, err := c.ctx.unwrap(in)
		if err != nil {
			return nil, err
		}
		if len(p) != 4 {
			return nil, fmt.Errorf("%w: security layer offer of %d bytes", ErrToken, len(p))
		}
		offer := p[0]
		var choice byte
		for _, q := range c.cfg.QOPs {
			if b, _ := qopBit(q); offer&b != 0 {
				choice = b
				break
			}
		}
		if choice == 0 {
			return nil, fmt.Errorf("%w: the server offers no acceptable protection (offer 0x%02x, we accept %v)", ErrAuth, offer, c.cfg.QOPs)
		}
		msg := []byte{choice, byte(c.cfg.MaxBuf >> 16), byte(c.cfg.MaxBuf >> 8), byte(c.cfg.MaxBuf)}
		out, err := c.ctx.wrap(msg, false)
		if err != nil {
			return nil, err
		}
		c.qop = bitQOP(choice)
		if choice != layerNone {
			c.layer = &SecurityLayer{ctx: c.ctx, conf: choice == layerConf}
		}
		c.state = cliDone
		return out, nil
	}
	return nil, fmt.Errorf("krb5sasl: unexpected server token in state %d", c.state)
}

// Done reports whether the client has sent its last token.
func (c *Client) Done() bool { return c.state == cliDone }

// NegotiatedQOP is the chosen layer (after Done).
func (c *Client) NegotiatedQOP() QOP { return c.qop }

// SecurityLayer is nil for QOPAuth.
func (c *Client) SecurityLayer() *SecurityLayer { return c.layer }
