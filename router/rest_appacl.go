package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/restwire"
	"github.com/yarnfed/yarnfed/router/yarnid"
)

// Application ACLs on REST: every route whose pattern names an {appid}
// goes through restAppCheck (called by serveREST for the REST API and by
// proxyApp for /proxy/), which applies the route's rule below with the
// same appACLs.Allowed the IPC calls use (checkAppCall). A pattern with
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

// restAppCheck applies req's route rule for the caller in ctx: nil when
// allowed (or ACLs are off, or the route is not app-scoped, or the app
// id does not parse: the handler answers that), else a 403 restwire.Error.
func (r *Router) restAppCheck(ctx context.Context, req *http.Request) error {
	if r.appACLs == nil || !strings.Contains(req.Pattern, "{appid}") {
		return nil
	}
	rule, ok := restAppRules[req.Pattern]
	if !ok {
		return errNoAppRule
	}
	if rule.open || rule.filtered {
		return nil
	}
	id, err := yarnid.ParseAppID(req.PathValue("appid"))
	if err != nil {
		return nil
	}
	app := yarnid.AppIDString(id)
	auditOf(ctx).App = app
	user := userOf(ctx)
	if allowed, _ := r.appACLs.Allowed(ctx, user, app, rule.kind); allowed {
		return nil
	}
	short := hadoopipc.ShortName(user)
	r.metrics.appACLDenied.WithLabelValues("REST " + req.Pattern).Inc()
	msg := fmt.Sprintf("User %s does not have privilage to see this application %s", short, app)
	if rule.refusal != "" {
		msg = fmt.Sprintf(rule.refusal, app, short)
	}
	return &restwire.Error{Status: http.StatusForbidden, Class: rmrest.ClassForbidden, Err: &aclDenied{msg}}
}

// withAppCheck runs h after restAppCheck.
func (r *Router) withAppCheck(h restHandler) restHandler {
	return func(ctx context.Context, req *http.Request) (restReply, error) {
		if err := r.restAppCheck(ctx, req); err != nil {
			return restReply{}, err
		}
		return h(ctx, req)
	}
}

// routeMux is what restRoutes registers on (*http.ServeMux; a recorder in
// TestEveryAppRouteHasACLRule).
type routeMux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
	Handle(pattern string, handler http.Handler)
}
