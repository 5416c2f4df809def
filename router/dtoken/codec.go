package dtoken

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Hadoop's textual token form (Token.encodeToUrlString /
// decodeFromUrlString): the Writable serialisation -- vint length +
// identifier, vint length + password, Text kind, Text service, each Text
// being a vint length + UTF-8 -- in URL-safe base64 without padding. REST
// clients carry router tokens in this form; the bytes inside are the ones
// the IPC path hands out.

// maxTokenField bounds each field of a decoded token. The encoded form
// arrives in a header (already bounded by MaxHeaderBytes); this only keeps
// a lying length from being believed.
const maxTokenField = 1 << 16

// EncodeURL renders a token as Hadoop's Token.encodeToUrlString does.
func EncodeURL(t *commonpb.TokenProto) string {
	var b []byte
	for _, f := range [][]byte{t.GetIdentifier(), t.GetPassword(), []byte(t.GetKind()), []byte(t.GetService())} {
		b = appendVLong(b, int64(len(f)))
		b = append(b, f...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeURL parses Hadoop's encoded token form. Like commons-codec's
// decoder it takes either base64 alphabet, with or without padding.
func DecodeURL(s string) (*commonpb.TokenProto, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("token is not base64: %w", err)
	}
	var fields [4][]byte
	for i := range fields {
		n, rest, err := readVLong(raw)
		if err != nil {
			return nil, err
		}
		if n < 0 || n > maxTokenField || n > int64(len(rest)) {
			return nil, fmt.Errorf("token field %d: length %d with %d bytes left", i, n, len(rest))
		}
		fields[i], raw = rest[:n], rest[n:]
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%d bytes after the token", len(raw))
	}
	if !utf8.Valid(fields[2]) || !utf8.Valid(fields[3]) {
		return nil, errors.New("token kind or service is not UTF-8")
	}
	return &commonpb.TokenProto{Identifier: fields[0], Password: fields[1],
		Kind: proto.String(string(fields[2])), Service: proto.String(string(fields[3]))}, nil
}

// appendVLong is Hadoop's WritableUtils.writeVLong: one byte for
// -112..127, else a length/sign byte and the big-endian magnitude.
func appendVLong(b []byte, v int64) []byte {
	if v >= -112 && v <= 127 {
		return append(b, byte(v))
	}
	l := int64(-112)
	if v < 0 {
		v ^= -1
		l = -120
	}
	for t := v; t != 0; t >>= 8 {
		l--
	}
	b = append(b, byte(l))
	n := -(l + 112)
	if l < -120 {
		n = -(l + 120)
	}
	for i := n; i > 0; i-- {
		b = append(b, byte(v>>((i-1)*8)))
	}
	return b
}

// readVLong is Hadoop's WritableUtils.readVLong.
func readVLong(b []byte) (int64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("token truncated")
	}
	first := int8(b[0])
	if first >= -112 {
		return int64(first), b[1:], nil
	}
	neg := first < -120
	n := int(-112 - int(first))
	if neg {
		n = int(-120 - int(first))
	}
	if len(b) < 1+n {
		return 0, nil, errors.New("token truncated")
	}
	var v int64
	for _, c := range b[1 : 1+n] {
		v = v<<8 | int64(c)
	}
	if neg {
		v ^= -1
	}
	return v, b[1+n:], nil
}
