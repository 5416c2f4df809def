package router_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestAppACLsAcrossRouters: alice submits through one router; a second
// router on the same store, which never saw the submission (another
// replica, or the first one restarted), refuses bob's kill and mallory's
// attempts and REST priority change exactly as the first does, and lets
// dave (MODIFY_APP group) kill. Before, the second router forwarded
// everything (the ACLs lived only in the first router's memory).
func TestAppACLsAcrossRouters(t *testing.T) {
	mod := func(c *router.Config) {
		c.AdminACL = "admin"
		c.Authz.ACLEnable = true
		c.Authz.StaticGroupMapping = "carol=viewers;dave=ops;bob=;mallory="
	}
	f := routertest.NewFed(t, 1, mod)
	alice := f.DialAs(f.Router, "alice")
	id := f.SubmitWithACLs(alice) // VIEW_APP "bob viewers", MODIFY_APP " ops"
	app := yarnid.AppIDString(id)
	r2 := f.NewRouter(mod)
	as := func(u string) *hadoopipc.Client { return f.DialAs(r2, u) }

	err := kill(t, as("bob"), id)
	want := "java.security.AccessControlException: User bob cannot perform operation MODIFY_APP on " + app
	var re *hadoopipc.RemoteError
	if !asRemote(err, &re) || re.Message != want {
		t.Fatalf("bob kill via the second router: %v, want %q", err, want)
	}
	err = attempts(t, as("mallory"), id)
	want = "User mallory does not have privilage to see this application " + app
	if !asRemote(err, &re) || re.Message != want {
		t.Errorf("mallory attempts via the second router: %v, want %q", err, want)
	}
	if err := attempts(t, as("carol"), id); err != nil {
		t.Errorf("carol (viewers) attempts via the second router: %v", err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPut, "/ws/v1/cluster/apps/"+app+"/priority?user.name=mallory", strings.NewReader(`{"priority":9}`))
	req.Header.Set("Content-Type", "application/json")
	r2.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Unauthorized attempt to change priority of appid "+app+" by remote user mallory") {
		t.Errorf("REST priority by mallory via the second router: %d %s", rec.Code, rec.Body)
	}
	if err := kill(t, as("dave"), id); err != nil {
		t.Fatalf("dave (ops) kill via the second router: %v", err)
	}
}
