package digestmd5

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// countingReader is a deterministic Rand for tests.
type countingReader struct{ n byte }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		r.n++
		p[i] = r.n
	}
	return len(p), nil
}

var errNoSuchUser = errors.New("no such user")

func passwords(m map[string]string) func(string) ([]byte, error) {
	return func(u string) ([]byte, error) {
		pw, ok := m[u]
		if !ok {
			return nil, errNoSuchUser
		}
		return []byte(pw), nil
	}
}

// TestRFC2831Example checks both sides against the example exchange of
// RFC 2831 section 4 (user chris, password secret, imap).
func TestRFC2831Example(t *testing.T) {
	const (
		challenge = `realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`
		response  = `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth`
		rspauth   = "rspauth=ea40f60335c427b5527b84dbabcdfffd"
	)
	t.Run("client", func(t *testing.T) {
		c := NewClient(ClientConfig{Username: "chris", Password: []byte("secret"), Protocol: "imap", ServerName: "elwood.innosoft.com"})
		c.cnonce = "OA6MHXh6VqTrRk"
		got, err := c.Respond([]byte(challenge))
		if err != nil {
			t.Fatal(err)
		}
		// The RFC's response has no maxbuf; ours adds maxbuf=65536 (as the
		// JDK does), which does not enter the digest.
		want := strings.Replace(response, `imap/elwood.innosoft.com",`, `imap/elwood.innosoft.com",maxbuf=65536,`, 1)
		if string(got) != want {
			t.Fatalf("response\n got %s\nwant %s", got, want)
		}
		if err := c.Verify([]byte(rspauth)); err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if !c.Complete() || c.SecurityLayer() != nil {
			t.Fatalf("Complete=%v layer=%v", c.Complete(), c.SecurityLayer())
		}
	})
	// The server must accept the same response however a client lays it out:
	// other Go clients put ", " between directives and order them freely.
	responses := map[string]string{
		"rfc": response,
		"reordered with spaces": `username="chris", realm="elwood.innosoft.com", nonce="OA6MG9tEQGm2hh", cnonce="OA6MHXh6VqTrRk", ` +
			`nc=00000001, qop=auth, digest-uri="imap/elwood.innosoft.com", response=d388dad90d4bbd760a152321f2143af7, charset=utf-8`,
		"quoted tokens and extensions": "x-ext=\"a, b\",\r\n qop=\"auth\" , charset=\"utf-8\",username=\"chris\",realm=\"elwood.innosoft.com\"," +
			`nonce="OA6MG9tEQGm2hh",nc="00000001",cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response="d388dad90d4bbd760a152321f2143af7"`,
	}
	for name, resp := range responses {
		t.Run("server/"+name, func(t *testing.T) {
			s := NewServer(ServerConfig{Protocol: "imap", ServerName: "elwood.innosoft.com",
				LookupPassword: passwords(map[string]string{"chris": "secret"})})
			s.nonce = "OA6MG9tEQGm2hh"
			if _, err := s.Challenge(); err != nil {
				t.Fatal(err)
			}
			got, err := s.Respond([]byte(resp))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != rspauth {
				t.Fatalf("rspauth = %s, want %s", got, rspauth)
			}
			if s.Username() != "chris" || s.AuthzID() != "chris" || s.NegotiatedQOP() != QOPAuth {
				t.Fatalf("user=%q authz=%q qop=%q", s.Username(), s.AuthzID(), s.NegotiatedQOP())
			}
		})
	}
}

// Hadoop-shaped golden values, computed independently of this package with
// Python's hashlib/hmac straight from the RFC 2831 formulas:
//
//	ident = bytes(1..24); pw = bytes(0xa0..0xb3)
//	user = b64(ident); passwd = b64(pw); realm = "default"; uri = "/default"
//	HA1 = MD5(MD5(user:realm:passwd) : nonce : cnonce)
//	response = hex(MD5(hex(HA1):nonce:00000001:cnonce:qop:hex(MD5("AUTHENTICATE:/default"[+":000..."]))))
//	Kic = MD5(HA1 + "Digest session key to client-to-server signing key magic constant")
//	wrap = msg + HMAC-MD5(Kic, seq32 + msg)[:10] + 0001 + seq32
var (
	goldenIdent  = seqBytes(1, 24)
	goldenPass   = seqBytes(0xa0, 20)
	goldenNonce  = "SGFkb29wLXNoYXBlZCBub25jZSBmb3IgZ29sZGVuIHRlc3Q="
	goldenCnonce = "Y25vbmNlLWZvci1nb2xkZW4tdGVzdC0wMTIzNDU2Nzg5"
)

func seqBytes(start byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func TestHadoopShapedGolden(t *testing.T) {
	if got := HadoopUsername(goldenIdent); got != "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcY" {
		t.Fatalf("HadoopUsername = %s", got)
	}
	if got := string(HadoopPassword(goldenPass)); got != "oKGio6SlpqeoqaqrrK2ur7CxsrM=" {
		t.Fatalf("HadoopPassword = %s", got)
	}
	tests := []struct {
		qop               QOP
		response, rspauth string
		clientWrap0       string // client's first wrap of "hello hadoop"
		serverWrap0       string
		clientWrap1       string
	}{
		{qop: QOPAuth, response: "20fb6e29a7c6c87cbf6637fedb934557", rspauth: "6b93b6dce3441a672e024dad7a155eb1"},
		{qop: QOPAuthInt, response: "655b121141fe0dac7052bd55a6b97d48", rspauth: "95d321a979184e96e18ec22f447a10f4",
			clientWrap0: "68656c6c6f206861646f6f708586cb0c318bbe8734d1000100000000",
			serverWrap0: "68656c6c6f206861646f6f70d02a206f70860195e3ab000100000000",
			clientWrap1: "68656c6c6f206861646f6f70268004366709b558eb27000100000001"},
	}
	for _, tc := range tests {
		t.Run(string(tc.qop), func(t *testing.T) {
			srv := NewServer(ServerConfig{
				ServerName: HadoopServerName, Protocol: HadoopProtocol, QOPs: []QOP{tc.qop},
				LookupPassword: func(u string) ([]byte, error) {
					id, err := DecodeHadoopUsername(u)
					if err != nil {
						return nil, err
					}
					if !bytes.Equal(id, goldenIdent) {
						return nil, errNoSuchUser
					}
					return HadoopPassword(goldenPass), nil
				},
			})
			srv.nonce = goldenNonce
			ch, err := srv.Challenge()
			if err != nil {
				t.Fatal(err)
			}
			wantCh := `realm="default",nonce="` + goldenNonce + `",qop="` + string(tc.qop) + `",charset=utf-8,algorithm=md5-sess`
			if string(ch) != wantCh {
				t.Fatalf("challenge\n got %s\nwant %s", ch, wantCh)
			}
			cli := NewClient(ClientConfig{
				Username: HadoopUsername(goldenIdent), Password: HadoopPassword(goldenPass),
				Protocol: HadoopProtocol, ServerName: HadoopServerName, QOPs: []QOP{tc.qop},
			})
			cli.cnonce = goldenCnonce
			resp, err := cli.Respond(ch)
			if err != nil {
				t.Fatal(err)
			}
			wantResp := `charset=utf-8,username="AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcY",realm="default",nonce="` + goldenNonce +
				`",nc=00000001,cnonce="` + goldenCnonce + `",digest-uri="/default",maxbuf=65536,response=` + tc.response + `,qop=` + string(tc.qop)
			if string(resp) != wantResp {
				t.Fatalf("response\n got %s\nwant %s", resp, wantResp)
			}
			rsp, err := srv.Respond(resp)
			if err != nil {
				t.Fatal(err)
			}
			if string(rsp) != "rspauth="+tc.rspauth {
				t.Fatalf("rspauth = %s, want %s", rsp, tc.rspauth)
			}
			if err := cli.Verify(rsp); err != nil {
				t.Fatal(err)
			}
			if tc.qop == QOPAuth {
				return
			}
			msg := []byte("hello hadoop")
			cl, sl := cli.SecurityLayer(), srv.SecurityLayer()
			for _, step := range []struct {
				l    *SecurityLayer
				want string
			}{{cl, tc.clientWrap0}, {sl, tc.serverWrap0}, {cl, tc.clientWrap1}} {
				w, err := step.l.Wrap(msg)
				if err != nil {
					t.Fatal(err)
				}
				if hex.EncodeToString(w) != step.want {
					t.Fatalf("wrap\n got %x\nwant %s", w, step.want)
				}
			}
		})
	}
}

// exchange runs a full client<->server exchange and returns both sides.
func exchange(t testing.TB, scfg ServerConfig, ccfg ClientConfig) (*Server, *Client) {
	t.Helper()
	s := NewServer(scfg)
	c := NewClient(ccfg)
	ch, err := s.Challenge()
	if err != nil {
		t.Fatalf("Challenge: %v", err)
	}
	resp, err := c.Respond(ch)
	if err != nil {
		t.Fatalf("client Respond: %v", err)
	}
	rsp, err := s.Respond(resp)
	if err != nil {
		t.Fatalf("server Respond: %v", err)
	}
	if err := c.Verify(rsp); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return s, c
}

func hadoopConfigs(qops []QOP, ciphers []Cipher) (ServerConfig, ClientConfig) {
	user := HadoopUsername([]byte("token-identifier"))
	pass := HadoopPassword([]byte("token-password"))
	return ServerConfig{
			ServerName: HadoopServerName, QOPs: qops, Ciphers: ciphers,
			LookupPassword: passwords(map[string]string{user: string(pass)}),
		}, ClientConfig{
			Username: user, Password: pass, ServerName: HadoopServerName, QOPs: qops, Ciphers: ciphers,
		}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		qop    QOP
		cipher Cipher
	}{
		{"auth", QOPAuth, ""},
		{"auth-int", QOPAuthInt, ""},
		{"auth-conf 3des", QOPAuthConf, Cipher3DES},
		{"auth-conf rc4", QOPAuthConf, CipherRC4},
		{"auth-conf des", QOPAuthConf, CipherDES},
		{"auth-conf rc4-56", QOPAuthConf, CipherRC4_56},
		{"auth-conf rc4-40", QOPAuthConf, CipherRC4_40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scfg, ccfg := hadoopConfigs([]QOP{QOPAuth, QOPAuthInt, QOPAuthConf}, nil)
			ccfg.QOPs = []QOP{tc.qop}
			if tc.cipher != "" {
				ccfg.Ciphers = []Cipher{tc.cipher}
			}
			s, c := exchange(t, scfg, ccfg)
			if s.NegotiatedQOP() != tc.qop || c.NegotiatedQOP() != tc.qop {
				t.Fatalf("qop server=%q client=%q, want %q", s.NegotiatedQOP(), c.NegotiatedQOP(), tc.qop)
			}
			if s.NegotiatedCipher() != tc.cipher || c.NegotiatedCipher() != tc.cipher {
				t.Fatalf("cipher server=%q client=%q, want %q", s.NegotiatedCipher(), c.NegotiatedCipher(), tc.cipher)
			}
			if tc.qop == QOPAuth {
				if s.SecurityLayer() != nil || c.SecurityLayer() != nil {
					t.Fatal("qop auth must have no security layer")
				}
				return
			}
			sl, cl := s.SecurityLayer(), c.SecurityLayer()
			if sl == nil || cl == nil {
				t.Fatal("missing security layer")
			}
			// Several messages each way, of lengths around the DES block size,
			// so CBC chaining and the RC4 stream run across messages.
			for i := 0; i < 20; i++ {
				msg := bytes.Repeat([]byte{byte(i)}, i*3)
				for _, dir := range []struct{ from, to *SecurityLayer }{{cl, sl}, {sl, cl}} {
					w, err := dir.from.Wrap(msg)
					if err != nil {
						t.Fatal(err)
					}
					if len(msg) > 0 && tc.qop == QOPAuthConf && bytes.Contains(w, msg) && len(msg) > 8 {
						t.Fatalf("auth-conf wrap leaks plaintext: %x", w)
					}
					got, err := dir.to.Unwrap(w)
					if err != nil {
						t.Fatalf("message %d: Unwrap: %v", i, err)
					}
					if !bytes.Equal(got, msg) {
						t.Fatalf("message %d: got %x, want %x", i, got, msg)
					}
				}
			}
		})
	}
}

func TestServerRejects(t *testing.T) {
	scfg, ccfg := hadoopConfigs([]QOP{QOPAuth, QOPAuthInt}, nil)
	// good returns a valid response for a fresh server, and that server.
	good := func(t *testing.T, mut func(*ServerConfig, *ClientConfig)) (*Server, string) {
		sc, cc := scfg, ccfg
		if mut != nil {
			mut(&sc, &cc)
		}
		s := NewServer(sc)
		ch, err := s.Challenge()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := NewClient(cc).Respond(ch)
		if err != nil {
			t.Fatal(err)
		}
		return s, string(resp)
	}
	tests := []struct {
		name string
		mut  func(*ServerConfig, *ClientConfig)
		edit func(resp string) string
		err  error
	}{
		{name: "wrong password", mut: func(_ *ServerConfig, c *ClientConfig) { c.Password = []byte("wrong") }, err: ErrAuthFailed},
		{name: "unknown user", mut: func(_ *ServerConfig, c *ClientConfig) { c.Username = "nobody" }, err: errNoSuchUser},
		{name: "wrong digest-uri", mut: func(_ *ServerConfig, c *ClientConfig) { c.ServerName = "other" }, err: ErrNegotiation},
		{name: "wrong protocol", mut: func(_ *ServerConfig, c *ClientConfig) { c.Protocol = "hdfs" }, err: ErrNegotiation},
		{name: "wrong realm", edit: func(r string) string { return strings.Replace(r, `realm="default"`, `realm="other"`, 1) }, err: ErrNegotiation},
		{name: "missing realm", edit: func(r string) string { return strings.Replace(r, `realm="default",`, ``, 1) }, err: ErrNegotiation},
		{name: "wrong nc", edit: func(r string) string { return strings.Replace(r, `nc=00000001`, `nc=00000002`, 1) }, err: ErrAuthFailed},
		{name: "missing nc", edit: func(r string) string { return strings.Replace(r, `nc=00000001,`, ``, 1) }, err: ErrMalformed},
		{name: "duplicate username", edit: func(r string) string { return r + `,username="x"` }, err: ErrMalformed},
		{name: "duplicate response", edit: func(r string) string { return r + `,response=00000000000000000000000000000000` }, err: ErrMalformed},
		{name: "missing response", edit: func(r string) string {
			i := strings.Index(r, "response=")
			return r[:i] + r[i+len("response=")+33:]
		}, err: ErrMalformed},
		{name: "upper-case response", edit: func(r string) string {
			i := strings.Index(r, "response=") + len("response=")
			return r[:i] + strings.ToUpper(r[i:i+32]) + r[i+32:]
		}, err: ErrMalformed},
		{name: "qop not offered", mut: func(s *ServerConfig, c *ClientConfig) { s.QOPs = []QOP{QOPAuth} },
			edit: func(r string) string { return strings.Replace(r, `qop=auth`, `qop=auth-conf`, 1) }, err: ErrNegotiation},
		{name: "unknown qop", edit: func(r string) string { return strings.Replace(r, `qop=auth`, `qop=bogus`, 1) }, err: ErrNegotiation},
		{name: "bad charset", edit: func(r string) string { return strings.Replace(r, `charset=utf-8`, `charset=latin1`, 1) }, err: ErrMalformed},
		{name: "bad maxbuf", edit: func(r string) string { return strings.Replace(r, `maxbuf=65536`, `maxbuf=99999999`, 1) }, err: ErrMalformed},
		{name: "authzid of another user", mut: func(_ *ServerConfig, c *ClientConfig) { c.AuthzID = "root" }, err: ErrAuthFailed},
		{name: "syntax error", edit: func(r string) string { return r + `,x="` }, err: ErrMalformed},
		{name: "too large", edit: func(r string) string { return r + "," + strings.Repeat(" ", MaxResponseSize) }, err: ErrTooLarge},
		{name: "empty", edit: func(string) string { return "" }, err: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, resp := good(t, tc.mut)
			if tc.edit != nil {
				resp = tc.edit(resp)
			}
			_, err := s.Respond([]byte(resp))
			if !errors.Is(err, tc.err) {
				t.Fatalf("Respond error = %v, want %v", err, tc.err)
			}
			if s.Complete() || s.Username() != "" || s.SecurityLayer() != nil {
				t.Fatal("failed exchange must not look complete")
			}
			// One attempt per exchange: even the right answer now fails.
			if _, err := s.Respond([]byte(resp)); !errors.Is(err, ErrState) {
				t.Fatalf("second Respond error = %v, want ErrState", err)
			}
		})
	}
	t.Run("unknown user is also ErrAuthFailed", func(t *testing.T) {
		s, resp := good(t, func(_ *ServerConfig, c *ClientConfig) { c.Username = "nobody" })
		if _, err := s.Respond([]byte(resp)); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("error = %v, want ErrAuthFailed", err)
		}
	})
	t.Run("replayed response", func(t *testing.T) {
		// A response captured from one exchange is useless against another:
		// the new server's nonce differs.
		_, resp := good(t, nil)
		s2 := NewServer(scfg)
		if _, err := s2.Challenge(); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.Respond([]byte(resp)); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("error = %v, want ErrAuthFailed", err)
		}
	})
	t.Run("replayed response to the same server", func(t *testing.T) {
		s, resp := good(t, nil)
		if _, err := s.Respond([]byte(resp)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Respond([]byte(resp)); !errors.Is(err, ErrState) {
			t.Fatalf("error = %v, want ErrState", err)
		}
	})
	t.Run("custom authorize", func(t *testing.T) {
		s, resp := good(t, func(s *ServerConfig, c *ClientConfig) {
			c.AuthzID = "alice"
			s.Authorize = func(u, z string) error { return nil }
		})
		if _, err := s.Respond([]byte(resp)); err != nil {
			t.Fatal(err)
		}
		if s.AuthzID() != "alice" {
			t.Fatalf("AuthzID = %q", s.AuthzID())
		}
	})
}

func TestServerState(t *testing.T) {
	scfg, _ := hadoopConfigs(nil, nil)
	s := NewServer(scfg)
	if _, err := s.Respond([]byte("x")); !errors.Is(err, ErrState) {
		t.Fatalf("Respond before Challenge: %v", err)
	}
	c1, err := s.Challenge()
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := s.Challenge()
	if !bytes.Equal(c1, c2) {
		t.Fatal("Challenge must be stable")
	}
	for _, cfg := range []ServerConfig{
		{LookupPassword: scfg.LookupPassword},
		{ServerName: "default"},
		{ServerName: "default", LookupPassword: scfg.LookupPassword, QOPs: []QOP{"auth-bogus"}},
		{ServerName: "default", LookupPassword: scfg.LookupPassword, Ciphers: []Cipher{"aes"}},
		{ServerName: "default", LookupPassword: scfg.LookupPassword, MaxBuf: 1 << 25},
	} {
		if _, err := NewServer(cfg).Challenge(); !errors.Is(err, ErrConfig) {
			t.Fatalf("config %+v: err = %v, want ErrConfig", cfg, err)
		}
	}
}

func TestChallengeShape(t *testing.T) {
	scfg, _ := hadoopConfigs([]QOP{QOPAuthConf, QOPAuthInt, QOPAuth}, nil)
	scfg.MaxBuf = 4096
	s := NewServer(scfg)
	s.nonce = "N"
	ch, err := s.Challenge()
	if err != nil {
		t.Fatal(err)
	}
	want := `realm="default",nonce="N",qop="auth-conf,auth-int,auth",maxbuf=4096,charset=utf-8,cipher="3des,rc4,des,rc4-56,rc4-40",algorithm=md5-sess`
	if string(ch) != want {
		t.Fatalf("challenge\n got %s\nwant %s", ch, want)
	}
	// A random nonce is 40 base64 characters, as the JDK's.
	s2 := NewServer(scfg)
	s2.cfg.Rand = &countingReader{}
	ch2, _ := s2.Challenge()
	if len(s2.nonce) != 40 || !strings.Contains(string(ch2), s2.nonce) {
		t.Fatalf("nonce %q", s2.nonce)
	}
}

func TestClientRejectsChallenge(t *testing.T) {
	const ok = `realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`
	tests := []struct {
		name      string
		challenge string
		mut       func(*ClientConfig)
		err       error
	}{
		{"missing nonce", `realm="default",qop="auth",algorithm=md5-sess`, nil, ErrMalformed},
		{"empty nonce", `nonce="",algorithm=md5-sess`, nil, ErrMalformed},
		{"missing algorithm", `nonce="abc",qop="auth"`, nil, ErrMalformed},
		{"wrong algorithm", `nonce="abc",algorithm=md5`, nil, ErrMalformed},
		{"duplicate nonce", `nonce="abc",nonce="def",algorithm=md5-sess`, nil, ErrMalformed},
		{"duplicate qop", `nonce="abc",qop="auth",qop="auth",algorithm=md5-sess`, nil, ErrMalformed},
		{"bad charset", `nonce="abc",charset=latin1,algorithm=md5-sess`, nil, ErrMalformed},
		{"bad maxbuf", `nonce="abc",maxbuf=0,algorithm=md5-sess`, nil, ErrMalformed},
		{"no common qop", `nonce="abc",qop="auth-int",algorithm=md5-sess`, nil, ErrNegotiation},
		{"auth-conf without cipher", `nonce="abc",qop="auth-conf",algorithm=md5-sess`,
			func(c *ClientConfig) { c.QOPs = []QOP{QOPAuthConf} }, ErrMalformed},
		{"no common cipher", `nonce="abc",qop="auth-conf",cipher="aes",algorithm=md5-sess`,
			func(c *ClientConfig) { c.QOPs = []QOP{QOPAuthConf} }, ErrNegotiation},
		{"realm not offered", ok, func(c *ClientConfig) { c.Realm = "other" }, ErrNegotiation},
		{"non-latin1 user without charset", `nonce="abc",algorithm=md5-sess`, func(c *ClientConfig) { c.Username = "用户" }, ErrNegotiation},
		{"too large", ok + "," + strings.Repeat(" ", MaxChallengeSize), nil, ErrTooLarge},
		{"no server name", ok, func(c *ClientConfig) { c.ServerName = "" }, ErrConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ClientConfig{Username: "u", Password: []byte("p"), ServerName: "default"}
			if tc.mut != nil {
				tc.mut(&cfg)
			}
			c := NewClient(cfg)
			if _, err := c.Respond([]byte(tc.challenge)); !errors.Is(err, tc.err) {
				t.Fatalf("Respond error = %v, want %v", err, tc.err)
			}
			if _, err := c.Respond([]byte(ok)); !errors.Is(err, ErrState) {
				t.Fatalf("second Respond error = %v, want ErrState", err)
			}
		})
	}
}

func TestClientNegotiation(t *testing.T) {
	tests := []struct {
		name       string
		challenge  string
		cfg        ClientConfig
		wantQOP    QOP
		wantCipher Cipher
		wantRealm  string // "" = no realm directive
	}{
		{"default qop is auth", `nonce="n",algorithm=md5-sess`, ClientConfig{}, QOPAuth, "", ""},
		{"client preference wins", `nonce="n",qop="auth,auth-int,auth-conf",cipher="rc4,3des",algorithm=md5-sess`,
			ClientConfig{QOPs: []QOP{QOPAuthConf, QOPAuth}}, QOPAuthConf, Cipher3DES, ""},
		{"cipher preference", `nonce="n",qop="auth-conf",cipher="des, rc4",algorithm=md5-sess`,
			ClientConfig{QOPs: []QOP{QOPAuthConf}, Ciphers: []Cipher{CipherRC4, CipherDES}}, QOPAuthConf, CipherRC4, ""},
		{"unknown qop tokens ignored", `nonce="n",qop="x-new, auth-int",algorithm=md5-sess`,
			ClientConfig{QOPs: []QOP{QOPAuthInt}}, QOPAuthInt, "", ""},
		{"first realm by default", `realm="r1",realm="r2",nonce="n",algorithm=md5-sess`, ClientConfig{}, QOPAuth, "", "r1"},
		{"chosen realm", `realm="r1",realm="r2",nonce="n",algorithm=md5-sess`, ClientConfig{Realm: "r2"}, QOPAuth, "", "r2"},
		{"unknown directives ignored", `nonce="n",stale=true,x-ext="a,b",algorithm=MD5-SESS`, ClientConfig{}, QOPAuth, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Username, cfg.Password, cfg.ServerName = "u", []byte("p"), "default"
			c := NewClient(cfg)
			resp, err := c.Respond([]byte(tc.challenge))
			if err != nil {
				t.Fatal(err)
			}
			if c.NegotiatedQOP() != tc.wantQOP || c.NegotiatedCipher() != tc.wantCipher {
				t.Fatalf("qop=%q cipher=%q, want %q %q", c.NegotiatedQOP(), c.NegotiatedCipher(), tc.wantQOP, tc.wantCipher)
			}
			ds, err := parseDirectives(resp)
			if err != nil {
				t.Fatal(err)
			}
			var realm string
			for _, d := range ds {
				if d.name == "realm" {
					realm = d.value
				}
			}
			if realm != tc.wantRealm {
				t.Fatalf("realm %q, want %q in %s", realm, tc.wantRealm, resp)
			}
		})
	}
}

func TestClientVerify(t *testing.T) {
	scfg, ccfg := hadoopConfigs(nil, nil)
	tests := []struct {
		name string
		edit func(string) string
		err  error
	}{
		{"flipped digit", func(r string) string {
			last := byte('0')
			if r[len(r)-1] == '0' {
				last = '1'
			}
			return r[:len(r)-1] + string(last)
		}, ErrAuthFailed},
		{"missing", func(string) string { return `x=1` }, ErrMalformed},
		{"twice", func(r string) string { return r + "," + r }, ErrMalformed},
		{"garbage", func(string) string { return `rspauth="` }, ErrMalformed},
		{"too large", func(r string) string { return r + strings.Repeat(",", MaxChallengeSize) }, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, c := NewServer(scfg), NewClient(ccfg)
			ch, _ := s.Challenge()
			resp, err := c.Respond(ch)
			if err != nil {
				t.Fatal(err)
			}
			rsp, err := s.Respond(resp)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Verify([]byte(tc.edit(string(rsp)))); !errors.Is(err, tc.err) {
				t.Fatalf("Verify error = %v, want %v", err, tc.err)
			}
			if c.Complete() {
				t.Fatal("client complete after failed Verify")
			}
		})
	}
	t.Run("before Respond", func(t *testing.T) {
		if err := NewClient(ccfg).Verify([]byte("rspauth=x")); !errors.Is(err, ErrState) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestCharsetEncoding(t *testing.T) {
	tests := []struct {
		in   string
		utf8 bool
		want []byte
		err  error
	}{
		{"ascii", true, []byte("ascii"), nil},
		{"jürgen", true, []byte("j\xfcrgen"), nil}, // fits Latin-1: hashed as Latin-1 (RFC 2831 2.1.2.1)
		{"jürgen", false, []byte("j\xfcrgen"), nil},
		{"用户", true, []byte("用户"), nil},
		{"用户", false, nil, ErrNegotiation},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/utf8=%v", tc.in, tc.utf8), func(t *testing.T) {
			got, err := encodeText(tc.in, tc.utf8)
			if !errors.Is(err, tc.err) || !bytes.Equal(got, tc.want) {
				t.Fatalf("encodeText = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	// Non-ASCII credentials still authenticate end to end.
	s, c := exchange(t, ServerConfig{ServerName: "h", Realm: "réalm", LookupPassword: passwords(map[string]string{"jürgen": "pässwörd用"})},
		ClientConfig{Username: "jürgen", Password: []byte("pässwörd用"), ServerName: "h"})
	if s.Username() != "jürgen" || !c.Complete() {
		t.Fatalf("user %q", s.Username())
	}
}
