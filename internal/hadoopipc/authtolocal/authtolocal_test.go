package authtolocal

import (
	"errors"
	"strings"
	"testing"
)

func TestShortName(t *testing.T) {
	const realm = "EXAMPLE.COM"
	rules := `RULE:[1:$1@$0](.*@CORP\.EXAMPLE\.COM)s/@.*//L
RULE:[2:$1@$0](rm@.*EXAMPLE.COM)s/.*/yarn/
RULE:[2:$1/$2@$0](nn/.*@EXAMPLE\.COM)s/.*/hdfs/
RULE:[1:$1](x.*)s/x/y/g
DEFAULT`
	m, err := Parse(rules, realm)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse("", realm)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m         *Mapper
		in, want  string
		noMapping bool
	}{
		{d, "alice@EXAMPLE.COM", "alice", false},
		{d, "rm/host.example.com@EXAMPLE.COM", "rm", false},
		{d, "alice", "alice", false},
		{d, "alice@OTHER.REALM", "", true},
		{m, "Bob@CORP.EXAMPLE.COM", "bob", false},
		{m, "rm/host1@EXAMPLE.COM", "yarn", false},
		{m, "nn/host1@EXAMPLE.COM", "hdfs", false},
		{m, "xaxb@FOO", "yayb", false},
		{m, "dn/host1@EXAMPLE.COM", "dn", false},
		{m, "carol@OTHER", "", true},
	} {
		got, err := tc.m.ShortName(tc.in)
		if tc.noMapping {
			if !errors.Is(err, ErrNoMatchingRule) {
				t.Errorf("%s: got %q %v, want no matching rule", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestNonSimpleResultRefused(t *testing.T) {
	m, err := Parse(`RULE:[2:$1/$2@$0](.*)`, "R")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ShortName("a/b@R"); !errors.Is(err, ErrNoMatchingRule) {
		t.Fatalf("err %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"RULE:[1:$1](", "BOGUS", "RULE:[x:$1]", "RULE:[1:$1](a)s/(/x/"} {
		if _, err := Parse(bad, "R"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzAuthToLocal(f *testing.F) {
	f.Add(`RULE:[1:$1@$0](.*@X)s/@.*//L DEFAULT`, "a@X")
	f.Add("DEFAULT", "rm/h@R")
	f.Fuzz(func(t *testing.T, rules, principal string) {
		m, err := Parse(rules, "R")
		if err != nil {
			return
		}
		s, err := m.ShortName(principal)
		if err == nil && s != principal && strings.ContainsAny(s, "@/") {
			t.Fatalf("%q mapped to non-simple %q", principal, s)
		}
	})
}
