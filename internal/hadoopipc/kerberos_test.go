package hadoopipc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	krbclient "github.com/jcmturner/gokrb5/v8/client"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

type krbRealm struct {
	kdc    *krbtest.KDC
	server *KerberosServerConfig
	login  func(name string) *krbclient.Client
}

func newKrbRealm(t *testing.T) *krbRealm {
	t.Helper()
	kdc := krbtest.Start(t, krbtest.Options{})
	r := &krbRealm{kdc: kdc}
	r.server = &KerberosServerConfig{
		Principal: "rm/localhost@" + kdc.Realm,
		Keytab:    kdc.Keytab(t, kdc.AddService(t, "rm/localhost")),
	}
	cfg := kdc.Config(t)
	r.login = func(name string) *krbclient.Client {
		cl := krbclient.NewWithKeytab(name, kdc.Realm, kdc.Keytab(t, kdc.AddUser(t, name)), cfg, krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatalf("login %s: %v", name, err)
		}
		t.Cleanup(cl.Destroy)
		return cl
	}
	return r
}

// recordingEcho is echoProtocol that also keeps the last caller.
func recordingEcho() (Protocol, func() User) {
	var mu sync.Mutex
	var seen User
	p := echoProtocol(func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) {
		mu.Lock()
		seen, _ = UserFromContext(ctx)
		mu.Unlock()
	})
	return p, func() User { mu.Lock(); defer mu.Unlock(); return seen }
}

func krbClient(t *testing.T, addr string, login *krbclient.Client, user, serverPrincipal string, qops []string) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{
		Addresses: []string{addr}, Protocol: testProtocol, User: user, QOPs: qops,
		Kerberos: &KerberosClientConfig{Login: login, ServerPrincipal: serverPrincipal},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestKerberosLogin(t *testing.T) {
	r := newKrbRealm(t)
	alice := r.login("alice")
	for _, tc := range []struct {
		name       string
		serverQOPs []string
		clientQOPs []string
		wantLayer  bool
	}{
		{"qop auth", nil, nil, false},
		{"qop auth-int", []string{"auth-int"}, nil, true},
		{"qop auth-conf", []string{"auth-conf"}, nil, true},
		{"client prefers privacy", []string{"auth", "auth-conf"}, []string{"auth-conf", "auth"}, true},
		{"TOKEN offered first", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultServerConfig()
			if strings.HasPrefix(tc.name, "TOKEN") {
				// NEGOTIATE prepares a DIGEST-MD5 challenge the client
				// then does not use.
				cfg = tokenConfig()
			}
			cfg.AllowSimple = false
			cfg.Kerberos = r.server
			cfg.QOPs = tc.serverQOPs
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			p, seen := recordingEcho()
			ts := startServer(t, cfg, p)
			c := krbClient(t, ts.addr, alice, "", "rm/_HOST@"+r.kdc.Realm, tc.clientQOPs)
			for i := 0; i < 3; i++ {
				resp, err := echo(context.Background(), c, strings.Repeat("x", 1+i*40000))
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if resp.GetToken().GetService() != "alice" {
					t.Fatalf("handler saw user %q", resp.GetToken().GetService())
				}
			}
			want := User{Name: "alice", AuthMethod: AuthMethodKerberos, Principal: "alice@" + r.kdc.Realm}
			if got := seen(); got.Name != want.Name || got.AuthMethod != want.AuthMethod || got.Principal != want.Principal || got.RealUser != "" {
				t.Fatalf("User = %+v, want %+v", got, want)
			}
			c.pool.mu.Lock()
			for _, e := range c.pool.conns {
				if got := e.conn.layer != nil; got != tc.wantLayer {
					t.Errorf("security layer active = %v, want %v", got, tc.wantLayer)
				}
			}
			c.pool.mu.Unlock()
		})
	}
}

// TestKerberosDoAs: a principal acting for another user reaches the handler
// as a proxy user (Name = effective, RealUser = the principal's short name);
// whether that is allowed is Authorize's decision.
func TestKerberosDoAs(t *testing.T) {
	r := newKrbRealm(t)
	router := r.login("router")
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = r.server
	var mu sync.Mutex
	var asked []User
	cfg.Authorize = func(ctx context.Context, info *CallInfo) error {
		u, _ := UserFromContext(ctx)
		mu.Lock()
		asked = append(asked, u)
		mu.Unlock()
		if u.RealUser != "" && u.Name == "mallory" {
			return Errorf(ClassAccessControl, "User: %s is not allowed to impersonate %s", u.RealUser, u.Name)
		}
		return nil
	}
	p, seen := recordingEcho()
	ts := startServer(t, cfg, p)
	c := krbClient(t, ts.addr, router, "bob", "rm/localhost", nil)
	if _, err := echo(context.Background(), c, "x"); err != nil {
		t.Fatal(err)
	}
	if got := seen(); got.Name != "bob" || got.RealUser != "router" || got.Principal != "router@"+r.kdc.Realm || got.AuthMethod != AuthMethodKerberos {
		t.Fatalf("User = %+v", got)
	}
	c2 := krbClient(t, ts.addr, router, "mallory", "rm/localhost", nil)
	_, err := echo(context.Background(), c2, "x")
	var re *RemoteError
	if !errors.As(err, &re) || re.Class != ClassAccessControl {
		t.Fatalf("impersonating mallory: %v", err)
	}
}

func TestKerberosRefusals(t *testing.T) {
	r := newKrbRealm(t)
	alice := r.login("alice")
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = r.server
	p, _ := recordingEcho()
	ts := startServer(t, cfg, p)

	t.Run("SIMPLE client", func(t *testing.T) {
		c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "alice"})
		_, err := echo(context.Background(), c, "x")
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != ClassAccessControl || !strings.Contains(re.Message, "SIMPLE authentication is not enabled") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("client expects another server principal", func(t *testing.T) {
		c := krbClient(t, ts.addr, alice, "", "nm/_HOST", nil)
		_, err := echo(context.Background(), c, "x")
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "invalid Kerberos principal") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("server without Kerberos: no SIMPLE fallback", func(t *testing.T) {
		// A doAs user is set, so a silent fallback would have a name to
		// claim.
		plain := startServer(t, DefaultServerConfig(), p)
		c := krbClient(t, plain.addr, alice, "bob", "rm/_HOST", nil)
		if _, err := echo(context.Background(), c, "x"); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "fall back to SIMPLE") {
			t.Fatalf("err %v", err)
		}
		// With TOKEN and SIMPLE offered (no KERBEROS) it is refused too.
		mixed := startServer(t, tokenConfig(), p)
		c2 := krbClient(t, mixed.addr, alice, "bob", "rm/_HOST", nil)
		if _, err := echo(context.Background(), c2, "x"); !errors.Is(err, ErrAuth) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("auth_to_local maps nobody", func(t *testing.T) {
		m, err := authtolocal.Parse("RULE:[1:$1](admin)", r.kdc.Realm)
		if err != nil {
			t.Fatal(err)
		}
		k := *r.server
		k.AuthToLocal = m
		cfg2 := cfg
		cfg2.Kerberos = &k
		ts2 := startServer(t, cfg2, p)
		c := krbClient(t, ts2.addr, alice, "", "rm/localhost", nil)
		_, err = echo(context.Background(), c, "x")
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != ClassAccessControl || !strings.Contains(re.Message, "no auth_to_local rule") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("garbage AP-REQ", func(t *testing.T) {
		raw := dialRaw(t, ts.addr)
		raw.preamble(authProtocolSASL)
		auth := ts.srv.kerberosAuth()
		raw.packet(reqHeader(callIDSASL), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*commonpb.RpcSaslProto_SaslAuth{auth}, Token: []byte{0x60, 1, 0}})
		hdr, _ := raw.reply()
		if hdr.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || hdr.GetExceptionClassName() != ClassSaslException ||
			hdr.GetErrorDetail() != commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED {
			t.Fatalf("reply %v", hdr)
		}
		raw.expectClosed()
	})
}

func TestKerberosNegotiateShape(t *testing.T) {
	r := newKrbRealm(t)
	cfg := tokenConfig()
	cfg.AllowSimple = true
	cfg.Kerberos = r.server
	p, _ := recordingEcho()
	ts := startServer(t, cfg, p)
	raw := dialRaw(t, ts.addr)
	raw.preamble(authProtocolSASL)
	raw.packet(reqHeader(callIDSASL), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()})
	_, body := raw.reply()
	m := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(body, m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range m.GetAuths() {
		got = append(got, a.GetMethod()+"/"+a.GetMechanism()+"/"+a.GetProtocol()+"/"+a.GetServerId())
	}
	want := []string{"TOKEN/DIGEST-MD5//default", "KERBEROS/GSSAPI/rm/localhost", "SIMPLE///"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("NEGOTIATE auths %v, want %v", got, want)
	}
	if m.GetAuths()[1].Challenge != nil {
		t.Fatal("KERBEROS auth carries a challenge")
	}
}

func TestExpectedServerPrincipal(t *testing.T) {
	old := lookupAddr
	t.Cleanup(func() { lookupAddr = old })
	lookupAddr = func(_ context.Context, addr string) ([]string, error) {
		if addr == "10.1.2.3" {
			return []string{"RM1.Example.COM."}, nil
		}
		return nil, errors.New("no PTR")
	}
	for _, tc := range []struct{ principal, addr, want string }{
		{"rm/_HOST@R", "rm1.example.com:8032", "rm/rm1.example.com"},
		{"rm/_HOST@R", "RM2.example.com:8032", "rm/rm2.example.com"},
		{"rm/_HOST@R", "127.0.0.1:8032", "rm/localhost"},
		{"rm/_HOST@R", "10.1.2.3:8032", "rm/rm1.example.com"},
		{"rm/_HOST@R", "10.9.9.9:8032", "rm/10.9.9.9"},
		{"rm/fixed.example.com", "10.1.2.3:8032", "rm/fixed.example.com"},
	} {
		k := &KerberosClientConfig{ServerPrincipal: tc.principal}
		if got := k.expectedServer(tc.addr); got != tc.want {
			t.Errorf("%s at %s: %q, want %q", tc.principal, tc.addr, got, tc.want)
		}
	}
}
