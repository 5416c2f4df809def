package rest

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/merge"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// The RM REST API through the router. Every endpoint runs the same routing
// code as the IPC calls (the root's routing.go, through Core), so homes, breakers, the failover
// window and partial results behave identically; replies are rendered in
// the RM's JSON or XML shapes (internal/rmrest).

// Routes registers the REST API on mux.
func (r *API) Routes(mux Mux) {
	const p = "/ws/v1/cluster"
	for _, root := range []string{p, p + "/info"} {
		mux.HandleFunc("GET "+root, r.rest("info", false, r.restInfo))
	}
	mux.HandleFunc("GET "+p+"/metrics", r.rest("metrics", false, r.restMetrics))
	mux.HandleFunc("GET "+p+"/apps", r.rest("apps", false, r.restApps))
	mux.HandleFunc("POST "+p+"/apps", r.rest("submit", true, r.restSubmit))
	mux.HandleFunc("POST "+p+"/apps/new-application", r.rest("new-application", true, r.restNewApp))
	mux.HandleFunc("GET "+p+"/apps/{appid}", r.rest("app", false, r.restApp))
	mux.HandleFunc("GET "+p+"/apps/{appid}/state", r.rest("app-state", false, r.restAppState))
	mux.HandleFunc("PUT "+p+"/apps/{appid}/state", r.rest("app-state-put", true, r.restPutAppState))
	mux.HandleFunc("GET "+p+"/apps/{appid}/appattempts", r.rest("appattempts", false, r.restAttempts))
	mux.HandleFunc("GET "+p+"/nodes", r.rest("nodes", false, r.restNodes))
	mux.HandleFunc("GET "+p+"/nodes/{nodeid}", r.rest("node", false, r.restNode))
	r.restMoreRoutes(mux, p) // more.go: scheduler, per-app, reservations, tokens
}

// restReply is what a REST handler produces: a status and the value to
// render (a JSON envelope and the XML document may differ).
type restReply struct {
	status   int
	json     any
	xml      any
	location string   // Location header (202 Accepted of a submission)
	raw      *relayed // an RM's answer passed through as it was sent (relay.go)
	// stream, when set, writes the JSON body itself (large lists,
	// restwire.JSONList); xml is then the XML document.
	stream func(io.Writer) error
}

func reply(status int, j, x any) restReply { return restReply{status: status, json: j, xml: x} }

type restHandler func(ctx context.Context, req *http.Request) (restReply, error)

// rest wraps a handler: identity (SPNEGO when configured, else user.name,
// Hadoop's pseudo auth, default dr.who), metrics, audit for mutations,
// content negotiation and errors.
func (r *API) rest(name string, mutating bool, h restHandler) http.HandlerFunc {
	return r.cfg.WebUser(r.serveREST(name, mutating, h))
}

func (r *API) serveREST(name string, mutating bool, h restHandler) func(http.ResponseWriter, *http.Request, hadoopipc.User) {
	method := "REST " + name
	return func(w http.ResponseWriter, req *http.Request, u hadoopipc.User) {
		start := time.Now()
		asXML := restwire.WantsXML(req)
		u, err := r.restDoAs(req, u)
		if err != nil {
			r.core.Observe(method, start, err)
			status, body := Failure(err)
			restwire.Write(w, status, asXML, body, body.RemoteException)
			return
		}
		ctx := hadoopipc.ContextWithUser(req.Context(), u)
		ctx, a := fed.WithAudit(ctx)
		reply, err := r.withAppCheck(h)(ctx, req) // appacl.go
		r.core.Observe(method, start, err)
		if mutating {
			r.core.Audit(ctx, method, a, auditOutcome(reply, err))
		}
		if err != nil {
			status, body := Failure(err)
			restwire.Write(w, status, asXML, body, body.RemoteException)
			return
		}
		if reply.location != "" {
			w.Header().Set("Location", reply.location)
		}
		if ids := a.LeftOut(); len(ids) > 0 {
			w.Header().Set(LeftOutHeader, joinIDs(ids))
		}
		if reply.raw != nil {
			reply.raw.write(w, req)
			return
		}
		if reply.stream != nil && !asXML {
			if err := restwire.WriteJSONStream(w, reply.status, reply.stream); err != nil {
				r.cfg.Log.Warn("REST answer cut short", "method", method, "err", err)
			}
			return
		}
		restwire.Write(w, reply.status, asXML, reply.json, reply.xml)
	}
}

// LeftOutHeader names, comma-separated, the sub-clusters a partial answer
// left out (partial results on, some sub-clusters failed or missed the
// fan-out deadline). The body stays the RM's document, which has no place
// for it; Hadoop's Router only logs such answers, so its clients cannot
// tell a partial list from a whole one.
const LeftOutHeader = "Yarnfed-Subclusters-Left-Out"

func joinIDs(ids []fed.SubClusterID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// restDoAs applies Hadoop's doAs query parameter (ProxyUserAuthenticationFilter;
// the name is case-insensitive): the authenticated user acts for another one
// if the proxy_users rules allow it from the request's address, else 403
// with the AuthorizationException's message.
func (r *API) restDoAs(req *http.Request, u hadoopipc.User) (hadoopipc.User, error) {
	var doAs string
	for k, v := range req.URL.Query() {
		if strings.EqualFold(k, "doas") && len(v) > 0 {
			doAs = v[0]
		}
	}
	if doAs == "" || doAs == u.Name {
		return u, nil
	}
	proxied := hadoopipc.User{Name: doAs, RealUser: u.Name, AuthMethod: u.AuthMethod}
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	remote := &net.TCPAddr{IP: net.ParseIP(host)}
	if err := r.core.AuthorizeProxyUser(req.Context(), proxied, remote); err != nil {
		var re *hadoopipc.RemoteError
		msg := err.Error()
		if errors.As(err, &re) {
			msg = re.Message
		}
		return u, &restwire.Error{Status: http.StatusForbidden, Class: hadoopipc.ClassAuthorization, Err: errors.New(msg)}
	}
	return proxied, nil
}

// Failure maps an error to Hadoop's RemoteException reply.
func Failure(err error) (int, rmrest.RemoteExceptionResponse) {
	status, class := http.StatusInternalServerError, rmrest.ClassWebApp
	var re *restwire.Error
	var rpc *hadoopipc.RemoteError
	switch {
	case errors.As(err, &re):
		status, class = re.Status, re.Class
	case errors.Is(err, restwire.ErrBadRequest), errors.Is(err, rmrest.ErrBadQuery):
		status, class = http.StatusBadRequest, rmrest.ClassBadRequest
	case errors.Is(err, fed.ErrAppNotFound), isClass(err, hadoopipc.ClassApplicationNotFound):
		status, class = http.StatusNotFound, rmrest.ClassNotFound
	case isClass(err, hadoopipc.ClassAccessControl):
		status, class = http.StatusForbidden, rmrest.ClassForbidden
	case errors.Is(err, fed.ErrNoActiveSubCluster), errors.Is(err, fed.ErrSubClusterUnavailable), errors.Is(err, fed.ErrSubClusterDown):
		status = http.StatusServiceUnavailable
	case fed.SubClusterDown(err):
		// An RM that is down, hung or standby: the service is unavailable,
		// not broken (clients and proxies retry a 503).
		status = http.StatusServiceUnavailable
		if errors.As(err, &rpc) {
			class = rpc.Class
		}
	case errors.As(err, &rpc):
		class = rpc.Class
	}
	short := class[strings.LastIndex(class, ".")+1:]
	return status, rmrest.RemoteExceptionResponse{RemoteException: rmrest.RemoteException{
		Exception: short, Message: err.Error(), JavaClassName: class,
	}}
}

func (r *API) restInfo(context.Context, *http.Request) (restReply, error) {
	info := rmrest.ClusterInfo{
		ID: r.cfg.Started.UnixMilli(), StartedOn: r.cfg.Started.UnixMilli(), State: "STARTED", HAState: "ACTIVE",
		RMStateStoreName:       "yarnfed federation state store",
		ResourceManagerVersion: "yarnfed-router", HadoopVersion: "3.4.1",
		HAZooKeeperConnectionState: "Could not find leader elector. Verify both HA and automatic failover are enabled.",
	}
	return reply(http.StatusOK, rmrest.ClusterInfoResponse{ClusterInfo: info}, info), nil
}

func (r *API) restNewApp(ctx context.Context, _ *http.Request) (restReply, error) {
	resp, err := r.core.GetNewApplication(ctx, &yarnpb.GetNewApplicationRequestProto{})
	if err != nil {
		return restReply{}, err
	}
	mc := resp.GetMaximumCapability()
	// The RM renders the maximum capability with its resourceInformations.
	na := rmrest.NewApplication{ApplicationID: yarnid.AppIDString(resp.GetApplicationId()),
		MaximumResourceCapability: rmrest.NewResourceInfo(mc.GetMemory(), mc.GetVirtualCores())}
	return reply(http.StatusOK, na, na), nil
}

func (r *API) restSubmit(ctx context.Context, req *http.Request) (restReply, error) {
	body, err := io.ReadAll(io.LimitReader(req.Body, restwire.MaxBody+1))
	if err != nil {
		return restReply{}, restwire.BadRequest("read body: %v", err)
	}
	if len(body) > restwire.MaxBody {
		return restReply{}, restwire.BadRequest("submission context larger than %d bytes", restwire.MaxBody)
	}
	asc, err := restwire.DecodeSubmissionContext(req.Header.Get("Content-Type"), body)
	if err != nil {
		return restReply{}, err
	}
	if _, err := r.core.SubmitApplication(ctx, &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc}); err != nil {
		return restReply{}, err
	}
	// Hadoop answers 202 Accepted with the app's URL in Location.
	loc := RequestURL(req, "/ws/v1/cluster/apps/"+yarnid.AppIDString(asc.GetApplicationId()))
	return restReply{status: http.StatusAccepted, json: struct{}{}, xml: struct {
		XMLName xml.Name `xml:"accepted"`
	}{}, location: loc}, nil
}

// RequestURL is an absolute URL for path on the host the client called
// (what Java's HttpServletRequest.getRequestURL gives an RM).
func RequestURL(req *http.Request, path string) string {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: req.Host, Path: path}).String()
}

func AppIDParam(req *http.Request) (*yarnpb.ApplicationIdProto, error) {
	id, err := yarnid.ParseAppIDProto(req.PathValue("appid"))
	if err != nil {
		return nil, &restwire.Error{Status: http.StatusBadRequest, Class: rmrest.ClassBadRequest, Err: err}
	}
	return id, nil
}

func (r *API) report(ctx context.Context, req *http.Request) (*yarnpb.ApplicationReportProto, error) {
	id, err := AppIDParam(req)
	if err != nil {
		return nil, err
	}
	fed.AuditOf(ctx).App = yarnid.AppIDString(id)
	resp, err := r.core.GetApplicationReport(ctx, &yarnpb.GetApplicationReportRequestProto{ApplicationId: id})
	if err != nil {
		return nil, err
	}
	return resp.GetApplicationReport(), nil
}

func (r *API) restAppState(ctx context.Context, req *http.Request) (restReply, error) {
	rep, err := r.report(ctx, req)
	if err != nil {
		return restReply{}, err
	}
	st := rmrest.AppState{State: rep.GetYarnApplicationState().String()}
	return reply(http.StatusOK, st, st), nil
}

// restPutAppState kills an application: {"state":"KILLED"}. 202 while the
// kill is in progress, 200 once the app is in a final state (Hadoop's
// RMWebServices contract).
func (r *API) restPutAppState(ctx context.Context, req *http.Request) (restReply, error) {
	id, err := AppIDParam(req)
	if err != nil {
		return restReply{}, err
	}
	fed.AuditOf(ctx).App = yarnid.AppIDString(id)
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	if err != nil {
		return restReply{}, restwire.BadRequest("read body: %v", err)
	}
	want, err := restwire.DecodeAppState(req.Header.Get("Content-Type"), body)
	if err != nil {
		return restReply{}, err
	}
	if want != "KILLED" {
		return restReply{}, restwire.BadRequest("only KILLED is a valid target state, got %q", want)
	}
	if r.core.CheckAppCall(ctx, "forceKillApplication", id, nil) != nil {
		return restReply{}, errAppKillForbidden(yarnid.AppIDString(id), hadoopipc.UserName(ctx))
	}
	if _, err := r.core.KillApp(ctx, id); err != nil { // the home, then its UAMs (the root's uam.go)
		return restReply{}, err
	}
	// Report the app's real state: an app that had already finished stays
	// FINISHED (200), one being killed is in progress (202).
	rep, err := r.core.GetApplicationReport(ctx, &yarnpb.GetApplicationReportRequestProto{ApplicationId: id})
	if err != nil {
		return restReply{}, err
	}
	state := rep.GetApplicationReport().GetYarnApplicationState()
	st := rmrest.AppState{State: state.String()}
	switch state {
	case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return reply(http.StatusOK, st, st), nil
	}
	// In progress: like the RM, point Location at this request's URL (the
	// state resource to poll), without the query string.
	out := reply(http.StatusAccepted, st, st)
	out.location = RequestURL(req, req.URL.Path)
	return out, nil
}

func (r *API) restAttempts(ctx context.Context, req *http.Request) (restReply, error) {
	id, err := AppIDParam(req)
	if err != nil {
		return restReply{}, err
	}
	fed.AuditOf(ctx).App = yarnid.AppIDString(id)
	if home, _, herr := r.core.HomeOf(ctx, id); herr == nil {
		if sc, ok := r.core.SubCluster(home); ok {
			var atts []rmrest.AppAttempt
			err := r.rmREST(ctx, sc, func(ctx context.Context, c *rmrest.Client) (err error) {
				atts, err = c.GetAppAttempts(ctx, yarnid.AppIDString(id))
				return err
			})
			if err == nil {
				out := rmrest.AppAttempts{AppAttempt: atts}
				return reply(http.StatusOK, rmrest.AppAttemptsResponse{AppAttempts: out}, out), nil
			}
			if herr := r.restHung(ctx, home, "GET /ws/v1/cluster/apps/{appid}/appattempts", err); herr != nil {
				return restReply{}, herr
			}
		}
	}
	resp := &yarnpb.GetApplicationAttemptsResponseProto{}
	if err := r.core.OnHome(ctx, "getApplicationAttempts", id, &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: id}, resp); err != nil {
		return restReply{}, err
	}
	out := rmrest.AppAttempts{}
	for _, a := range resp.GetApplicationAttempts() {
		out.AppAttempt = append(out.AppAttempt, rmrest.AppAttempt{
			ID: a.GetApplicationAttemptId().GetAttemptId(), StartTime: a.GetStartTime(), FinishedTime: a.GetFinishTime(),
			ContainerID:     containerIDString(a.GetAmContainerId()),
			AppAttemptID:    yarnid.AttemptIDString(a.GetApplicationAttemptId()),
			AppAttemptState: strings.TrimPrefix(a.GetYarnApplicationAttemptState().String(), "APP_ATTEMPT_"),
		})
	}
	return reply(http.StatusOK, rmrest.AppAttemptsResponse{AppAttempts: out}, out), nil
}

func containerIDString(c *yarnpb.ContainerIdProto) string {
	if c == nil {
		return ""
	}
	a := yarnid.AppOfContainer(c)
	epoch, seq := c.GetId()>>40, c.GetId()&(1<<40-1)
	prefix := "container_"
	if epoch > 0 {
		prefix = fmt.Sprintf("container_e%02d_", epoch)
	}
	return fmt.Sprintf("%s%d_%04d_%02d_%06d", prefix, a.GetClusterTimestamp(), a.GetId(), c.GetAppAttemptId().GetAttemptId(), seq)
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func endOr(v int64) int64 {
	if v == 0 {
		return 1<<63 - 1
	}
	return v
}

// AppInfo renders an ApplicationReport as the RM's REST AppInfo.
func AppInfo(a *yarnpb.ApplicationReportProto, now time.Time) rmrest.App {
	u := a.GetAppResource_Usage()
	elapsed := int64(0)
	if a.GetStartTime() > 0 {
		end := a.GetFinishTime()
		if end == 0 {
			end = now.UnixMilli()
		}
		elapsed = end - a.GetStartTime()
	}
	trackingUI := "UNASSIGNED"
	if a.GetTrackingUrl() != "" && a.GetTrackingUrl() != "N/A" {
		trackingUI = "ApplicationMaster"
		if a.GetFinishTime() > 0 {
			trackingUI = "History"
		}
	}
	out := rmrest.App{
		ID: yarnid.AppIDString(a.GetApplicationId()), User: a.GetUser(), Name: a.GetName(), Queue: a.GetQueue(),
		State:       a.GetYarnApplicationState().String(),
		FinalStatus: strings.TrimPrefix(a.GetFinalApplicationStatus().String(), "APP_"),
		Progress:    a.GetProgress() * 100, TrackingUI: trackingUI, TrackingURL: a.GetTrackingUrl(),
		Diagnostics: a.GetDiagnostics(), ClusterID: a.GetApplicationId().GetClusterTimestamp(),
		ApplicationType: a.GetApplicationType(), ApplicationTags: strings.Join(a.GetApplicationTags(), ","),
		Priority: a.GetPriority().GetPriority(), StartedTime: a.GetStartTime(), LaunchTime: a.GetLaunchTime(),
		FinishedTime: a.GetFinishTime(), ElapsedTime: elapsed,
		AllocatedMB: u.GetUsedResources().GetMemory(), AllocatedVCores: int64(u.GetUsedResources().GetVirtualCores()),
		ReservedMB: u.GetReservedResources().GetMemory(), ReservedVCores: int64(u.GetReservedResources().GetVirtualCores()),
		RunningContainers: u.GetNumUsedContainers(), MemorySeconds: u.GetMemorySeconds(), VCoreSeconds: u.GetVcoreSeconds(),
		QueueUsagePercentage: u.GetQueueUsagePercentage(), ClusterUsagePercentage: u.GetClusterUsagePercentage(),
		PreemptedMemorySeconds: u.GetPreemptedMemorySeconds(), PreemptedVcoreSeconds: u.GetPreemptedVcoreSeconds(),
		LogAggregationStatus:   strings.TrimPrefix(a.GetLogAggregationStatus().String(), "LOG_"),
		UnmanagedApplication:   a.GetUnmanagedApplication(),
		AppNodeLabelExpression: a.GetAppNodeLabelExpression(), AMNodeLabelExpression: a.GetAmNodeLabelExpression(),
		HasAppNodeLabelExpression: a.AppNodeLabelExpression != nil, HasAMNodeLabelExpression: a.AmNodeLabelExpression != nil,
	}
	if a.LogAggregationStatus == nil {
		out.LogAggregationStatus = "DISABLED"
	}
	if a.GetHost() != "" && a.GetHost() != "N/A" && a.GetRpcPort() > 0 {
		out.AMRPCAddress = fmt.Sprintf("%s:%d", a.GetHost(), a.GetRpcPort())
	}
	return out
}

// NodeInfo renders a NodeReport as the RM's REST NodeInfo.
func NodeInfo(n *yarnpb.NodeReportProto) rmrest.Node {
	used, capa := n.GetUsed(), n.GetCapability()
	avail := rmrest.ResourceInfo{Memory: capa.GetMemory() - used.GetMemory(), VCores: capa.GetVirtualCores() - used.GetVirtualCores()}
	return rmrest.Node{
		Rack: n.GetRackName(), State: strings.TrimPrefix(n.GetNodeState().String(), "NS_"), ID: merge.NodeKey(n.GetNodeId()),
		NodeHostName: n.GetNodeId().GetHost(), NodeHTTPAddress: n.GetHttpAddress(), LastHealthUpdate: n.GetLastHealthReportTime(),
		HealthReport: n.GetHealthReport(), NumContainers: n.GetNumContainers(),
		UsedMemoryMB: used.GetMemory(), AvailMemoryMB: avail.Memory,
		UsedVirtualCores: int64(used.GetVirtualCores()), AvailableVirtualCores: int64(avail.VCores),
		UsedResource:      rmrest.ResourceInfo{Memory: used.GetMemory(), VCores: used.GetVirtualCores()},
		AvailableResource: avail,
		TotalResource:     rmrest.ResourceInfo{Memory: capa.GetMemory(), VCores: capa.GetVirtualCores()},
	}
}
