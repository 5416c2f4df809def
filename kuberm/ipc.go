package kuberm

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/rmdefaults"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// ApplicationClientProtocol on Hadoop IPC. Methods kuberm does not serve
// are not registered: a client gets RpcNoSuchMethodException.

// errorClasses is the one place sentinel errors become Java exception
// classes; anything else is a YarnException.
var errorClasses = hadoopipc.ClassMap{
	{Err: ErrApplicationNotFound, Class: hadoopipc.ClassApplicationNotFound},
	{Err: ErrAttemptNotFound, Class: hadoopipc.ClassApplicationAttemptNotFound},
	{Err: ErrContainerNotFound, Class: hadoopipc.ClassContainerNotFound},
	{Err: ErrInvalidResource, Class: hadoopipc.ClassInvalidResourceRequest},
	{Err: ErrInvalidAMRequest, Class: hadoopipc.ClassInvalidApplicationMasterRequest},
	{Err: ErrInvalidRelease, Class: hadoopipc.ClassInvalidContainerRelease},
	{Err: ErrAMNotRegistered, Class: hadoopipc.ClassApplicationMasterNotRegistered},
	{Err: ErrKube, Class: hadoopipc.ClassIOException},
	{Err: ErrBadRecord, Class: hadoopipc.ClassIOException},
}

func (r *RM) clientProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationClient,
		Version: 1,
		Errors:  errorClasses,
		// What a stock RM answers with default settings: the resource types
		// (YarnClient asks at start), profiles off (the distributed shell asks).
		Methods: append([]hadoopipc.Method{
			hadoopipc.NewMethod("getNewApplication", hadoopipc.NewOf[yarnpb.GetNewApplicationRequestProto](), r.getNewApplication),
			hadoopipc.NewMethod("submitApplication", hadoopipc.NewOf[yarnpb.SubmitApplicationRequestProto](), r.submitApplication),
			hadoopipc.NewMethod("getApplicationReport", hadoopipc.NewOf[yarnpb.GetApplicationReportRequestProto](), r.getApplicationReport),
			hadoopipc.NewMethod("getApplications", hadoopipc.NewOf[yarnpb.GetApplicationsRequestProto](), r.getApplications),
			hadoopipc.NewMethod("forceKillApplication", hadoopipc.NewOf[yarnpb.KillApplicationRequestProto](), r.forceKillApplication),
			hadoopipc.NewMethod("getClusterMetrics", hadoopipc.NewOf[yarnpb.GetClusterMetricsRequestProto](), r.getClusterMetrics),
			hadoopipc.NewMethod("getClusterNodes", hadoopipc.NewOf[yarnpb.GetClusterNodesRequestProto](), r.getClusterNodes),
			hadoopipc.NewMethod("getQueueInfo", hadoopipc.NewOf[yarnpb.GetQueueInfoRequestProto](), r.getQueueInfo),
			hadoopipc.NewMethod("getQueueUserAcls", hadoopipc.NewOf[yarnpb.GetQueueUserAclsInfoRequestProto](), r.getQueueUserAcls),
			hadoopipc.NewMethod("getApplicationAttemptReport", hadoopipc.NewOf[yarnpb.GetApplicationAttemptReportRequestProto](), r.getAttemptReport),
			hadoopipc.NewMethod("getApplicationAttempts", hadoopipc.NewOf[yarnpb.GetApplicationAttemptsRequestProto](), r.getAttempts),
			hadoopipc.NewMethod("getContainerReport", hadoopipc.NewOf[yarnpb.GetContainerReportRequestProto](), r.getContainerReport),
			hadoopipc.NewMethod("getContainers", hadoopipc.NewOf[yarnpb.GetContainersRequestProto](), r.getContainers),
		}, rmdefaults.ClientMethods()...),
	}
}

func needApp(p *yarnpb.ApplicationIdProto) (yarnid.AppID, error) {
	if p == nil {
		return yarnid.AppID{}, hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	return yarnid.AppFromPB(p), nil
}

// appOf is the application a request names (ApplicationIdNotProvided
// without one, ApplicationNotFound for an unknown one).
func (r *RM) appOf(ctx context.Context, p *yarnpb.ApplicationIdProto) (appView, error) {
	id, err := needApp(p)
	if err != nil {
		return appView{}, err
	}
	return r.App(ctx, id)
}

func resourcePB(r kubebatch.Resources) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(r.MemoryMB), VirtualCores: proto.Int32(int32(min(r.VCores, 1<<31-1)))}
}

func (r *RM) maxCapability() *yarnpb.ResourceProto {
	return resourcePB(kubebatch.Resources{MemoryMB: r.cfg.MaxAllocationMB, VCores: int64(r.cfg.MaxAllocationVCores)})
}

func (r *RM) getNewApplication(context.Context, *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
	return &yarnpb.GetNewApplicationResponseProto{ApplicationId: yarnid.AppPB(r.NewApplication()), MaximumCapability: r.maxCapability()}, nil
}

func (r *RM) submitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
	sc := req.GetApplicationSubmissionContext()
	if sc == nil || sc.ApplicationId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	if err := r.Submit(ctx, sc, hadoopipc.UserName(ctx)); err != nil {
		return nil, err
	}
	return &yarnpb.SubmitApplicationResponseProto{}, nil
}

func (r *RM) getApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	v, err := r.appOf(ctx, req.ApplicationId)
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: r.appReportPB(&v, hadoopipc.UserName(ctx))}, nil
}

const maxInt64 = int64(^uint64(0) >> 1)

func (r *RM) getApplications(ctx context.Context, req *yarnpb.GetApplicationsRequestProto) (*yarnpb.GetApplicationsResponseProto, error) {
	apps, err := r.Apps(ctx)
	if err != nil {
		return nil, err
	}
	match := func(list []string, v string) bool {
		if len(list) == 0 {
			return true
		}
		for _, s := range list {
			if s == v {
				return true
			}
		}
		return false
	}
	states := map[yarnpb.YarnApplicationStateProto]bool{}
	for _, s := range req.GetApplicationStates() {
		states[s] = true
	}
	queues := req.GetQueues()
	limit := req.GetLimit()
	if limit <= 0 || limit == maxInt64 {
		limit = maxInt64
	}
	own := ""
	if req.GetScope() == yarnpb.ApplicationsRequestScopeProto_OWN {
		own = hadoopipc.UserName(ctx)
	}
	out := &yarnpb.GetApplicationsResponseProto{}
	for i := range apps {
		v := &apps[i]
		switch {
		case len(states) > 0 && !states[v.state],
			!match(req.GetApplicationTypes(), v.rec.Type),
			!match(req.GetUsers(), v.rec.User),
			len(queues) > 0 && !match(queues, v.rec.Queue) && !match(queues, "root."+v.rec.Queue),
			req.GetName() != "" && req.GetName() != v.rec.Name,
			own != "" && own != v.rec.User,
			len(req.GetApplicationTags()) > 0 && !anyTag(req.GetApplicationTags(), v.rec.Tags):
			continue
		}
		if int64(len(out.Applications)) >= limit {
			break
		}
		out.Applications = append(out.Applications, r.appReportPB(v, hadoopipc.UserName(ctx)))
	}
	return out, nil
}

func anyTag(want, have []string) bool {
	for _, w := range want {
		for _, h := range have {
			if w == h {
				return true
			}
		}
	}
	return false
}

func (r *RM) forceKillApplication(ctx context.Context, req *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
	id, err := needApp(req.ApplicationId)
	if err != nil {
		return nil, err
	}
	if err := r.Kill(ctx, id, hadoopipc.UserName(ctx), req.GetDiagnostics()); err != nil {
		return nil, err
	}
	return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
}

func (r *RM) getClusterMetrics(ctx context.Context, _ *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	var total, active, unhealthy, decom int32
	for _, n := range nodes {
		total++
		switch n.state {
		case yarnpb.NodeStateProto_NS_RUNNING:
			active++
		case yarnpb.NodeStateProto_NS_UNHEALTHY:
			unhealthy++
		case yarnpb.NodeStateProto_NS_DECOMMISSIONED:
			decom++
		}
	}
	return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{
		NumNodeManagers: proto.Int32(active), NumActiveNms: proto.Int32(active), NumUnhealthyNms: proto.Int32(unhealthy),
		NumDecommissionedNms: proto.Int32(decom), NumLostNms: proto.Int32(0), NumRebootedNms: proto.Int32(0),
		NumDecommissioningNms: proto.Int32(0), NumShutdownNms: proto.Int32(0),
	}}, nil
}

func (r *RM) getClusterNodes(ctx context.Context, req *yarnpb.GetClusterNodesRequestProto) (*yarnpb.GetClusterNodesResponseProto, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	want := map[yarnpb.NodeStateProto]bool{}
	for _, s := range req.GetNodeStates() {
		want[s] = true
	}
	out := &yarnpb.GetClusterNodesResponseProto{}
	for i := range nodes {
		n := &nodes[i]
		if len(want) > 0 && !want[n.state] {
			continue
		}
		out.NodeReports = append(out.NodeReports, &yarnpb.NodeReportProto{
			NodeId:      n.id,
			HttpAddress: proto.String(n.id.GetHost() + ":" + strconv.Itoa(nmHTTPPort)), RackName: proto.String(n.rack),
			Used: resourcePB(n.used), Capability: resourcePB(n.capability),
			NumContainers: proto.Int32(n.containers), NodeState: n.state.Enum(),
			HealthReport: proto.String(n.health), LastHealthReportTime: proto.Int64(n.heartbeat),
		})
	}
	return out, nil
}

func (r *RM) getQueueInfo(ctx context.Context, req *yarnpb.GetQueueInfoRequestProto) (*yarnpb.GetQueueInfoResponseProto, error) {
	name := req.GetQueueName()
	if name != "" && name != r.cfg.Queue && name != "root."+r.cfg.Queue && name != "root" {
		// As ClientRMService: an unknown queue is an empty answer, not an
		// exception (simrm/DESIGN.md has the reading of Hadoop's code).
		return &yarnpb.GetQueueInfoResponseProto{}, nil
	}
	q := &yarnpb.QueueInfoProto{
		QueueName: proto.String(r.cfg.Queue), QueuePath: proto.String("root." + r.cfg.Queue),
		Capacity: proto.Float32(1), MaximumCapacity: proto.Float32(1), State: yarnpb.QueueStateProto_Q_RUNNING.Enum(),
		SchedulerType: proto.String("kuberm"),
	}
	apps, err := r.Apps(ctx)
	if err != nil {
		return nil, err
	}
	stats := &yarnpb.QueueStatisticsProto{}
	for i := range apps {
		stats.NumAppsSubmitted = proto.Int64(stats.GetNumAppsSubmitted() + 1)
		switch apps[i].state {
		case yarnpb.YarnApplicationStateProto_ACCEPTED:
			stats.NumAppsPending = proto.Int64(stats.GetNumAppsPending() + 1)
		case yarnpb.YarnApplicationStateProto_RUNNING:
			stats.NumAppsRunning = proto.Int64(stats.GetNumAppsRunning() + 1)
		case yarnpb.YarnApplicationStateProto_FINISHED:
			stats.NumAppsCompleted = proto.Int64(stats.GetNumAppsCompleted() + 1)
		case yarnpb.YarnApplicationStateProto_FAILED:
			stats.NumAppsFailed = proto.Int64(stats.GetNumAppsFailed() + 1)
		case yarnpb.YarnApplicationStateProto_KILLED:
			stats.NumAppsKilled = proto.Int64(stats.GetNumAppsKilled() + 1)
		}
		if req.GetIncludeApplications() {
			q.Applications = append(q.Applications, r.appReportPB(&apps[i], ""))
		}
	}
	q.QueueStatistics = stats
	if name == "root" {
		root := &yarnpb.QueueInfoProto{QueueName: proto.String("root"), QueuePath: proto.String("root"),
			Capacity: proto.Float32(1), MaximumCapacity: proto.Float32(1), State: yarnpb.QueueStateProto_Q_RUNNING.Enum(),
			SchedulerType: proto.String("kuberm")}
		if req.GetIncludeChildQueues() {
			root.ChildQueues = []*yarnpb.QueueInfoProto{q}
		}
		return &yarnpb.GetQueueInfoResponseProto{QueueInfo: root}, nil
	}
	return &yarnpb.GetQueueInfoResponseProto{QueueInfo: q}, nil
}

func (r *RM) getQueueUserAcls(context.Context, *yarnpb.GetQueueUserAclsInfoRequestProto) (*yarnpb.GetQueueUserAclsInfoResponseProto, error) {
	// ACLs are off (yarn.acl.enable=false, Hadoop's default).
	acls := []yarnpb.QueueACLProto{yarnpb.QueueACLProto_QACL_SUBMIT_APPLICATIONS, yarnpb.QueueACLProto_QACL_ADMINISTER_QUEUE}
	return &yarnpb.GetQueueUserAclsInfoResponseProto{QueueUserAcls: []*yarnpb.QueueUserACLInfoProto{
		{QueueName: proto.String("root"), UserAcls: acls},
		{QueueName: proto.String(r.cfg.Queue), UserAcls: acls},
	}}, nil
}

func (r *RM) attempt(ctx context.Context, p *yarnpb.ApplicationAttemptIdProto) (appView, *attemptView, error) {
	if p == nil {
		return appView{}, nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ApplicationAttemptId is not provided")
	}
	at := yarnid.AttemptFromPB(p)
	v, err := r.App(ctx, at.App)
	if err != nil {
		return appView{}, nil, err
	}
	for i := range v.attempts {
		if v.attempts[i].id == at {
			return v, &v.attempts[i], nil
		}
	}
	//lint:ignore ST1005 the text of the RM's own ApplicationAttemptNotFoundException, which clients show
	return appView{}, nil, fmt.Errorf("%w: ApplicationAttempt with id '%s' doesn't exist in RM.", ErrAttemptNotFound, at)
}

func (r *RM) getAttemptReport(ctx context.Context, req *yarnpb.GetApplicationAttemptReportRequestProto) (*yarnpb.GetApplicationAttemptReportResponseProto, error) {
	_, a, err := r.attempt(ctx, req.ApplicationAttemptId)
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: attemptReportPB(a)}, nil
}

func (r *RM) getAttempts(ctx context.Context, req *yarnpb.GetApplicationAttemptsRequestProto) (*yarnpb.GetApplicationAttemptsResponseProto, error) {
	v, err := r.appOf(ctx, req.ApplicationId)
	if err != nil {
		return nil, err
	}
	out := &yarnpb.GetApplicationAttemptsResponseProto{}
	for i := range v.attempts {
		out.ApplicationAttempts = append(out.ApplicationAttempts, attemptReportPB(&v.attempts[i]))
	}
	return out, nil
}

func attemptReportPB(a *attemptView) *yarnpb.ApplicationAttemptReportProto {
	out := &yarnpb.ApplicationAttemptReportProto{
		ApplicationAttemptId: yarnid.AttemptPB(a.id), Host: proto.String(orNA(a.host)), RpcPort: proto.Int32(-1),
		TrackingUrl: proto.String("N/A"), OriginalTrackingUrl: proto.String("N/A"), Diagnostics: proto.String(a.diag),
		YarnApplicationAttemptState: a.state.Enum(),
		StartTime:                   proto.Int64(a.start), FinishTime: proto.Int64(a.finish),
	}
	if a.container != (yarnid.ContainerID{}) { // an unmanaged attempt has no AM container
		out.AmContainerId = yarnid.ContainerPB(a.container)
	}
	if a.reg != nil {
		out.RpcPort = proto.Int32(a.reg.RPCPort)
		if a.reg.TrackingURL != "" {
			out.OriginalTrackingUrl = proto.String(a.reg.TrackingURL)
		}
	}
	return out
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// containerState maps an AM attempt to its container's state.
func containerState(a *attemptView) yarnpb.ContainerStateProto {
	switch a.state {
	case yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING:
		return yarnpb.ContainerStateProto_C_RUNNING
	case yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED, yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED:
		return yarnpb.ContainerStateProto_C_COMPLETE
	}
	return yarnpb.ContainerStateProto_C_NEW
}

func (r *RM) containerReportPB(v *appView, a *attemptView) *yarnpb.ContainerReportProto {
	return &yarnpb.ContainerReportProto{
		ContainerId: yarnid.ContainerPB(a.container),
		Resource:    resourcePB(kubebatch.Resources{MemoryMB: v.rec.MemoryMB, VCores: int64(v.rec.VCores)}),
		NodeId:      &yarnpb.NodeIdProto{Host: proto.String(orNA(a.host)), Port: proto.Int32(0)},
		Priority:    &yarnpb.PriorityProto{Priority: proto.Int32(0)}, CreationTime: proto.Int64(a.start),
		FinishTime: proto.Int64(a.finish), DiagnosticsInfo: proto.String(a.diag), LogUrl: proto.String("N/A"),
		ContainerExitStatus: proto.Int32(a.exitCode), ContainerState: containerState(a).Enum(),
		NodeHttpAddress: proto.String(""),
	}
}

func (r *RM) getContainerReport(ctx context.Context, req *yarnpb.GetContainerReportRequestProto) (*yarnpb.GetContainerReportResponseProto, error) {
	if req.ContainerId == nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "ContainerId is not provided")
	}
	cid := yarnid.ContainerFromPB(req.ContainerId)
	v, a, err := r.attempt(ctx, yarnid.AttemptPB(cid.Attempt))
	if err == nil && a.container != cid {
		reps, err := r.containerReports(ctx, &v, cid.Attempt, &cid)
		if err != nil {
			return nil, err
		}
		if len(reps) == 1 {
			return &yarnpb.GetContainerReportResponseProto{ContainerReport: reps[0]}, nil
		}
	}
	if errors.Is(err, ErrAttemptNotFound) || (err == nil && a.container != cid) {
		//lint:ignore ST1005 the text of the RM's own ContainerNotFoundException, which clients show
		return nil, fmt.Errorf("%w: Container with id '%s' doesn't exist in RM.", ErrContainerNotFound, cid)
	}
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetContainerReportResponseProto{ContainerReport: r.containerReportPB(&v, a)}, nil
}

func (r *RM) getContainers(ctx context.Context, req *yarnpb.GetContainersRequestProto) (*yarnpb.GetContainersResponseProto, error) {
	v, a, err := r.attempt(ctx, req.ApplicationAttemptId)
	if err != nil {
		return nil, err
	}
	out := &yarnpb.GetContainersResponseProto{}
	if a.state != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED && a.container != (yarnid.ContainerID{}) {
		out.Containers = append(out.Containers, r.containerReportPB(&v, a))
	}
	reps, err := r.containerReports(ctx, &v, a.id, nil)
	if err != nil {
		return nil, err
	}
	out.Containers = append(out.Containers, reps...)
	return out, nil
}

// appReportPB renders an application report for caller (the user the
// client logged in as; "" for none): an unmanaged application's AMRMToken
// goes to its owner only (reportToken, unmanaged.go).
func (r *RM) appReportPB(v *appView, caller string) *yarnpb.ApplicationReportProto {
	out := &yarnpb.ApplicationReportProto{
		ApplicationId: yarnid.AppPB(v.id), User: proto.String(v.rec.User), Queue: proto.String("root." + v.rec.Queue),
		Name: proto.String(v.rec.Name), Host: proto.String(orNA(v.host)), RpcPort: proto.Int32(-1),
		YarnApplicationState: v.state.Enum(), TrackingUrl: proto.String("N/A"), OriginalTrackingUrl: proto.String("N/A"),
		Diagnostics: proto.String(v.diagnostics), StartTime: proto.Int64(v.rec.SubmitTime), SubmitTime: proto.Int64(v.rec.SubmitTime),
		LaunchTime: proto.Int64(v.launch), FinishTime: proto.Int64(v.finish),
		FinalApplicationStatus: v.final.Enum(), Progress: proto.Float32(progress(v.state)),
		ApplicationType: proto.String(v.rec.Type), ApplicationTags: v.rec.Tags, UnmanagedApplication: proto.Bool(v.rec.Unmanaged),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(v.rec.Priority)}, RmClusterId: proto.String(r.cfg.SubClusterID),
		AmRmToken: r.reportToken(v, caller),
	}
	if n := len(v.attempts); n > 0 {
		out.CurrentApplicationAttemptId = yarnid.AttemptPB(v.attempts[n-1].id)
		if reg := v.attempts[n-1].reg; reg != nil {
			out.Host, out.RpcPort = proto.String(orNA(reg.Host)), proto.Int32(reg.RPCPort)
			if reg.TrackingURL != "" {
				out.OriginalTrackingUrl = proto.String(reg.TrackingURL)
			}
		}
	}
	running := int32(0)
	var used kubebatch.Resources
	if v.state == yarnpb.YarnApplicationStateProto_RUNNING && !v.rec.Unmanaged { // an unmanaged AM holds no container
		running, used = 1, kubebatch.Resources{MemoryMB: v.rec.MemoryMB, VCores: int64(v.rec.VCores)}
	}
	out.AppResource_Usage = &yarnpb.ApplicationResourceUsageReportProto{
		NumUsedContainers: proto.Int32(running), NumReservedContainers: proto.Int32(0),
		UsedResources: resourcePB(used), ReservedResources: resourcePB(kubebatch.Resources{}),
		NeededResources: resourcePB(used), MemorySeconds: proto.Int64(0), VcoreSeconds: proto.Int64(0),
		PreemptedMemorySeconds: proto.Int64(0), PreemptedVcoreSeconds: proto.Int64(0),
	}
	return out
}

func progress(s yarnpb.YarnApplicationStateProto) float32 {
	switch s {
	case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return 1
	}
	return 0
}

// masterProtocol is the scheduler port: register, allocate (alloc.go) and
// finish with the RM's rules.
func (r *RM) masterProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    hadoopipc.ProtocolApplicationMaster,
		Version: 1,
		Errors:  errorClasses,
		Methods: []hadoopipc.Method{
			hadoopipc.NewMethod("registerApplicationMaster", hadoopipc.NewOf[yarnpb.RegisterApplicationMasterRequestProto](), r.registerAM),
			hadoopipc.NewMethod("finishApplicationMaster", hadoopipc.NewOf[yarnpb.FinishApplicationMasterRequestProto](), r.finishAM),
			hadoopipc.NewMethod("allocate", hadoopipc.NewOf[yarnpb.AllocateRequestProto](), r.allocate),
		},
	}
}
