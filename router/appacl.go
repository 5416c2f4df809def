package router

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/appacl"
)

// Application ACLs on the client-RM protocol: which call needs which
// access (the table below; REST's is rest/appacl.go), and the refusals
// and filtered reports ClientRMService sends. Who may do what is
// router/appacl.

// classJavaAccessControl is the JDK exception ClientRMService refuses
// MODIFY_APP with (measured against a real RM: e2e TestKerberizedRMDirect).
const classJavaAccessControl = "java.security.AccessControlException"

// appAccessOf is the access each per-application ApplicationClientProtocol
// call needs; calls not listed here are not per-application.
var appAccessOf = map[string]appacl.Kind{
	"forceKillApplication":        appacl.Modify,
	"failApplicationAttempt":      appacl.Modify,
	"moveApplicationAcrossQueues": appacl.Modify,
	"updateApplicationPriority":   appacl.Modify,
	"updateApplicationTimeouts":   appacl.Modify,
	"signalToContainer":           appacl.Modify,
	"getApplicationAttemptReport": appacl.View,
	"getApplicationAttempts":      appacl.View,
	"getContainerReport":          appacl.View,
	"getContainers":               appacl.View,
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
	user := hadoopipc.UserName(ctx)
	id := yarnid.AppIDString(app)
	if allowed, _ := r.appACLs.Allowed(ctx, user, id, kind); allowed {
		return nil
	}
	short := hadoopipc.ShortName(user)
	r.metrics.appACLDenied.WithLabelValues(method).Inc()
	if kind == appacl.Modify {
		// ClientRMService wraps java.security.AccessControlException (not
		// Hadoop's subclass) in a YarnException; the Java client shows
		// "YarnException: java.security.AccessControlException: User ...".
		return hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s: User %s cannot perform operation %s on %s",
			classJavaAccessControl, short, kind, id)
	}
	if q, ok := req.(*yarnpb.GetApplicationAttemptReportRequestProto); ok {
		// Hadoop's spelling, kept: clients may match on it.
		return hadoopipc.Errorf(hadoopipc.ClassYarnException, "User %s does not have privilage to see this attempt %s",
			short, yarnid.AttemptIDString(q.GetApplicationAttemptId()))
	}
	return hadoopipc.Errorf(hadoopipc.ClassYarnException, "User %s does not have privilage to see this application %s", short, id)
}

// filterReport hides from a caller without VIEW_APP what the RM hides
// (RMAppImpl.createAndGetApplicationReport without access): the AM's
// address and tokens, tracking URLs, diagnostics, progress and usage.
func (r *Router) filterReport(ctx context.Context, rep *yarnpb.ApplicationReportProto) {
	if r.appACLs == nil || rep == nil {
		return
	}
	if ok, _ := r.appACLs.Allowed(ctx, hadoopipc.UserName(ctx), yarnid.AppIDString(rep.GetApplicationId()), appacl.View); ok {
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
