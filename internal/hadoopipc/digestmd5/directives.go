package digestmd5

import (
	"fmt"
	"strings"
)

// RFC 2831 section 2.1: a digest-challenge is at most 2048 bytes and a
// digest-response at most 4096 bytes. The limits are checked before parsing,
// so parsing allocates at most a small multiple of them.
const (
	MaxChallengeSize = 2048
	MaxResponseSize  = 4096
)

// maxDirectives bounds the number of directives in one token. A legitimate
// challenge has at most ~8 plus one per realm; a response at most ~13.
const maxDirectives = 64

// directive is one name=value element of a challenge or response, with the
// value unescaped.
type directive struct {
	name   string // lower-cased: directive names are case-insensitive
	value  string
	quoted bool
}

// parseDirectives splits a challenge or response into its directives.
//
//	list      = [LWS] [element] *( [LWS] "," [LWS] [element] )  ; null elements allowed (#rule)
//	element   = token [LWS] "=" [LWS] ( token-ish | quoted-string )
//	quoted    = <"> *( qdtext | "\" CHAR ) <">
//
// Unquoted values accept any byte other than CTLs, space, '"' and ','
// (Java and Cyrus send e.g. charset=utf-8 and algorithm=md5-sess bare).
// It does not interpret names: duplicate and required-directive rules differ
// between challenge and response and are applied by their parsers.
func parseDirectives(b []byte) ([]directive, error) {
	var out []directive
	i := skipLWS(b, 0)
	for i < len(b) {
		if b[i] == ',' { // null element
			i = skipLWS(b, i+1)
			continue
		}
		start := i
		for i < len(b) && isTokenChar(b[i]) {
			i++
		}
		if i == start {
			return nil, fmt.Errorf("%w: expected a directive name at offset %d, got %q", ErrMalformed, i, b[i])
		}
		name := strings.ToLower(string(b[start:i]))
		i = skipLWS(b, i)
		if i >= len(b) || b[i] != '=' {
			return nil, fmt.Errorf("%w: directive %q has no '='", ErrMalformed, name)
		}
		i = skipLWS(b, i+1)
		if i >= len(b) {
			return nil, fmt.Errorf("%w: directive %q has no value", ErrMalformed, name)
		}
		d := directive{name: name}
		if b[i] == '"' {
			v, n, err := parseQuoted(b[i:])
			if err != nil {
				return nil, fmt.Errorf("%w: directive %q: %v", ErrMalformed, name, err)
			}
			d.value, d.quoted = v, true
			i += n
		} else {
			vs := i
			for i < len(b) && isBareValueChar(b[i]) {
				i++
			}
			if i == vs {
				return nil, fmt.Errorf("%w: directive %q has an empty or invalid value at offset %d", ErrMalformed, name, i)
			}
			d.value = string(b[vs:i])
		}
		if len(out) == maxDirectives {
			return nil, fmt.Errorf("%w: more than %d directives", ErrMalformed, maxDirectives)
		}
		out = append(out, d)
		i = skipLWS(b, i)
		if i < len(b) && b[i] != ',' {
			return nil, fmt.Errorf("%w: expected ',' after directive %q at offset %d", ErrMalformed, name, i)
		}
	}
	return out, nil
}

// parseQuoted reads a quoted-string starting at b[0] == '"'. It returns the
// unescaped value and the number of bytes consumed including both quotes.
func parseQuoted(b []byte) (string, int, error) {
	// Fast path: no escapes, so the value is a plain sub-slice.
	for j := 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return string(b[1:j]), j + 1, nil
		case '\\':
			return parseQuotedSlow(b)
		}
	}
	return "", 0, fmt.Errorf("unterminated quoted string")
}

func parseQuotedSlow(b []byte) (string, int, error) {
	// First find the closing quote, so the value is allocated exactly once
	// at its final size (never in proportion to the rest of the input).
	end, escapes := -1, 0
	for j := 1; j < len(b) && end < 0; j++ {
		switch b[j] {
		case '"':
			end = j
		case '\\':
			j++
			escapes++
		}
	}
	if end < 0 {
		return "", 0, fmt.Errorf("unterminated quoted string")
	}
	v := make([]byte, 0, end-1-escapes)
	for j := 1; j < end; j++ {
		if b[j] == '\\' {
			j++
		}
		v = append(v, b[j])
	}
	return string(v), end + 1, nil
}

// isLWS reports linear white space. RFC 2831 LWS is [CRLF] 1*(SP|HT); like
// the JDK we accept CR and LF anywhere white space may appear.
func isLWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipLWS(b []byte, i int) int {
	for i < len(b) && isLWS(b[i]) {
		i++
	}
	return i
}

// isTokenChar: RFC 2616 token = 1*<any CHAR except CTLs or separators>.
func isTokenChar(c byte) bool {
	if c <= 0x20 || c >= 0x7f {
		return false
	}
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
		return false
	}
	return true
}

func isBareValueChar(c byte) bool {
	return c > 0x20 && c != 0x7f && c != '"' && c != ','
}

// appendQuoted appends name="value", escaping '"', '\' and control bytes
// other than HT, CR and LF (RFC 2831 section 7.2; what the JDK escapes).
func appendQuoted(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, '=', '"')
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '"' || c == '\\' || c == 0x7f || (c < 0x20 && c != '\t' && c != '\r' && c != '\n') {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// appendBare appends name=value for token-valued directives (nc, qop,
// response, maxbuf, charset, algorithm).
func appendBare(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, '=')
	return append(dst, value...)
}
