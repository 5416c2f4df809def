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

// TestKerberosClientPort: with kerberos.principal set the client port takes
// SASL KERBEROS, refuses SIMPLE, and issues delegation tokens only over
// Kerberos, with Hadoop's exception.
func TestKerberosClientPort(t *testing.T) {
	e := routertest.NewKrbEnv(t)
	f := &routertest.Fed{T: t, Store: routertest.NewStore(), RMs: map[router.SubClusterID]*routertest.RM{}}
	rm := routertest.NewRM("SC-1", 1000)
	f.RMs["SC-1"] = rm
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning})
	f.Client = &hadoopipc.Client{} // newRouter must not dial SIMPLE here
	r := f.NewRouter(e.RouterConfig, rm)
	alice := routertest.KrbRouterClient(t, r, e.LoginKeytab("alice"), "")

	if err := alice.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("Kerberos call through the router: %v", err)
	}
	got := &commonpb.GetDelegationTokenResponseProto{}
	if err := alice.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, got); err != nil {
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
	err = simple.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if routertest.RemoteClass(err) != hadoopipc.ClassAccessControl {
		t.Fatalf("SIMPLE client: %v", err)
	}

	// A token login works but cannot mint more tokens.
	tc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, Token: got.GetToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if err := tc.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("token login: %v", err)
	}
	err = tc.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, &commonpb.GetDelegationTokenResponseProto{})
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != hadoopipc.ClassYarnException || !strings.Contains(re.Message, "can be issued only with kerberos authentication") {
		t.Fatalf("getDelegationToken over TOKEN: %v", err)
	}
}

// TestKerberosSimpleNotAllowedDelegationToken: kerberos.allow_simple keeps
// SIMPLE open, but a SIMPLE caller still gets no token.
func TestKerberosSimpleNotAllowedDelegationToken(t *testing.T) {
	e := routertest.NewKrbEnv(t)
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		e.RouterConfig(c)
		c.Kerberos.AllowSimple = true
	})
	err := f.Client.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, &commonpb.GetDelegationTokenResponseProto{})
	if routertest.RemoteClass(err) != hadoopipc.ClassYarnException {
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
	e := routertest.NewKrbEnv(t)
	rm := routertest.NewRM("SC-1", 1000)
	srm := startSecureRM(t, e.KDC, rm)
	f := &routertest.Fed{T: t, Store: routertest.NewStore(), RMs: map[router.SubClusterID]*routertest.RM{"SC-1": rm}}
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: srm.addr, State: router.StateRunning})
	f.Client = &hadoopipc.Client{}
	// Towards the RMs the router is yarnfed/localhost (login_principal),
	// whose keys share the router's keytab.
	e.KDC.AddService(t, "yarnfed/localhost")
	both := e.KDC.ExportKeytab(t, "router/localhost", "yarnfed/localhost")
	r := f.NewRouter(func(c *router.Config) {
		e.RouterConfig(c)
		c.Kerberos.Keytab = both
		c.Kerberos.LoginPrincipal = "yarnfed/localhost"
		c.Kerberos.RMPrincipal = "rm/_HOST@" + e.KDC.Realm
		c.Dial = nil // the production dialer: Kerberos to the RM
	}, rm)
	alice := routertest.KrbRouterClient(t, r, e.LoginKeytab("alice"), "")
	if err := alice.Call(routertest.Ctx(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{}); err != nil {
		t.Fatalf("getNewApplication through the router to a Kerberized RM: %v", err)
	}
	srm.mu.Lock()
	seen := append([]hadoopipc.User(nil), srm.seen...)
	srm.mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the RM saw no call")
	}
	for _, u := range seen {
		if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "alice" || u.RealUser != "yarnfed" || u.Principal != "yarnfed/localhost@"+e.KDC.Realm {
			t.Fatalf("the RM saw %+v, want alice via yarnfed/localhost", u)
		}
	}

	// The RM refuses to let the router act for mallory: the caller sees it.
	mallory := routertest.KrbRouterClient(t, r, e.LoginKeytab("mallory"), "")
	err := mallory.Call(routertest.Ctx(t), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
	if err == nil || !strings.Contains(err.Error(), "not allowed to impersonate") {
		t.Fatalf("mallory through the router: %v", err)
	}
}

// TestKerberosAdminPort: the admin port takes Kerberos and refuses SIMPLE;
// the ACL names the principal's short name.
func TestKerberosAdminPort(t *testing.T) {
	e := routertest.NewKrbEnv(t)
	admin := routertest.NewAdminRM("SC-1")
	f := &routertest.Fed{T: t, Store: routertest.NewStore(), RMs: map[router.SubClusterID]*routertest.RM{}}
	rm := routertest.NewRM("SC-1", 1000)
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake:8032", RMAdminServiceAddress: "fake:8033", State: router.StateRunning})
	f.Client = &hadoopipc.Client{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := f.NewRouter(func(c *router.Config) {
		e.RouterConfig(c)
		c.AdminListener, c.AdminACL, c.AdminDial = ln, "admin", routertest.AdminDialer(admin)
	}, rm)
	dial := func(login *krbclient.Client, user string) *hadoopipc.Client {
		cfg := hadoopipc.ClientConfig{Addresses: []string{r.AdminAddr().String()}, Protocol: hadoopipc.ProtocolRMAdmin, User: user, FailoverAttempts: 1}
		if login != nil {
			cfg.Kerberos = &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "router/_HOST"}
		}
		c, err := hadoopipc.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	refresh := func(c *hadoopipc.Client) error {
		return c.Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{})
	}
	if err := refresh(dial(e.LoginKeytab("admin"), "")); err != nil {
		t.Fatalf("admin over Kerberos: %v", err)
	}
	if err := refresh(dial(e.LoginKeytab("carol"), "")); routertest.RemoteClass(err) != hadoopipc.ClassAccessControl {
		t.Fatalf("carol over Kerberos: %v", err)
	}
	if err := refresh(dial(nil, "admin")); routertest.RemoteClass(err) != hadoopipc.ClassAccessControl {
		t.Fatalf("SIMPLE 'admin': %v", err)
	}
	if n := admin.Calls("refreshQueues"); n != 1 {
		t.Fatalf("refreshQueues reached the RM %d times, want 1", n)
	}
}

// TestKerberosProxyUserCallers: a principal acting for another user is
// refused unless AuthorizeProxyUser allows it, and then forwarded as that
// user.
func TestKerberosProxyUserCallers(t *testing.T) {
	e := routertest.NewKrbEnv(t)
	var asked []string
	var mu sync.Mutex
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		e.RouterConfig(c)
		c.Kerberos.AllowSimple = true // newFed dials SIMPLE
		c.AuthorizeProxyUser = func(_ context.Context, info *hadoopipc.CallInfo) error {
			mu.Lock()
			asked = append(asked, info.User.RealUser+">"+info.User.Name)
			mu.Unlock()
			if info.User.RealUser == "oozie" && info.User.Name == "bob" {
				return nil
			}
			return hadoopipc.Errorf(router.ClassAuthorization, "User: %s is not allowed to impersonate %s", info.User.RealUser, info.User.Name)
		}
	})
	oozie := e.LoginKeytab("oozie")
	metrics := func(c *hadoopipc.Client) error {
		return c.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	}
	if err := metrics(routertest.KrbRouterClient(t, f.Router, oozie, "bob")); err != nil {
		t.Fatalf("oozie for bob: %v", err)
	}
	if err := metrics(routertest.KrbRouterClient(t, f.Router, oozie, "carol")); routertest.RemoteClass(err) != router.ClassAuthorization {
		t.Fatalf("oozie for carol: %v", err)
	}
	if err := metrics(routertest.KrbRouterClient(t, f.Router, oozie, "")); err != nil {
		t.Fatalf("oozie as itself: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, ",") != "oozie>bob,oozie>carol" {
		t.Fatalf("asked %v", asked)
	}

	// Without a hook every doAs is refused.
	g := routertest.NewFed(t, 1, allowSimple(e))
	if err := metrics(routertest.KrbRouterClient(t, g.Router, oozie, "bob")); routertest.RemoteClass(err) != router.ClassAuthorization {
		t.Fatalf("doAs with no AuthorizeProxyUser: %v", err)
	}
}

// allowSimple is e's Kerberos login for a router that takes SIMPLE too.
func allowSimple(e *routertest.KrbEnv) func(*router.Config) {
	return func(c *router.Config) {
		e.RouterConfig(c)
		c.Kerberos.AllowSimple = true
	}
}
