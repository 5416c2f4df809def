package router

import (
	"context"
	"fmt"
	"net/http"

	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Application ACLs (yarn.acl.enable), checked in the router as an RM with
// ACLs on checks them (ClientRMService + ApplicationACLsManager): the
// owner and the admins (yarn.admin.acl, here admin_acl) may do anything;
// others need the application's VIEW_APP or MODIFY_APP list, which the
// submitter set in its AM ContainerLaunchContext (absent: no one).
//
// The router learns an application's owner and lists when the submission
// passes through it, and keeps them in a bounded LRU. For an application
// it has not seen submitted (another router, a restart, an LRU eviction,
// a submission made straight to an RM) it decides nothing and forwards:
// reports do not carry ACLs, and the home RM, reached as the caller
// (doAs), enforces its own ACLs when it runs with them on. DESIGN.md,
// "Application ACLs", says why.

// appAccess is what the router knows about one application's ACLs.
type appAccess struct {
	owner  string
	view   ACL
	modify ACL
}

// appACLs holds the owners and lists of applications submitted through
// this router.
type appACLs struct {
	admins ACL
	groups hadoopipc.GroupMapping
	known  *lru.Cache[string, appAccess]
	// load reads an application's owner and lists from the state store
	// (appacl_store.go; nil: the store cannot), for an application another
	// router or an earlier run of this one placed.
	load func(ctx context.Context, app string) (appAccess, bool)
}

// defaultAppACLCacheSize bounds the applications whose ACLs are kept.
const defaultAppACLCacheSize = 100_000

func newAppACLs(admins ACL, groups hadoopipc.GroupMapping, size int) *appACLs {
	if size < 1 {
		size = defaultAppACLCacheSize
	}
	c, _ := lru.New[string, appAccess](size) // size >= 1: cannot fail
	return &appACLs{admins: admins, groups: groups, known: c}
}

// record notes the owner and lists of a submitted application. A
// resubmission does not overwrite them: the RM answers a resubmitted id
// with success whoever sends it, so a second submitter must not become
// the owner.
func (a *appACLs) record(app, owner string, asc *yarnpb.ApplicationSubmissionContextProto) {
	if a == nil || app == "" || owner == "" {
		return
	}
	acc := appAccess{owner: hadoopipc.ShortName(owner)}
	acc.view, acc.modify = listsOf(asc.GetAmContainerSpec())
	a.known.ContainsOrAdd(app, acc)
}

// parseAppACL reads an application's list; unlike admin_acl an empty list
// means no one (Hadoop's AccessControlList("")), and a malformed one too.
func parseAppACL(s string) ACL {
	if s == "" {
		return ACL{}
	}
	l, err := ParseACL(s)
	if err != nil {
		return ACL{}
	}
	return l
}

// classJavaAccessControl is the JDK exception ClientRMService refuses
// MODIFY_APP with (measured against a real RM: e2e TestKerberizedRMDirect).
const classJavaAccessControl = "java.security.AccessControlException"

// accessKind is Hadoop's ApplicationAccessType.
type accessKind int

const (
	viewApp accessKind = iota
	modifyApp
)

func (k accessKind) String() string {
	if k == modifyApp {
		return "MODIFY_APP"
	}
	return "VIEW_APP"
}

// allowed reports whether user may access app; known is false when the
// router does not know the application's ACLs (not in the cache, and not
// in the store's row, or ctx is a listing's: see cacheOnly).
func (a *appACLs) allowed(ctx context.Context, user, app string, kind accessKind) (ok, known bool) {
	acc, found := a.known.Get(app)
	if !found && a.load != nil && ctx.Value(cacheOnlyKey{}) == nil {
		if acc, found = a.load(ctx, app); found {
			a.known.ContainsOrAdd(app, acc)
		}
	}
	if !found {
		return true, false
	}
	short := hadoopipc.ShortName(user)
	if short == acc.owner || a.admins.Allows(short, a.groups.Groups) {
		return true, true
	}
	l := acc.view
	if kind == modifyApp {
		l = acc.modify
	}
	return l.Allows(short, a.groups.Groups), true
}

// appAccessOf is the access each per-application ApplicationClientProtocol
// call needs; calls not listed here are not per-application.
var appAccessOf = map[string]accessKind{
	"forceKillApplication":        modifyApp,
	"failApplicationAttempt":      modifyApp,
	"moveApplicationAcrossQueues": modifyApp,
	"updateApplicationPriority":   modifyApp,
	"updateApplicationTimeouts":   modifyApp,
	"signalToContainer":           modifyApp,
	"getApplicationAttemptReport": viewApp,
	"getApplicationAttempts":      viewApp,
	"getContainerReport":          viewApp,
	"getContainers":               viewApp,
}

// checkAppCall refuses a per-application call the caller may not make,
// with the exception and message ClientRMService sends: MODIFY_APP
// refusals are a YarnException wrapping java.security.AccessControlException
// (RPCUtil.getRemoteException), VIEW_APP refusals a plain YarnException.
// Reports are filtered instead (filterReport), as the RM does.
func (r *Router) checkAppCall(ctx context.Context, method string, app *yarnpb.ApplicationIdProto, req proto.Message) error {
	kind, ok := appAccessOf[method]
	if r.appACLs == nil || !ok || app == nil {
		return nil
	}
	user := userOf(ctx)
	id := AppIDString(app)
	if allowed, _ := r.appACLs.allowed(ctx, user, id, kind); allowed {
		return nil
	}
	short := hadoopipc.ShortName(user)
	r.metrics.appACLDenied.WithLabelValues(method).Inc()
	if kind == modifyApp {
		// ClientRMService wraps java.security.AccessControlException (not
		// Hadoop's subclass) in a YarnException; the Java client shows
		// "YarnException: java.security.AccessControlException: User ...".
		return hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s: User %s cannot perform operation %s on %s",
			classJavaAccessControl, short, kind, id)
	}
	if q, ok := req.(*yarnpb.GetApplicationAttemptReportRequestProto); ok {
		// Hadoop's spelling, kept: clients may match on it.
		return hadoopipc.Errorf(hadoopipc.ClassYarnException, "User %s does not have privilage to see this attempt %s",
			short, AttemptIDString(q.GetApplicationAttemptId()))
	}
	return hadoopipc.Errorf(hadoopipc.ClassYarnException, "User %s does not have privilage to see this application %s", short, id)
}

// mayView reports whether the caller may view app, as far as the router
// knows (true when ACLs are off or the app's ACLs are unknown).
func (r *Router) mayView(ctx context.Context, app *yarnpb.ApplicationIdProto) bool {
	if r.appACLs == nil {
		return true
	}
	ok, _ := r.appACLs.allowed(ctx, userOf(ctx), AppIDString(app), viewApp)
	return ok
}

// filterReport hides from a caller without VIEW_APP what the RM hides
// (RMAppImpl.createAndGetApplicationReport without access): the AM's
// address and tokens, tracking URLs, diagnostics, progress and usage.
func (r *Router) filterReport(ctx context.Context, rep *yarnpb.ApplicationReportProto) {
	if r.appACLs == nil || rep == nil {
		return
	}
	if ok, _ := r.appACLs.allowed(ctx, userOf(ctx), AppIDString(rep.GetApplicationId()), viewApp); ok {
		return
	}
	const na = "N/A"
	rep.Host, rep.RpcPort = proto.String(na), proto.Int32(-1)
	rep.ClientToAmToken, rep.AmRmToken = nil, nil
	rep.TrackingUrl, rep.OriginalTrackingUrl, rep.Diagnostics = proto.String(na), proto.String(na), proto.String(na)
	rep.Progress = proto.Float32(0)
	rep.CurrentApplicationAttemptId = nil
	rep.LogAggregationStatus = nil
	unknown := func() *yarnpb.ResourceProto {
		return &yarnpb.ResourceProto{Memory: proto.Int64(-1), VirtualCores: proto.Int32(-1)}
	}
	rep.AppResource_Usage = &yarnpb.ApplicationResourceUsageReportProto{
		NumUsedContainers: proto.Int32(-1), NumReservedContainers: proto.Int32(-1),
		UsedResources: unknown(), ReservedResources: unknown(), NeededResources: unknown(),
	}
}

// filterAppInfo is filterReport for a REST document: what RMWebServices'
// AppInfo leaves out for a caller without VIEW_APP (AM addresses and logs,
// tracking URL, diagnostics, progress, usage).
func (r *Router) filterAppInfo(ctx context.Context, a *rmrest.App) {
	if r.appACLs == nil {
		return
	}
	if ok, _ := r.appACLs.allowed(ctx, userOf(ctx), a.ID, viewApp); ok {
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
	return &restError{status: http.StatusForbidden, class: rmrest.ClassForbidden,
		//lint:ignore ST1005 the text of the RM's own AccessControlException
		err: fmt.Errorf("Unauthorized attempt to kill appid %s by remote user %s", app, hadoopipc.ShortName(user))}
}
