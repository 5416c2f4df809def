// Package hadoopcreds reads and writes Hadoop's Credentials token storage:
// the bytes a YARN client puts in a ContainerLaunchContext's tokens field,
// and a NodeManager writes to a container's container_tokens file
// (HADOOP_TOKEN_FILE_LOCATION). The format is "HDTS", a version byte, then
// for version 0 Hadoop's Writable encoding and for version 1 a
// length-delimited CredentialsProto. Hadoop 3.4 reads both and writes
// version 0 unless asked otherwise; so do we (a Hadoop 2 JVM in a container
// reads only version 0).
package hadoopcreds

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// ErrBadCredentials is wrapped by every decoding failure.
var ErrBadCredentials = errors.New("hadoopcreds: bad token storage")

// Bounds on what Decode accepts: a launch context is at most a few hundred
// KiB (its submitter chose the bytes), so a count or length beyond these is
// corruption or hostility, refused before allocating.
const (
	MaxEntries = 1024
	maxField   = 1 << 20
)

var magic = []byte("HDTS")

const (
	versionWritable = 0
	versionProto    = 1
)

// Token is one named token.
type Token struct {
	Alias string
	Token *commonpb.TokenProto
}

// Secret is one named secret key.
type Secret struct {
	Alias string
	Value []byte
}

// Credentials are tokens and secret keys by alias, in order.
type Credentials struct {
	Tokens  []Token
	Secrets []Secret
}

// AddToken adds t under alias, replacing a token of the same alias (as
// Credentials.addToken does).
func (c *Credentials) AddToken(alias string, t *commonpb.TokenProto) {
	for i := range c.Tokens {
		if c.Tokens[i].Alias == alias {
			c.Tokens[i].Token = t
			return
		}
	}
	c.Tokens = append(c.Tokens, Token{Alias: alias, Token: t})
}

// Encode writes version 0, as Hadoop 3.4's writeTokenStorageToStream does
// by default.
func (c *Credentials) Encode() []byte {
	out := append(append([]byte{}, magic...), versionWritable)
	out = appendVLong(out, int64(len(c.Tokens)))
	for _, t := range c.Tokens {
		// Token.write: identifier and password as vint-length bytes, then
		// kind and service as Text (the same encoding).
		for _, f := range [][]byte{[]byte(t.Alias), t.Token.GetIdentifier(), t.Token.GetPassword(),
			[]byte(t.Token.GetKind()), []byte(t.Token.GetService())} {
			out = appendField(out, f)
		}
	}
	out = appendVLong(out, int64(len(c.Secrets)))
	for _, s := range c.Secrets {
		out = appendField(appendField(out, []byte(s.Alias)), s.Value)
	}
	return out
}

func appendField(out, f []byte) []byte { return append(appendVLong(out, int64(len(f))), f...) }

// appendVLong is WritableUtils.writeVLong: -112..127 in one byte, else a
// byte giving the sign and the length, then the big-endian bytes.
func appendVLong(out []byte, i int64) []byte {
	if i >= -112 && i <= 127 {
		return append(out, byte(i))
	}
	n := int64(-112)
	if i < 0 {
		i ^= -1
		n = -120
	}
	for tmp := i; tmp != 0; tmp >>= 8 {
		n--
	}
	out = append(out, byte(n))
	size := -(n + 112)
	if n < -120 {
		size = -(n + 120)
	}
	for idx := size; idx != 0; idx-- {
		out = append(out, byte(i>>((idx-1)*8)))
	}
	return out
}

// Decode reads either version. Empty input is empty credentials (a launch
// context without tokens).
func Decode(b []byte) (*Credentials, error) {
	if len(b) == 0 {
		return &Credentials{}, nil
	}
	if len(b) < len(magic)+1 || !bytes.Equal(b[:len(magic)], magic) {
		return nil, fmt.Errorf("%w: bad header", ErrBadCredentials)
	}
	switch v := b[len(magic)]; v {
	case versionProto:
		return decodeProto(b[len(magic)+1:])
	case versionWritable:
		return decodeWritable(b[len(magic)+1:])
	default:
		return nil, fmt.Errorf("%w: unknown version %d", ErrBadCredentials, v)
	}
}

func decodeProto(b []byte) (*Credentials, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: bad length prefix", ErrBadCredentials)
	}
	var pb commonpb.CredentialsProto
	if err := proto.Unmarshal(b[k:k+int(n)], &pb); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCredentials, err)
	}
	if len(pb.Tokens)+len(pb.Secrets) > MaxEntries {
		return nil, fmt.Errorf("%w: %d entries", ErrBadCredentials, len(pb.Tokens)+len(pb.Secrets))
	}
	c := &Credentials{}
	for _, kv := range pb.Tokens {
		if kv.Token == nil {
			return nil, fmt.Errorf("%w: token %q has no token", ErrBadCredentials, kv.GetAlias())
		}
		c.AddToken(kv.GetAlias(), kv.Token)
	}
	for _, kv := range pb.Secrets {
		c.Secrets = append(c.Secrets, Secret{Alias: kv.GetAlias(), Value: kv.Secret})
	}
	return c, nil
}

// reader decodes Hadoop's Writable primitives.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = fmt.Errorf("%w: truncated", ErrBadCredentials)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// vlong is WritableUtils.readVLong: one byte for -112..127, else a length
// byte (which also carries the sign) and big-endian bytes.
func (r *reader) vlong() int64 {
	first := int8(r.byte())
	if first >= -112 {
		return int64(first)
	}
	neg := first < -120
	size := int(-111 - int(first))
	if neg {
		size = int(-119 - int(first))
	}
	var v int64
	for i := 0; i < size-1; i++ {
		v = v<<8 | int64(r.byte())
	}
	if neg {
		v = ^v
	}
	return v
}

func (r *reader) field() []byte {
	n := r.vlong()
	if r.err != nil {
		return nil
	}
	if n < 0 || n > maxField || n > int64(len(r.b)) {
		r.err = fmt.Errorf("%w: field of %d bytes", ErrBadCredentials, n)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return append([]byte(nil), v...)
}

func (r *reader) count() int {
	n := r.vlong()
	if r.err == nil && (n < 0 || n > MaxEntries) {
		r.err = fmt.Errorf("%w: %d entries", ErrBadCredentials, n)
	}
	return int(n)
}

func decodeWritable(b []byte) (*Credentials, error) {
	r := &reader{b: b}
	c := &Credentials{}
	for i, n := 0, r.count(); i < n && r.err == nil; i++ {
		alias := string(r.field())
		// Token.write: identifier, password (vint-length bytes), kind and
		// service (Text: the same encoding).
		t := &commonpb.TokenProto{Identifier: r.field(), Password: r.field()}
		t.Kind, t.Service = proto.String(string(r.field())), proto.String(string(r.field()))
		if r.err == nil {
			c.AddToken(alias, t)
		}
	}
	for i, n := 0, r.count(); i < n && r.err == nil; i++ {
		alias := string(r.field())
		v := r.field()
		if r.err == nil {
			c.Secrets = append(c.Secrets, Secret{Alias: alias, Value: v})
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return c, nil
}
