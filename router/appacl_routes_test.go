package router_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// appRouteRequest fills an app-scoped pattern with app's ids and a valid
// body for its PUT.
func appRouteRequest(pattern, app string) (method, path, body string) {
	method, path = "GET", pattern
	if m, p, ok := strings.Cut(pattern, " "); ok {
		method, path = m, p
	}
	ts := strings.TrimPrefix(app, "application_")
	path = strings.NewReplacer("{appid}", app, "{attemptid}", "appattempt_"+ts+"_000001",
		"{containerid}", "container_"+ts+"_01_000001", "{type}", "LIFETIME", "{rest...}", "x").Replace(path)
	switch {
	case strings.HasSuffix(path, "/state") && method == "PUT":
		body = `{"state":"KILLED"}`
	case strings.HasSuffix(path, "/priority"):
		body = `{"priority":5}`
	case strings.HasSuffix(path, "/queue"):
		body = `{"queue":"default"}`
	case strings.HasSuffix(path, "/timeout"):
		body = `{"timeout":{"type":"LIFETIME","expiryTime":"2099-01-01T00:00:00.000+0000"}}`
	}
	if method == "GET" {
		body = ""
	}
	return method, path, body
}

// TestEveryAppRouteHasACLRule enumerates the routes the REST API
// registers: each one naming an {appid} has an ACL rule, and with ACLs on
// it is applied. mallory (no access to alice's app) is refused every
// VIEW_APP and MODIFY_APP route with RMWebServices' 403, and served the
// open ones; bob (VIEW_APP) passes the view routes and is refused the
// modify ones. Before, PUT priority by another user answered 200 and
// changed the priority, and GET appattempts was relayed unfiltered.
func TestEveryAppRouteHasACLRule(t *testing.T) {
	s := routertest.NewSimFed(t, func(c *router.Config) {
		c.AdminACL = "admin"
		c.Authz.ACLEnable = true
		c.Authz.StaticGroupMapping = "carol=viewers;dave=ops;bob=;mallory="
	})
	alice := s.DialAs(s.Router, "alice")
	id := s.SubmitWithACLs(alice) // VIEW_APP "bob viewers", MODIFY_APP " ops"
	app := yarnid.AppIDString(id)
	const modifyText, viewText = "Unauthorized attempt to", "does not have privilage to see this application"
	n := 0
	for _, pattern := range s.Router.RESTPatterns() {
		if !strings.Contains(pattern, "{appid}") {
			continue
		}
		n++
		access, open, filtered, ok := router.RESTAppRule(pattern)
		if !ok {
			t.Errorf("%s: app-scoped route without an application ACL rule (rest/appacl.go restAppRules)", pattern)
			continue
		}
		method, path, body := appRouteRequest(pattern, app)
		for _, user := range []string{"mallory", "bob"} {
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			ctype := ""
			if body != "" {
				ctype = "application/json"
			}
			code, _, b := s.Call(method, path+sep+"user.name="+user, "", ctype, body)
			refused := code == http.StatusForbidden && (strings.Contains(string(b), modifyText) || strings.Contains(string(b), viewText))
			want := !open && !filtered && (user == "mallory" || access == "MODIFY_APP")
			if refused != want {
				t.Errorf("%s as %s: %d %.200s; want refused=%v (%s, open %v, filtered %v)", pattern, user, code, b, want, access, open, filtered)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d app-scoped routes found: the enumeration is broken", n)
	}
	rep, err := s.Report(alice, id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GetPriority().GetPriority() != 0 || rep.GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_KILLED {
		t.Fatalf("alice's app was changed by refused calls: priority %d, state %v", rep.GetPriority().GetPriority(), rep.GetYarnApplicationState())
	}
}

// TestEveryAppScopedIPCMethodChecked: every ApplicationClientProtocol
// method whose request names an application, attempt or container at top
// level is in checkAppCall's table, except getApplicationReport, which is
// filtered as the RM does instead of refused.
func TestEveryAppScopedIPCMethodChecked(t *testing.T) {
	sd := yarnpb.File_applicationclient_protocol_proto.Services().ByName("ApplicationClientProtocolService")
	if sd == nil {
		t.Fatal("no ApplicationClientProtocolService descriptor")
	}
	scoped := map[protoreflect.FullName]bool{
		(&yarnpb.ApplicationIdProto{}).ProtoReflect().Descriptor().FullName():        true,
		(&yarnpb.ApplicationAttemptIdProto{}).ProtoReflect().Descriptor().FullName(): true,
		(&yarnpb.ContainerIdProto{}).ProtoReflect().Descriptor().FullName():          true,
	}
	filtered := map[string]bool{"getApplicationReport": true}
	n := 0
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		fields := m.Input().Fields()
		appScoped := false
		for j := 0; j < fields.Len(); j++ {
			if md := fields.Get(j).Message(); md != nil && scoped[md.FullName()] {
				appScoped = true
			}
		}
		if !appScoped {
			continue
		}
		n++
		name := string(m.Name())
		if _, ok := router.IPCAppAccess(name); !ok && !filtered[name] {
			t.Errorf("%s names an application but has no ACL entry (appacl.go appAccessOf)", name)
		}
	}
	if n < 10 {
		t.Fatalf("only %d app-scoped methods found: the enumeration is broken", n)
	}
}

// TestProxyPathCannotClimbOut: /proxy/<app>/%2e%2e/... is refused by the
// router (400) instead of being forwarded for the RM to resolve outside
// the application's proxy.
func TestProxyPathCannotClimbOut(t *testing.T) {
	s := routertest.NewSimFed(t)
	app := yarnid.AppIDString(s.SubmitApp(true))
	code, _, b := s.Call("GET", "/proxy/"+app+"/%2e%2e/%2e%2e/ws/v1/cluster/apps", "", "", "")
	if code != http.StatusBadRequest || !strings.Contains(string(b), "leaves /proxy/"+app) {
		t.Fatalf("climbing proxy path: %d %.300s, want 400", code, b)
	}
}

// TestAuditRecordsTheClientsResult: a relayed call the home RM refuses
// (a move to a queue it does not have: its own 400) is audited as a
// FAILURE, as the client saw it; one it accepts as a SUCCESS.
func TestAuditRecordsTheClientsResult(t *testing.T) {
	var logs logtest.Buffer
	s := routertest.NewSimFed(t, func(c *router.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	app := yarnid.AppIDString(s.SubmitApp(false))
	base := "/ws/v1/cluster/apps/" + app
	if code, _, b := s.Call("PUT", base+"/queue", "", "application/json", `{"queue":"nope"}`); code != http.StatusBadRequest {
		t.Fatalf("move to an unknown queue: %d %s, want the RM's 400", code, b)
	}
	if code, _, b := s.Call("PUT", base+"/priority", "", "application/json", `{"priority":3}`); code != http.StatusOK {
		t.Fatalf("priority: %d %s", code, b)
	}
	var queueLine, prioLine string
	for _, l := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(l, "msg=audit") || !strings.Contains(l, app) {
			continue
		}
		switch {
		case strings.Contains(l, "operation=\"REST app-queue-put\""):
			queueLine = l
		case strings.Contains(l, "operation=\"REST app-priority-put\""):
			prioLine = l
		}
	}
	if !strings.Contains(queueLine, "result=FAILURE") {
		t.Errorf("refused move audited as %q, want result=FAILURE", queueLine)
	}
	if !strings.Contains(prioLine, "result=SUCCESS") {
		t.Errorf("priority change audited as %q, want result=SUCCESS", prioLine)
	}
}
