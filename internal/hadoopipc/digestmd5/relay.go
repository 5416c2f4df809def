package digestmd5

import (
	"fmt"
	"unicode/utf8"
)

// Relaying: a server that passes one side's tokens to the other without
// holding the password (internal/hadoopipc's TOKEN relay) must still know
// two things about the exchange it carries: which qops the upstream
// challenge offers, and who the client says it is and which qop it chose.
// These parsers answer that; neither checks any digest.

// ResponseInfo is what a digest-response says about the client, unverified:
// only the server holding the password can check it.
type ResponseInfo struct {
	Username string // for Hadoop tokens: base64 of the token identifier
	Realm    string
	// QOP the client chose: QOPAuth when the directive is absent (RFC 2831
	// 2.1.2). A value this package does not know is returned as is.
	QOP     QOP
	AuthzID string // "" when absent
}

// ParseResponseInfo reads the directives of a digest-response (for Hadoop,
// the token of the INITIATE message) with the same rules the server
// applies: size limit first (MaxResponseSize), each known directive at most
// once, the required directives present, username valid UTF-8.
func ParseResponseInfo(response []byte) (ResponseInfo, error) {
	r, err := parseResponse(response)
	if err != nil {
		return ResponseInfo{}, err
	}
	if !utf8.ValidString(r.username) {
		return ResponseInfo{}, fmt.Errorf("%w: username is not valid UTF-8", ErrMalformed)
	}
	info := ResponseInfo{Username: r.username, Realm: r.realm, QOP: QOPAuth, AuthzID: r.authzid}
	if r.has["qop"] {
		info.QOP = QOP(r.qop)
	}
	return info, nil
}

// ChallengeQOPs returns the qops a digest-challenge offers, in its order:
// {QOPAuth} when the directive is absent (RFC 2831 2.1.1). Values this
// package does not know are returned as they are.
func ChallengeQOPs(challenge []byte) ([]QOP, error) {
	ch, err := parseChallenge(challenge)
	if err != nil {
		return nil, err
	}
	if !ch.has["qop"] {
		return []QOP{QOPAuth}, nil
	}
	var out []QOP
	for _, q := range splitList(ch.qop) {
		out = append(out, QOP(q))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: digest-challenge has an empty qop list", ErrMalformed)
	}
	return out, nil
}
