package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/appacl"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
)

// mutating lists the calls that get an audit log line (Hadoop's
// RouterAuditLogger covers the same set).
var mutating = map[string]bool{
	"getNewApplication": true, "submitApplication": true, "forceKillApplication": true,
	"failApplicationAttempt": true, "moveApplicationAcrossQueues": true,
	"updateApplicationPriority": true, "updateApplicationTimeouts": true, "signalToContainer": true,
	"getNewReservation": true, "submitReservation": true, "updateReservation": true, "deleteReservation": true,
	"getDelegationToken": true, "renewDelegationToken": true, "cancelDelegationToken": true,
}

// audit carries what a handler learned (target sub-cluster, app) to the
// audit line written by the wrapper (fed.Audit: REST's handlers fill in
// the same record).
type audit = fed.Audit

func auditOf(ctx context.Context) *audit { return fed.AuditOf(ctx) }

// handle wraps a routing function as an IPC method: metrics, audit line and
// translation of router errors into Hadoop exception classes.
func handle[Req, Resp proto.Message](r *Router, name string, newReq func() Req, h func(context.Context, Req) (Resp, error)) hadoopipc.Method {
	// Resolve the labelled series once, not per call.
	ok, fail := r.metrics.requests.WithLabelValues(name, "ok"), r.metrics.requests.WithLabelValues(name, "error")
	lat := r.metrics.latency.WithLabelValues(name)
	audited := mutating[name]
	return hadoopipc.NewMethod(name, newReq, func(ctx context.Context, req Req) (Resp, error) {
		start := time.Now()
		ctx, a := fed.WithAudit(ctx)
		resp, err := h(ctx, req)
		lat.Observe(time.Since(start).Seconds())
		if err != nil {
			fail.Inc()
		} else {
			ok.Inc()
		}
		if audited {
			r.auditLog(ctx, name, a, err)
		}
		if err != nil {
			var zero Resp
			return zero, toRemote(err)
		}
		return resp, nil
	})
}

func (r *Router) auditLog(ctx context.Context, op string, a *audit, err error) {
	// Typed attributes into a stack array: no []any and no boxing per call.
	if !r.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	var buf [7]slog.Attr
	attrs := append(buf[:0], slog.String("user", u.Name), slog.String("operation", op), slog.String("target", "RouterClientRMService"))
	if a.App != "" {
		attrs = append(attrs, slog.String("app", a.App))
	}
	if a.SC != "" {
		attrs = append(attrs, slog.String("subcluster", string(a.SC)))
	}
	if err != nil {
		attrs = append(attrs, slog.String("result", "FAILURE"), slog.String("err", err.Error()))
	} else {
		attrs = append(attrs, slog.String("result", "SUCCESS"))
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
}

// toRemote translates at the IPC edge. An RM's own exception keeps its
// Java class (clients rebuild typed exceptions from it) with the sub-cluster
// named in the message; router errors map to the closest Hadoop class.
func toRemote(err error) *hadoopipc.RemoteError {
	if errors.Is(err, ErrSubClusterDown) {
		// StandbyException is what Hadoop's RMProxy retries for as long as
		// it would wait for an RM connection, in both of its policies:
		// non-HA retries it (like IOException) up to
		// yarn.resourcemanager.connect.max-wait.ms; HA fails over (to the
		// next router, which answers alike) up to its failover limit.
		// RetriableException would be retried only once by an HA client,
		// and a YarnException not at all.
		return hadoopipc.Errorf(hadoopipc.ClassStandby, "%v", err)
	}
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		out := &hadoopipc.RemoteError{Class: re.Class, Message: re.Message, Code: re.Code}
		var sce *SubClusterError
		if errors.As(err, &sce) {
			out.Message = fmt.Sprintf("sub-cluster %s: %s", sce.SubCluster, re.Message)
		}
		if re.Fatal {
			// The RM closed its connection to us; our client's stays up.
			out.Code = commonpb.RpcResponseHeaderProto_ERROR_APPLICATION
		}
		if out.Class == "" {
			out.Class = hadoopipc.ClassYarnException
		}
		return out
	}
	class := hadoopipc.ClassYarnException
	switch {
	case errors.Is(err, ErrAppNotFound):
		class = hadoopipc.ClassApplicationNotFound
	case errors.Is(err, ErrUnsupported):
		class = hadoopipc.ClassUnsupportedOperation
	case errors.Is(err, errCrash), errors.Is(err, context.DeadlineExceeded):
		class = hadoopipc.ClassIOException
	}
	return hadoopipc.Errorf(class, "%v", err)
}

// clientProtocol is ApplicationClientProtocol, every method
// (TestEveryMethodServed checks it against the service descriptor).
func (r *Router) clientProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationClient,
		Version: 1,
		Methods: []hadoopipc.Method{
			// Any sub-cluster.
			handle(r, "getNewApplication", newMsg[yarnpb.GetNewApplicationRequestProto], r.getNewApplication),
			handle(r, "getNewReservation", newMsg[yarnpb.GetNewReservationRequestProto], r.getNewReservation),
			// Policy + home.
			handle(r, "submitApplication", newMsg[yarnpb.SubmitApplicationRequestProto], r.submitApplication),
			handle(r, "submitReservation", newMsg[yarnpb.ReservationSubmissionRequestProto], r.submitReservation),
			// Home of the application.
			handle(r, "getApplicationReport", newMsg[yarnpb.GetApplicationReportRequestProto], r.getApplicationReport),
			handle(r, "forceKillApplication", newMsg[yarnpb.KillApplicationRequestProto], r.forceKillApplication), // + its UAMs (uam.go)
			homeCall(r, "failApplicationAttempt", newMsg[yarnpb.FailApplicationAttemptRequestProto], func(q *yarnpb.FailApplicationAttemptRequestProto) *yarnpb.ApplicationIdProto {
				return q.GetApplicationAttemptId().GetApplicationId()
			}, newMsg[yarnpb.FailApplicationAttemptResponseProto]),
			homeCall(r, "moveApplicationAcrossQueues", newMsg[yarnpb.MoveApplicationAcrossQueuesRequestProto], (*yarnpb.MoveApplicationAcrossQueuesRequestProto).GetApplicationId, newMsg[yarnpb.MoveApplicationAcrossQueuesResponseProto]),
			homeCall(r, "getApplicationAttemptReport", newMsg[yarnpb.GetApplicationAttemptReportRequestProto], func(q *yarnpb.GetApplicationAttemptReportRequestProto) *yarnpb.ApplicationIdProto {
				return q.GetApplicationAttemptId().GetApplicationId()
			}, newMsg[yarnpb.GetApplicationAttemptReportResponseProto]),
			homeCall(r, "getApplicationAttempts", newMsg[yarnpb.GetApplicationAttemptsRequestProto], (*yarnpb.GetApplicationAttemptsRequestProto).GetApplicationId, newMsg[yarnpb.GetApplicationAttemptsResponseProto]),
			homeCall(r, "getContainerReport", newMsg[yarnpb.GetContainerReportRequestProto], func(q *yarnpb.GetContainerReportRequestProto) *yarnpb.ApplicationIdProto {
				return yarnid.AppOfContainer(q.GetContainerId())
			}, newMsg[yarnpb.GetContainerReportResponseProto]),
			homeCall(r, "getContainers", newMsg[yarnpb.GetContainersRequestProto], func(q *yarnpb.GetContainersRequestProto) *yarnpb.ApplicationIdProto {
				return q.GetApplicationAttemptId().GetApplicationId()
			}, newMsg[yarnpb.GetContainersResponseProto]),
			homeCall(r, "updateApplicationPriority", newMsg[yarnpb.UpdateApplicationPriorityRequestProto], (*yarnpb.UpdateApplicationPriorityRequestProto).GetApplicationId, newMsg[yarnpb.UpdateApplicationPriorityResponseProto]),
			homeCall(r, "signalToContainer", newMsg[yarnpb.SignalContainerRequestProto], func(q *yarnpb.SignalContainerRequestProto) *yarnpb.ApplicationIdProto {
				return yarnid.AppOfContainer(q.GetContainerId())
			}, newMsg[yarnpb.SignalContainerResponseProto]),
			homeCall(r, "updateApplicationTimeouts", newMsg[yarnpb.UpdateApplicationTimeoutsRequestProto], (*yarnpb.UpdateApplicationTimeoutsRequestProto).GetApplicationId, newMsg[yarnpb.UpdateApplicationTimeoutsResponseProto]),
			// Home of the reservation.
			handle(r, "updateReservation", newMsg[yarnpb.ReservationUpdateRequestProto], r.updateReservation),
			handle(r, "deleteReservation", newMsg[yarnpb.ReservationDeleteRequestProto], r.deleteReservation),
			// Fan-out and merge.
			handle(r, "getApplications", newMsg[yarnpb.GetApplicationsRequestProto], r.getApplications),
			fanCall(r, "getClusterMetrics", newMsg[yarnpb.GetClusterMetricsRequestProto], newMsg[yarnpb.GetClusterMetricsResponseProto], merge.ClusterMetrics),
			fanCall(r, "getClusterNodes", newMsg[yarnpb.GetClusterNodesRequestProto], newMsg[yarnpb.GetClusterNodesResponseProto], merge.ClusterNodes),
			handle(r, "getQueueInfo", newMsg[yarnpb.GetQueueInfoRequestProto], r.getQueueInfo),
			fanCall(r, "getQueueUserAcls", newMsg[yarnpb.GetQueueUserAclsInfoRequestProto], newMsg[yarnpb.GetQueueUserAclsInfoResponseProto], merge.QueueUserAcls),
			fanCall(r, "listReservations", newMsg[yarnpb.ReservationListRequestProto], newMsg[yarnpb.ReservationListResponseProto], merge.Reservations),
			fanCall(r, "getNodeToLabels", newMsg[yarnpb.GetNodesToLabelsRequestProto], newMsg[yarnpb.GetNodesToLabelsResponseProto], merge.NodesToLabels),
			fanCall(r, "getLabelsToNodes", newMsg[yarnpb.GetLabelsToNodesRequestProto], newMsg[yarnpb.GetLabelsToNodesResponseProto], merge.LabelsToNodes),
			fanCall(r, "getClusterNodeLabels", newMsg[yarnpb.GetClusterNodeLabelsRequestProto], newMsg[yarnpb.GetClusterNodeLabelsResponseProto], merge.ClusterNodeLabels),
			fanCall(r, "getResourceProfiles", newMsg[yarnpb.GetAllResourceProfilesRequestProto], newMsg[yarnpb.GetAllResourceProfilesResponseProto], merge.ResourceProfiles),
			fanCall(r, "getResourceProfile", newMsg[yarnpb.GetResourceProfileRequestProto], newMsg[yarnpb.GetResourceProfileResponseProto], merge.ResourceProfile),
			fanCall(r, "getResourceTypeInfo", newMsg[yarnpb.GetAllResourceTypeInfoRequestProto], newMsg[yarnpb.GetAllResourceTypeInfoResponseProto], merge.ResourceTypeInfo),
			fanCall(r, "getClusterNodeAttributes", newMsg[yarnpb.GetClusterNodeAttributesRequestProto], newMsg[yarnpb.GetClusterNodeAttributesResponseProto], merge.ClusterNodeAttributes),
			fanCall(r, "getAttributesToNodes", newMsg[yarnpb.GetAttributesToNodesRequestProto], newMsg[yarnpb.GetAttributesToNodesResponseProto], merge.AttributesToNodes),
			fanCall(r, "getNodesToAttributes", newMsg[yarnpb.GetNodesToAttributesRequestProto], newMsg[yarnpb.GetNodesToAttributesResponseProto], merge.NodesToAttributes),
			// Router-issued delegation tokens (router/dtoken).
			handle(r, "getDelegationToken", newMsg[commonpb.GetDelegationTokenRequestProto], r.getDelegationToken),
			handle(r, "renewDelegationToken", newMsg[commonpb.RenewDelegationTokenRequestProto], r.renewDelegationToken),
			handle(r, "cancelDelegationToken", newMsg[commonpb.CancelDelegationTokenRequestProto], r.cancelDelegationToken),
		},
	}
}

// newMsg returns a constructor for an empty message of type T.
func newMsg[T any, PT interface {
	*T
	proto.Message
}]() PT {
	return PT(new(T))
}

func homeCall[Req, Resp proto.Message](r *Router, name string, newReq func() Req, appOf func(Req) *yarnpb.ApplicationIdProto, newResp func() Resp) hadoopipc.Method {
	return handle(r, name, newReq, func(ctx context.Context, req Req) (Resp, error) {
		resp := newResp()
		app := appOf(req)
		if app != nil {
			auditOf(ctx).App = yarnid.AppIDString(app)
		}
		if err := r.checkAppCall(ctx, name, app, req); err != nil {
			return resp, err
		}
		err := r.onHome(ctx, name, app, req, resp)
		return resp, err
	})
}

func fanCall[Req, Resp proto.Message](r *Router, name string, newReq func() Req, newResp func() Resp, combine func([]Resp) Resp) hadoopipc.Method {
	return handle(r, name, newReq, func(ctx context.Context, req Req) (Resp, error) {
		res, err := fanout(ctx, r, name, req, newResp, r.cfg.PartialResults)
		if err != nil {
			var zero Resp
			return zero, err
		}
		return combine(responses(res)), nil
	})
}

func (r *Router) getNewApplication(ctx context.Context, req *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
	resp, err := callAny(ctx, r, "getNewApplication", req, newMsg[yarnpb.GetNewApplicationResponseProto])
	if err == nil {
		auditOf(ctx).App = yarnid.AppIDString(resp.GetApplicationId())
	}
	return resp, err
}

// callAny calls method on any routable sub-cluster (onAny: the next one
// when one fails), with a fresh answer each try; the audit names the
// sub-cluster that answered.
func callAny[Resp proto.Message](ctx context.Context, r *Router, method string, req proto.Message, newResp func() Resp) (Resp, error) {
	var resp Resp
	err := r.onAny(ctx, method, func(sc SubClusterInfo) error {
		resp = newResp()
		if err := r.callSC(ctx, sc, method, req, resp); err != nil {
			return err
		}
		auditOf(ctx).SC = sc.ID
		return nil
	})
	return resp, err
}

func (r *Router) getApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	resp := &yarnpb.GetApplicationReportResponseProto{}
	err := r.onHome(ctx, "getApplicationReport", req.GetApplicationId(), req, resp)
	if rep := resp.GetApplicationReport(); err == nil && merge.MayHaveUAMs(rep) {
		// A spanning app's containers and usage include its UAMs' (uam.go).
		if home, _, herr := r.homeOf(ctx, req.GetApplicationId()); herr == nil {
			foldUAMParts(rep, r.uamParts(ctx, req.GetApplicationId(), home))
		}
	}
	r.filterReport(ctx, resp.GetApplicationReport())
	return resp, err
}

func (r *Router) getNewReservation(ctx context.Context, req *yarnpb.GetNewReservationRequestProto) (*yarnpb.GetNewReservationResponseProto, error) {
	return callAny(ctx, r, "getNewReservation", req, newMsg[yarnpb.GetNewReservationResponseProto])
}

// getQueueInfo fans out and merges, unless the request names one
// sub-cluster (Hadoop 3.4's GetQueueInfoRequest.subClusterId): then only
// that sub-cluster answers, and its reply says which it was.
func (r *Router) getQueueInfo(ctx context.Context, req *yarnpb.GetQueueInfoRequestProto) (*yarnpb.GetQueueInfoResponseProto, error) {
	if id := req.GetSubClusterId(); id != "" {
		sc, ok := r.members.get(SubClusterID(id))
		if !ok {
			return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "getQueueInfo: sub-cluster %s is not registered", id)
		}
		resp := &yarnpb.GetQueueInfoResponseProto{}
		if err := r.callSC(ctx, sc, "getQueueInfo", req, resp); err != nil {
			return nil, err
		}
		if resp.QueueInfo != nil {
			resp.QueueInfo.SubClusterId = proto.String(id)
		}
		return resp, nil
	}
	res, err := fanout(ctx, r, "getQueueInfo", req, newMsg[yarnpb.GetQueueInfoResponseProto], r.cfg.PartialResults)
	if err != nil {
		return nil, err
	}
	return merge.QueueInfo(responses(res)), nil
}

// getApplications fans out, folds UAMs into their home apps and applies the
// request's limit to the merged list (each RM applied it to its own part).
func (r *Router) getApplications(ctx context.Context, req *yarnpb.GetApplicationsRequestProto) (*yarnpb.GetApplicationsResponseProto, error) {
	res, err := fanout(ctx, r, "getApplications", req, newMsg[yarnpb.GetApplicationsResponseProto], r.cfg.PartialResults)
	if err != nil {
		return nil, err
	}
	out := r.mergeApplications(res)
	lctx := appacl.CacheOnly(ctx)
	for _, rep := range out.Applications {
		r.filterReport(lctx, rep)
	}
	if l := req.GetLimit(); l > 0 && int64(len(out.Applications)) > l {
		out.Applications = out.Applications[:l]
	}
	return out, nil
}
