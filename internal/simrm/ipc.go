package simrm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmdefaults"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// The Hadoop IPC binding: ApplicationClientProtocol and
// ApplicationMasterProtocol handlers that translate yarnpb messages to the
// core's types and the core's sentinel errors to Java exception classes.

// errorClasses is the one place the core's sentinel errors become the Java
// exception classes a Hadoop RM throws; anything else is a YarnException.
var errorClasses = hadoopipc.ClassMap{
	{Err: ErrApplicationNotFound, Class: hadoopipc.ClassApplicationNotFound},
	{Err: ErrAttemptNotFound, Class: hadoopipc.ClassApplicationAttemptNotFound},
	{Err: ErrContainerNotFound, Class: hadoopipc.ClassContainerNotFound},
	{Err: ErrInvalidAMRequest, Class: hadoopipc.ClassInvalidApplicationMasterRequest},
	{Err: ErrAMNotRegistered, Class: hadoopipc.ClassApplicationMasterNotRegistered},
	{Err: ErrInvalidResourceRequest, Class: hadoopipc.ClassInvalidResourceRequest},
	{Err: ErrInvalidContainerRelease, Class: hadoopipc.ClassInvalidContainerRelease},
	{Err: ErrAccessDenied, Class: hadoopipc.ClassAccessControl},
	{Err: ErrStandby, Class: hadoopipc.ClassStandby},
	{Err: ErrInjected, Class: hadoopipc.ClassIOException},
}

// unsupported answers a method simrm does not simulate. A Hadoop RM answers
// disabled features (reservations without a reservation system, resource
// profiles when off) with a YarnException, which Java callers handle as a
// checked exception; java.lang.UnsupportedOperationException would surface
// as an unchecked RuntimeException in the client instead.
func unsupported[Req, Resp proto.Message](name string, newReq func() Req) hadoopipc.Method {
	return unsupportedMsg[Req, Resp](name, newReq, name+" is not supported by simrm, a ResourceManager simulator")
}

// unsupportedMsg answers with a given message, e.g. the one a Hadoop RM
// without a reservation system sends.
func unsupportedMsg[Req, Resp proto.Message](name string, newReq func() Req, msg string) hadoopipc.Method {
	return hadoopipc.NewMethod(name, newReq, func(context.Context, Req) (Resp, error) {
		var zero Resp
		return zero, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s", msg)
	})
}

const reservationsOff = "Reservation is not enabled. Please enable & try again"

func (r *RM) clientProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationClient,
		Version: 1,
		Errors:  errorClasses,
		Methods: append([]hadoopipc.Method{
			hadoopipc.NewMethod("getNewApplication", hadoopipc.NewOf[yarnpb.GetNewApplicationRequestProto](), r.getNewApplication),
			hadoopipc.NewMethod("submitApplication", hadoopipc.NewOf[yarnpb.SubmitApplicationRequestProto](), r.submitApplication),
			hadoopipc.NewMethod("getApplicationReport", hadoopipc.NewOf[yarnpb.GetApplicationReportRequestProto](), r.getApplicationReport),
			hadoopipc.NewMethod("getApplications", hadoopipc.NewOf[yarnpb.GetApplicationsRequestProto](), r.getApplications),
			hadoopipc.NewMethod("forceKillApplication", hadoopipc.NewOf[yarnpb.KillApplicationRequestProto](), r.forceKillApplication),
			hadoopipc.NewMethod("failApplicationAttempt", hadoopipc.NewOf[yarnpb.FailApplicationAttemptRequestProto](), r.failApplicationAttempt),
			hadoopipc.NewMethod("getClusterMetrics", hadoopipc.NewOf[yarnpb.GetClusterMetricsRequestProto](), r.getClusterMetrics),
			hadoopipc.NewMethod("getClusterNodes", hadoopipc.NewOf[yarnpb.GetClusterNodesRequestProto](), r.getClusterNodes),
			hadoopipc.NewMethod("getQueueInfo", hadoopipc.NewOf[yarnpb.GetQueueInfoRequestProto](), r.getQueueInfo),
			hadoopipc.NewMethod("getQueueUserAcls", hadoopipc.NewOf[yarnpb.GetQueueUserAclsInfoRequestProto](), r.getQueueUserAcls),
			hadoopipc.NewMethod("moveApplicationAcrossQueues", hadoopipc.NewOf[yarnpb.MoveApplicationAcrossQueuesRequestProto](), r.moveApplication),
			hadoopipc.NewMethod("updateApplicationPriority", hadoopipc.NewOf[yarnpb.UpdateApplicationPriorityRequestProto](), r.updatePriority),
			hadoopipc.NewMethod("getApplicationAttemptReport", hadoopipc.NewOf[yarnpb.GetApplicationAttemptReportRequestProto](), r.getAttemptReport),
			hadoopipc.NewMethod("getApplicationAttempts", hadoopipc.NewOf[yarnpb.GetApplicationAttemptsRequestProto](), r.getAttempts),
			hadoopipc.NewMethod("getContainerReport", hadoopipc.NewOf[yarnpb.GetContainerReportRequestProto](), r.getContainerReport),
			hadoopipc.NewMethod("getContainers", hadoopipc.NewOf[yarnpb.GetContainersRequestProto](), r.getContainers),
			// Labels are disabled in simrm, which Hadoop answers with empty maps.
			hadoopipc.NewMethod("getNodeToLabels", hadoopipc.NewOf[yarnpb.GetNodesToLabelsRequestProto](), func(context.Context, *yarnpb.GetNodesToLabelsRequestProto) (*yarnpb.GetNodesToLabelsResponseProto, error) {
				return &yarnpb.GetNodesToLabelsResponseProto{}, nil
			}),
			hadoopipc.NewMethod("getLabelsToNodes", hadoopipc.NewOf[yarnpb.GetLabelsToNodesRequestProto](), func(context.Context, *yarnpb.GetLabelsToNodesRequestProto) (*yarnpb.GetLabelsToNodesResponseProto, error) {
				return &yarnpb.GetLabelsToNodesResponseProto{}, nil
			}),
			hadoopipc.NewMethod("getClusterNodeLabels", hadoopipc.NewOf[yarnpb.GetClusterNodeLabelsRequestProto](), func(context.Context, *yarnpb.GetClusterNodeLabelsRequestProto) (*yarnpb.GetClusterNodeLabelsResponseProto, error) {
				return &yarnpb.GetClusterNodeLabelsResponseProto{}, nil
			}),
			unsupported[*commonpb.GetDelegationTokenRequestProto, *commonpb.GetDelegationTokenResponseProto]("getDelegationToken", hadoopipc.NewOf[commonpb.GetDelegationTokenRequestProto]()),
			unsupported[*commonpb.RenewDelegationTokenRequestProto, *commonpb.RenewDelegationTokenResponseProto]("renewDelegationToken", hadoopipc.NewOf[commonpb.RenewDelegationTokenRequestProto]()),
			unsupported[*commonpb.CancelDelegationTokenRequestProto, *commonpb.CancelDelegationTokenResponseProto]("cancelDelegationToken", hadoopipc.NewOf[commonpb.CancelDelegationTokenRequestProto]()),
			unsupportedMsg[*yarnpb.GetNewReservationRequestProto, *yarnpb.GetNewReservationResponseProto]("getNewReservation", hadoopipc.NewOf[yarnpb.GetNewReservationRequestProto](), reservationsOff),
			unsupportedMsg[*yarnpb.ReservationSubmissionRequestProto, *yarnpb.ReservationSubmissionResponseProto]("submitReservation", hadoopipc.NewOf[yarnpb.ReservationSubmissionRequestProto](), reservationsOff),
			unsupportedMsg[*yarnpb.ReservationUpdateRequestProto, *yarnpb.ReservationUpdateResponseProto]("updateReservation", hadoopipc.NewOf[yarnpb.ReservationUpdateRequestProto](), reservationsOff),
			unsupportedMsg[*yarnpb.ReservationDeleteRequestProto, *yarnpb.ReservationDeleteResponseProto]("deleteReservation", hadoopipc.NewOf[yarnpb.ReservationDeleteRequestProto](), reservationsOff),
			unsupportedMsg[*yarnpb.ReservationListRequestProto, *yarnpb.ReservationListResponseProto]("listReservations", hadoopipc.NewOf[yarnpb.ReservationListRequestProto](), reservationsOff),
			unsupported[*yarnpb.SignalContainerRequestProto, *yarnpb.SignalContainerResponseProto]("signalToContainer", hadoopipc.NewOf[yarnpb.SignalContainerRequestProto]()),
			unsupported[*yarnpb.UpdateApplicationTimeoutsRequestProto, *yarnpb.UpdateApplicationTimeoutsResponseProto]("updateApplicationTimeouts", hadoopipc.NewOf[yarnpb.UpdateApplicationTimeoutsRequestProto]()),
			// No node has attributes: the answers of an RM without any.
			hadoopipc.NewMethod("getClusterNodeAttributes", hadoopipc.NewOf[yarnpb.GetClusterNodeAttributesRequestProto](), func(context.Context, *yarnpb.GetClusterNodeAttributesRequestProto) (*yarnpb.GetClusterNodeAttributesResponseProto, error) {
				return &yarnpb.GetClusterNodeAttributesResponseProto{}, nil
			}),
			hadoopipc.NewMethod("getAttributesToNodes", hadoopipc.NewOf[yarnpb.GetAttributesToNodesRequestProto](), func(context.Context, *yarnpb.GetAttributesToNodesRequestProto) (*yarnpb.GetAttributesToNodesResponseProto, error) {
				return &yarnpb.GetAttributesToNodesResponseProto{}, nil
			}),
			hadoopipc.NewMethod("getNodesToAttributes", hadoopipc.NewOf[yarnpb.GetNodesToAttributesRequestProto](), func(context.Context, *yarnpb.GetNodesToAttributesRequestProto) (*yarnpb.GetNodesToAttributesResponseProto, error) {
				return &yarnpb.GetNodesToAttributesResponseProto{}, nil
			}),
		}, rmdefaults.ClientMethods()...),
	}
}

func (r *RM) masterProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationMaster,
		Version: 1,
		Errors:  errorClasses,
		Methods: []hadoopipc.Method{
			hadoopipc.NewMethod("registerApplicationMaster", hadoopipc.NewOf[yarnpb.RegisterApplicationMasterRequestProto](), r.registerAM),
			hadoopipc.NewMethod("allocate", hadoopipc.NewOf[yarnpb.AllocateRequestProto](), r.allocate),
			hadoopipc.NewMethod("finishApplicationMaster", hadoopipc.NewOf[yarnpb.FinishApplicationMasterRequestProto](), r.finishAM),
		},
	}
}

func needApp(p *yarnpb.ApplicationIdProto) (AppID, error) {
	if p == nil {
		return AppID{}, hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	return appFromPB(p), nil
}

// ---- ApplicationClientProtocol ----

func (r *RM) getNewApplication(ctx context.Context, _ *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
	id, maxCap := r.core().NewApplication()
	return &yarnpb.GetNewApplicationResponseProto{ApplicationId: appPB(id), MaximumCapability: resourcePB(maxCap)}, nil
}

func (r *RM) submitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
	if err := r.submitContext(req.GetApplicationSubmissionContext(), hadoopipc.UserName(ctx)); err != nil {
		return nil, err
	}
	return &yarnpb.SubmitApplicationResponseProto{}, nil
}

// submitContext is ClientRMService.submitApplication for IPC and REST
// (rest_submit.go) alike.
func (r *RM) submitContext(sc *yarnpb.ApplicationSubmissionContextProto, user string) error {
	if sc == nil || sc.ApplicationId == nil {
		return hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	sub := SubmitRequest{
		ID: appFromPB(sc.ApplicationId), Name: sc.GetApplicationName(), Queue: sc.GetQueue(),
		Type: sc.GetApplicationType(), Tags: sc.GetApplicationTags(), Priority: sc.GetPriority().GetPriority(),
		Unmanaged: sc.GetUnmanagedAm(), AMResource: resourceFromPB(sc.GetResource()),
		MaxAttempts: sc.GetMaxAppAttempts(), KeepContainers: sc.GetKeepContainersAcrossApplicationAttempts(),
		User: user, AMNodeLabel: sc.GetNodeLabelExpression(),
	}
	// Hadoop 3 clients send the AM resource as am_container_resource_request
	// (the ANY request); the legacy resource field may be absent.
	for _, rr := range sc.GetAmContainerResourceRequest() {
		if rr.GetResourceName() == AnyResource || rr.GetResourceName() == "" {
			sub.AMResource = resourceFromPB(rr.GetCapability())
			if rr.GetNodeLabelExpression() != "" {
				sub.AMNodeLabel = rr.GetNodeLabelExpression()
			}
		}
	}
	if sc.GetResource() == nil && len(sc.GetAmContainerResourceRequest()) == 0 && !sub.Unmanaged {
		sub.AMResource = r.cfg.MinAllocation
	}
	return r.core().Submit(sub)
}

func (r *RM) getApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	rep, err := r.core().AppReport(id)
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: r.appReportPB(&rep, hadoopipc.UserName(ctx))}, nil
}

func (r *RM) getApplications(ctx context.Context, req *yarnpb.GetApplicationsRequestProto) (*yarnpb.GetApplicationsResponseProto, error) {
	f := AppFilter{
		Types: req.GetApplicationTypes(), Users: req.GetUsers(), Queues: req.GetQueues(),
		Tags: req.GetApplicationTags(), Name: req.GetName(), Limit: req.GetLimit(),
		StartBegin: req.GetStartBegin(), StartEnd: req.GetStartEnd(),
		FinishBegin: req.GetFinishBegin(), FinishEnd: req.GetFinishEnd(),
	}
	// Java sends Long.MAX_VALUE for "no bound"; that is what 0 means here.
	if f.StartEnd == maxInt64 {
		f.StartEnd = 0
	}
	if f.FinishEnd == maxInt64 {
		f.FinishEnd = 0
	}
	if f.Limit == maxInt64 {
		f.Limit = 0
	}
	for _, s := range req.GetApplicationStates() {
		f.States = append(f.States, AppState(s))
	}
	if req.GetScope() == yarnpb.ApplicationsRequestScopeProto_OWN {
		f.OwnUser = hadoopipc.UserName(ctx)
	}
	reps := r.core().Apps(f)
	out := &yarnpb.GetApplicationsResponseProto{Applications: make([]*yarnpb.ApplicationReportProto, 0, len(reps))}
	for i := range reps {
		out.Applications = append(out.Applications, r.appReportPB(&reps[i], hadoopipc.UserName(ctx)))
	}
	return out, nil
}

const maxInt64 = int64(^uint64(0) >> 1)

func (r *RM) forceKillApplication(ctx context.Context, req *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	done, err := r.core().Kill(id, hadoopipc.UserName(ctx), req.GetDiagnostics())
	if err != nil {
		return nil, err
	}
	return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(done)}, nil
}

func (r *RM) failApplicationAttempt(ctx context.Context, req *yarnpb.FailApplicationAttemptRequestProto) (*yarnpb.FailApplicationAttemptResponseProto, error) {
	if req.ApplicationAttemptId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ApplicationAttemptId is not provided")
	}
	id := attemptFromPB(req.ApplicationAttemptId)
	if err := r.core().FailAttempt(id, fmt.Sprintf("Attempt failed by user %s", hadoopipc.UserName(ctx))); err != nil {
		return nil, err
	}
	return &yarnpb.FailApplicationAttemptResponseProto{}, nil
}

func (r *RM) getClusterMetrics(ctx context.Context, _ *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
	_, active, lost := r.core().NodeCounts()
	zero := proto.Int32(0)
	// num_node_managers counts the active nodes (the RM's RMNodes map);
	// lost ones move to the inactive set.
	return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{
		NumNodeManagers: proto.Int32(active), NumActiveNms: proto.Int32(active), NumDecommissionedNms: zero,
		NumLostNms: proto.Int32(lost), NumUnhealthyNms: zero, NumRebootedNms: zero, NumDecommissioningNms: zero, NumShutdownNms: zero,
	}}, nil
}

func (r *RM) getClusterNodes(ctx context.Context, req *yarnpb.GetClusterNodesRequestProto) (*yarnpb.GetClusterNodesResponseProto, error) {
	// No states means all of them, as ClientRMService treats an empty set.
	want := map[string]bool{}
	for _, s := range req.GetNodeStates() {
		want[strings.TrimPrefix(s.String(), "NS_")] = true
	}
	nodes := r.core().Nodes()
	out := &yarnpb.GetClusterNodesResponseProto{NodeReports: make([]*yarnpb.NodeReportProto, 0, len(nodes))}
	for i := range nodes {
		if len(want) == 0 || want[nodes[i].State] {
			out.NodeReports = append(out.NodeReports, nodeReportPB(&nodes[i]))
		}
	}
	return out, nil
}

func nodeReportPB(n *NodeReport) *yarnpb.NodeReportProto {
	return &yarnpb.NodeReportProto{
		NodeId: nodePB(n.ID), HttpAddress: proto.String(n.HTTPAddress), RackName: proto.String(n.Rack),
		Used: resourcePB(n.Used), Capability: resourcePB(n.Total), NumContainers: proto.Int32(n.NumContainers),
		NodeState: yarnpb.NodeStateProto(yarnpb.NodeStateProto_value["NS_"+n.State]).Enum(), HealthReport: proto.String(n.HealthReport),
		LastHealthReportTime: proto.Int64(n.LastHealthUpdate),
	}
}

func (r *RM) getQueueInfo(ctx context.Context, req *yarnpb.GetQueueInfoRequestProto) (*yarnpb.GetQueueInfoResponseProto, error) {
	q, err := r.core().Queue(req.GetQueueName(), req.GetIncludeApplications())
	if errors.Is(err, ErrQueueNotFound) {
		// ClientRMService logs the scheduler's IOException and answers an
		// empty response (YarnClient.getQueueInfo then returns null).
		return &yarnpb.GetQueueInfoResponseProto{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetQueueInfoResponseProto{QueueInfo: r.queueInfoPB(&q, req.GetIncludeChildQueues(), req.GetRecursive(), req.GetIncludeApplications(), hadoopipc.UserName(ctx))}, nil
}

func (r *RM) queueInfoPB(q *QueueReport, children, recursive, apps bool, caller string) *yarnpb.QueueInfoProto {
	path := "root"
	if q.Name != "root" {
		path = "root." + q.Name
	}
	out := &yarnpb.QueueInfoProto{
		QueueName: proto.String(q.Name), QueuePath: proto.String(path), Capacity: proto.Float32(q.Capacity),
		MaximumCapacity: proto.Float32(q.MaxCapacity), CurrentCapacity: proto.Float32(q.CurrentCapacity),
		State: yarnpb.QueueStateProto_Q_RUNNING.Enum(), SchedulerType: proto.String("CapacityScheduler"),
		Weight: proto.Float32(-1), MaxParallelApps: proto.Int32(int32(^uint32(0) >> 1)),
		QueueStatistics: &yarnpb.QueueStatisticsProto{
			NumAppsSubmitted: proto.Int64(int64(q.NumApps)), NumAppsRunning: proto.Int64(int64(q.NumActive)),
			NumAppsPending: proto.Int64(int64(q.NumPending)), AllocatedMemoryMB: proto.Int64(q.Used.MemoryMB),
			AllocatedVCores: proto.Int64(int64(q.Used.VCores)), AllocatedContainers: proto.Int64(int64(q.NumContainers)),
			PendingContainers: proto.Int64(int64(q.PendingContainers)),
		},
		SubClusterId: proto.String(r.cfg.ClusterID),
	}
	if apps {
		for _, id := range q.Apps {
			if rep, err := r.core().AppReport(id); err == nil {
				out.Applications = append(out.Applications, r.appReportPB(&rep, caller))
			}
		}
	}
	if children {
		for i := range q.Children {
			out.ChildQueues = append(out.ChildQueues, r.queueInfoPB(&q.Children[i], recursive, recursive, apps, caller))
		}
	}
	return out
}

func (r *RM) getQueueUserAcls(ctx context.Context, _ *yarnpb.GetQueueUserAclsInfoRequestProto) (*yarnpb.GetQueueUserAclsInfoResponseProto, error) {
	// ACLs are off (yarn.acl.enable=false, Hadoop's default): everyone may
	// submit to and administer every queue.
	acls := []yarnpb.QueueACLProto{yarnpb.QueueACLProto_QACL_SUBMIT_APPLICATIONS, yarnpb.QueueACLProto_QACL_ADMINISTER_QUEUE}
	out := &yarnpb.GetQueueUserAclsInfoResponseProto{}
	for _, name := range append([]string{"root"}, r.core().QueueNames()...) {
		out.QueueUserAcls = append(out.QueueUserAcls, &yarnpb.QueueUserACLInfoProto{QueueName: proto.String(name), UserAcls: acls})
	}
	return out, nil
}

func (r *RM) moveApplication(ctx context.Context, req *yarnpb.MoveApplicationAcrossQueuesRequestProto) (*yarnpb.MoveApplicationAcrossQueuesResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	if err := r.core().Move(id, req.GetTargetQueue(), hadoopipc.UserName(ctx)); err != nil {
		return nil, err
	}
	return &yarnpb.MoveApplicationAcrossQueuesResponseProto{}, nil
}

func (r *RM) updatePriority(ctx context.Context, req *yarnpb.UpdateApplicationPriorityRequestProto) (*yarnpb.UpdateApplicationPriorityResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	p, err := r.core().UpdatePriority(id, req.GetApplicationPriority().GetPriority())
	if err != nil {
		return nil, err
	}
	return &yarnpb.UpdateApplicationPriorityResponseProto{ApplicationPriority: &yarnpb.PriorityProto{Priority: proto.Int32(p)}}, nil
}

func (r *RM) getAttemptReport(ctx context.Context, req *yarnpb.GetApplicationAttemptReportRequestProto) (*yarnpb.GetApplicationAttemptReportResponseProto, error) {
	if req.ApplicationAttemptId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ApplicationAttemptId is not provided")
	}
	rep, err := r.core().Attempt(attemptFromPB(req.ApplicationAttemptId))
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: attemptReportPB(&rep)}, nil
}

func (r *RM) getAttempts(ctx context.Context, req *yarnpb.GetApplicationAttemptsRequestProto) (*yarnpb.GetApplicationAttemptsResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	reps, err := r.core().Attempts(id)
	if err != nil {
		return nil, err
	}
	out := &yarnpb.GetApplicationAttemptsResponseProto{}
	for i := range reps {
		out.ApplicationAttempts = append(out.ApplicationAttempts, attemptReportPB(&reps[i]))
	}
	return out, nil
}

func attemptReportPB(a *AttemptReport) *yarnpb.ApplicationAttemptReportProto {
	out := &yarnpb.ApplicationAttemptReportProto{
		ApplicationAttemptId: attemptPB(a.ID), Host: proto.String(a.Host), RpcPort: proto.Int32(a.RPCPort),
		TrackingUrl: proto.String(a.TrackingURL), OriginalTrackingUrl: proto.String(a.TrackingURL),
		Diagnostics:                 proto.String(a.Diagnostics),
		YarnApplicationAttemptState: yarnpb.YarnApplicationAttemptStateProto(a.State).Enum(),
		StartTime:                   proto.Int64(a.Started), FinishTime: proto.Int64(a.Finish),
	}
	if a.AMContainer != nil {
		out.AmContainerId = containerPB(*a.AMContainer)
	}
	return out
}

func (r *RM) getContainerReport(ctx context.Context, req *yarnpb.GetContainerReportRequestProto) (*yarnpb.GetContainerReportResponseProto, error) {
	if req.ContainerId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ContainerId is not provided")
	}
	ci, err := r.core().Container(containerFromPB(req.ContainerId))
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetContainerReportResponseProto{ContainerReport: containerReportPB(&ci)}, nil
}

func (r *RM) getContainers(ctx context.Context, req *yarnpb.GetContainersRequestProto) (*yarnpb.GetContainersResponseProto, error) {
	if req.ApplicationAttemptId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ApplicationAttemptId is not provided")
	}
	cis, err := r.core().Containers(attemptFromPB(req.ApplicationAttemptId))
	if err != nil {
		return nil, err
	}
	out := &yarnpb.GetContainersResponseProto{}
	for i := range cis {
		out.Containers = append(out.Containers, containerReportPB(&cis[i]))
	}
	return out, nil
}

func containerReportPB(c *ContainerInfo) *yarnpb.ContainerReportProto {
	return &yarnpb.ContainerReportProto{
		ContainerId: containerPB(c.ID), Resource: resourcePB(c.Resource), NodeId: nodePB(c.Node),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(c.Priority)}, CreationTime: proto.Int64(c.Created),
		FinishTime: proto.Int64(c.Finished), DiagnosticsInfo: proto.String(c.Diagnostics),
		LogUrl:              proto.String("http://" + c.NodeHTTPAddress + "/node/containerlogs/" + c.ID.String() + "/" + c.User),
		ContainerExitStatus: proto.Int32(c.ExitStatus), ContainerState: yarnpb.ContainerStateProto(c.State).Enum(),
		NodeHttpAddress: proto.String("http://" + c.NodeHTTPAddress),
	}
}

// appReportPB converts a report for caller; the AMRMToken goes to the
// application's owner only.
func (r *RM) appReportPB(a *AppReport, caller string) *yarnpb.ApplicationReportProto {
	tracking, orig := "N/A", "N/A"
	if a.TrackingURL != "" {
		orig = a.TrackingURL
	}
	if a.CurrentAttempt != nil && r.webAddr != "" {
		// The RM hands out its web proxy address, not the AM's own URL.
		tracking = "http://" + r.webAddr + "/proxy/" + a.ID.String() + "/"
	}
	out := &yarnpb.ApplicationReportProto{
		ApplicationId: appPB(a.ID), User: proto.String(a.User), Queue: proto.String(a.Queue),
		Name: proto.String(a.Name), Host: proto.String(a.Host), RpcPort: proto.Int32(a.RPCPort),
		YarnApplicationState: yarnpb.YarnApplicationStateProto(a.State).Enum(),
		TrackingUrl:          proto.String(tracking), OriginalTrackingUrl: proto.String(orig),
		Diagnostics: proto.String(a.Diagnostics), StartTime: proto.Int64(a.Started),
		FinishTime: proto.Int64(a.Finished), LaunchTime: proto.Int64(a.Launched), SubmitTime: proto.Int64(a.Submitted),
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto(a.FinalStatus).Enum(),
		Progress:               proto.Float32(a.Progress), ApplicationType: proto.String(a.Type),
		ApplicationTags: a.Tags, UnmanagedApplication: proto.Bool(a.Unmanaged),
		Priority:    &yarnpb.PriorityProto{Priority: proto.Int32(a.Priority)},
		RmClusterId: proto.String(r.cfg.ClusterID),
		AppResource_Usage: &yarnpb.ApplicationResourceUsageReportProto{
			NumUsedContainers: proto.Int32(a.RunningContainer), NumReservedContainers: proto.Int32(0),
			UsedResources: resourcePB(a.UsedResources), ReservedResources: resourcePB(Resource{}),
			NeededResources: resourcePB(a.NeededResources), MemorySeconds: proto.Int64(a.MemorySeconds),
			VcoreSeconds: proto.Int64(a.VCoreSeconds), QueueUsagePercentage: proto.Float32(a.QueueUsagePct),
			ClusterUsagePercentage: proto.Float32(a.ClusterUsagePct),
			PreemptedMemorySeconds: proto.Int64(0), PreemptedVcoreSeconds: proto.Int64(0),
		},
	}
	if a.CurrentAttempt != nil {
		out.CurrentApplicationAttemptId = attemptPB(*a.CurrentAttempt)
	}
	if a.AMNodeLabel != "" {
		out.AmNodeLabelExpression = proto.String(a.AMNodeLabel)
	}
	if a.AMRMToken != nil && caller == a.User {
		out.AmRmToken = tokenPB(a.AMRMToken)
	}
	return out
}

func tokenPB(t *Token) *commonpb.TokenProto {
	return &commonpb.TokenProto{Identifier: t.Identifier, Password: t.Password, Kind: proto.String(t.Kind), Service: proto.String(t.Service)}
}

// ---- ApplicationMasterProtocol ----

// amAttempt authorizes an AM call as YarnServerSecurityUtils.authorizeRequest
// does: the caller must have logged in with an AMRMToken, which names the
// attempt.
func (r *RM) amAttempt(ctx context.Context) (AttemptID, error) {
	u, ok := hadoopipc.UserFromContext(ctx)
	if !ok || u.AuthMethod != "TOKEN" || len(u.TokenID) == 0 {
		name := ""
		if ok {
			name = u.Name
		}
		return AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]; no AMRMToken found for user %s", name)
	}
	id, _, err := r.core().keys.checkAMRM(u.TokenID)
	if err != nil {
		return AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%v", err)
	}
	return id, nil
}

func (r *RM) registerAM(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	id, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := r.core().Register(id, RegisterRequest{Host: req.GetHost(), RPCPort: req.GetRpcPort(), TrackingURL: req.GetTrackingUrl()})
	if err != nil {
		return nil, err
	}
	out := &yarnpb.RegisterApplicationMasterResponseProto{
		MaximumCapability: resourcePB(resp.MaxCapability), Queue: proto.String(resp.Queue),
		SchedulerResourceTypes: []yarnpb.SchedulerResourceTypes{yarnpb.SchedulerResourceTypes_MEMORY, yarnpb.SchedulerResourceTypes_CPU},
		ResourceTypes:          rmdefaults.ResourceTypes(),
	}
	for i := range resp.ContainersFromPrevious {
		out.ContainersFromPreviousAttempts = append(out.ContainersFromPreviousAttempts, r.containerPB(&resp.ContainersFromPrevious[i]))
	}
	for _, n := range resp.NMTokenNodes {
		t := r.core().keys.nmToken(resp.Attempt, n, resp.User)
		out.NmTokensFromPreviousAttempts = append(out.NmTokensFromPreviousAttempts, &yarnpb.NMTokenProto{NodeId: nodePB(n), Token: tokenPB(&t)})
	}
	return out, nil
}

func (r *RM) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	id, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	creq := AllocateRequest{ResponseID: req.GetResponseId(), Progress: req.GetProgress(), TrackingURL: req.GetTrackingUrl(),
		SchedulingRequests: len(req.SchedulingRequests)}
	if len(req.Ask) > 0 {
		creq.Asks = make([]ResourceRequest, 0, len(req.Ask))
		for _, a := range req.Ask {
			creq.Asks = append(creq.Asks, ResourceRequest{
				Priority: a.GetPriority().GetPriority(), ResourceName: a.GetResourceName(),
				Capability: resourceFromPB(a.GetCapability()), NumContainers: a.GetNumContainers(),
				RelaxLocality: a.GetRelaxLocality(), AllocationRequestID: a.GetAllocationRequestId(),
				NodeLabel: a.GetNodeLabelExpression(),
			})
		}
	}
	for _, c := range req.Release {
		creq.Releases = append(creq.Releases, containerFromPB(c))
	}
	if bl := req.GetBlacklistRequest(); bl != nil {
		creq.BlacklistAdd, creq.BlacklistRemove = bl.GetBlacklistAdditions(), bl.GetBlacklistRemovals()
	}
	resp, err := r.core().Allocate(id, creq)
	if err != nil {
		return nil, err
	}
	return r.allocateResponsePB(resp), nil
}

// allocateResponsePB converts deterministically (token identifiers carry no
// wall-clock time of their own), so a resent response is byte-identical.
func (r *RM) allocateResponsePB(resp *AllocateResponse) *yarnpb.AllocateResponseProto {
	out := &yarnpb.AllocateResponseProto{
		ResponseId: proto.Int32(resp.ResponseID), Limit: resourcePB(resp.Available),
		NumClusterNodes:     proto.Int32(resp.NumClusterNodes),
		ApplicationPriority: &yarnpb.PriorityProto{Priority: proto.Int32(resp.Priority)},
	}
	if resp.Command != AMCommandNone {
		out.AMCommand = yarnpb.AMCommandProto(resp.Command).Enum()
	}
	for i := range resp.Allocated {
		out.AllocatedContainers = append(out.AllocatedContainers, r.containerPB(&resp.Allocated[i]))
	}
	for _, s := range resp.Completed {
		out.CompletedContainerStatuses = append(out.CompletedContainerStatuses, &yarnpb.ContainerStatusProto{
			ContainerId: containerPB(s.ID), State: yarnpb.ContainerStateProto(s.State).Enum(),
			Diagnostics: proto.String(s.Diagnostics), ExitStatus: proto.Int32(s.ExitStatus),
			Capability: resourcePB(s.Resource),
		})
	}
	for i := range resp.UpdatedNodes {
		out.UpdatedNodes = append(out.UpdatedNodes, nodeReportPB(&resp.UpdatedNodes[i]))
	}
	for _, n := range resp.NMTokenNodes {
		t := r.core().keys.nmToken(resp.Attempt, n, resp.User)
		out.NmTokens = append(out.NmTokens, &yarnpb.NMTokenProto{NodeId: nodePB(n), Token: tokenPB(&t)})
	}
	return out
}

// containerTokenLifetime is yarn.resourcemanager.rm.container-allocation.expiry-interval-ms.
const containerTokenLifetime = 10 * 60 * 1000

func (r *RM) containerPB(c *ContainerInfo) *yarnpb.ContainerProto {
	t := r.core().keys.containerToken(c, r.cfg.ClusterTimestamp, c.Created+containerTokenLifetime)
	return &yarnpb.ContainerProto{
		Id: containerPB(c.ID), NodeId: nodePB(c.Node), NodeHttpAddress: proto.String(c.NodeHTTPAddress),
		Resource: resourcePB(c.Resource), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(c.Priority)},
		ContainerToken: tokenPB(&t), ExecutionType: yarnpb.ExecutionTypeProto_GUARANTEED.Enum(),
		AllocationRequestId: proto.Int64(c.AllocationRequestID),
	}
}

func (r *RM) finishAM(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	id, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	done, err := r.core().Finish(id, FinishRequest{
		FinalStatus: FinalStatus(req.GetFinalApplicationStatus()), Diagnostics: req.GetDiagnostics(), TrackingURL: req.GetTrackingUrl(),
	})
	if err != nil {
		return nil, err
	}
	return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(done)}, nil
}

// AMRMSecrets returns the scheduler port's AMRMToken verifier, for
// in-process components that stand in for a SASL relay to this RM (the
// AMRMProxy in `yarnfed dev` and its bench): only a simulation can lend
// its master key; a real deployment relays the login instead.
func (r *RM) AMRMSecrets() hadoopipc.SecretManager { return amrmSecrets{r} }

// amrmSecrets is the scheduler port's hadoopipc.SecretManager: AMRMTokens
// of attempts the AMS knows (Hadoop's AMRMTokenSecretManager refuses tokens
// of attempts it has forgotten).
type amrmSecrets struct{ r *RM }

func (s amrmSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	if s.r.Standby() {
		return nil, "", hadoopipc.Errorf(hadoopipc.ClassStandby, "Operation category READ is not supported in state standby")
	}
	c := s.r.core()
	id, pw, err := c.keys.checkAMRM(identifier)
	if err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	at := c.cached(id)
	c.mu.Unlock()
	if at == nil {
		return nil, "", fmt.Errorf("%w: Password not found for ApplicationAttempt %s", ErrInvalidToken, id)
	}
	return pw, id.String(), nil
}
