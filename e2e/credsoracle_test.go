//go:build interop

package e2e

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopcreds"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// internal/hadoopcreds against Hadoop's own Credentials
// (CredentialsOracle.java): we read what Hadoop writes in both formats
// (Hadoop 3.4's writeTokenStorageToStream, what clients put in a launch
// context, writes the Writable one; the protobuf one is optional), and
// Hadoop reads what we write (the container_tokens file a container's JVM
// loads).

func credsSpec(c *hadoopcreds.Credentials) (tokens, secrets string) {
	var ts, ss []string
	for _, t := range c.Tokens {
		ts = append(ts, strings.Join([]string{t.Alias, hex.EncodeToString(t.Token.GetIdentifier()),
			hex.EncodeToString(t.Token.GetPassword()), t.Token.GetKind(), t.Token.GetService()}, "|"))
	}
	for _, s := range c.Secrets {
		ss = append(ss, s.Alias+"|"+hex.EncodeToString(s.Value))
	}
	if len(ts) == 0 {
		ts = []string{"-"}
	}
	if len(ss) == 0 {
		ss = []string{"-"}
	}
	return strings.Join(ts, ";"), strings.Join(ss, ";")
}

func sortedSpec(c *hadoopcreds.Credentials) ([]string, []string) {
	t, s := credsSpec(c)
	ts, ss := strings.Split(t, ";"), strings.Split(s, ";")
	if t == "-" {
		ts = nil
	}
	if s == "-" {
		ss = nil
	}
	slices.Sort(ts)
	slices.Sort(ss)
	return ts, ss
}

func TestCredentialsMatchHadoop(t *testing.T) {
	j := needJava(t)
	dir := t.TempDir()
	tok := func(id, pw, kind, svc string) *commonpb.TokenProto {
		return &commonpb.TokenProto{Identifier: []byte(id), Password: []byte(pw), Kind: proto.String(kind), Service: proto.String(svc)}
	}
	big := strings.Repeat("x", 300) // lengths past one vint byte
	mid := strings.Repeat("m", 120) // one vint byte, above 100: the edge of the one-byte form
	cases := map[string]*hadoopcreds.Credentials{
		"empty": {},
		"tokens": {Tokens: []hadoopcreds.Token{
			{Alias: "", Token: tok("\x0a\x04amrm", mid, "YARN_AM_RM_TOKEN", "")},
			{Alias: "hdfs://nn:8020", Token: tok(big, "\x00\xff", "HDFS_DELEGATION_TOKEN", "127.0.0.1:8020")},
		}},
		"secrets": {
			Tokens:  []hadoopcreds.Token{{Alias: "a", Token: tok("i", "p", "K", "s")}},
			Secrets: []hadoopcreds.Secret{{Alias: "k1", Value: []byte(big)}, {Alias: "été", Value: []byte{0}}},
		},
	}
	var args []string
	for name, c := range cases {
		ts, ss := credsSpec(c)
		for _, format := range []string{"default", "writable", "protobuf"} {
			args = append(args, strings.Join([]string{"write", name + "-" + format, format, filepath.Join(dir, name+"."+format), ts, ss}, "\t"))
		}
		ours := filepath.Join(dir, name+".ours")
		if err := os.WriteFile(ours, c.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, strings.Join([]string{"read", name, ours}, "\t"))
	}
	run := j.runDriver(t, "CredentialsOracle", args...)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			wantT, wantS := sortedSpec(c)
			// Hadoop reads ours.
			var got struct {
				Tokens  []string `json:"tokens"`
				Secrets []string `json:"secrets"`
			}
			run.op(t, "read:"+name).decode(t, &got)
			slices.Sort(got.Tokens)
			slices.Sort(got.Secrets)
			if !slices.Equal(got.Tokens, wantT) || !slices.Equal(got.Secrets, wantS) {
				t.Errorf("Hadoop read our bytes as tokens %v secrets %v, want %v %v", got.Tokens, got.Secrets, wantT, wantS)
			}
			// We read Hadoop's, both formats.
			for _, format := range []string{"default", "writable", "protobuf"} {
				run.op(t, "write:"+name+"-"+format).decode(t, &struct{}{})
				b, err := os.ReadFile(filepath.Join(dir, name+"."+format))
				if err != nil {
					t.Fatal(err)
				}
				back, err := hadoopcreds.Decode(b)
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				gt, gs := sortedSpec(back)
				if !slices.Equal(gt, wantT) || !slices.Equal(gs, wantS) {
					t.Errorf("%s: we read Hadoop's bytes as %v %v, want %v %v", format, gt, gs, wantT, wantS)
				}
			}
		})
	}
}
