package simrm

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// The REST subset of RMWebServices the federation needs, with Hadoop's
// JSON and XML shapes (internal/rmrest). JSON is the default; XML when the
// Accept header prefers application/xml, as Jersey negotiates.

// simVersion is what /info reports: the Hadoop line simrm imitates, marked
// as a simulator so nobody mistakes it for a real RM.
const simVersion = "3.4.1-simrm"

func (r *RM) restHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/v1/cluster", r.restInfo)
	mux.HandleFunc("GET /ws/v1/cluster/info", r.restInfo)
	mux.HandleFunc("GET /ws/v1/cluster/metrics", r.restMetrics)
	mux.HandleFunc("GET /ws/v1/cluster/scheduler", r.restScheduler)
	mux.HandleFunc("GET /ws/v1/cluster/apps", r.restApps)
	mux.HandleFunc("POST /ws/v1/cluster/apps/new-application", r.restNewApp)
	mux.HandleFunc("POST /ws/v1/cluster/apps", r.restSubmit) // rest_submit.go
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}", r.restApp)
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}/appattempts", r.restAttempts)
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}/appattempts/{attemptid}", r.restAttempt)                            // rest_containers.go
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}/appattempts/{attemptid}/containers", r.restContainers)              // rest_containers.go
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}/appattempts/{attemptid}/containers/{containerid}", r.restContainer) // rest_containers.go
	mux.HandleFunc("GET /ws/v1/cluster/apps/{appid}/state", r.restAppState)
	mux.HandleFunc("PUT /ws/v1/cluster/apps/{appid}/state", r.restPutAppState)
	mux.HandleFunc("GET /ws/v1/cluster/nodes", r.restNodes)
	mux.HandleFunc("GET /ws/v1/cluster/nodes/{nodeid}", r.restNode)
	r.restMoreRoutes(mux) // rest_more.go
	r.webRoutes(mux)      // webui.go
	// simrm's own control API and Prometheus endpoint bypass fault
	// injection: chaos runs must be able to lift a stall they set.
	control := http.NewServeMux()
	control.HandleFunc("GET /simrm/v1/faults", r.getFaults)
	control.HandleFunc("PUT /simrm/v1/faults", r.putFaults)
	control.HandleFunc("POST /simrm/v1/restart", r.postRestart)
	control.HandleFunc("POST /simrm/v1/transition", r.postTransition)
	control.HandleFunc("POST /simrm/v1/nodes/{host}", r.postNodeState)
	if r.cfg.Gatherer != nil {
		control.Handle("GET /prom", promhttp.HandlerFor(r.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/simrm/") || req.URL.Path == "/prom" {
			control.ServeHTTP(w, req)
			return
		}
		if err := r.inject(req.Context(), "rest"); err != nil {
			switch {
			case errors.Is(err, ErrStandby) && standbyServes(req.URL.Path):
				mux.ServeHTTP(w, req)
			case errors.Is(err, ErrStandby) && isWebPage(req.URL.Path):
				r.standbyPage(w, req)
			case errors.Is(err, ErrStandby):
				// Hadoop's standby RM web app answers 503 when it cannot
				// redirect to an active RM.
				restError(w, req, http.StatusServiceUnavailable, "StandbyException", rmrest.ClassStandbyWebApp, "This is standby RM. "+err.Error())
			default:
				restError(w, req, http.StatusInternalServerError, "WebApplicationException", rmrest.ClassWebApp, err.Error())
			}
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// standbyServes lists what a standby RM's web app answers itself instead
// of refusing: its cluster info, whose haState is how probes (and Hadoop's
// own clients) tell the standby from the active.
func standbyServes(path string) bool {
	return path == "/ws/v1/cluster/info" || path == "/ws/v1/cluster" || path == "/cluster/cluster" || path == "/isActive"
}

func wantsXML(req *http.Request) bool {
	a := req.Header.Get("Accept")
	x := strings.Index(a, "application/xml")
	if x < 0 {
		return false
	}
	j := strings.Index(a, "application/json")
	return j < 0 || x < j
}

// writeREST renders v as JSON inside its envelope, or xmlV as XML.
func writeREST(w http.ResponseWriter, req *http.Request, status int, jsonV, xmlV any) {
	if wantsXML(req) {
		w.Header().Set("Content-Type", "application/xml; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`)
		xml.NewEncoder(w).Encode(xmlV)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(jsonV)
}

func restError(w http.ResponseWriter, req *http.Request, status int, exception, class, msg string) {
	re := rmrest.RemoteException{Exception: exception, Message: msg, JavaClassName: class}
	writeREST(w, req, status, rmrest.RemoteExceptionResponse{RemoteException: re}, re)
}

func badRequest(w http.ResponseWriter, req *http.Request, msg string) {
	restError(w, req, http.StatusBadRequest, "BadRequestException", rmrest.ClassBadRequest, msg)
}

func notFound(w http.ResponseWriter, req *http.Request, msg string) {
	restError(w, req, http.StatusNotFound, "NotFoundException", rmrest.ClassNotFound, msg)
}

func (r *RM) restInfo(w http.ResponseWriter, req *http.Request) {
	c := r.core()
	ha := "ACTIVE"
	if r.Standby() {
		ha = "STANDBY"
	}
	info := rmrest.ClusterInfo{
		ID: c.clusterTS, StartedOn: c.startedOn, State: "STARTED", HAState: ha,
		RMStateStoreName:              "org.apache.hadoop.yarn.server.resourcemanager.recovery.MemoryRMStateStore",
		ResourceManagerVersion:        simVersion,
		ResourceManagerBuildVersion:   simVersion + " from yarnfed simrm (a simulator)",
		ResourceManagerVersionBuiltOn: "simrm", HadoopVersion: simVersion,
		HadoopBuildVersion: simVersion + " from yarnfed simrm (a simulator)", HadoopVersionBuiltOn: "simrm",
		HAZooKeeperConnectionState: "Could not find leader elector. Verify both HA and automatic failover are enabled.",
	}
	writeREST(w, req, http.StatusOK, rmrest.ClusterInfoResponse{ClusterInfo: info}, info)
}

func (r *RM) restMetrics(w http.ResponseWriter, req *http.Request) {
	m := r.core().Metrics()
	out := rmrest.ClusterMetrics{
		AppsSubmitted: m.AppsSubmitted, AppsCompleted: m.AppsCompleted, AppsPending: m.AppsPending,
		AppsRunning: m.AppsRunning, AppsFailed: m.AppsFailed, AppsKilled: m.AppsKilled,
		AvailableMB: m.Available.MemoryMB, AllocatedMB: m.Allocated.MemoryMB, PendingMB: m.Pending.MemoryMB,
		AvailableVirtualCores: int64(m.Available.VCores), AllocatedVirtualCores: int64(m.Allocated.VCores),
		PendingVirtualCores: int64(m.Pending.VCores), ContainersAllocated: m.ContainersAllocated,
		ContainersPending: m.ContainersPending, TotalMB: m.Total.MemoryMB, TotalVirtualCores: int64(m.Total.VCores),
		TotalNodes: m.TotalNodes, ActiveNodes: m.ActiveNodes,
		TotalUsedResourcesAcrossPartition: ptr(rmrest.NewResourceInfo(m.Allocated.MemoryMB, m.Allocated.VCores)),
		UtilizedMB:                        m.Allocated.MemoryMB, UtilizedVirtualCores: int64(m.Allocated.VCores),
		UtilizedMBPercent:                       percent(m.Allocated.MemoryMB, m.Total.MemoryMB),
		UtilizedVCoresPercent:                   percent(int64(m.Allocated.VCores), int64(m.Total.VCores)),
		TotalClusterResourcesAcrossPartition:    ptr(rmrest.NewResourceInfo(m.Total.MemoryMB, m.Total.VCores)),
		TotalReservedResourcesAcrossPartition:   ptr(rmrest.NewResourceInfo(0, 0)),
		TotalAllocatedContainersAcrossPartition: m.ContainersAllocated, CrossPartitionMetricsAvailable: true,
	}
	writeREST(w, req, http.StatusOK, rmrest.ClusterMetricsResponse{ClusterMetrics: out}, out)
}

func percent(part, whole int64) int32 {
	if whole <= 0 {
		return 0
	}
	return int32(part * 100 / whole)
}

func ptr[T any](v T) *T { return &v }

func (r *RM) restScheduler(w http.ResponseWriter, req *http.Request) {
	c := r.core()
	root := c.Queues()
	maxA := rmrest.NewResourceInfo(c.maxAlloc().MemoryMB, c.maxAlloc().VCores)
	info := rmrest.SchedulerInfo{
		XSI: rmrest.XSINamespace, XSIType: "capacityScheduler", Type: "capacityScheduler",
		Capacity: 100, MaxCapacity: 100, UsedCapacity: root.CurrentCapacity * 100, Weight: -1,
		QueueName: "root", QueuePath: "root", MaxParallelApps: math.MaxInt32, MaximumAllocation: &maxA,
		OrderingPolicyInfo: "utilization", Mode: "percentage", QueueType: "parent", CreationMethod: "static",
	}
	if len(root.Children) > 0 {
		info.Queues = &rmrest.QueueList{}
		for _, q := range root.Children {
			info.Queues.Queue = append(info.Queues.Queue, rmrest.Queue{
				XSIType: "capacitySchedulerLeafQueueInfo", Type: "capacitySchedulerLeafQueueInfo",
				QueuePath: "root." + q.Name, Capacity: q.Capacity * 100, UsedCapacity: q.CurrentCapacity * 100,
				MaxCapacity: q.MaxCapacity * 100, AbsoluteCapacity: q.Capacity * 100, AbsoluteMaxCapacity: q.MaxCapacity * 100,
				AbsoluteUsedCapacity: q.AbsoluteUsed * 100, Weight: -1, NumApplications: q.NumApps,
				MaxParallelApps: math.MaxInt32, QueueName: q.Name, State: q.State,
				ResourcesUsed: rmrest.NewResourceInfo(q.Used.MemoryMB, q.Used.VCores), NodeLabels: []string{"*"},
				AllocatedContainers: q.NumContainers, PendingContainers: q.PendingContainers, MaximumAllocation: &maxA,
				OrderingPolicyInfo: "fifo", Mode: "percentage", QueueType: "leaf", CreationMethod: "static",
				NumActiveApplications: q.NumActive, NumPendingApplications: q.NumPending,
				NumContainers: q.NumContainers, MaxApplications: 10000, MaxApplicationsPerUser: 10000,
				UserLimit: 100, UserLimitFactor: 1, ConfiguredMaxAMLimit: 0.1, PreemptionDisabled: true,
			})
		}
	}
	s := rmrest.Scheduler{SchedulerInfo: info}
	writeREST(w, req, http.StatusOK, rmrest.SchedulerResponse{Scheduler: s}, s)
}

func (r *RM) restApps(w http.ResponseWriter, req *http.Request) {
	q, err := rmrest.ParseAppsQuery(req.URL.Query())
	if err != nil {
		badRequest(w, req, strings.TrimPrefix(err.Error(), rmrest.ErrBadQuery.Error()+": "))
		return
	}
	f := AppFilter{
		Types: q.ApplicationTypes, Tags: q.ApplicationTags, Name: q.Name, Limit: q.Limit,
		StartBegin: q.StartedTimeBegin, StartEnd: q.StartedTimeEnd,
		FinishBegin: q.FinishedTimeBegin, FinishEnd: q.FinishedTimeEnd,
	}
	if q.User != "" {
		f.Users = []string{q.User}
	}
	if q.Queue != "" {
		f.Queues = []string{q.Queue}
	}
	for _, s := range q.States {
		st, _ := ParseAppState(s)
		f.States = append(f.States, st)
	}
	if q.FinalStatus != "" {
		f.Limit = 0 // the final status filter runs after the core's
	}
	reps := r.core().Apps(f)
	out := rmrest.Apps{}
	for i := range reps {
		if q.FinalStatus != "" && reps[i].FinalStatus.String() != q.FinalStatus {
			continue
		}
		if q.Limit > 0 && int64(len(out.App)) >= q.Limit {
			break
		}
		out.App = append(out.App, r.restApp1(&reps[i]))
	}
	writeREST(w, req, http.StatusOK, rmrest.AppsResponse{Apps: out}, out)
}

func (r *RM) restApp1(a *AppReport) rmrest.App {
	c := r.core()
	out := rmrest.App{
		ID: a.ID.String(), User: a.User, Name: a.Name, Queue: a.Queue, State: a.State.String(),
		FinalStatus: a.FinalStatus.String(), Progress: a.Progress * 100, Diagnostics: a.Diagnostics,
		ClusterID: a.ClusterTimestamp, RMClusterID: r.cfg.ClusterID, ApplicationType: a.Type, ApplicationTags: strings.Join(a.Tags, ","),
		Priority: a.Priority, StartedTime: a.Started, LaunchTime: a.Launched, FinishedTime: a.Finished,
		AllocatedMB: a.UsedResources.MemoryMB, AllocatedVCores: int64(a.UsedResources.VCores),
		RunningContainers: a.RunningContainer, MemorySeconds: a.MemorySeconds, VCoreSeconds: a.VCoreSeconds,
		QueueUsagePercentage: a.QueueUsagePct, ClusterUsagePercentage: a.ClusterUsagePct,
		LogAggregationStatus: "DISABLED", UnmanagedApplication: a.Unmanaged, AMNodeLabelExpression: a.AMNodeLabel,
		ResourceSecondsMap: rmrest.LongMap{
			{Key: "memory-mb", Value: strconv.FormatInt(a.MemorySeconds, 10)},
			{Key: "vcores", Value: strconv.FormatInt(a.VCoreSeconds, 10)},
		},
		PreemptedResourceSecsMap: rmrest.LongMap{},
		Timeouts:                 &rmrest.Timeouts{Timeout: []rmrest.Timeout{{Type: "LIFETIME", ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}}},
	}
	if out.LaunchTime == 0 {
		out.LaunchTime = -1 // Hadoop's "not launched yet"
	}
	if !a.State.Final() {
		var am Resource
		if a.AMContainer != nil {
			am = a.AMContainer.Resource
		}
		pending := a.NeededResources.sub(a.UsedResources).clampZero()
		zero := rmrest.NewResourceInfo(0, 0)
		out.ResourceInfo = &rmrest.AppResourceInfo{ResourceUsagesByPartition: []rmrest.PartitionUsage{{
			Used: rmrest.NewResourceInfo(a.UsedResources.MemoryMB, a.UsedResources.VCores), Reserved: zero,
			Pending: rmrest.NewResourceInfo(pending.MemoryMB, pending.VCores), AMUsed: rmrest.NewResourceInfo(am.MemoryMB, am.VCores),
			AMLimit: zero, UserAMLimit: zero,
		}}}
	}
	switch {
	case a.State <= AppAccepted:
		out.TrackingUI = "UNASSIGNED"
	case a.Finished == 0:
		out.TrackingUI = "ApplicationMaster"
	default:
		out.TrackingUI = "History"
	}
	if out.TrackingUI != "UNASSIGNED" && r.webAddr != "" {
		out.TrackingURL = "http://" + r.webAddr + "/proxy/" + out.ID + "/"
	}
	if a.Finished > 0 {
		out.ElapsedTime = a.Finished - a.Started
	} else {
		out.ElapsedTime = c.nowMS() - a.Started
	}
	if a.AMContainer != nil {
		out.AMHostHTTPAddress = a.AMContainer.NodeHTTPAddress
		out.AMContainerLogs = "http://" + a.AMContainer.NodeHTTPAddress + "/node/containerlogs/" + a.AMContainer.ID.String() + "/" + a.User
		out.MasterNodeID = a.AMContainer.Node.String()
	}
	if a.Host != "N/A" && a.RPCPort != -1 {
		out.AMRPCAddress = fmt.Sprintf("%s:%d", a.Host, a.RPCPort)
	}
	return out
}

func (r *RM) appParam(w http.ResponseWriter, req *http.Request) (AppID, bool) {
	s := req.PathValue("appid")
	id, err := ParseAppID(s)
	if err != nil {
		badRequest(w, req, "Invalid ApplicationId: "+s)
		return AppID{}, false
	}
	return id, true
}

// appFromPath resolves the {appid} path parameter to its report, answering
// 400 or 404 itself when it cannot.
func (r *RM) appFromPath(w http.ResponseWriter, req *http.Request) (AppReport, bool) {
	id, ok := r.appParam(w, req)
	if !ok {
		return AppReport{}, false
	}
	rep, err := r.core().AppReport(id)
	if err != nil {
		notFound(w, req, "app with id: "+id.String()+" not found")
		return AppReport{}, false
	}
	return rep, true
}

func (r *RM) restApp(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	app := r.restApp1(&rep)
	writeREST(w, req, http.StatusOK, rmrest.AppResponse{App: app}, app)
}

func (r *RM) restAttempts(w http.ResponseWriter, req *http.Request) {
	id, ok := r.appParam(w, req)
	if !ok {
		return
	}
	reps, err := r.core().Attempts(id)
	if err != nil {
		notFound(w, req, "app with id: "+id.String()+" not found")
		return
	}
	user := ""
	if a, err := r.core().AppReport(id); err == nil {
		user = a.User
	}
	out := rmrest.AppAttempts{}
	for _, a := range reps {
		out.AppAttempt = append(out.AppAttempt, restAttempt(a, user))
	}
	writeREST(w, req, http.StatusOK, rmrest.AppAttemptsResponse{AppAttempts: out}, out)
}

func restAttempt(a AttemptReport, user string) rmrest.AppAttempt {
	at := rmrest.AppAttempt{
		ID: a.ID.Attempt, StartTime: a.Started, FinishedTime: a.Finish, AppAttemptID: a.ID.String(),
		AppAttemptState: a.State.String(),
	}
	if a.AMContainer != nil {
		at.ContainerID = a.AMContainer.String()
		at.NodeID = a.AMNode.String()
		at.NodeHTTPAddress = a.AMNodeHTTP
		at.LogsLink = "http://" + a.AMNodeHTTP + "/node/containerlogs/" + at.ContainerID + "/" + user
	}
	return at
}

func (r *RM) restAppState(w http.ResponseWriter, req *http.Request) {
	rep, ok := r.appFromPath(w, req)
	if !ok {
		return
	}
	st := rmrest.AppState{State: rep.State.String()}
	writeREST(w, req, http.StatusOK, st, st)
}

// maxBodyBytes bounds request bodies (an app state is a few bytes).
const maxBodyBytes = 1 << 20

func (r *RM) restPutAppState(w http.ResponseWriter, req *http.Request) {
	id, ok := r.appParam(w, req)
	if !ok {
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBodyBytes))
	if err != nil {
		badRequest(w, req, "cannot read request body: "+err.Error())
		return
	}
	var want rmrest.AppState
	if strings.Contains(req.Header.Get("Content-Type"), "xml") {
		err = xml.Unmarshal(body, &want)
	} else {
		err = json.Unmarshal(body, &want)
	}
	if err != nil {
		badRequest(w, req, "cannot parse application state: "+err.Error())
		return
	}
	if !strings.EqualFold(want.State, "KILLED") {
		badRequest(w, req, "Only 'KILLED' is allowed as a target state.")
		return
	}
	// Without authentication Hadoop's web apps act as the static user dr.who.
	user := req.URL.Query().Get("user.name")
	if user == "" {
		user = "dr.who"
	}
	if _, err := r.core().Kill(id, user, ""); err != nil {
		notFound(w, req, "app with id: "+id.String()+" not found")
		return
	}
	st := rmrest.AppState{State: "KILLED"}
	writeREST(w, req, http.StatusOK, st, st)
}

func (r *RM) restNewApp(w http.ResponseWriter, req *http.Request) {
	id, maxCap := r.core().NewApplication()
	out := rmrest.NewApplication{
		ApplicationID:             id.String(),
		MaximumResourceCapability: rmrest.ResourceInfo{Memory: maxCap.MemoryMB, VCores: maxCap.VCores},
	}
	writeREST(w, req, http.StatusOK, out, out)
}

func restNode(n *NodeReport) rmrest.Node {
	free := n.Total.sub(n.Used)
	return rmrest.Node{
		Rack: n.Rack, State: n.State, ID: n.ID.String(), NodeHostName: n.ID.Host, NodeHTTPAddress: n.HTTPAddress,
		LastHealthUpdate: n.LastHealthUpdate, Version: simVersion, HealthReport: n.HealthReport,
		NumContainers: n.NumContainers, UsedMemoryMB: n.Used.MemoryMB, AvailMemoryMB: free.MemoryMB,
		UsedVirtualCores: int64(n.Used.VCores), AvailableVirtualCores: int64(free.VCores),
		UsedResource:      rmrest.NewResourceInfo(n.Used.MemoryMB, n.Used.VCores),
		AvailableResource: rmrest.NewResourceInfo(free.MemoryMB, free.VCores),
		TotalResource:     rmrest.NewResourceInfo(n.Total.MemoryMB, n.Total.VCores),
	}
}

func (r *RM) restNodes(w http.ResponseWriter, req *http.Request) {
	out := rmrest.Nodes{}
	// No states means all nodes; Hadoop rejects unknown state names (400).
	want := map[string]bool{}
	for _, raw := range append(req.URL.Query()["states"], req.URL.Query()["state"]...) {
		for _, s := range strings.Split(raw, ",") {
			s = strings.ToUpper(strings.TrimSpace(s))
			switch s {
			case "":
			case "NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONED", "LOST", "REBOOTED", "DECOMMISSIONING", "SHUTDOWN":
				want[s] = true
			default:
				badRequest(w, req, "Invalid node state "+s)
				return
			}
		}
	}
	nodes := r.core().Nodes()
	for i := range nodes {
		if len(want) == 0 || want[nodes[i].State] {
			out.Node = append(out.Node, restNode(&nodes[i]))
		}
	}
	writeREST(w, req, http.StatusOK, rmrest.NodesResponse{Nodes: out}, out)
}

func (r *RM) restNode(w http.ResponseWriter, req *http.Request) {
	want := req.PathValue("nodeid")
	c := r.core()
	c.mu.Lock()
	n, ok := c.hosts[strings.Split(want, ":")[0]]
	var rep NodeReport
	if ok && (n.id.String() == want || n.id.Host == want) {
		rep = c.nodeReport(n, c.nowMS())
	} else {
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		notFound(w, req, "nodeId, "+want+", is not found")
		return
	}
	node := restNode(&rep)
	writeREST(w, req, http.StatusOK, rmrest.NodeResponse{Node: node}, node)
}

// ---- simrm control API (not part of Hadoop's) ----

// faultsJSON is the wire form of FaultConfig in the control API.
type faultsJSON struct {
	Latency   string  `json:"latency"` // Go duration, e.g. "250ms"
	ErrorRate float64 `json:"errorRate"`
	Stalled   bool    `json:"stalled"`
}

// ParseFaults decodes and validates the control API's fault settings.
func ParseFaults(b []byte) (FaultConfig, error) {
	var fj faultsJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fj); err != nil {
		return FaultConfig{}, fmt.Errorf("faults: %w", err)
	}
	var f FaultConfig
	if fj.Latency != "" {
		d, err := time.ParseDuration(fj.Latency)
		if err != nil || d < 0 {
			return FaultConfig{}, fmt.Errorf("faults: latency %q is not a non-negative duration", fj.Latency)
		}
		f.Latency = config.Duration(d)
	}
	if !(fj.ErrorRate >= 0 && fj.ErrorRate <= 1) {
		return FaultConfig{}, fmt.Errorf("faults: errorRate %v is not within [0,1]", fj.ErrorRate)
	}
	f.ErrorRate, f.Stalled = fj.ErrorRate, fj.Stalled
	return f, nil
}

func (r *RM) getFaults(w http.ResponseWriter, req *http.Request) {
	f := r.Faults()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(faultsJSON{Latency: f.Latency.String(), ErrorRate: f.ErrorRate, Stalled: f.Stalled})
}

func (r *RM) putFaults(w http.ResponseWriter, req *http.Request) {
	b, err := io.ReadAll(io.LimitReader(req.Body, maxBodyBytes))
	if err != nil {
		badRequest(w, req, err.Error())
		return
	}
	f, err := ParseFaults(b)
	if err != nil {
		badRequest(w, req, err.Error())
		return
	}
	r.SetFaults(f)
	r.getFaults(w, req)
}

// postRestart crashes the RM and brings it back after downFor (default 0):
// ?keepState=false restarts empty, &downFor=2s keeps it down meanwhile. The
// reply is sent before the crash.
func (r *RM) postRestart(w http.ResponseWriter, req *http.Request) {
	keep := req.URL.Query().Get("keepState") != "false"
	var down time.Duration
	if s := req.URL.Query().Get("downFor"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > time.Hour {
			badRequest(w, req, "downFor must be a duration within [0,1h]")
			return
		}
		down = d
	}
	w.WriteHeader(http.StatusAccepted)
	go func() {
		// Let the reply leave before the listeners close.
		time.Sleep(50 * time.Millisecond)
		if err := r.Crash(); err != nil {
			r.cfg.Logger.Error("simrm: crash", "err", err)
		}
		time.Sleep(down)
		if err := r.Restart(context.Background(), keep); err != nil {
			r.cfg.Logger.Error("simrm: restart", "err", err)
		}
	}()
}

func (r *RM) postTransition(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Query().Get("to") {
	case "active":
		r.TransitionToActive()
	case "standby":
		r.TransitionToStandby()
	default:
		badRequest(w, req, "to must be active or standby")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// postNodeState loses a node (?state=LOST) or brings it back (?state=RUNNING).
func (r *RM) postNodeState(w http.ResponseWriter, req *http.Request) {
	var lost bool
	switch strings.ToUpper(req.URL.Query().Get("state")) {
	case "LOST":
		lost = true
	case "RUNNING":
	default:
		badRequest(w, req, "state must be LOST or RUNNING")
		return
	}
	if err := r.SetNodeLost(req.PathValue("host"), lost); err != nil {
		notFound(w, req, err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
