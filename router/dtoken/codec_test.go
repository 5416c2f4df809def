package dtoken_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/dtoken"
)

// TestTokenURLCodec: Hadoop's WritableUtils vlong boundaries and a round
// trip; truncated or lying input is an error, not a panic.
func TestTokenURLCodec(t *testing.T) {
	tok := &commonpb.TokenProto{Identifier: bytes.Repeat([]byte{7}, 300), Password: []byte{1, 2, 3}, Kind: proto.String("RM_DELEGATION_TOKEN"), Service: proto.String("127.0.0.1:8032")}
	enc := dtoken.EncodeURL(tok)
	if strings.ContainsAny(enc, "+/=") {
		t.Errorf("not URL-safe unpadded base64: %s", enc)
	}
	got, err := dtoken.DecodeURL(enc)
	if err != nil || !proto.Equal(got, tok) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	// 300 is written as 0x8e 0x01 0x2c (WritableUtils: -114, two bytes).
	if raw, err := base64.RawURLEncoding.DecodeString(enc); err != nil || !bytes.HasPrefix(raw, []byte{0x8e, 0x01, 0x2c, 7}) {
		t.Errorf("vlong 300: % x %v", raw, err)
	}
	for _, bad := range []string{"", "AA", enc[:len(enc)-4], enc + "AAAA", "jwEs"} {
		if _, err := dtoken.DecodeURL(bad); err == nil {
			t.Errorf("DecodeURL(%q) accepted", bad)
		}
	}
}

func FuzzDecodeTokenURL(f *testing.F) {
	f.Add(dtoken.EncodeURL(&commonpb.TokenProto{Identifier: []byte("id"), Password: []byte("pw"), Kind: proto.String("K"), Service: proto.String("S")}))
	f.Add("jwEs")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := dtoken.DecodeURL(s)
		if err != nil {
			return
		}
		again, err := dtoken.DecodeURL(dtoken.EncodeURL(tok))
		if err != nil || !proto.Equal(again, tok) {
			t.Fatalf("re-encoding %v: %v %v", tok, again, err)
		}
	})
}
