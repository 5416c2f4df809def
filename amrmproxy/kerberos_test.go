package amrmproxy

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/ipctest"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// kerberizedRM is a Kerberos-only ApplicationClientProtocol front for a
// simulated RM (simrm has no Kerberos): it takes SASL KERBEROS logins
// only, applies real hadoop.proxyuser rules, records who each call came
// from, and forwards the call to the simulated RM as its effective user.
type kerberizedRM struct {
	addr string
	mu   sync.Mutex
	seen map[string][]hadoopipc.User // method -> callers
}

func (k *kerberizedRM) calls(method string) []hadoopipc.User {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]hadoopipc.User(nil), k.seen[method]...)
}

func startKerberizedRM(t *testing.T, kdc *krbtest.KDC, rmKeytab, backend string, proxyUsers map[string]hadoopipc.ProxyUserRule) *kerberizedRM {
	t.Helper()
	k := &kerberizedRM{seen: map[string][]hadoopipc.User{}}
	pu, err := hadoopipc.NewProxyUsers(proxyUsers, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: "rm/localhost@" + kdc.Realm, Keytab: kdc.Keytab(t, rmKeytab)}
	cfg.AuthorizeConnection = pu.AuthorizeConnection
	clients := map[string]*hadoopipc.Client{}
	var cmu sync.Mutex
	t.Cleanup(func() {
		cmu.Lock()
		defer cmu.Unlock()
		for _, c := range clients {
			_ = c.Close()
		}
	})
	forward := func(ctx context.Context, method string, req, resp proto.Message) error {
		u, _ := hadoopipc.UserFromContext(ctx)
		k.mu.Lock()
		k.seen[method] = append(k.seen[method], u)
		k.mu.Unlock()
		cmu.Lock()
		c := clients[u.Name]
		if c == nil {
			if c, err = hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{backend}, Protocol: hadoopipc.ProtocolApplicationClient, User: u.Name}); err != nil {
				cmu.Unlock()
				return err
			}
			clients[u.Name] = c
		}
		cmu.Unlock()
		return c.Call(ctx, method, req, resp)
	}
	k.addr = ipctest.Start(t, cfg, hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationClient, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("submitApplication", newOf[yarnpb.SubmitApplicationRequestProto],
			func(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
				resp := &yarnpb.SubmitApplicationResponseProto{}
				return resp, forward(ctx, "submitApplication", req, resp)
			}),
		hadoopipc.NewMethod("getApplicationReport", newOf[yarnpb.GetApplicationReportRequestProto],
			func(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
				resp := &yarnpb.GetApplicationReportResponseProto{}
				return resp, forward(ctx, "getApplicationReport", req, resp)
			}),
		hadoopipc.NewMethod("getClusterNodes", newOf[yarnpb.GetClusterNodesRequestProto],
			func(ctx context.Context, req *yarnpb.GetClusterNodesRequestProto) (*yarnpb.GetClusterNodesResponseProto, error) {
				resp := &yarnpb.GetClusterNodesResponseProto{}
				return resp, forward(ctx, "getClusterNodes", req, resp)
			}),
	}}).Addr
	return k
}

// TestKerberosUAMSubmittedAsProxyForSubmitter: with kerberos configured,
// the proxy reaches Kerberos-only RMs as its own principal; the UAM on the
// secondary is submitted (and its token fetched) acting for the
// application's submitter, the home's report and the node lists are asked
// as the proxy itself.
func TestKerberosUAMSubmittedAsProxyForSubmitter(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKT := kdc.AddService(t, "rm/localhost")
	proxyKT := kdc.AddService(t, "amrmproxy/localhost")
	f := newFed(t, 2, "", nil, func(c *Config) {
		c.Kerberos = krblogin.Config{Principal: "amrmproxy/localhost@" + kdc.Realm, Keytab: proxyKT,
			Krb5Conf: kdc.ConfPath, RMPrincipal: "rm/_HOST@" + kdc.Realm}
	})
	rules := map[string]hadoopipc.ProxyUserRule{"amrmproxy": {Hosts: "127.0.0.1", Users: "alice"}}
	fronts := map[string]*kerberizedRM{}
	for _, id := range f.ids {
		fronts[id] = startKerberizedRM(t, kdc, rmKT, f.rms[id].Addrs().Client, rules)
		a := f.rms[id].Addrs()
		f.store.set(SubCluster{ID: id, AMRMServiceAddress: a.Scheduler, ClientRMServiceAddress: fronts[id].addr, State: policies.StateRunning,
			LastHeartbeat: time.Now(), Capability: `{"clusterMetrics":{"availableMB":32768,"activeNodes":4}}`})
	}
	if err := f.proxy.RefreshNow(context.Background()); err != nil {
		t.Fatal(err)
	}

	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
	am.until("2 containers from each of 2 sub-clusters", func() bool {
		by := f.bySC(am)
		return by["SC-1"] == 2 && by["SC-2"] == 2
	})
	if rep := f.rmApp("SC-2", app); rep == nil || !rep.GetUnmanagedApplication() || rep.GetUser() != "alice" {
		t.Fatalf("SC-2: UAM report %v, want an unmanaged app of alice", rep)
	}
	proxyPrincipal := "amrmproxy/localhost@" + kdc.Realm
	subs := fronts["SC-2"].calls("submitApplication")
	if len(subs) != 1 {
		t.Fatalf("SC-2 got %d submissions, want 1", len(subs))
	}
	for _, m := range []string{"submitApplication", "getApplicationReport"} {
		for _, u := range fronts["SC-2"].calls(m) {
			if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "alice" || u.RealUser != "amrmproxy" || u.Principal != proxyPrincipal {
				t.Fatalf("SC-2 %s came from %+v, want alice via %s", m, u, proxyPrincipal)
			}
		}
	}
	// The home's report (whose application is it?) is asked as the proxy.
	home := fronts["SC-1"].calls("getApplicationReport")
	if len(home) == 0 {
		t.Fatal("the home RM was not asked for the application's user")
	}
	for _, u := range home {
		if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "amrmproxy" || u.RealUser != "" {
			t.Fatalf("home getApplicationReport came from %+v, want the proxy itself", u)
		}
	}
	if n := len(fronts["SC-1"].calls("submitApplication")); n != 0 {
		t.Fatalf("the home got %d UAM submissions", n)
	}
	// Node lists are learnt as the proxy itself.
	deadline := time.Now().Add(10 * time.Second)
	for len(fronts["SC-2"].calls("getClusterNodes")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no getClusterNodes reached SC-2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, u := range fronts["SC-2"].calls("getClusterNodes") {
		if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "amrmproxy" || u.RealUser != "" {
			t.Fatalf("getClusterNodes came from %+v, want the proxy itself", u)
		}
	}

	// An RM that does not let the proxy act for mallory refuses her UAM.
	c, err := f.proxy.clientRM([]string{fronts["SC-2"].addr}, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := uam.Launch(ctx, c, uam.Spec{App: app, Queue: "default"}); err == nil || !strings.Contains(err.Error(), "not allowed to impersonate") {
		t.Fatalf("UAM for mallory: %v, want the RM's proxy-user refusal", err)
	}
}

// TestKerberosOffRefusedBySecureRM: without kerberos configured the proxy
// speaks SIMPLE, which a Kerberos-only RM refuses: no UAM is submitted.
func TestKerberosOffRefusedBySecureRM(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKT := kdc.AddService(t, "rm/localhost")
	f := newFed(t, 1, "", nil, nil)
	front := startKerberizedRM(t, kdc, rmKT, f.rms["SC-1"].Addrs().Client, nil)
	c, err := f.proxy.clientRM([]string{front.addr}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	app := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(1), Id: proto.Int32(1)}
	_, err = uam.Launch(ctx, c, uam.Spec{App: app, Queue: "default"})
	if err == nil || !strings.Contains(err.Error(), "SIMPLE") {
		t.Fatalf("SIMPLE UAM submission to a Kerberos-only RM: %v, want refused", err)
	}
	if n := len(front.calls("submitApplication")); n != 0 {
		t.Fatalf("the secure RM ran %d submissions from an unauthenticated proxy", n)
	}
}

// TestKerberosLoginFailsFast: a keytab without the principal's keys, or no
// keytab at all, stops Open instead of failing every later UAM launch.
func TestKerberosLoginFailsFast(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	other := kdc.AddService(t, "someone/localhost")
	for name, kt := range map[string]string{"wrong keys": other, "missing file": filepath.Join(t.TempDir(), "none.keytab")} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SubClusterID, cfg.DataDir, cfg.Store = "SC-1", t.TempDir(), &fakeStore{rows: map[string]SubCluster{}}
			cfg.AMRMAddress, cfg.WebAddress = "127.0.0.1:0", ""
			cfg.Kerberos = krblogin.Config{Principal: "amrmproxy/localhost@" + kdc.Realm, Keytab: kt, Krb5Conf: kdc.ConfPath, RMPrincipal: "rm/_HOST@" + kdc.Realm}
			p, err := Open(cfg)
			if err == nil {
				p.Close()
				t.Fatal("Open succeeded with a bad keytab")
			}
			if !strings.Contains(err.Error(), "kerberos") {
				t.Fatalf("Open: %v, want a kerberos error", err)
			}
		})
	}
}

func TestKerberosConfigNeedsRMPrincipal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SubClusterID, cfg.DataDir, cfg.Store = "SC-1", "/d", &fakeStore{}
	cfg.Kerberos = krblogin.Config{Principal: "amrmproxy/_HOST@R", Keytab: "/k"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "kerberos.rm_principal: required") {
		t.Fatalf("Validate = %v", err)
	}
	cfg.Kerberos.RMPrincipal = "rm/_HOST@R"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Kerberos.RMHTTPPrincipal = "HTTP/_HOST@R"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "kerberos.rm_http_principal") {
		t.Fatalf("Validate with rm_http_principal = %v", err)
	}
}
