package digestmd5

import (
	"errors"
	"testing"
)

func FuzzParseDirectives(f *testing.F) {
	for _, s := range []string{
		`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`,
		`charset=utf-8,username="u\"x",realm="default",nonce="n",nc=00000001,cnonce="c",digest-uri="/default",maxbuf=65536,response=0123456789abcdef0123456789abcdef,qop=auth`,
		`rspauth=0123456789abcdef0123456789abcdef`,
		" , a = \"1\" ,, b=2 ",
		`a="unterminated`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > MaxResponseSize {
			return // callers check the size first
		}
		ds, err := parseDirectives(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// Re-formatting and re-parsing must give the same directives.
		again, err := parseDirectives(formatDirectives(ds))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", formatDirectives(ds), err)
		}
		if len(again) != len(ds) {
			t.Fatalf("round trip: %d directives, want %d", len(again), len(ds))
		}
		for i := range ds {
			if again[i].name != ds[i].name || again[i].value != ds[i].value {
				t.Fatalf("round trip %d: %+v, want %+v", i, again[i], ds[i])
			}
		}
	})
}

// FuzzServerRespond feeds arbitrary digest-responses to a server whose
// nonce is fixed, seeded with a valid response so the fuzzer explores
// near-valid inputs.
func FuzzServerRespond(f *testing.F) {
	const nonce = "fuzz-nonce"
	scfg := addValidResponses(f, nonce)
	f.Add([]byte(`username="x",nonce="fuzz-nonce"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewServer(scfg)
		s.nonce = nonce
		if _, err := s.Challenge(); err != nil {
			t.Fatal(err)
		}
		rsp, err := s.Respond(b)
		if err != nil {
			if s.Complete() || s.SecurityLayer() != nil {
				t.Fatal("failed exchange looks complete")
			}
			return
		}
		if !s.Complete() || len(rsp) != len("rspauth=")+32 {
			t.Fatalf("success without completion: %q", rsp)
		}
		if q := s.NegotiatedQOP(); (q == QOPAuth) != (s.SecurityLayer() == nil) {
			t.Fatalf("qop %q with layer %v", q, s.SecurityLayer())
		}
	})
}

// FuzzClientRespond feeds arbitrary challenges to a client.
func FuzzClientRespond(f *testing.F) {
	f.Add([]byte(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`realm="a",realm="b",nonce="abc",qop="auth-conf,auth-int",cipher="rc4,3des",maxbuf=1024,algorithm=md5-sess`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := NewClient(ClientConfig{Username: "u", Password: []byte("p"), ServerName: "default",
			QOPs: []QOP{QOPAuthConf, QOPAuthInt, QOPAuth}})
		resp, err := c.Respond(b)
		if err != nil {
			return
		}
		if len(resp) > MaxResponseSize {
			t.Fatalf("response of %d bytes", len(resp))
		}
		if _, err := parseResponse(resp); err != nil {
			t.Fatalf("client produced an unparsable response %q: %v", resp, err)
		}
	})
}

// FuzzUnwrap feeds arbitrary wrapped messages to each kind of layer.
func FuzzUnwrap(f *testing.F) {
	// Layers straight from a fixed H(A1): a full exchange per input would
	// make the target ten times slower for no extra coverage.
	var ha1 [16]byte
	copy(ha1[:], "fixed session key")
	newPair := func(lc int) (client, server *SecurityLayer) {
		c := layerCases[lc]
		return newSecurityLayer(ha1, c.qop, c.cipher, true, DefaultMaxBuf),
			newSecurityLayer(ha1, c.qop, c.cipher, false, DefaultMaxBuf)
	}
	for i := range layerCases {
		c, _ := newPair(i)
		w, _ := c.Wrap([]byte("seed message"))
		f.Add(uint8(i), w)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		_, s := newPair(int(which) % len(layerCases)) // fresh: Unwrap is stateful
		msg, err := s.Unwrap(b)
		if err == nil && len(msg) > len(b) {
			t.Fatalf("unwrapped %d bytes from %d", len(msg), len(b))
		}
	})
}

// FuzzParseResponseInfo: the relay's view of a digest-response never
// panics, fails only with the package's sentinels, and agrees with the
// server: whatever a server accepts, ParseResponseInfo reads the same
// username and qop from.
func FuzzParseResponseInfo(f *testing.F) {
	const nonce = "fuzz-nonce"
	scfg := addValidResponses(f, nonce)
	f.Add([]byte(`username="\xff",nonce="n",cnonce="c",nc=00000001,digest-uri="/default",response=x`))
	f.Add([]byte(`username="a",username="b"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseResponseInfo(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
		} else if len(info.Username) > len(b) || len(info.QOP) > len(b) {
			t.Fatalf("fields longer than the input: %+v", info)
		}
		s := NewServer(scfg)
		s.nonce = nonce
		if _, err := s.Challenge(); err != nil {
			t.Fatal(err)
		}
		if _, serr := s.Respond(b); serr == nil {
			if err != nil {
				t.Fatalf("server accepted %q, ParseResponseInfo: %v", b, err)
			}
			if info.Username != s.Username() || info.QOP != s.NegotiatedQOP() {
				t.Fatalf("ParseResponseInfo %+v, server saw %q %q", info, s.Username(), s.NegotiatedQOP())
			}
		}
	})
}

// FuzzChallengeQOPs: never panics, fails only with the package's
// sentinels, and every challenge a client answers offers the qop the
// client chose.
func FuzzChallengeQOPs(f *testing.F) {
	f.Add([]byte(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`realm="default",nonce="abc",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(`nonce="abc",qop="auth-conf, auth-int",cipher="rc4",algorithm=md5-sess`))
	f.Add([]byte(`nonce="abc",qop=",",algorithm=md5-sess`))
	f.Fuzz(func(t *testing.T, b []byte) {
		qops, err := ChallengeQOPs(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
		} else if len(qops) == 0 {
			t.Fatal("no error and no qops")
		}
		c := NewClient(ClientConfig{Username: "u", Password: []byte("p"), ServerName: "default",
			QOPs: []QOP{QOPAuthConf, QOPAuthInt, QOPAuth}})
		if _, cerr := c.Respond(b); cerr == nil {
			if err != nil {
				t.Fatalf("client answered %q, ChallengeQOPs: %v", b, err)
			}
			found := false
			for _, q := range qops {
				found = found || q == c.NegotiatedQOP()
			}
			if !found {
				t.Fatalf("client chose %q, challenge offers %q", c.NegotiatedQOP(), qops)
			}
		}
	})
}

// addValidResponses seeds f with a valid digest-response for each qop to
// a challenge carrying nonce, and returns the server configuration that
// accepts them.
func addValidResponses(f *testing.F, nonce string) ServerConfig {
	f.Helper()
	scfg, ccfg := hadoopConfigs([]QOP{QOPAuth, QOPAuthInt, QOPAuthConf}, nil)
	s := NewServer(scfg)
	s.nonce = nonce
	ch, err := s.Challenge()
	if err != nil {
		f.Fatal(err)
	}
	for _, q := range []QOP{QOPAuth, QOPAuthInt, QOPAuthConf} {
		cc := ccfg
		cc.QOPs = []QOP{q}
		c := NewClient(cc)
		c.cnonce = "fuzz-cnonce"
		resp, err := c.Respond(ch)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(resp)
	}
	return scfg
}
