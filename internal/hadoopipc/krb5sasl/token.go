// Package krb5sasl is the SASL GSSAPI mechanism (RFC 4752) over Kerberos V5
// (RFC 4121), server and client, as Hadoop IPC uses it for AuthMethod
// KERBEROS. Kerberos itself (tickets, keytabs, AP-REQ verification, the
// enctypes) is github.com/jcmturner/gokrb5/v8; this package adds what gokrb5
// lacks for a GSSAPI acceptor and initiator:
//
//   - building the acceptor's AP-REP (gokrb5 can only parse one) and
//     checking it on the initiator side (gokrb5's KRB5Token.Verify returns
//     "not supported" for AP-REP);
//   - RFC 4121 wrap tokens with confidentiality, right-rotation and sequence
//     numbers (gokrb5's gssapi.WrapToken does integrity only, with sequence
//     number 0 and no rotation);
//   - the RFC 4752 security-layer negotiation after the context is set up.
//
// It knows nothing of Hadoop IPC: the caller carries the tokens in
// RpcSaslProto messages.
package krb5sasl

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// ErrToken marks a malformed or unexpected token from the peer.
var ErrToken = errors.New("krb5sasl: bad token")

// MaxContextToken bounds an initial context token (AP-REQ) we accept. A
// ticket with a large Active Directory PAC reaches ~12 KiB; 64 KiB leaves
// room while keeping what an unauthenticated peer can make us parse small.
const MaxContextToken = 64 << 10

// krb5OID is 1.2.840.113554.1.2.2, DER-encoded with its tag and length.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Token IDs inside the GSS framing (RFC 4121 section 4.1).
var (
	tokAPReq = [2]byte{0x01, 0x00}
	tokAPRep = [2]byte{0x02, 0x00}
	tokError = [2]byte{0x03, 0x00}
)

// frameToken wraps a Kerberos message in the RFC 2743 section 3.1 framing:
//
//	+------+--------+----------------------+--------+----------------+
//	| 0x60 | DERlen | 06 09 <krb5 mech OID> | TOK_ID | Kerberos (DER) |
//	+------+--------+----------------------+--------+----------------+
func frameToken(id [2]byte, msg []byte) []byte {
	inner := make([]byte, 0, len(krb5OID)+2+len(msg))
	inner = append(inner, krb5OID...)
	inner = append(inner, id[:]...)
	inner = append(inner, msg...)
	out := []byte{0x60}
	out = append(out, derLength(len(inner))...)
	return append(out, inner...)
}

func derLength(n int) []byte {
	if n < 0x80 {
		return []byte{byte(n)}
	}
	var b []byte
	for v := n; v > 0; v >>= 8 {
		b = append([]byte{byte(v)}, b...)
	}
	return append([]byte{0x80 | byte(len(b))}, b...)
}

// unframeToken checks the GSS framing and returns the token ID and the
// Kerberos message. It reads no more than len(b) and allocates nothing.
func unframeToken(b []byte) (id [2]byte, msg []byte, err error) {
	if len(b) < 2 || b[0] != 0x60 {
		return id, nil, fmt.Errorf("%w: not a GSS-API initial context token", ErrToken)
	}
	n, hdr := 0, 2
	switch l := b[1]; {
	case l < 0x80:
		n = int(l)
	case l == 0x81 || l == 0x82 || l == 0x83:
		k := int(l & 0x7f)
		if len(b) < 2+k {
			return id, nil, fmt.Errorf("%w: truncated length", ErrToken)
		}
		for _, c := range b[2 : 2+k] {
			n = n<<8 | int(c)
		}
		hdr += k
	default:
		return id, nil, fmt.Errorf("%w: unsupported DER length form 0x%02x", ErrToken, l)
	}
	if n != len(b)-hdr {
		return id, nil, fmt.Errorf("%w: framing says %d bytes, token has %d", ErrToken, n, len(b)-hdr)
	}
	rest := b[hdr:]
	if !bytes.HasPrefix(rest, krb5OID) {
		return id, nil, fmt.Errorf("%w: mechanism is not Kerberos V5 (1.2.840.113554.1.2.2)", ErrToken)
	}
	rest = rest[len(krb5OID):]
	if len(rest) < 2 {
		return id, nil, fmt.Errorf("%w: no token id", ErrToken)
	}
	copy(id[:], rest[:2])
	return id, rest[2:], nil
}

// ParseContextToken decodes an initiator's first token into its AP-REQ
// (not yet verified). Exported for fuzzing and diagnostics.
func ParseContextToken(b []byte) (*messages.APReq, error) {
	if len(b) > MaxContextToken {
		return nil, fmt.Errorf("%w: context token of %d bytes exceeds %d", ErrToken, len(b), MaxContextToken)
	}
	id, msg, err := unframeToken(b)
	if err != nil {
		return nil, err
	}
	if id != tokAPReq {
		return nil, fmt.Errorf("%w: token id %x, want AP-REQ 0100", ErrToken, id)
	}
	var req messages.APReq
	if err := req.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("%w: AP-REQ: %v", ErrToken, err)
	}
	return &req, nil
}

// encAPRepPart is messages.EncAPRepPart for marshalling: gokrb5 only
// unmarshals it. No subkey: the acceptor keeps the initiator's subkey (RFC
// 4121 allows either; not sending one means both sides use the key the
// initiator chose, and the AcceptorSubkey flag stays clear).
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"explicit,tag:3"`
}

type apRep struct {
	PVNO    int                 `asn1:"explicit,tag:0"`
	MsgType int                 `asn1:"explicit,tag:1"`
	EncPart types.EncryptedData `asn1:"explicit,tag:2"`
}

// buildAPRep makes the framed AP-REP that proves to the initiator that we
// hold the service key (mutual authentication): its encrypted part echoes
// the authenticator's time, under the session key (RFC 4120 5.5.2).
func buildAPRep(auth *types.Authenticator, sessionKey types.EncryptionKey, seq int64) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{CTime: auth.CTime.UTC(), Cusec: auth.Cusec, SequenceNumber: seq})
	if err != nil {
		return nil, fmt.Errorf("marshal EncAPRepPart: %w", err)
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("encrypt EncAPRepPart: %w", err)
	}
	b, err := asn1.Marshal(apRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: ed})
	if err != nil {
		return nil, fmt.Errorf("marshal AP-REP: %w", err)
	}
	return frameToken(tokAPRep, asn1tools.AddASNAppTag(b, asnAppTag.APREP)), nil
}

// parseAPRep checks the acceptor's AP-REP against the authenticator we
// sent and returns its encrypted part. A KRB-ERROR token is reported as
// such.
func parseAPRep(b []byte, sent *types.Authenticator, sessionKey types.EncryptionKey) (*messages.EncAPRepPart, error) {
	if len(b) > MaxContextToken {
		return nil, fmt.Errorf("%w: AP-REP of %d bytes", ErrToken, len(b))
	}
	id, msg, err := unframeToken(b)
	if err != nil {
		return nil, err
	}
	switch id {
	case tokAPRep:
	case tokError:
		var ke messages.KRBError
		if err := ke.Unmarshal(msg); err != nil {
			return nil, fmt.Errorf("%w: KRB-ERROR: %v", ErrToken, err)
		}
		return nil, fmt.Errorf("krb5sasl: the server refused the ticket: %s", ke.Error())
	default:
		return nil, fmt.Errorf("%w: token id %x, want AP-REP 0200", ErrToken, id)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("%w: AP-REP: %v", ErrToken, err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, fmt.Errorf("%w: AP-REP does not decrypt with the session key: %v", ErrToken, err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("%w: EncAPRepPart: %v", ErrToken, err)
	}
	if !part.CTime.Truncate(time.Second).Equal(sent.CTime.Truncate(time.Second)) || part.Cusec != sent.Cusec {
		return nil, fmt.Errorf("%w: AP-REP does not echo our authenticator's time", ErrToken)
	}
	return &part, nil
}
