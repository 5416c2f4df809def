package router_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	krbspnego "github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
	"github.com/yarnfed/yarnfed/router/spnego"
)

// TestSPNEGO runs the REST API behind SPNEGO against a real MIT KDC: no
// ticket is a 401 Negotiate challenge, a ticket authenticates (and
// ?user.name= is ignored), the hadoop.auth cookie spares the next
// negotiation and a forged one does not.
func TestSPNEGO(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKeytab := kdc.AddService(t, "HTTP/localhost")
	bobKeytab := kdc.AddUser(t, "bob")

	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.AdminACL = "admin"
		c.Authz.ACLEnable = true
		c.Authz.StaticGroupMapping = "bob=;alice="
		c.SPNEGO = spnego.Config{Keytab: httpKeytab, Principal: kdc.Principal("HTTP/localhost"), CookieValidity: router.Duration(3600e9)}
	})
	id := f.SubmitWithACLs(f.DialAs(f.Router, "alice"))
	app := yarnid.AppIDString(id)
	srv := httptest.NewServer(f.Router.Handler())
	t.Cleanup(srv.Close)
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	// No ticket: the challenge, whatever user.name says.
	resp, err := http.Get(base + "/ws/v1/cluster/apps?user.name=alice")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Negotiate" {
		t.Fatalf("no ticket: %d %q, want 401 Negotiate", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// So are the web UI's pages and the AM proxy, which list applications
	// and their users.
	for _, path := range []string{"/cluster/apps?user.name=alice", "/cluster/app/" + app, "/proxy/" + app + "/"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a ticket: %d, want 401", path, resp.StatusCode)
		}
	}
	// Probes stay open.
	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz behind SPNEGO: %v", err)
	}
	resp.Body.Close() // an unclosed body keeps its connection's goroutines (goleak)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz behind SPNEGO: %v", resp)
	}

	cl := client.NewWithKeytab("bob", kdc.Realm, kdc.Keytab(t, bobKeytab), kdc.Config(t), client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatalf("bob login: %v\n%s", err, kdc.Log())
	}
	t.Cleanup(cl.Destroy)
	sc := krbspnego.NewClient(cl, nil, "HTTP/localhost")

	// bob, claiming to be alice in user.name, may not kill alice's app.
	req, _ := http.NewRequest(http.MethodPut, base+"/ws/v1/cluster/apps/"+app+"/state?user.name=alice", strings.NewReader(`{"state":"KILLED"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = sc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "by remote user bob") {
		t.Fatalf("bob's kill as user.name=alice: %d %s", resp.StatusCode, body)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "hadoop.auth" {
			cookie = c
		}
	}
	if cookie == nil || !strings.Contains(cookie.Value, "u=bob") {
		t.Fatalf("no hadoop.auth cookie for bob: %v", resp.Cookies())
	}

	// The cookie alone authenticates; a forged user in it does not.
	get := func(c *http.Cookie) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/ws/v1/cluster/apps/"+app+"/state", nil)
		req.AddCookie(c)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(cookie); code != http.StatusOK {
		t.Errorf("request with the cookie: %d, want 200", code)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/cluster/apps", nil)
	req.AddCookie(cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("UI page with the cookie: %v %v, want 200", resp, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "bob") {
			t.Errorf("UI page does not show the authenticated user bob")
		}
	}
	forged := *cookie
	forged.Value = strings.Replace(cookie.Value, "u=bob", "u=admin", 1)
	if code := get(&forged); code != http.StatusUnauthorized {
		t.Errorf("request with a forged cookie: %d, want 401", code)
	}
}

// TestSPNEGOCookieAcrossRouterReplicas: two routers behind one Service,
// configured with the same spnego.signature_secret_file, accept the
// hadoop.auth cookie either one set after a real negotiation, so a client
// is not asked to negotiate again when the Service sends it to the other
// replica; a router with another secret file refuses the cookie (401
// Negotiate).
func TestSPNEGOCookieAcrossRouterReplicas(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKeytab := kdc.AddService(t, "HTTP/localhost")
	bobKeytab := kdc.AddUser(t, "bob")
	dir := t.TempDir()
	secret := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shared, other := secret("shared", strings.Repeat("s", 48)), secret("other", strings.Repeat("o", 48))
	withSecret := func(file string) func(*router.Config) {
		return func(c *router.Config) {
			c.SPNEGO = spnego.Config{Keytab: httpKeytab, Principal: kdc.Principal("HTTP/localhost"),
				CookieValidity: router.Duration(3600e9), SignatureSecretFile: file}
		}
	}
	f := routertest.NewFed(t, 1, withSecret(shared))
	serve := func(r *router.Router) string {
		srv := httptest.NewServer(r.Handler())
		t.Cleanup(srv.Close)
		return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	}
	baseA, baseB, baseC := serve(f.Router), serve(f.NewRouter(withSecret(shared))), serve(f.NewRouter(withSecret(other)))

	cl := client.NewWithKeytab("bob", kdc.Realm, kdc.Keytab(t, bobKeytab), kdc.Config(t), client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatalf("bob login: %v\n%s", err, kdc.Log())
	}
	t.Cleanup(cl.Destroy)
	req, _ := http.NewRequest(http.MethodGet, baseA+"/ws/v1/cluster/info", nil)
	resp, err := krbspnego.NewClient(cl, nil, "HTTP/localhost").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == spnego.CookieName {
			cookie = c
		}
	}
	if resp.StatusCode != http.StatusOK || cookie == nil {
		t.Fatalf("negotiation at the first router: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	get := func(base string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/ws/v1/cluster/info", nil)
		req.AddCookie(cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(baseB); code != http.StatusOK {
		t.Errorf("the first router's cookie at a replica with the same secret file: %d, want 200", code)
	}
	if code := get(baseC); code != http.StatusUnauthorized {
		t.Errorf("the first router's cookie at a router with another secret: %d, want 401", code)
	}
}
