package hadoopcreds

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Hadoop's own bytes are checked in e2e (TestCredentialsMatchHadoop, with
// Hadoop's Credentials class as the oracle); these are the rules.

func tok(id string) *commonpb.TokenProto {
	return &commonpb.TokenProto{Identifier: []byte(id), Password: []byte("pw"), Kind: proto.String("K"), Service: proto.String("s")}
}

// The protobuf version, which Hadoop writes when asked (and older 3.x
// releases by default), decodes too.
func TestProtoVersion(t *testing.T) {
	body, _ := proto.Marshal(&commonpb.CredentialsProto{
		Tokens:  []*commonpb.CredentialsKVProto{{Alias: proto.String("a"), Token: tok("1")}},
		Secrets: []*commonpb.CredentialsKVProto{{Alias: proto.String("k"), Secret: []byte{7}}},
	})
	in := append(append([]byte("HDTS\x01"), byte(len(body))), body...)
	c, err := Decode(in)
	if err != nil || len(c.Tokens) != 1 || !proto.Equal(c.Tokens[0].Token, tok("1")) || len(c.Secrets) != 1 || c.Secrets[0].Value[0] != 7 {
		t.Fatalf("%+v %v", c, err)
	}
}

func TestRoundTripAndAddToken(t *testing.T) {
	c := &Credentials{Secrets: []Secret{{Alias: "k", Value: []byte{1, 2}}}}
	c.AddToken("a", tok("1"))
	c.AddToken("b", tok("2"))
	c.AddToken("a", tok("3")) // replaces, as Credentials.addToken
	if len(c.Tokens) != 2 || string(c.Tokens[0].Token.Identifier) != "3" {
		t.Fatalf("AddToken: %+v", c.Tokens)
	}
	back, err := Decode(c.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Tokens) != 2 || !proto.Equal(back.Tokens[0].Token, tok("3")) || back.Tokens[1].Alias != "b" ||
		len(back.Secrets) != 1 || !bytes.Equal(back.Secrets[0].Value, []byte{1, 2}) {
		t.Fatalf("round trip: %+v", back)
	}
	if c, err := Decode(nil); err != nil || len(c.Tokens) != 0 {
		t.Fatalf("empty input: %v %v", c, err)
	}
}

func vlong(i int64) []byte { return appendVLong(nil, i) }

func TestVLong(t *testing.T) {
	for _, v := range []int64{0, 1, 127, -112, 128, -113, 255, 256, 300, 65535, 1 << 20, -1000, 1<<31 - 1} {
		r := &reader{b: vlong(v)}
		if got := r.vlong(); got != v || r.err != nil || len(r.b) != 0 {
			t.Errorf("vlong(%d) read back as %d (err %v, %d left)", v, got, r.err, len(r.b))
		}
	}
}

func field(b []byte) []byte { return append(vlong(int64(len(b))), b...) }

func TestWritable(t *testing.T) {
	long := bytes.Repeat([]byte("i"), 300)
	in := append([]byte("HDTS\x00"), vlong(1)...)
	for _, f := range [][]byte{[]byte("alias"), long, []byte("pw"), []byte("KIND"), []byte("svc")} {
		in = append(in, field(f)...)
	}
	in = append(in, vlong(1)...)
	in = append(in, field([]byte("sk"))...)
	in = append(in, field([]byte{9})...)
	c, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tokens) != 1 || c.Tokens[0].Alias != "alias" || !bytes.Equal(c.Tokens[0].Token.Identifier, long) ||
		c.Tokens[0].Token.GetKind() != "KIND" || c.Tokens[0].Token.GetService() != "svc" ||
		len(c.Secrets) != 1 || c.Secrets[0].Alias != "sk" || !bytes.Equal(c.Secrets[0].Value, []byte{9}) {
		t.Fatalf("decoded %+v", c)
	}
	for i := 5; i < len(in); i++ {
		if _, err := Decode(in[:i]); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("truncated at %d: %v", i, err)
		}
	}
}

func TestRefusals(t *testing.T) {
	for name, in := range map[string][]byte{
		"magic":         []byte("HDTX\x01\x00"),
		"short":         []byte("HD"),
		"version":       []byte("HDTS\x02\x00"),
		"proto length":  []byte("HDTS\x01\x7f"),
		"writable many": append([]byte("HDTS\x00"), vlong(MaxEntries+1)...),
		"negative":      append(append([]byte("HDTS\x00"), vlong(1)...), vlong(-5)...),
		"huge field":    append(append([]byte("HDTS\x00"), vlong(1)...), vlong(1<<30)...),
		"tokenless kv":  append([]byte("HDTS\x01\x05"), 0x0a, 0x03, 0x0a, 0x01, 'a'),
	} {
		if _, err := Decode(in); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("%s: %v, want ErrBadCredentials", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	c := &Credentials{Secrets: []Secret{{Alias: "k", Value: []byte{1}}}}
	c.AddToken("a", tok("x"))
	f.Add(c.Encode())
	f.Add(append([]byte("HDTS\x00"), vlong(1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		// What decodes re-encodes and decodes to the same entries.
		back, err := Decode(c.Encode())
		if err != nil || len(back.Tokens) != len(c.Tokens) || len(back.Secrets) != len(c.Secrets) {
			t.Fatalf("re-decode: %v (%d/%d tokens)", err, len(back.Tokens), len(c.Tokens))
		}
	})
}
