package digestmd5

import (
	"errors"
	"slices"
	"testing"
)

func TestParseResponseInfo(t *testing.T) {
	scfg, ccfg := hadoopConfigs([]QOP{QOPAuth, QOPAuthInt, QOPAuthConf}, nil)
	s := NewServer(scfg)
	ch, err := s.Challenge()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []QOP{QOPAuth, QOPAuthInt, QOPAuthConf} {
		t.Run(string(q), func(t *testing.T) {
			cc := ccfg
			cc.QOPs = []QOP{q}
			resp, err := NewClient(cc).Respond(ch)
			if err != nil {
				t.Fatal(err)
			}
			info, err := ParseResponseInfo(resp)
			if err != nil {
				t.Fatal(err)
			}
			if info.Username != ccfg.Username || info.QOP != q || info.Realm != HadoopRealm {
				t.Errorf("info %+v", info)
			}
		})
	}
	bad := []struct {
		name string
		in   string
		want error
	}{
		{"no qop means auth", `username="u",nonce="n",cnonce="c",nc=00000001,digest-uri="/default",response=r`, nil},
		{"missing username", `nonce="n",cnonce="c",nc=00000001,digest-uri="/default",response=r`, ErrMalformed},
		{"duplicate qop", `username="u",nonce="n",cnonce="c",nc=00000001,digest-uri="/default",response=r,qop=auth,qop=auth-int`, ErrMalformed},
		{"username not UTF-8", "username=\"\xff\",nonce=\"n\",cnonce=\"c\",nc=00000001,digest-uri=\"/default\",response=r", ErrMalformed},
		{"too large", `username="` + string(make([]byte, MaxResponseSize)) + `"`, ErrTooLarge},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ParseResponseInfo([]byte(tc.in))
			if !errors.Is(err, tc.want) || (err == nil && info.QOP != QOPAuth) {
				t.Fatalf("got %+v, %v; want %v", info, err, tc.want)
			}
		})
	}
}

func TestChallengeQOPs(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []QOP
		err  error
	}{
		{"hadoop default", `realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`, []QOP{QOPAuth}, nil},
		{"absent means auth", `nonce="abc",algorithm=md5-sess`, []QOP{QOPAuth}, nil},
		{"list in order", `nonce="abc",qop="auth-conf, auth-int,auth",algorithm=md5-sess`, []QOP{QOPAuthConf, QOPAuthInt, QOPAuth}, nil},
		{"empty list", `nonce="abc",qop=",",algorithm=md5-sess`, nil, ErrMalformed},
		{"no nonce", `qop="auth",algorithm=md5-sess`, nil, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChallengeQOPs([]byte(tc.in))
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
