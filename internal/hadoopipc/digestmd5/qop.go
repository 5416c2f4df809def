package digestmd5

import (
	"encoding/base64"
	"fmt"
)

// QOP is a DIGEST-MD5 quality of protection as it appears on the wire.
type QOP string

const (
	// QOPAuth authenticates only; no security layer (Hadoop
	// hadoop.rpc.protection=authentication, the default).
	QOPAuth QOP = "auth"
	// QOPAuthInt adds an integrity layer: every later message carries an
	// HMAC-MD5 MAC and a sequence number (hadoop.rpc.protection=integrity).
	QOPAuthInt QOP = "auth-int"
	// QOPAuthConf adds a confidentiality layer on top of integrity
	// (hadoop.rpc.protection=privacy).
	QOPAuthConf QOP = "auth-conf"
)

func (q QOP) valid() bool { return q == QOPAuth || q == QOPAuthInt || q == QOPAuthConf }

// Cipher is an auth-conf cipher token (RFC 2831 section 2.4).
type Cipher string

const (
	Cipher3DES   Cipher = "3des"   // two-key triple DES, CBC; "high"
	CipherRC4    Cipher = "rc4"    // RC4, 128-bit key; "high"
	CipherDES    Cipher = "des"    // DES, CBC; "medium"
	CipherRC4_56 Cipher = "rc4-56" // RC4 keyed from 7 bytes of H(A1); "medium"
	CipherRC4_40 Cipher = "rc4-40" // RC4 keyed from 5 bytes of H(A1); "low"
)

// javaCipherOrder is the order in which the JDK server offers ciphers and in
// which the JDK client, for equal strength, picks them.
var javaCipherOrder = []Cipher{Cipher3DES, CipherRC4, CipherDES, CipherRC4_56, CipherRC4_40}

func (c Cipher) valid() bool {
	for _, k := range javaCipherOrder {
		if c == k {
			return true
		}
	}
	return false
}

// Hadoop token authentication constants: SaslRpcServer announces TOKEN with
// protocol "" and serverId "default", and the JDK server uses the server name
// as its realm, so the digest-uri is "/default".
const (
	HadoopProtocol   = ""
	HadoopServerName = "default"
	HadoopRealm      = "default"
	Mechanism        = "DIGEST-MD5"
)

// HadoopUsername is the SASL username Hadoop uses for a token: the standard
// (padded) base64 of the token identifier bytes.
func HadoopUsername(identifier []byte) string {
	return base64.StdEncoding.EncodeToString(identifier)
}

// HadoopPassword is the SASL password Hadoop uses for a token: the standard
// base64 of the token password bytes.
func HadoopPassword(password []byte) []byte {
	return []byte(base64.StdEncoding.EncodeToString(password))
}

// DecodeHadoopUsername turns a SASL username back into the token identifier
// bytes, for the server's password lookup.
func DecodeHadoopUsername(username string) ([]byte, error) {
	id, err := base64.StdEncoding.DecodeString(username)
	if err != nil {
		return nil, fmt.Errorf("%w: username is not a base64 token identifier: %v", ErrAuthFailed, err)
	}
	return id, nil
}
