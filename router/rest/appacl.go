package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Application ACLs on REST: every route whose pattern names an {appid}
// goes through AppCheck (called by serveREST for the REST API and by the
// root's proxyApp for /proxy/), which applies the route's rule below with
// the same ACL table (Config.ACLs) the IPC calls use (checkAppCall). A pattern with
// {appid} and no rule is refused to everyone (fail closed), and
// TestEveryAppRouteHasACLRule enumerates the registered routes.

// restAppRule is the access an app-scoped route needs.
type restAppRule struct {
	kind appacl.Kind
	// open: RMWebServices shows it to anyone (state, queue, priority:
	// the AppInfo of a caller without VIEW_APP keeps them, and /apps
	// lists them for everyone), so no refusal.
	open bool
	// filtered: the handler hides what a caller without VIEW_APP may not
	// see instead of refusing (GET /apps/{appid}, as RMWebServices).
	filtered bool
	// refusal is the 403 text for MODIFY_APP refusals, RMWebServices'
	// wording (app id, user); empty: the VIEW_APP text.
	refusal string
}

const restAppsRoot = "/ws/v1/cluster/apps/{appid}"

// restAppRules is keyed by the mux pattern (http.Request.Pattern).
var restAppRules = map[string]restAppRule{
	"GET " + restAppsRoot:                                                       {kind: appacl.View, filtered: true},
	"GET " + restAppsRoot + "/state":                                            {open: true},
	"PUT " + restAppsRoot + "/state":                                            {kind: appacl.Modify, refusal: "Unauthorized attempt to kill appid %s by remote user %s"},
	"GET " + restAppsRoot + "/priority":                                         {open: true},
	"PUT " + restAppsRoot + "/priority":                                         {kind: appacl.Modify, refusal: "Unauthorized attempt to change priority of appid %s by remote user %s"},
	"GET " + restAppsRoot + "/queue":                                            {open: true},
	"PUT " + restAppsRoot + "/queue":                                            {kind: appacl.Modify, refusal: "Unauthorized attempt to move appid %s by remote user %s"},
	"GET " + restAppsRoot + "/timeouts":                                         {kind: appacl.View},
	"GET " + restAppsRoot + "/timeouts/{type}":                                  {kind: appacl.View},
	"PUT " + restAppsRoot + "/timeout":                                          {kind: appacl.Modify, refusal: "Unauthorized attempt to change timeout of app %s by remote user %s"},
	"GET " + restAppsRoot + "/appattempts":                                      {kind: appacl.View},
	"GET " + restAppsRoot + "/appattempts/{attemptid}":                          {kind: appacl.View},
	"GET " + restAppsRoot + "/appattempts/{attemptid}/containers":               {kind: appacl.View},
	"GET " + restAppsRoot + "/appattempts/{attemptid}/containers/{containerid}": {kind: appacl.View},
	// The AM's web UI: job details, the same access as its attempts.
	"/proxy/{appid}":           {kind: appacl.View},
	"/proxy/{appid}/{rest...}": {kind: appacl.View},
}

// AppRule is the rule of an app-scoped route pattern (ok: it has one):
// the access it needs, and whether it is open to all or filtered by the
// handler instead of refused. Only the router's tests call it
// (export_acl_test.go: every app-scoped route has a rule; deadcode lists
// it); it is kept exported because the table it reads is rest's own.
func AppRule(pattern string) (kind appacl.Kind, open, filtered, ok bool) {
	rule, ok := restAppRules[pattern]
	return rule.kind, rule.open, rule.filtered, ok
}

// ErrAppACLDenied: the caller lacks the application access the call needs.
var ErrAppACLDenied = errors.New("application access denied")

// aclDenied carries the refusal text clients see (RMWebServices' own) and
// matches ErrAppACLDenied.
type aclDenied struct{ msg string }

func (e *aclDenied) Error() string { return e.msg }
func (e *aclDenied) Unwrap() error { return ErrAppACLDenied }

// errNoAppRule refuses an app-scoped route that has no rule (a route added
// without one; TestEveryAppRouteHasACLRule fails first).
var errNoAppRule = &restwire.Error{Status: http.StatusForbidden, Class: rmrest.ClassForbidden, Err: &aclDenied{"no application ACL rule for this route"}}

// AppCheck applies req's route rule for the caller in ctx: nil when
// allowed (or ACLs are off, or the route is not app-scoped, or the app
// id does not parse: the handler answers that), else a 403 restwire.Error.
func (r *API) AppCheck(ctx context.Context, req *http.Request) error {
	if r.cfg.ACLs == nil || !strings.Contains(req.Pattern, "{appid}") {
		return nil
	}
	rule, ok := restAppRules[req.Pattern]
	if !ok {
		return errNoAppRule
	}
	if rule.open || rule.filtered {
		return nil
	}
	id, err := yarnid.ParseAppIDProto(req.PathValue("appid"))
	if err != nil {
		return nil
	}
	app := yarnid.AppIDString(id)
	fed.AuditOf(ctx).App = app
	return r.check(ctx, "REST "+req.Pattern, app, rule)
}

// check applies rule to the caller in ctx for app: nil when allowed, else
// the 403 RMWebServices answers, counted as a refusal of method.
func (r *API) check(ctx context.Context, method, app string, rule restAppRule) error {
	user := hadoopipc.UserName(ctx)
	if allowed, _ := r.cfg.ACLs.Allowed(ctx, user, app, rule.kind); allowed {
		return nil
	}
	short := hadoopipc.ShortName(user)
	r.core.ACLDenied(method)
	msg := fmt.Sprintf("User %s does not have privilage to see this application %s", short, app)
	if rule.refusal != "" {
		msg = fmt.Sprintf(rule.refusal, app, short)
	}
	return &restwire.Error{Status: http.StatusForbidden, Class: rmrest.ClassForbidden, Err: &aclDenied{msg}}
}

// CheckView is the VIEW_APP check of the app-scoped GET routes (attempts,
// containers, timeouts) for the caller in ctx, for the web UI's
// application page: nil when allowed (or ACLs are off, or the router does
// not know the app's ACLs), else the 403 those routes answer, counted as
// a refusal of method.
func (r *API) CheckView(ctx context.Context, method string, id *yarnpb.ApplicationIdProto) error {
	if r.cfg.ACLs == nil {
		return nil
	}
	return r.check(ctx, method, yarnid.AppIDString(id), restAppRule{kind: appacl.View})
}

// FilterApps hides in each of apps what the caller in ctx may not view
// (filterAppInfo), as GET /apps does: with the ACLs the router has cached
// only (appacl.CacheOnly; a store read per listed application would cost
// thousands). The web UI's apps page filters its rows with it.
func (r *API) FilterApps(ctx context.Context, apps []rmrest.App) {
	ctx = appacl.CacheOnly(ctx)
	for i := range apps {
		r.filterAppInfo(ctx, &apps[i])
	}
}

// withAppCheck runs h after AppCheck.
func (r *API) withAppCheck(h restHandler) restHandler {
	return func(ctx context.Context, req *http.Request) (restReply, error) {
		if err := r.AppCheck(ctx, req); err != nil {
			return restReply{}, err
		}
		return h(ctx, req)
	}
}

// filterAppInfo is filterReport for a REST document: what RMWebServices'
// AppInfo leaves out for a caller without VIEW_APP (AM addresses and logs,
// tracking URL, diagnostics, progress, usage).
func (r *API) filterAppInfo(ctx context.Context, a *rmrest.App) {
	if r.cfg.ACLs == nil {
		return
	}
	if ok, _ := r.cfg.ACLs.Allowed(ctx, hadoopipc.UserName(ctx), a.ID, appacl.View); ok {
		return
	}
	*a = rmrest.App{
		ID: a.ID, User: a.User, Name: a.Name, Queue: a.Queue, State: a.State, FinalStatus: a.FinalStatus,
		TrackingUI: a.TrackingUI, ClusterID: a.ClusterID, RMClusterID: a.RMClusterID,
		ApplicationType: a.ApplicationType, ApplicationTags: a.ApplicationTags, Priority: a.Priority,
		StartedTime: a.StartedTime, LaunchTime: a.LaunchTime, FinishedTime: a.FinishedTime, ElapsedTime: a.ElapsedTime,
		UnmanagedApplication: a.UnmanagedApplication,
	}
}

// errAppKillForbidden is the REST refusal of a kill (RMWebServices answers
// 403 with this text).
func errAppKillForbidden(app, user string) error {
	return &restwire.Error{Status: http.StatusForbidden, Class: rmrest.ClassForbidden,
		//lint:ignore ST1005 the text of the RM's own AccessControlException
		Err: fmt.Errorf("Unauthorized attempt to kill appid %s by remote user %s", app, hadoopipc.ShortName(user))}
}
