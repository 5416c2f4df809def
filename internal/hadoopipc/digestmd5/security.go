package digestmd5

import (
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"
)

// RFC 2831 2.3 and 2.4 key-derivation constants.
const (
	magicKic = "Digest session key to client-to-server signing key magic constant"
	magicKis = "Digest session key to server-to-client signing key magic constant"
	magicKcc = "Digest H(A1) to client-to-server sealing key magic constant"
	magicKcs = "Digest H(A1) to server-to-client sealing key magic constant"
)

// Per-message overhead, as the JDK computes the raw send size: 16 bytes
// for auth-int (10 MAC + 2 type + 4 seq), 26 for auth-conf (adds up to 8
// bytes of block padding, plus 2 spare as in the JDK).
const (
	integrityOverhead = 16
	privacyOverhead   = 26
)

// SecurityLayer protects messages after an auth-int or auth-conf exchange
// (RFC 2831 sections 2.3 and 2.4, byte-compatible with the JDK).
//
// Integrity wraps a message as
//
//	+---------+------------------------------------+------------+-------------+
//	| message | HMAC-MD5(Ki, seq || message)[0:10] | 0x00 0x01  | seq (BE u32) |
//	+---------+------------------------------------+------------+-------------+
//
// Confidentiality wraps it as
//
//	+------------------------------------------------------+-----------+-------------+
//	| CIPHER(Kc, message || pad || HMAC(Ki, seq||msg)[0:10]) | 0x00 0x01 | seq (BE u32) |
//	+------------------------------------------------------+-----------+-------------+
//
// with pad 1..8 bytes each holding the pad length for des/3des (none for
// rc4). Cipher state (CBC chaining, the RC4 stream) runs on across messages,
// and sequence numbers count from 0 in each direction, so messages must be
// unwrapped in the order they were wrapped, each exactly once.
//
// Wrap and Unwrap may be called concurrently with each other (send and
// receive state are separate); concurrent Wraps are serialized, but the
// caller must then send the results in the order Wrap returned them.
// The wrapped form has no length prefix: Hadoop carries it as the token of
// an RpcSaslProto WRAP message.
type SecurityLayer struct {
	qop     QOP
	cipher  Cipher
	maxWrap int
	send    layerDir
	recv    layerDir
}

type layerDir struct {
	mu     sync.Mutex
	mac    hash.Hash // HMAC-MD5 keyed with Kic or Kis, reused under mu
	seq    uint32
	stream cipher.Stream    // rc4*
	block  cipher.BlockMode // des, 3des (CBC)
	failed bool             // a decrypt desynchronized the cipher state
}

func newSecurityLayer(ha1 [md5.Size]byte, qop QOP, ciph Cipher, client bool, peerMaxBuf int) *SecurityLayer {
	l := &SecurityLayer{qop: qop, cipher: ciph}
	kic, kis := deriveKey(ha1[:], magicKic), deriveKey(ha1[:], magicKis)
	overhead := integrityOverhead
	if !client {
		kic, kis = kis, kic // the server sends with Kis and receives with Kic
	}
	l.send.mac = hmac.New(md5.New, kic[:])
	l.recv.mac = hmac.New(md5.New, kis[:])
	if qop == QOPAuthConf {
		overhead = privacyOverhead
		n := md5.Size // des, 3des, rc4 use all of H(A1)
		switch ciph {
		case CipherRC4_40:
			n = 5
		case CipherRC4_56:
			n = 7
		}
		kcc, kcs := deriveKey(ha1[:n], magicKcc), deriveKey(ha1[:n], magicKcs)
		if client {
			l.send.initCipher(ciph, kcc, true)
			l.recv.initCipher(ciph, kcs, false)
		} else {
			l.send.initCipher(ciph, kcs, true)
			l.recv.initCipher(ciph, kcc, false)
		}
	}
	l.maxWrap = max(peerMaxBuf-overhead, 0)
	return l
}

func deriveKey(base []byte, magic string) [md5.Size]byte {
	h := md5.New()
	h.Write(base)
	h.Write([]byte(magic))
	var k [md5.Size]byte
	h.Sum(k[:0])
	return k
}

// initCipher keys the direction's cipher. For des/3des the JDK expands 7-byte
// chunks of Kc into DES keys (3des is two-key EDE: K1, K2, K1) and uses the
// last 8 bytes of Kc as the CBC IV; rc4 variants key RC4 with all of Kc.
// All key sizes here are constant, so the constructors cannot fail.
func (d *layerDir) initCipher(ciph Cipher, kc [md5.Size]byte, encrypt bool) {
	switch ciph {
	case CipherRC4, CipherRC4_56, CipherRC4_40:
		s, err := rc4.NewCipher(kc[:])
		if err != nil {
			panic(err)
		}
		d.stream = s
		return
	}
	var b cipher.Block
	var err error
	k1 := expandDESKey(kc[0:7])
	if ciph == CipherDES {
		b, err = des.NewCipher(k1[:])
	} else {
		k2 := expandDESKey(kc[7:14])
		key := make([]byte, 0, 24)
		key = append(append(append(key, k1[:]...), k2[:]...), k1[:]...)
		b, err = des.NewTripleDESCipher(key)
	}
	if err != nil {
		panic(err)
	}
	iv := kc[8:16]
	if encrypt {
		d.block = cipher.NewCBCEncrypter(b, iv)
	} else {
		d.block = cipher.NewCBCDecrypter(b, iv)
	}
}

// expandDESKey spreads 56 key bits over 8 bytes, 7 bits per byte in the
// high bits, and sets each low bit for odd parity (RFC 2831 2.4; as the
// JDK does).
func expandDESKey(k []byte) [8]byte {
	var v uint64
	for _, c := range k[:7] {
		v = v<<8 | uint64(c)
	}
	var out [8]byte
	for i := range out {
		b := byte(v>>(49-7*uint(i))) << 1
		if parity(b)%2 == 0 {
			b |= 1
		}
		out[i] = b
	}
	return out
}

func parity(b byte) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}

// QOP is the layer's quality of protection (auth-int or auth-conf).
func (l *SecurityLayer) QOP() QOP { return l.qop }

// Cipher is the auth-conf cipher, "" for auth-int.
func (l *SecurityLayer) Cipher() Cipher { return l.cipher }

// MaxWrapSize is the largest message the peer promised to accept after
// wrapping (its maxbuf minus the per-message overhead, the JDK's "raw send
// size"). Hadoop's Java client chunks its output to it; Hadoop's server
// ignores it and wraps whole responses, so Wrap does not enforce it.
func (l *SecurityLayer) MaxWrapSize() int { return l.maxWrap }

// sign computes HMAC(Ki, {seq, msg})[0:10]. Callers hold d.mu.
func (d *layerDir) sign(seq uint32, msg []byte) [10]byte {
	h := d.mac
	h.Reset()
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	h.Write(s[:])
	h.Write(msg)
	var sum [md5.Size]byte
	h.Sum(sum[:0])
	var out [10]byte
	copy(out[:], sum[:10])
	return out
}

// Wrap protects one outgoing message. An empty message wraps to an empty
// token and consumes no sequence number (as in the JDK).
func (l *SecurityLayer) Wrap(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return []byte{}, nil
	}
	d := &l.send
	d.mu.Lock()
	defer d.mu.Unlock()
	seq := d.seq
	m := d.sign(seq, p)
	var out []byte
	switch {
	case d.block != nil:
		pad := des.BlockSize - (len(p)+len(m))%des.BlockSize
		out = make([]byte, len(p)+pad+len(m), len(p)+pad+len(m)+6)
		copy(out, p)
		for i := len(p); i < len(p)+pad; i++ {
			out[i] = byte(pad)
		}
		copy(out[len(p)+pad:], m[:])
		d.block.CryptBlocks(out, out)
	case d.stream != nil:
		out = make([]byte, len(p)+len(m), len(p)+len(m)+6)
		copy(out, p)
		copy(out[len(p):], m[:])
		d.stream.XORKeyStream(out, out)
	default:
		out = make([]byte, 0, len(p)+integrityOverhead)
		out = append(append(out, p...), m[:]...)
	}
	out = append(out, 0, 1)
	out = binary.BigEndian.AppendUint32(out, seq)
	d.seq++
	return out, nil
}

// Unwrap verifies and strips the protection of one incoming message,
// returning a new slice. Errors wrap ErrMalformed (too short or not
// block-aligned), ErrIntegrity (bad MAC or padding) or ErrSequence (bad
// sequence number or message type); after an error the connection should
// be closed, since the peer's state can no longer be trusted. An empty
// token unwraps to an empty message.
func (l *SecurityLayer) Unwrap(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return []byte{}, nil
	}
	d := &l.recv
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed {
		return nil, fmt.Errorf("%w: cipher state lost after an earlier failure", ErrIntegrity)
	}
	if len(p) < 16 {
		return nil, fmt.Errorf("%w: wrapped message of %d bytes is shorter than 16", ErrMalformed, len(p))
	}
	body, trailer := p[:len(p)-6], p[len(p)-6:]
	msgType := binary.BigEndian.Uint16(trailer[0:2])
	seq := binary.BigEndian.Uint32(trailer[2:6])

	var msg []byte
	var got [10]byte
	switch {
	case d.block != nil:
		// At least one block of padding+MAC: 10 MAC bytes round up to 16.
		if len(body)%des.BlockSize != 0 || len(body) < 2*des.BlockSize {
			return nil, fmt.Errorf("%w: ciphertext of %d bytes is not a multiple of %d of at least %d", ErrMalformed, len(body), des.BlockSize, 2*des.BlockSize)
		}
		plain := make([]byte, len(body))
		d.block.CryptBlocks(plain, body)
		copy(got[:], plain[len(plain)-10:])
		padded := plain[:len(plain)-10]
		if len(padded) == 0 {
			d.failed = true
			return nil, fmt.Errorf("%w: no padding", ErrIntegrity)
		}
		pad := int(padded[len(padded)-1])
		if pad < 1 || pad > des.BlockSize || pad > len(padded) {
			d.failed = true
			return nil, fmt.Errorf("%w: bad padding length %d", ErrIntegrity, pad)
		}
		for _, c := range padded[len(padded)-pad:] {
			if int(c) != pad {
				d.failed = true
				return nil, fmt.Errorf("%w: bad padding", ErrIntegrity)
			}
		}
		msg = padded[:len(padded)-pad]
	case d.stream != nil:
		plain := make([]byte, len(body))
		d.stream.XORKeyStream(plain, body)
		copy(got[:], plain[len(plain)-10:])
		msg = plain[:len(plain)-10]
	default:
		copy(got[:], body[len(body)-10:])
		msg = append([]byte(nil), body[:len(body)-10]...)
	}
	want := d.sign(seq, msg)
	if !hmac.Equal(got[:], want[:]) {
		// The cipher state has advanced past a message we reject; for the
		// ciphers every later message would fail anyway, so say so.
		d.failed = d.block != nil || d.stream != nil
		return nil, fmt.Errorf("%w: MAC mismatch", ErrIntegrity)
	}
	if msgType != 1 {
		return nil, fmt.Errorf("%w: message type %d, want 1", ErrSequence, msgType)
	}
	if seq != d.seq {
		return nil, fmt.Errorf("%w: got sequence number %d, want %d", ErrSequence, seq, d.seq)
	}
	d.seq++
	return msg, nil
}
