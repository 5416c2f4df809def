package digestmd5

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// these with %w, so callers branch with errors.Is and never on message text.
// The hadoopipc server maps all of them except ErrState/ErrConfig to
// FATAL_UNAUTHORIZED, as Hadoop does for any SaslException.
var (
	// ErrMalformed: a challenge, response or rspauth token violates the
	// RFC 2831 syntax or misses a required directive.
	ErrMalformed = errors.New("digestmd5: malformed token")
	// ErrTooLarge: a token exceeds the RFC 2831 size limit (challenge 2048
	// bytes, response 4096 bytes); checked before parsing.
	ErrTooLarge = errors.New("digestmd5: token too large")
	// ErrAuthFailed: the credentials do not verify: wrong password, unknown
	// user, nonce mismatch (replay), authorization refused, or (client side)
	// a server proof (rspauth) that does not match.
	ErrAuthFailed = errors.New("digestmd5: authentication failed")
	// ErrNegotiation: the peers share no acceptable qop, cipher, realm,
	// charset or digest-uri.
	ErrNegotiation = errors.New("digestmd5: negotiation failed")
	// ErrState: a method was called out of order (for example Respond twice).
	ErrState = errors.New("digestmd5: wrong state")
	// ErrConfig: the ServerConfig or ClientConfig is invalid.
	ErrConfig = errors.New("digestmd5: invalid config")
	// ErrIntegrity: a wrapped message failed its MAC or padding check.
	ErrIntegrity = errors.New("digestmd5: integrity check failed")
	// ErrSequence: a wrapped message carries an unexpected sequence number
	// or message type (replayed, dropped or reordered message).
	ErrSequence = errors.New("digestmd5: bad sequence number")
)
