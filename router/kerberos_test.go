package router_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

type krbEnv struct {
	kdc         *krbtest.KDC
	routerKT    string
	loginKeytab func(name string) *krbclient.Client
}

func newKrbEnv(t *testing.T) *krbEnv {
	kdc := krbtest.Start(t, krbtest.Options{})
	e := &krbEnv{kdc: kdc, routerKT: kdc.AddService(t, "router/localhost")}
	cfg := kdc.Config(t)
	e.loginKeytab = func(name string) *krbclient.Client {
		cl := krbclient.NewWithKeytab(name, kdc.Realm, kdc.Keytab(t, kdc.AddUser(t, name)), cfg, krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Destroy)
		return cl
	}
	return e
}

func (e *krbEnv) routerConfig(c *router.Config) {
	c.Kerberos = router.KerberosConfig{
		Principal: "router/localhost@" + e.kdc.Realm,
		Keytab:    e.routerKT,
		Krb5Conf:  e.kdc.ConfPath,
	}
}

func krbRouterClient(t *testing.T, r *router.Router, login *krbclient.Client, user string) *hadoopipc.Client {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: user,
		Kerberos: &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "router/_HOST"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestKerberosClientPort: with kerberos.principal set the client port takes
// SASL KERBEROS, refuses SIMPLE, and issues delegation tokens only over
// Kerberos, with Hadoop's exception.
func TestKerberosClientPort(t *testing.T) {
	e := newKrbEnv(t)
	f := &fed{t: t, store: routertest.NewStore(), rms: map[router.SubClusterID]*routertest.RM{}}
	rm := routertest.NewRM("SC-1", 1000)
	f.rms["SC-1"] = rm
	f.store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning})
	f.client = &hadoopipc.Client{} // newRouter must not dial SIMPLE here
	r := f.newRouter(e.routerConfig, rm)
	alice := krbRouterClient(t, r, e.loginKeytab("alice"), "")

	if err := alice.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("Kerberos call through the router: %v", err)
	}
	got := &commonpb.GetDelegationTokenResponseProto{}
	if err := alice.Call(ctxT(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, got); err != nil {
		t.Fatalf("getDelegationToken over Kerberos: %v", err)
	}
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(got.GetToken().GetIdentifier(), &id); err != nil || id.GetOwner() != "alice" {
		t.Fatalf("token owner %q: %v", id.GetOwner(), err)
	}

	// SIMPLE is refused at the handshake.
	simple, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer simple.Close()
	err = simple.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if remoteClass(err) != hadoopipc.ClassAccessControl {
		t.Fatalf("SIMPLE client: %v", err)
	}

	// A token login works but cannot mint more tokens.
	tc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, Token: got.GetToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if err := tc.Call(ctxT(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("token login: %v", err)
	}
	err = tc.Call(ctxT(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, &commonpb.GetDelegationTokenResponseProto{})
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != hadoopipc.ClassYarnException || !strings.Contains(re.Message, "can be issued only with kerberos authentication") {
		t.Fatalf("getDelegationToken over TOKEN: %v", err)
	}
}

// TestKerberosSimpleNotAllowedDelegationToken: kerberos.allow_simple keeps
// SIMPLE open, but a SIMPLE caller still gets no token.
func TestKerberosSimpleNotAllowedDelegationToken(t *testing.T) {
	e := newKrbEnv(t)
	f := newFed(t, 1, func(c *router.Config) {
		e.routerConfig(c)
		c.Kerberos.AllowSimple = true
	})
	err := f.client.Call(ctxT(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, &commonpb.GetDelegationTokenResponseProto{})
	if remoteClass(err) != hadoopipc.ClassYarnException {
		t.Fatalf("SIMPLE getDelegationToken with Kerberos on: %v", err)
	}
}

// secureRM serves part of ApplicationClientProtocol over SASL KERBEROS as
// rm/localhost, with proxy-user semantics: the router's principal may act
// for anyone but "mallory". It records who each call ran as.
type secureRM struct {
	addr string
	mu   sync.Mutex
	seen []hadoopipc.User
}

func startSecureRM(t *testing.T, kdc *krbtest.KDC, rm *routertest.RM) *secureRM {
	s := &secureRM{}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: "rm/localhost@" + kdc.Realm, Keytab: kdc.Keytab(t, kdc.AddService(t, "rm/localhost"))}
	cfg.Authorize = func(ctx context.Context, _ *hadoopipc.CallInfo) error {
		u, _ := hadoopipc.UserFromContext(ctx)
		s.mu.Lock()
		s.seen = append(s.seen, u)
		s.mu.Unlock()
		if u.RealUser != "" && u.Name == "mallory" {
			return hadoopipc.Errorf("org.apache.hadoop.security.authorize.AuthorizationException", "User: %s is not allowed to impersonate %s", u.RealUser, u.Name)
		}
		return nil
	}
	srv := hadoopipc.NewServer(cfg)
	fwd := func(method string) func(ctx context.Context, req *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
		return func(ctx context.Context, req *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
			resp := &yarnpb.GetClusterMetricsResponseProto{}
			return resp, rm.Call(ctx, method, req, resp)
		}
	}
	newApp := func(ctx context.Context, req *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
		resp := &yarnpb.GetNewApplicationResponseProto{}
		return resp, rm.Call(ctx, "getNewApplication", req, resp)
	}
	if err := srv.Register(hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationClient, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("getClusterMetrics", func() *yarnpb.GetClusterMetricsRequestProto { return &yarnpb.GetClusterMetricsRequestProto{} }, fwd("getClusterMetrics")),
		hadoopipc.NewMethod("getNewApplication", func() *yarnpb.GetNewApplicationRequestProto { return &yarnpb.GetNewApplicationRequestProto{} }, newApp),
	}}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

// TestKerberosRouterToSecureRM: the router logs in from its keytab and
// reaches a Kerberized RM as itself acting for the caller (doAs); the RM's
// proxy-user decision reaches the caller.
func TestKerberosRouterToSecureRM(t *testing.T) {
	e := newKrbEnv(t)
	rm := routertest.NewRM("SC-1", 1000)
	srm := startSecureRM(t, e.kdc, rm)
	f := &fed{t: t, store: routertest.NewStore(), rms: map[router.SubClusterID]*routertest.RM{"SC-1": rm}}
	f.store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: srm.addr, State: router.StateRunning})
	f.client = &hadoopipc.Client{}
	r := f.newRouter(func(c *router.Config) {
		e.routerConfig(c)
		c.Kerberos.RMPrincipal = "rm/_HOST@" + e.kdc.Realm
		c.Dial = nil // the production dialer: Kerberos to the RM
	}, rm)
	alice := krbRouterClient(t, r, e.loginKeytab("alice"), "")
	if err := alice.Call(ctxT(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{}); err != nil {
		t.Fatalf("getNewApplication through the router to a Kerberized RM: %v", err)
	}
	srm.mu.Lock()
	seen := append([]hadoopipc.User(nil), srm.seen...)
	srm.mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the RM saw no call")
	}
	for _, u := range seen {
		if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "alice" || u.RealUser != "router" || u.Principal != "router/localhost@"+e.kdc.Realm {
			t.Fatalf("the RM saw %+v, want alice via router/localhost", u)
		}
	}

	// The RM refuses to let the router act for mallory: the caller sees it.
	mallory := krbRouterClient(t, r, e.loginKeytab("mallory"), "")
	err := mallory.Call(ctxT(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
	if err == nil || !strings.Contains(err.Error(), "not allowed to impersonate") {
		t.Fatalf("mallory through the router: %v", err)
	}
}
