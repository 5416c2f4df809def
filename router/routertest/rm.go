package routertest

// The fake RM here is reached from tests only (deadcode lists it): `yarnfed bench
// router` links this package for its in-memory store (NewStore), which
// pulls the whole package into the binary.

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// RM is an in-process fake ResourceManager for ApplicationClientProtocol.
// Like a real RM, a resubmission of a known application succeeds without a
// second copy. Unknown methods answer an empty response.
type RM struct {
	ID               router.SubClusterID
	ClusterTimestamp int64

	mu    sync.Mutex
	next  int32
	apps  map[string]*yarnpb.ApplicationReportProto
	order []string
	calls map[string]int
	// Nodes is what getClusterNodes reports.
	Nodes []*yarnpb.NodeReportProto
	// NumNodeManagers is reported by getClusterMetrics.
	NumNodeManagers int32
	// Intercept, if set, runs before each call; a non-nil error is returned
	// instead. apply=true means the call is applied first, then the error
	// returned (a lost reply).
	Intercept func(method string) (err error, apply bool)

	killInProgress bool
	hung           bool
}

// SetHung makes every call block until the caller gives up, as an RM that
// accepts connections but no longer answers (GC storm, stuck scheduler).
func (rm *RM) SetHung(on bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.hung = on
}

// SetKillInProgress makes forceKillApplication answer "not completed yet"
// and leave the application's state alone, as a real RM does while the
// kill is under way.
func (rm *RM) SetKillInProgress(on bool) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	rm.killInProgress = on
}

// NewRM returns an RM whose application ids start from clusterTimestamp.
func NewRM(id router.SubClusterID, clusterTimestamp int64) *RM {
	return &RM{ID: id, ClusterTimestamp: clusterTimestamp, apps: map[string]*yarnpb.ApplicationReportProto{}, calls: map[string]int{}, NumNodeManagers: 1}
}

// Calls reports how many times method reached this RM.
func (rm *RM) Calls(method string) int {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return rm.calls[method]
}

// Apps lists the application ids this RM holds.
func (rm *RM) Apps() []string {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	out := append([]string(nil), rm.order...)
	sort.Strings(out)
	return out
}

// AddApp inserts a report as if the app had been submitted here (e.g. a UAM).
func (rm *RM) AddApp(r *yarnpb.ApplicationReportProto) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	k := yarnid.AppIDString(r.GetApplicationId())
	if _, ok := rm.apps[k]; !ok {
		rm.order = append(rm.order, k)
	}
	rm.apps[k] = r
}

// Call serves one ApplicationClientProtocol call. Requests and responses are
// copied through the wire encoding so tests cannot share memory by accident.
func (rm *RM) Call(ctx context.Context, method string, req, resp proto.Message) error {
	var intercepted error
	rm.mu.Lock()
	rm.calls[method]++
	icpt := rm.Intercept
	hung := rm.hung
	rm.mu.Unlock()
	if hung {
		<-ctx.Done() // a hung RM: the caller's timeout is all that ends the call
		return ctx.Err()
	}
	if icpt != nil {
		err, apply := icpt(method)
		if err != nil && !apply {
			return err
		}
		intercepted = err
	}
	b, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	in := req.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, in); err != nil {
		return err
	}
	out, err := rm.serve(method, in)
	if err != nil {
		return err
	}
	if intercepted != nil {
		return intercepted
	}
	if out != nil {
		ob, err := proto.Marshal(out)
		if err != nil {
			return err
		}
		return proto.Unmarshal(ob, resp)
	}
	return nil
}

// Close is a no-op (RM implements router.RMClient).
func (rm *RM) Close() error { return nil }

func notFound(id *yarnpb.ApplicationIdProto) error {
	return hadoopipc.Errorf(hadoopipc.ClassApplicationNotFound, "Application with id '%s' doesn't exist in RM.", yarnid.AppIDString(id))
}

func (rm *RM) serve(method string, in proto.Message) (proto.Message, error) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	switch method {
	case "getNewApplication":
		rm.next++
		return &yarnpb.GetNewApplicationResponseProto{
			ApplicationId:     &yarnpb.ApplicationIdProto{Id: proto.Int32(rm.next), ClusterTimestamp: proto.Int64(rm.ClusterTimestamp)},
			MaximumCapability: &yarnpb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)},
		}, nil
	case "submitApplication":
		asc := in.(*yarnpb.SubmitApplicationRequestProto).GetApplicationSubmissionContext()
		k := yarnid.AppIDString(asc.GetApplicationId())
		if _, ok := rm.apps[k]; ok {
			return &yarnpb.SubmitApplicationResponseProto{}, nil // already submitted: acknowledge
		}
		rm.order = append(rm.order, k)
		rm.apps[k] = &yarnpb.ApplicationReportProto{
			ApplicationId:        asc.GetApplicationId(),
			Name:                 asc.ApplicationName,
			Queue:                asc.Queue,
			User:                 proto.String("user"),
			Host:                 proto.String("N/A"),
			YarnApplicationState: yarnpb.YarnApplicationStateProto_ACCEPTED.Enum(),
			UnmanagedApplication: proto.Bool(asc.GetUnmanagedAm()),
			ApplicationTags:      asc.GetApplicationTags(),
			RmClusterId:          proto.String(string(rm.ID)),
			AppResource_Usage: &yarnpb.ApplicationResourceUsageReportProto{
				NumUsedContainers: proto.Int32(1),
				UsedResources:     &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
			},
		}
		return &yarnpb.SubmitApplicationResponseProto{}, nil
	case "getApplicationReport":
		id := in.(*yarnpb.GetApplicationReportRequestProto).GetApplicationId()
		a, ok := rm.apps[yarnid.AppIDString(id)]
		if !ok {
			return nil, notFound(id)
		}
		return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: a}, nil
	case "forceKillApplication":
		id := in.(*yarnpb.KillApplicationRequestProto).GetApplicationId()
		a, ok := rm.apps[yarnid.AppIDString(id)]
		if !ok {
			return nil, notFound(id)
		}
		if rm.killInProgress {
			return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(false)}, nil
		}
		a.YarnApplicationState = yarnpb.YarnApplicationStateProto_KILLED.Enum()
		return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(true)}, nil
	case "getApplications":
		out := &yarnpb.GetApplicationsResponseProto{}
		for _, k := range rm.order {
			out.Applications = append(out.Applications, rm.apps[k])
		}
		return out, nil
	case "getClusterMetrics":
		return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{
			NumNodeManagers: proto.Int32(rm.NumNodeManagers), NumActiveNms: proto.Int32(rm.NumNodeManagers),
		}}, nil
	case "getClusterNodes":
		return &yarnpb.GetClusterNodesResponseProto{NodeReports: rm.Nodes}, nil
	case "getQueueInfo":
		return &yarnpb.GetQueueInfoResponseProto{QueueInfo: &yarnpb.QueueInfoProto{
			QueueName: proto.String("default"), Capacity: proto.Float32(1), MaximumCapacity: proto.Float32(1),
			CurrentCapacity: proto.Float32(float32(len(rm.apps)) / 10), State: yarnpb.QueueStateProto_Q_RUNNING.Enum(),
			QueueStatistics: &yarnpb.QueueStatisticsProto{NumAppsSubmitted: proto.Int64(int64(len(rm.apps)))},
		}}, nil
	}
	return nil, nil
}

// Dialer returns a router.DialFunc that reaches the given fake RMs by
// sub-cluster id (the RM address is ignored). Unknown ids fail to dial.
func Dialer(rms ...*RM) router.DialFunc {
	return dialByID("fake RM", func(rm *RM) router.SubClusterID { return rm.ID }, rms)
}

// dialByID is a DialFunc handing out the fake (what) whose id is the
// sub-cluster's; an unknown id fails as a dial error.
func dialByID[C router.RMClient](what string, id func(C) router.SubClusterID, rms []C) router.DialFunc {
	byID := map[router.SubClusterID]C{}
	for _, rm := range rms {
		byID[id(rm)] = rm
	}
	return func(_ context.Context, sc router.SubClusterInfo, _ string) (router.RMClient, error) {
		rm, ok := byID[sc.ID]
		if !ok {
			return nil, fmt.Errorf("%w: no %s for %s", hadoopipc.ErrDial, what, sc.ID)
		}
		return rm, nil
	}
}
