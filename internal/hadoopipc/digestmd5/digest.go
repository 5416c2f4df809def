package digestmd5

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"unicode/utf8"
)

// encodeText encodes username, realm or password for H(A1) per RFC 2831
// section 2.1.2.1: with charset=utf-8, a string whose characters all fit in
// ISO 8859-1 is hashed as ISO 8859-1, anything else as UTF-8; without
// charset, the string must be ISO 8859-1. (The JDK does the same.)
func encodeText(s string, utf8Charset bool) ([]byte, error) {
	latin1 := true
	for _, r := range s {
		if r > 0xff {
			latin1 = false
			break
		}
	}
	if !latin1 {
		if !utf8Charset {
			return nil, fmt.Errorf("%w: %q is not ISO 8859-1 and the server did not offer charset=utf-8", ErrNegotiation, s)
		}
		return []byte(s), nil
	}
	if isASCII(s) {
		return []byte(s), nil
	}
	out := make([]byte, 0, utf8.RuneCountInString(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// sessionInput is everything H(A1) and the response value depend on.
type sessionInput struct {
	username, realm, password []byte // already charset-encoded
	nonce, cnonce             string
	authzid                   string
	hasAuthzid                bool
	nc                        string // 8 hex digits
	qop                       QOP
	digestURI                 string
}

// sessionKey computes H(A1) for algorithm=md5-sess (RFC 2831 2.1.2.1):
//
//	A1 = { H({ username ":" realm ":" passwd }), ":" nonce ":" cnonce [ ":" authzid ] }
//
// The raw 16 bytes are the base of the integrity and confidentiality keys.
func (in *sessionInput) sessionKey() [md5.Size]byte {
	h := md5.New()
	h.Write(in.username)
	h.Write([]byte{':'})
	h.Write(in.realm)
	h.Write([]byte{':'})
	h.Write(in.password)
	var inner [md5.Size]byte
	h.Sum(inner[:0])

	h.Reset()
	h.Write(inner[:])
	io.WriteString(h, ":")
	io.WriteString(h, in.nonce)
	io.WriteString(h, ":")
	io.WriteString(h, in.cnonce)
	if in.hasAuthzid {
		io.WriteString(h, ":")
		io.WriteString(h, in.authzid)
	}
	var ha1 [md5.Size]byte
	h.Sum(ha1[:0])
	return ha1
}

// responseValue computes the 32-hex-digit response-value (RFC 2831 2.1.2.1):
//
//	A2 = { method ":" digest-uri [ ":00000000000000000000000000000000" ] }
//	response = HEX(KD(HEX(H(A1)), { nonce ":" nc ":" cnonce ":" qop ":" HEX(H(A2)) }))
//
// method is "AUTHENTICATE" for the client's response and "" for the server's
// rspauth; the zero suffix is present for auth-int and auth-conf.
func (in *sessionInput) responseValue(ha1 [md5.Size]byte, method string) string {
	h := md5.New()
	io.WriteString(h, method)
	io.WriteString(h, ":")
	io.WriteString(h, in.digestURI)
	if in.qop == QOPAuthInt || in.qop == QOPAuthConf {
		io.WriteString(h, ":00000000000000000000000000000000")
	}
	var ha2 [md5.Size]byte
	h.Sum(ha2[:0])

	h.Reset()
	io.WriteString(h, hex.EncodeToString(ha1[:]))
	io.WriteString(h, ":")
	io.WriteString(h, in.nonce)
	io.WriteString(h, ":")
	io.WriteString(h, in.nc)
	io.WriteString(h, ":")
	io.WriteString(h, in.cnonce)
	io.WriteString(h, ":")
	io.WriteString(h, string(in.qop))
	io.WriteString(h, ":")
	io.WriteString(h, hex.EncodeToString(ha2[:]))
	var kd [md5.Size]byte
	h.Sum(kd[:0])
	return hex.EncodeToString(kd[:])
}

// rawNonceSize: 30 random bytes, 40 base64 characters, like the JDK's nonces
// (240 bits is far more than the RFC's recommended 64).
const rawNonceSize = 30

func newNonce(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var raw [rawNonceSize]byte
	if _, err := io.ReadFull(r, raw[:]); err != nil {
		return "", fmt.Errorf("digestmd5: generating nonce: %w", err)
	}
	return base64.StdEncoding.EncodeToString(raw[:]), nil
}

// ncValue is the only nonce-count this package sends or accepts: it does
// not implement subsequent authentication (RFC 2831 2.2), nor does the JDK.
const ncValue = "00000001"
