package krb5sasl

import (
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/crypto/etype"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// RFC 4121 section 4.2.2 flags.
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

const wrapHeaderLen = 16

// MaxWrapToken bounds one wrap token we unwrap (the IPC layer bounds frames
// anyway; this keeps the package safe on its own).
const MaxWrapToken = 128 << 20

// context is an established security context: the key and the sequence
// numbers of RFC 4121 per-message tokens. Wrap and Unwrap may run
// concurrently with each other; each is serialised on its own.
type context struct {
	key      types.EncryptionKey
	et       etype.EType
	acceptor bool // we are the acceptor (server)
	// acceptorSubkey: the key is a subkey the acceptor sent in its AP-REP
	// (flag 0x04 in every token, both directions).
	acceptorSubkey bool

	sendMu  sync.Mutex
	sendSeq uint64
	recvMu  sync.Mutex
	recvSeq uint64
}

func newContext(key types.EncryptionKey, acceptor, acceptorSubkey bool, sendSeq, recvSeq int64) (*context, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: session key: %w", err)
	}
	return &context{key: key, et: et, acceptor: acceptor, acceptorSubkey: acceptorSubkey,
		sendSeq: uint64(uint32(sendSeq)), recvSeq: uint64(uint32(recvSeq))}, nil
}

func (c *context) usages() (send, recv uint32) {
	if c.acceptor {
		return keyusage.GSSAPI_ACCEPTOR_SEAL, keyusage.GSSAPI_INITIATOR_SEAL
	}
	return keyusage.GSSAPI_INITIATOR_SEAL, keyusage.GSSAPI_ACCEPTOR_SEAL
}

// wrap builds an RFC 4121 Wrap token (TOK_ID 05 04):
//
//	+-------+-------+------+------+------+-----------+---------------------------+
//	| 05 04 | flags | 0xFF | EC:2 | RRC:2| SND_SEQ:8 | data                      |
//	+-------+-------+------+------+------+-----------+---------------------------+
//	integrity:       data = plaintext | checksum(plaintext | header with EC=RRC=0)
//	confidentiality: data = encrypt(plaintext | header with RRC=0), EC = 0 filler
//
// We send RRC 0 (no rotation); Unwrap undoes any rotation the peer used.
func (c *context) wrap(p []byte, conf bool) ([]byte, error) {
	c.sendMu.Lock()
	seq := c.sendSeq
	c.sendSeq++
	c.sendMu.Unlock()
	send, _ := c.usages()
	var flags byte
	if c.acceptor {
		flags |= flagSentByAcceptor
	}
	if c.acceptorSubkey {
		flags |= flagAcceptorSubkey
	}
	hdr := make([]byte, wrapHeaderLen)
	hdr[0], hdr[1], hdr[3] = 0x05, 0x04, 0xFF
	binary.BigEndian.PutUint64(hdr[8:], seq)
	if conf {
		hdr[2] = flags | flagSealed
		// EC 0: AES-CTS needs no padding.
		plain := make([]byte, 0, len(p)+wrapHeaderLen)
		plain = append(append(plain, p...), hdr...)
		_, ct, err := c.et.EncryptMessage(c.key.KeyValue, plain, send)
		if err != nil {
			return nil, fmt.Errorf("krb5sasl: wrap: %w", err)
		}
		return append(hdr, ct...), nil
	}
	hdr[2] = flags
	sum, err := c.et.GetChecksumHash(c.key.KeyValue, append(append(make([]byte, 0, len(p)+wrapHeaderLen), p...), hdr...), send)
	if err != nil {
		return nil, fmt.Errorf("krb5sasl: wrap: %w", err)
	}
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(sum)))
	out := make([]byte, 0, wrapHeaderLen+len(p)+len(sum))
	return append(append(append(out, hdr...), p...), sum...), nil
}

// unwrap checks a peer's Wrap token and returns its plaintext and whether it
// was sealed. Tokens must arrive in sequence (no replay, no reordering:
// Hadoop IPC runs over one TCP stream).
func (c *context) unwrap(tok []byte) ([]byte, bool, error) {
	if len(tok) < wrapHeaderLen {
		return nil, false, fmt.Errorf("%w: wrap token of %d bytes", ErrToken, len(tok))
	}
	if len(tok) > MaxWrapToken {
		return nil, false, fmt.Errorf("%w: wrap token of %d bytes exceeds %d", ErrToken, len(tok), MaxWrapToken)
	}
	if tok[0] != 0x05 || tok[1] != 0x04 || tok[3] != 0xFF {
		return nil, false, fmt.Errorf("%w: not an RFC 4121 wrap token (% x)", ErrToken, tok[:4])
	}
	flags := tok[2]
	if (flags&flagSentByAcceptor != 0) == c.acceptor {
		return nil, false, fmt.Errorf("%w: wrap token direction flag is wrong (a reflected token?)", ErrToken)
	}
	if (flags&flagAcceptorSubkey != 0) != c.acceptorSubkey {
		return nil, false, fmt.Errorf("%w: wrap token AcceptorSubkey flag disagrees with the context", ErrToken)
	}
	if flags&^(flagSentByAcceptor|flagSealed|flagAcceptorSubkey) != 0 {
		return nil, false, fmt.Errorf("%w: unknown wrap token flags 0x%02x", ErrToken, flags)
	}
	ec := int(binary.BigEndian.Uint16(tok[4:6]))
	rrc := int(binary.BigEndian.Uint16(tok[6:8]))
	seq := binary.BigEndian.Uint64(tok[8:16])
	data := tok[wrapHeaderLen:]
	if rrc > 0 && len(data) > 0 {
		// The sender rotated data right by RRC; rotate it back (copy: the
		// token may be a view of a reused buffer).
		r := rrc % len(data)
		data = append(append(make([]byte, 0, len(data)), data[r:]...), data[:r]...)
	}
	_, recv := c.usages()
	var plain []byte
	sealed := flags&flagSealed != 0
	if sealed {
		// gokrb5's DecryptMessage panics on input shorter than one
		// confounder plus checksum (found by FuzzUnwrap).
		if len(data) < c.et.GetConfounderByteSize()+c.et.GetHMACBitLength()/8+wrapHeaderLen {
			return nil, false, fmt.Errorf("%w: sealed wrap token of %d bytes is too short", ErrToken, len(tok))
		}
		pt, err := c.et.DecryptMessage(c.key.KeyValue, data, recv)
		if err != nil {
			return nil, false, fmt.Errorf("%w: wrap token does not decrypt: %v", ErrToken, err)
		}
		if len(pt) < ec+wrapHeaderLen {
			return nil, false, fmt.Errorf("%w: sealed wrap token too short", ErrToken)
		}
		inner := pt[len(pt)-wrapHeaderLen:]
		// The encrypted header copy must match the clear one (RRC zero in
		// the copy).
		if inner[0] != tok[0] || inner[1] != tok[1] || inner[2] != tok[2] || inner[3] != tok[3] ||
			binary.BigEndian.Uint16(inner[4:6]) != uint16(ec) || inner[6] != 0 || inner[7] != 0 ||
			binary.BigEndian.Uint64(inner[8:16]) != seq {
			return nil, false, fmt.Errorf("%w: sealed wrap token header was altered", ErrToken)
		}
		plain = pt[:len(pt)-wrapHeaderLen-ec]
	} else {
		if ec > len(data) {
			return nil, false, fmt.Errorf("%w: checksum length %d exceeds token", ErrToken, ec)
		}
		plain = data[:len(data)-ec]
		sum := data[len(data)-ec:]
		hdr := append([]byte(nil), tok[:wrapHeaderLen]...)
		hdr[4], hdr[5], hdr[6], hdr[7] = 0, 0, 0, 0
		want, err := c.et.GetChecksumHash(c.key.KeyValue, append(append(make([]byte, 0, len(plain)+wrapHeaderLen), plain...), hdr...), recv)
		if err != nil {
			return nil, false, fmt.Errorf("krb5sasl: unwrap: %w", err)
		}
		if !hmac.Equal(want, sum) {
			return nil, false, fmt.Errorf("%w: wrap token checksum does not verify", ErrToken)
		}
		plain = append([]byte(nil), plain...)
	}
	c.recvMu.Lock()
	defer c.recvMu.Unlock()
	if seq != c.recvSeq {
		return nil, false, fmt.Errorf("%w: wrap token sequence number %d, expected %d (replayed or reordered)", ErrToken, seq, c.recvSeq)
	}
	c.recvSeq++
	return plain, sealed, nil
}

// SecurityLayer protects the messages after an auth-int or auth-conf
// exchange: Wrap and Unwrap each run in wire order (sequence numbers).
type SecurityLayer struct {
	ctx  *context
	conf bool
}

// Wrap protects one message (signed; encrypted too for auth-conf).
func (l *SecurityLayer) Wrap(p []byte) ([]byte, error) { return l.ctx.wrap(p, l.conf) }

// Unwrap checks and opens one message from the peer. Under auth-conf an
// unsealed token is refused: the peer agreed to encrypt.
func (l *SecurityLayer) Unwrap(tok []byte) ([]byte, error) {
	p, sealed, err := l.ctx.unwrap(tok)
	if err != nil {
		return nil, err
	}
	if l.conf && !sealed {
		return nil, fmt.Errorf("%w: unencrypted wrap token under auth-conf", ErrToken)
	}
	return p, nil
}
