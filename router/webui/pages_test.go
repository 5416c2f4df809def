package webui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// hostile is user input (an application name, a queue) built to break out
// of every HTML context a page might put it in.
const hostile = `</td></tr></table><script>document.title="xss"</script><img id="pwned" src="x" onerror="alert(1)">'"&amp;`

// TestUIPagesRenderAndEscape: every page renders (200, HTML, the
// no-script CSP) over fake RMs, and user input appears only escaped. The
// browser tests (cmd/yarnfed/webui_browser_test.go) check the same in Chromium; this one
// runs everywhere.
func TestUIPagesRenderAndEscape(t *testing.T) {
	f := routertest.NewFed(t, 2, func(c *router.Config) { c.Version = "v-test" })
	id := f.NewApp(f.Client)
	req := routertest.SubmitReq(id, "default")
	req.ApplicationSubmissionContext.ApplicationName = proto.String(hostile)
	if err := f.Client.Call(routertest.Ctx(t), "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	// An AM may set any tracking URL; a javascript: one must not become a
	// live link.
	evil := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(1000), Id: proto.Int32(77)}
	f.RMs["SC-1"].AddApp(&yarnpb.ApplicationReportProto{ApplicationId: evil, User: proto.String("mallory"), Name: proto.String("am"),
		Queue: proto.String("default"), TrackingUrl: proto.String("javascript:alert(document.cookie)")})
	q, err := policies.ParsePolicySaveString("root.x" + strings.ReplaceAll(hostile, ";", "") + ";SC-1:0.7,SC-2:0.3;SC-1:0.7,SC-2:0.3;1.0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := policies.NewDefaultRegistry().QueuePolicyConfig(q, "WeightedLocality", policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	f.Store.SetPolicy(router.PolicyConfiguration{Queue: cfg.Queue, Type: cfg.Type, Params: cfg.Params})

	srv := httptest.NewServer(f.Router.Handler())
	defer srv.Close()
	cases := []struct {
		path string
		want []string // substrings of the page
	}{
		{"/cluster", []string{`id="sc-count">2<`, "v-test"}},
		{"/cluster/about", []string{`id="sc-routable">2<`}},
		{"/cluster/federation", []string{`id="sc-SC-1"`, `id="sc-SC-2"`, "0.7 / 0.7", "0.3 / 0.3", "not published"}},
		{"/cluster/nodes", []string{`id="node-count">`}},
		{"/cluster/apps", []string{`id="app-count">2<`, `<a class="tracking" href="#ZgotmplZ">`, yarnid.AppIDString(id), `href="/ws/v1/cluster/apps/` + yarnid.AppIDString(id) + `"`}},
		{"/cluster/app/" + yarnid.AppIDString(id), []string{`id="app-detail"`, `class="home-link" href="/cluster/federation#sc-`}},
		{"/cluster/policies", []string{`id="policy-count">1<`, "WeightedLocalityPolicyManager", "SC-1:0.7"}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
				t.Errorf("CSP %q lets scripts run", csp)
			}
			page := string(body)
			for _, w := range tc.want {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			if strings.Contains(page, "<script") || strings.Contains(page, `<img id="pwned"`) || strings.Contains(page, "javascript:") {
				t.Errorf("user input rendered as markup:\n%s", page)
			}
		})
	}
	// The hostile strings are there, escaped.
	for _, p := range []string{"/cluster/apps", "/cluster/app/" + yarnid.AppIDString(id), "/cluster/policies", "/cluster/federation"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "&lt;script&gt;document.title=&#34;xss&#34;&lt;/script&gt;") {
			t.Errorf("%s: the hostile input is not shown escaped", p)
		}
	}
	// The stylesheet is served; / leads to the UI.
	resp, err := http.Get(srv.URL + "/static/yarnfed.css")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Fatalf("stylesheet: %v %v", err, resp)
	}
	resp.Body.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noRedirect.Get(srv.URL + "/")
	if err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/cluster" {
		t.Fatalf("/: %v %v", err, resp)
	}
	resp.Body.Close()
}

// TestUIFanOutFailureShown: when a sub-cluster fails and partial results
// are off, the nodes page answers REST's status with the error on the page.
// The apps page, as REST /apps (and Hadoop's Router's getApps), shows the
// sub-clusters that answered and names the one that did not.
func TestUIFanOutFailureShown(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	f.RMs["SC-2"].Intercept = func(method string) (error, bool) {
		if method == "getApplications" || method == "getClusterNodes" {
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "boom"), false
		}
		return nil, false
	}
	srv := httptest.NewServer(f.Router.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	pageStatus, body := get("/cluster/nodes")
	restStatus, _ := get("/ws/v1/cluster/nodes")
	if pageStatus != restStatus || pageStatus == http.StatusOK {
		t.Fatalf("page status %d, REST %d; want the same failure", pageStatus, restStatus)
	}
	if !strings.Contains(body, `id="error"`) || !strings.Contains(body, "SC-2") {
		t.Fatalf("page does not show the failure:\n%s", body)
	}
	pageStatus, body = get("/cluster/apps")
	restStatus, _ = get("/ws/v1/cluster/apps")
	if pageStatus != http.StatusOK || restStatus != http.StatusOK {
		t.Fatalf("apps: page %d, REST %d; want both 200 with SC-1's part", pageStatus, restStatus)
	}
	// The page says the list is partial and which sub-cluster is missing.
	if i := strings.Index(body, `id="apps-left-out"`); i < 0 || !strings.Contains(body[i:], "SC-2") {
		t.Fatalf("apps page does not name the sub-cluster left out:\n%s", body)
	}
}

// TestUIErrorsMatchREST: a page answers the status its REST counterpart
// answers for bad input and unknown applications, with the error shown.
func TestUIErrorsMatchREST(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	srv := httptest.NewServer(f.Router.Handler())
	defer srv.Close()
	cases := []struct {
		name, page, rest string
		status           int
	}{
		{"malformed app id", "/cluster/app/not-an-app", "/ws/v1/cluster/apps/not-an-app", http.StatusBadRequest},
		{"unknown app", "/cluster/app/application_1000_9999", "/ws/v1/cluster/apps/application_1000_9999", http.StatusNotFound},
		{"bad apps query", "/cluster/apps?states=NOPE", "/ws/v1/cluster/apps?states=NOPE", http.StatusBadRequest},
		{"bad node state", "/cluster/nodes?states=NOPE", "/ws/v1/cluster/nodes?states=NOPE", http.StatusBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, err := http.Get(srv.URL + tc.page)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(page.Body)
			page.Body.Close()
			rest, err := http.Get(srv.URL + tc.rest)
			if err != nil {
				t.Fatal(err)
			}
			rest.Body.Close()
			if page.StatusCode != tc.status || rest.StatusCode != tc.status {
				t.Fatalf("page %d, REST %d, want %d", page.StatusCode, rest.StatusCode, tc.status)
			}
			if !strings.Contains(string(body), `id="error"`) {
				t.Fatalf("page does not show the error:\n%s", body)
			}
		})
	}
}

// TestUIAppACLs: with application ACLs on, the pages show an application
// as REST and an RM's pages do. The apps page lists every application, and
// one the caller may not view without its tracking URL, progress or usage
// (RMAppsBlock over ClientRMService's filtered reports); the application's
// page answers a caller without VIEW_APP with REST's 403 for its attempts
// and nothing of the app (AppBlock stops when the attempts are refused),
// asking no RM. The owner, the admin and the VIEW_APP list (by name and by
// group) see everything; an anonymous visitor is dr.who, as Hadoop's
// static web user, and sees what any other user without access sees. With
// ACLs off everyone sees everything.
func TestUIAppACLs(t *testing.T) {
	const (
		secretURL  = "http://am-secret.example:4040/"
		secretDiag = "secret-diagnostics-of-alice"
	)
	setup := func(t *testing.T, enable bool) (*routertest.Fed, string, *httptest.Server) {
		f := routertest.NewFed(t, 1, func(c *router.Config) {
			c.AdminACL = "admin"
			c.Authz.ACLEnable = enable
			c.Authz.StaticGroupMapping = "alice=;carol=viewers;bob=;mallory=;dr.who="
		})
		alice := f.DialAs(f.Router, "alice")
		id := f.SubmitWithACLs(alice) // VIEW_APP "bob viewers"
		rep, err := f.Report(alice, id)
		if err != nil {
			t.Fatal(err)
		}
		rep.User = proto.String("alice")
		rep.TrackingUrl = proto.String(secretURL)
		rep.Diagnostics = proto.String(secretDiag)
		rep.YarnApplicationState = yarnpb.YarnApplicationStateProto_RUNNING.Enum()
		f.RMs["SC-1"].AddApp(rep)
		srv := httptest.NewServer(f.Router.Handler())
		t.Cleanup(srv.Close)
		return f, yarnid.AppIDString(id), srv
	}
	get := func(t *testing.T, srv *httptest.Server, path, user string) (int, string) {
		t.Helper()
		if user != "" {
			path += "?user.name=" + user
		}
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	seesAll := func(t *testing.T, srv *httptest.Server, app, user string) {
		t.Helper()
		code, page := get(t, srv, "/cluster/apps", user)
		if code != http.StatusOK || !strings.Contains(page, app) || !strings.Contains(page, `href="`+secretURL+`"`) {
			t.Errorf("%q: apps page %d does not show the app whole:\n%s", user, code, page)
		}
		code, page = get(t, srv, "/cluster/app/"+app, user)
		if code != http.StatusOK || !strings.Contains(page, secretDiag) || !strings.Contains(page, `href="`+secretURL+`"`) {
			t.Errorf("%q: app page %d does not show the app whole:\n%s", user, code, page)
		}
	}

	t.Run("acls on", func(t *testing.T) {
		f, app, srv := setup(t, true)
		for _, u := range []string{"alice", "admin", "bob", "carol"} {
			seesAll(t, srv, app, u)
		}
		for _, u := range []string{"mallory", ""} { // "": anonymous, dr.who
			shown := u
			if shown == "" {
				shown = "dr.who"
			}
			code, page := get(t, srv, "/cluster/apps", u)
			if code != http.StatusOK || !strings.Contains(page, `data-app="`+app+`"`) || !strings.Contains(page, `<td class="user">alice</td>`) {
				t.Errorf("%s: apps page %d does not list the app:\n%s", shown, code, page)
			}
			if strings.Contains(page, secretURL) {
				t.Errorf("%s: apps page shows the tracking URL of an app it may not view:\n%s", shown, page)
			}
			attempts := f.RMs["SC-1"].Calls("getApplicationAttempts")
			reports := f.RMs["SC-1"].Calls("getApplicationReport")
			code, page = get(t, srv, "/cluster/app/"+app, u)
			want := "User " + shown + " does not have privilage to see this application " + app
			if code != http.StatusForbidden || !strings.Contains(page, `id="error"`) || !strings.Contains(page, want) {
				t.Errorf("%s: app page %d, want 403 with %q:\n%s", shown, code, want, page)
			}
			for _, leak := range []string{secretURL, secretDiag, `id="app-detail"`, `id="attempts"`} {
				if strings.Contains(page, leak) {
					t.Errorf("%s: app page shows %q", shown, leak)
				}
			}
			if n := f.RMs["SC-1"].Calls("getApplicationAttempts"); n != attempts {
				t.Errorf("%s: the page asked the RM for the attempts (%d calls, was %d)", shown, n, attempts)
			}
			if n := f.RMs["SC-1"].Calls("getApplicationReport"); n != reports {
				t.Errorf("%s: the page asked the RM for the report (%d calls, was %d)", shown, n, reports)
			}
			// The same refusal as REST's attempts.
			restCode, _ := get(t, srv, "/ws/v1/cluster/apps/"+app+"/appattempts", u)
			if restCode != code {
				t.Errorf("%s: page %d, REST appattempts %d", shown, code, restCode)
			}
		}
	})
	t.Run("acls off", func(t *testing.T) {
		_, app, srv := setup(t, false)
		for _, u := range []string{"mallory", ""} {
			seesAll(t, srv, app, u)
		}
	})
}
