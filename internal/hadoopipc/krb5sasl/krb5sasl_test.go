package krb5sasl

import (
	"bytes"
	"errors"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/yarnfed/yarnfed/internal/krbtest"
)

type realm struct {
	kdc    *krbtest.KDC
	svcKT  *keytab.Keytab
	alice  *client.Client
	client func(name string) *client.Client
}

func newRealm(t *testing.T) *realm {
	kdc := krbtest.Start(t, krbtest.Options{})
	r := &realm{kdc: kdc, svcKT: kdc.Keytab(t, kdc.AddService(t, "rm/localhost"))}
	cfg := kdc.Config(t)
	r.client = func(name string) *client.Client {
		kt := kdc.Keytab(t, kdc.AddUser(t, name))
		cl := client.NewWithKeytab(name, kdc.Realm, kt, cfg, client.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatalf("login %s: %v", name, err)
		}
		t.Cleanup(cl.Destroy)
		return cl
	}
	r.alice = r.client("alice")
	return r
}

// exchange runs the whole RFC 4752 dialogue and returns both ends.
func exchange(t *testing.T, r *realm, sq, cq []QOP) (*Server, *Client, error) {
	t.Helper()
	srv, err := NewServer(ServerConfig{Keytab: r.svcKT, Principal: "rm/localhost@" + r.kdc.Realm, QOPs: sq})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewClient(ClientConfig{Kerberos: r.alice, Service: "rm/localhost", QOPs: cq})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cl.Start()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		reply, done, err := srv.Step(tok)
		if err != nil {
			return srv, cl, err
		}
		if done {
			if !cl.Done() {
				t.Fatal("server done before the client")
			}
			return srv, cl, nil
		}
		if tok, err = cl.Step(reply); err != nil {
			return srv, cl, err
		}
	}
	t.Fatal("exchange did not finish")
	return nil, nil, nil
}

func TestExchangeAndLayers(t *testing.T) {
	r := newRealm(t)
	for _, tc := range []struct {
		name   string
		sq, cq []QOP
		want   QOP
	}{
		{"auth", nil, nil, QOPAuth},
		{"auth-int", []QOP{QOPAuthInt}, nil, QOPAuthInt},
		{"auth-conf", []QOP{QOPAuthConf}, nil, QOPAuthConf},
		{"client prefers privacy", []QOP{QOPAuth, QOPAuthInt, QOPAuthConf}, []QOP{QOPAuthConf, QOPAuth}, QOPAuthConf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cl, err := exchange(t, r, tc.sq, tc.cq)
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.ClientPrincipal(); got != "alice@"+r.kdc.Realm {
				t.Fatalf("client principal %q", got)
			}
			if srv.NegotiatedQOP() != tc.want || cl.NegotiatedQOP() != tc.want {
				t.Fatalf("qop server %q client %q, want %q", srv.NegotiatedQOP(), cl.NegotiatedQOP(), tc.want)
			}
			if tc.want == QOPAuth {
				if srv.SecurityLayer() != nil || cl.SecurityLayer() != nil {
					t.Fatal("auth has a layer")
				}
				return
			}
			sl, cll := srv.SecurityLayer(), cl.SecurityLayer()
			for i, msg := range [][]byte{[]byte("hello"), bytes.Repeat([]byte{7}, 70000), {}} {
				w, err := cll.Wrap(msg)
				if err != nil {
					t.Fatal(err)
				}
				if tc.want == QOPAuthConf && len(msg) > 4 && bytes.Contains(w, msg[:5]) {
					t.Fatalf("message %d travels in the clear under auth-conf", i)
				}
				got, err := sl.Unwrap(w)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("c->s %d: %v", i, err)
				}
				w, _ = sl.Wrap(msg)
				if got, err = cll.Unwrap(w); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("s->c %d: %v", i, err)
				}
				// Replaying a token is refused (sequence numbers).
				if _, err := cll.Unwrap(w); !errors.Is(err, ErrToken) {
					t.Fatalf("replayed token: %v", err)
				}
			}
		})
	}
}

func TestTamperedWrapRefused(t *testing.T) {
	r := newRealm(t)
	for _, q := range []QOP{QOPAuthInt, QOPAuthConf} {
		srv, cl, err := exchange(t, r, []QOP{q}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := cl.SecurityLayer().Wrap([]byte("kill application_1_0001"))
		w[len(w)-20] ^= 1
		if _, err := srv.SecurityLayer().Unwrap(w); !errors.Is(err, ErrToken) {
			t.Fatalf("%s: tampered token: %v", q, err)
		}
		// A token the server sent cannot be reflected back to it.
		w2, _ := srv.SecurityLayer().Wrap([]byte("x"))
		if _, err := srv.SecurityLayer().Unwrap(w2); !errors.Is(err, ErrToken) {
			t.Fatalf("%s: reflected token: %v", q, err)
		}
	}
}

func TestRotatedWrapAccepted(t *testing.T) {
	// MIT and Windows peers may rotate sealed data right (RRC); undo it.
	r := newRealm(t)
	srv, cl, err := exchange(t, r, []QOP{QOPAuthConf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := cl.SecurityLayer().Wrap([]byte("rotate me"))
	data := w[wrapHeaderLen:]
	const rrc = 28
	rot := append(append([]byte{}, data[len(data)-rrc:]...), data[:len(data)-rrc]...)
	w = append(w[:wrapHeaderLen:wrapHeaderLen], rot...)
	w[6], w[7] = 0, rrc
	got, err := srv.SecurityLayer().Unwrap(w)
	if err != nil || string(got) != "rotate me" {
		t.Fatalf("rotated: %q %v", got, err)
	}
}

func TestServerRefuses(t *testing.T) {
	r := newRealm(t)
	t.Run("no common layer", func(t *testing.T) {
		_, _, err := exchange(t, r, []QOP{QOPAuthConf}, []QOP{QOPAuth})
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("ticket for another service", func(t *testing.T) {
		otherKT := r.kdc.Keytab(t, r.kdc.AddService(t, "nm/localhost"))
		srv, _ := NewServer(ServerConfig{Keytab: otherKT, Principal: "nm/localhost"})
		cl, _ := NewClient(ClientConfig{Kerberos: r.alice, Service: "rm/localhost"})
		tok, err := cl.Start()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := srv.Step(tok); !errors.Is(err, ErrAuth) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("replayed AP-REQ", func(t *testing.T) {
		cl, _ := NewClient(ClientConfig{Kerberos: r.alice, Service: "rm/localhost"})
		tok, _ := cl.Start()
		s1, _ := NewServer(ServerConfig{Keytab: r.svcKT, Principal: "rm/localhost"})
		if _, _, err := s1.Step(tok); err != nil {
			t.Fatal(err)
		}
		s2, _ := NewServer(ServerConfig{Keytab: r.svcKT, Principal: "rm/localhost"})
		if _, _, err := s2.Step(tok); !errors.Is(err, ErrAuth) {
			t.Fatalf("replay accepted: %v", err)
		}
	})
	t.Run("ticket cipher too short for the enctype", func(t *testing.T) {
		// gokrb5 panics decrypting it; the login must just fail.
		cl, _ := NewClient(ClientConfig{Kerberos: r.alice, Service: "rm/localhost"})
		tok, err := cl.Start()
		if err != nil {
			t.Fatal(err)
		}
		req, err := ParseContextToken(tok)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 15} {
			req.Ticket.EncPart.Cipher = make([]byte, n)
			b, err := req.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			s, _ := NewServer(ServerConfig{Keytab: r.svcKT, Principal: "rm/localhost"})
			if _, _, err := s.Step(frameToken(tokAPReq, b)); !errors.Is(err, ErrAuth) {
				t.Fatalf("cipher of %d bytes: %v", n, err)
			}
		}
	})
	t.Run("garbage", func(t *testing.T) {
		s, _ := NewServer(ServerConfig{Keytab: r.svcKT, Principal: "rm/localhost"})
		if _, _, err := s.Step([]byte{0x60, 0x03, 1, 2, 3}); !errors.Is(err, ErrAuth) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("client rejects a forged AP-REP", func(t *testing.T) {
		cl, _ := NewClient(ClientConfig{Kerberos: r.alice, Service: "rm/localhost"})
		if _, err := cl.Start(); err != nil {
			t.Fatal(err)
		}
		// An AP-REP under a key the impostor made up.
		forged := cl.auth
		forged.Cusec++
		fake, err := buildAPRep(&cl.auth, forged.SubKey, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Step(fake); !errors.Is(err, ErrToken) {
			t.Fatalf("forged AP-REP accepted: %v", err)
		}
	})
}

func FuzzParseContextToken(f *testing.F) {
	f.Add(frameToken(tokAPReq, []byte{0x6e, 0x00}))
	f.Add([]byte{0x60, 0x82, 0xff, 0xff})
	f.Add(append([]byte{0x60, 0x0d}, append(krb5OID, 1, 0)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseContextToken(b)
		if _, m, err := unframeToken(b); err == nil && len(m) > len(b) {
			t.Fatal("message longer than token")
		}
	})
}

func FuzzUnwrap(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	mk := func(acceptor bool) *context {
		c, err := newContext(typesKey(key), acceptor, false, 5, 5)
		if err != nil {
			f.Fatal(err)
		}
		return c
	}
	snd := mk(false)
	a, _ := snd.wrap([]byte("abc"), false)
	b, _ := snd.wrap([]byte("defg"), true)
	f.Add(a)
	f.Add(b)
	f.Add([]byte{5, 4, 0, 0xff, 0, 12, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 5})
	f.Fuzz(func(t *testing.T, tok []byte) {
		rcv := mk(true)
		p, _, err := rcv.unwrap(tok)
		if err == nil && len(p) > len(tok) {
			t.Fatal("plaintext longer than token")
		}
	})
}

func typesKey(k []byte) types.EncryptionKey {
	return types.EncryptionKey{KeyType: etypeID.AES256_CTS_HMAC_SHA1_96, KeyValue: k}
}

// FuzzParseAPRep: what a server (or an impostor) answers the initiator.
func FuzzParseAPRep(f *testing.F) {
	key := typesKey([]byte("0123456789abcdef0123456789abcdef"))
	auth, err := types.NewAuthenticator("R", types.NewPrincipalName(1, "alice"))
	if err != nil {
		f.Fatal(err)
	}
	good, err := buildAPRep(&auth, key, 7)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(frameToken(tokError, []byte{0x7e, 0x00}))
	f.Add(frameToken(tokAPRep, []byte{0x6f, 0x03, 0x30, 0x01, 0x00}))
	f.Fuzz(func(t *testing.T, b []byte) {
		part, err := parseAPRep(b, &auth, key)
		if err == nil && part.SequenceNumber != 7 && bytes.Equal(b, good) {
			t.Fatal("our own AP-REP lost its sequence number")
		}
	})
}
