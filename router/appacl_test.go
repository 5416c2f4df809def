package router_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// aclFed is a one-sub-cluster federation with application ACLs on:
// "admin" is the admin, carol is in group viewers, dave in group ops.
func aclFed(t *testing.T, enable bool) *routertest.Fed {
	return routertest.NewFed(t, 1, func(c *router.Config) {
		c.AdminACL = "admin"
		c.Authz.ACLEnable = enable
		c.Authz.StaticGroupMapping = "carol=viewers;dave=ops;bob=;mallory="
	})
}

func kill(t *testing.T, c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) error {
	return c.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
}

func attempts(t *testing.T, c *hadoopipc.Client, id *yarnpb.ApplicationIdProto) error {
	return c.Call(routertest.Ctx(t), "getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: id}, &yarnpb.GetApplicationAttemptsResponseProto{})
}

// TestAppACLs: with ACLs on, MODIFY_APP and VIEW_APP are enforced with the
// RM's exceptions; owner, admins and listed users and groups pass.
func TestAppACLs(t *testing.T) {
	f := aclFed(t, true)
	alice := f.DialAs(f.Router, "alice")
	id := f.SubmitWithACLs(alice)
	app := yarnid.AppIDString(id)
	as := func(u string) *hadoopipc.Client { return f.DialAs(f.Router, u) }

	// bob may view but not modify: the RM's MODIFY_APP refusal.
	err := kill(t, as("bob"), id)
	want := "java.security.AccessControlException: User bob cannot perform operation MODIFY_APP on " + app
	var re *hadoopipc.RemoteError
	if !asRemote(err, &re) || re.Class != hadoopipc.ClassYarnException || re.Message != want {
		t.Fatalf("bob kill: got %v, want YarnException %q", err, want)
	}
	if err := attempts(t, as("bob"), id); err != nil {
		t.Errorf("bob attempts (VIEW_APP by user): %v", err)
	}
	if err := attempts(t, as("carol"), id); err != nil {
		t.Errorf("carol attempts (VIEW_APP by group): %v", err)
	}
	err = attempts(t, as("mallory"), id)
	want = "User mallory does not have privilage to see this application " + app
	if !asRemote(err, &re) || re.Class != hadoopipc.ClassYarnException || re.Message != want {
		t.Errorf("mallory attempts: got %v, want YarnException %q", err, want)
	}

	// Reports: filtered for mallory, whole for the owner.
	rep, err := f.Report(as("mallory"), id)
	if err != nil {
		t.Fatal(err)
	}
	if rep.GetRpcPort() != -1 || rep.GetTrackingUrl() != "N/A" || rep.GetAppResource_Usage().GetNumUsedContainers() != -1 ||
		rep.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_ACCEPTED {
		t.Errorf("mallory's report not filtered as the RM does: %v", rep)
	}
	rep, err = f.Report(alice, id)
	if err != nil || rep.GetAppResource_Usage().GetNumUsedContainers() != 1 {
		t.Errorf("owner's report: %v %v", rep, err)
	}
	lr := &yarnpb.GetApplicationsResponseProto{}
	if err := as("mallory").Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, lr); err != nil || len(lr.Applications) != 1 ||
		lr.Applications[0].GetAppResource_Usage().GetNumUsedContainers() != -1 {
		t.Errorf("mallory's list not filtered: %v %v", lr, err)
	}

	// REST list: mallory's copy of alice's app is filtered, alice's is not.
	restApps := func(user string) string {
		rec := httptest.NewRecorder()
		f.Router.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/apps?user.name="+user, nil))
		return rec.Body.String()
	}
	if body := restApps("mallory"); !strings.Contains(body, app) || !strings.Contains(body, `"allocatedMB":0`) {
		t.Errorf("mallory's REST list not filtered: %s", body)
	}
	if body := restApps("alice"); !strings.Contains(body, `"allocatedMB":1024`) {
		t.Errorf("alice's REST list filtered: %s", body)
	}

	// REST kill by bob: 403 as RMWebServices.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPut, "/ws/v1/cluster/apps/"+app+"/state?user.name=bob", strings.NewReader(`{"state":"KILLED"}`))
	req.Header.Set("Content-Type", "application/json")
	f.Router.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Unauthorized attempt to kill appid "+app+" by remote user bob") {
		t.Errorf("REST kill by bob: %d %s", rec.Code, rec.Body)
	}

	// dave is in the MODIFY_APP group: the kill goes through.
	if err := kill(t, as("dave"), id); err != nil {
		t.Fatalf("dave kill: %v", err)
	}
	// Owner and admin are always allowed.
	id2 := f.SubmitWithACLs(alice)
	if err := kill(t, as("admin"), id2); err != nil {
		t.Errorf("admin kill: %v", err)
	}
	id3 := f.SubmitWithACLs(alice)
	if err := kill(t, alice, id3); err != nil {
		t.Errorf("owner kill: %v", err)
	}
}

// TestAppACLsUnknownAppForwarded: an application the router did not see
// submitted is left to its RM (which enforces its own ACLs when on).
func TestAppACLsUnknownAppForwarded(t *testing.T) {
	f := aclFed(t, true)
	id := &yarnpb.ApplicationIdProto{Id: proto.Int32(77), ClusterTimestamp: proto.Int64(1000)}
	f.RMs["SC-1"].AddApp(&yarnpb.ApplicationReportProto{ApplicationId: id, User: proto.String("alice"),
		YarnApplicationState: yarnpb.YarnApplicationStateProto_RUNNING.Enum()})
	if err := kill(t, f.DialAs(f.Router, "mallory"), id); err != nil {
		t.Fatalf("kill of an app with unknown ACLs was not forwarded: %v", err)
	}
	if got := f.RMs["SC-1"].Calls("forceKillApplication"); got != 1 {
		t.Errorf("RM saw %d kills, want 1", got)
	}
}

// TestAppACLsOff: without acl_enable anyone may kill (Hadoop's default).
func TestAppACLsOff(t *testing.T) {
	f := aclFed(t, false)
	id := f.SubmitWithACLs(f.DialAs(f.Router, "alice"))
	if err := kill(t, f.DialAs(f.Router, "bob"), id); err != nil {
		t.Fatalf("kill with ACLs off: %v", err)
	}
}

// TestAppACLResubmissionKeepsOwner: a resubmission of the same id by
// another user (which the RM acknowledges) does not make it the owner.
func TestAppACLResubmissionKeepsOwner(t *testing.T) {
	f := aclFed(t, true)
	alice := f.DialAs(f.Router, "alice")
	id := f.SubmitWithACLs(alice)
	mallory := f.DialAs(f.Router, "mallory")
	req := routertest.SubmitReq(id, "default")
	req.ApplicationSubmissionContext.AmContainerSpec = &yarnpb.ContainerLaunchContextProto{
		Application_ACLs: []*yarnpb.ApplicationACLMapProto{
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP.Enum(), Acl: proto.String("bob viewers")},
			{AccessType: yarnpb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP.Enum(), Acl: proto.String(" ops")},
		},
	}
	_ = mallory.Call(routertest.Ctx(t), "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{})
	if err := kill(t, mallory, id); routertest.RemoteClass(err) != hadoopipc.ClassYarnException {
		t.Fatalf("mallory killed alice's app after resubmitting it: %v", err)
	}
}

// TestProxyUsersOnClientPort: the client port applies proxy_users: the
// configured superuser may act for a listed user, others are refused with
// the AuthorizationException an RM sends.
func TestProxyUsersOnClientPort(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.Authz.ProxyUsers = map[string]hadoopipc.ProxyUserRule{"oozie": {Hosts: "127.0.0.1", Users: "alice"}}
	})
	dial := func(user, real string) *hadoopipc.Client {
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.Router.ClientRMAddr().String()},
			Protocol: hadoopipc.ProtocolApplicationClient, User: user, RealUser: real, FailoverAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if _, err := f.Report(dial("alice", "oozie"), &yarnpb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1)}); routertest.RemoteClass(err) == hadoopipc.ClassAuthorization {
		t.Fatalf("allowed proxy refused: %v", err)
	}
	for _, c := range []struct{ user, real string }{{"bob", "oozie"}, {"alice", "mallory"}} {
		err := dial(c.user, c.real).Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
		if routertest.RemoteClass(err) != hadoopipc.ClassAuthorization {
			t.Errorf("%s as %s: got %v, want %s", c.real, c.user, err, hadoopipc.ClassAuthorization)
		}
	}
}

func asRemote(err error, re **hadoopipc.RemoteError) bool { return errors.As(err, re) }

// TestRESTDoAs: ?doAs= makes the authenticated REST caller act for another
// user when proxy_users allow it from the request's address (httptest's
// requests come from 192.0.2.1), else 403 with the RM's message; the app
// ACLs then judge the user acted for.
func TestRESTDoAs(t *testing.T) {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.AdminACL = "admin"
		c.Authz.ACLEnable = true
		c.Authz.StaticGroupMapping = "alice=;bob=;oozie=;mallory="
		c.Authz.ProxyUsers = map[string]hadoopipc.ProxyUserRule{
			"oozie": {Hosts: "192.0.2.0/24", Users: "alice,bob"},
			"far":   {Hosts: "10.0.0.0/8", Users: "*"},
		}
	})
	id := f.SubmitWithACLs(f.DialAs(f.Router, "alice"))
	app := yarnid.AppIDString(id)
	put := func(query string) (int, string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPut, "/ws/v1/cluster/apps/"+app+"/state?"+query, strings.NewReader(`{"state":"KILLED"}`))
		req.Header.Set("Content-Type", "application/json")
		f.Router.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		query    string
		wantCode int
		wantText string
	}{
		{"user.name=mallory&doAs=alice", http.StatusForbidden, "User: mallory is not allowed to impersonate alice"},
		{"user.name=far&doas=alice", http.StatusForbidden, "Unauthorized connection for super-user: far from IP 192.0.2.1"},
		{"user.name=oozie&DoAs=bob", http.StatusForbidden, "by remote user bob"},
		{"user.name=oozie&doAs=alice", http.StatusOK, ""},
	} {
		code, body := put(tc.query)
		if code != tc.wantCode || !strings.Contains(body, tc.wantText) {
			t.Errorf("%s: %d %s, want %d %q", tc.query, code, body, tc.wantCode, tc.wantText)
		}
	}
}
