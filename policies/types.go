package policies

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// SubClusterID names a sub-cluster (Hadoop SubClusterId), e.g. "SC-1".
type SubClusterID string

// SubClusterState uses the Hadoop proto numbering (SubClusterStateProto).
type SubClusterState int32

// Sub-cluster states, numbered as in Hadoop's yarn_server_federation_protos.
const (
	StateNew             SubClusterState = 1
	StateRunning         SubClusterState = 2
	StateUnhealthy       SubClusterState = 3
	StateDecommissioning SubClusterState = 4
	StateLost            SubClusterState = 5
	StateUnregistered    SubClusterState = 6
	StateDecommissioned  SubClusterState = 7
)

var stateNames = map[SubClusterState]string{
	StateNew: "SC_NEW", StateRunning: "SC_RUNNING", StateUnhealthy: "SC_UNHEALTHY",
	StateDecommissioning: "SC_DECOMMISSIONING", StateLost: "SC_LOST",
	StateUnregistered: "SC_UNREGISTERED", StateDecommissioned: "SC_DECOMMISSIONED",
}

func (s SubClusterState) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("SubClusterState(%d)", int32(s))
}

// Active reports whether a sub-cluster in this state may receive new work.
// Hadoop's getSubClusters(filterInactive=true) keeps SC_RUNNING only.
func (s SubClusterState) Active() bool { return s == StateRunning }

// Capability holds the fields of the RM's /ws/v1/cluster/metrics
// clusterMetrics object that policies use. Parse it once per heartbeat with
// ParseCapability, not per routing decision.
type Capability struct {
	AvailableMB     int64
	AvailableVCores int64
	AllocatedMB     int64
	AllocatedVCores int64
	TotalMB         int64
	TotalVCores     int64
	AppsPending     int64
	AppsRunning     int64
	ActiveNodes     int64
}

// SubCluster is the membership view a policy needs.
type SubCluster struct {
	ID            SubClusterID
	State         SubClusterState
	Capability    Capability
	LastHeartbeat time.Time
}

// Resource is a container size.
type Resource struct {
	MemoryMB int64
	VCores   int32
}

// ResourceAny is the resource name of an off-switch ("ANY") request.
const ResourceAny = "*"

// ResourceRequest is the part of a YARN ResourceRequestProto that policies
// read. Ext is carried through untouched (the split copies share it) so an
// adapter can keep its original protobuf message and only rewrite
// NumContainers on the way out.
type ResourceRequest struct {
	AllocationRequestID int64
	Priority            int32
	ResourceName        string
	Capability          Resource
	NumContainers       int32
	RelaxLocality       bool
	NodeLabelExpression string
	Ext                 any
}

// IsAny reports whether the request is an off-switch ("*") request.
func (r *ResourceRequest) IsAny() bool { return r.ResourceName == ResourceAny }

// DefaultQueue is the queue used when a submission names none (Hadoop
// YarnConfiguration.DEFAULT_QUEUE_NAME).
const DefaultQueue = "default"

// AppSubmission is the part of an ApplicationSubmissionContext that router
// policies read.
type AppSubmission struct {
	ApplicationID string
	Queue         string
	// ReservationID is empty when the application has no reservation.
	ReservationID string
	// AMResourceRequests are the AM container requests (NODE, RACK, ANY).
	AMResourceRequests []ResourceRequest
}

// QueueOrDefault returns the queue, or DefaultQueue when none is set.
func (a *AppSubmission) QueueOrDefault() string {
	if a.Queue == "" {
		return DefaultQueue
	}
	return a.Queue
}

// Snapshot is an immutable view of federation membership. Build one with
// NewSnapshot whenever membership changes and share it between goroutines;
// policies cache derived tables keyed by the snapshot's identity, so
// reusing one snapshot for many decisions is what makes them cheap.
type Snapshot struct {
	all    []SubCluster // sorted by ID
	active []SubClusterID
	index  map[SubClusterID]int
}

// NewSnapshot copies scs into a new snapshot. Later entries with a duplicate
// ID replace earlier ones.
func NewSnapshot(scs []SubCluster) *Snapshot {
	s := &Snapshot{index: make(map[SubClusterID]int, len(scs))}
	byID := make(map[SubClusterID]SubCluster, len(scs))
	for _, sc := range scs {
		byID[sc.ID] = sc
	}
	s.all = make([]SubCluster, 0, len(byID))
	for _, sc := range byID {
		s.all = append(s.all, sc)
	}
	slices.SortFunc(s.all, func(a, b SubCluster) int { return compareIDs(a.ID, b.ID) })
	for i, sc := range s.all {
		s.index[sc.ID] = i
		if sc.State.Active() {
			s.active = append(s.active, sc.ID)
		}
	}
	return s
}

func compareIDs(a, b SubClusterID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Get returns the sub-cluster with the given id.
func (s *Snapshot) Get(id SubClusterID) (SubCluster, bool) {
	i, ok := s.index[id]
	if !ok {
		return SubCluster{}, false
	}
	return s.all[i], true
}

// IsActive reports whether id is a known, active sub-cluster.
func (s *Snapshot) IsActive(id SubClusterID) bool {
	i, ok := s.index[id]
	return ok && s.all[i].State.Active()
}

// Active returns the active sub-cluster ids in ascending order. The slice is
// shared: do not modify it.
func (s *Snapshot) Active() []SubClusterID { return s.active }

// All returns every sub-cluster in ascending id order. The slice is shared:
// do not modify it.
func (s *Snapshot) All() []SubCluster { return s.all }

// capabilityJSON mirrors the clusterMetrics object of the RM REST API. The
// RM writes numbers; numbers quoted as strings (Jersey mapped JSON) are
// accepted too.
type capabilityJSON struct {
	ClusterMetrics *struct {
		AvailableMB           json.Number `json:"availableMB"`
		AvailableVirtualCores json.Number `json:"availableVirtualCores"`
		AllocatedMB           json.Number `json:"allocatedMB"`
		AllocatedVirtualCores json.Number `json:"allocatedVirtualCores"`
		TotalMB               json.Number `json:"totalMB"`
		TotalVirtualCores     json.Number `json:"totalVirtualCores"`
		AppsPending           json.Number `json:"appsPending"`
		AppsRunning           json.Number `json:"appsRunning"`
		ActiveNodes           json.Number `json:"activeNodes"`
	} `json:"clusterMetrics"`
}

// ParseCapability parses a SubClusterInfo capability (the JSON of the RM's
// /ws/v1/cluster/metrics response). Missing fields are zero.
func ParseCapability(b []byte) (Capability, error) {
	var cj capabilityJSON
	if err := json.Unmarshal(b, &cj); err != nil {
		return Capability{}, fmt.Errorf("%w: capability: %v", ErrInvalidConfig, err)
	}
	if cj.ClusterMetrics == nil {
		return Capability{}, fmt.Errorf("%w: capability: missing clusterMetrics", ErrInvalidConfig)
	}
	m := cj.ClusterMetrics
	var c Capability
	fields := []struct {
		name string
		in   json.Number
		out  *int64
	}{
		{"availableMB", m.AvailableMB, &c.AvailableMB},
		{"availableVirtualCores", m.AvailableVirtualCores, &c.AvailableVCores},
		{"allocatedMB", m.AllocatedMB, &c.AllocatedMB},
		{"allocatedVirtualCores", m.AllocatedVirtualCores, &c.AllocatedVCores},
		{"totalMB", m.TotalMB, &c.TotalMB},
		{"totalVirtualCores", m.TotalVirtualCores, &c.TotalVCores},
		{"appsPending", m.AppsPending, &c.AppsPending},
		{"appsRunning", m.AppsRunning, &c.AppsRunning},
		{"activeNodes", m.ActiveNodes, &c.ActiveNodes},
	}
	for _, f := range fields {
		if f.in == "" {
			continue
		}
		v, err := f.in.Int64()
		if err != nil {
			return Capability{}, fmt.Errorf("%w: capability: clusterMetrics.%s: %q is not an integer", ErrInvalidConfig, f.name, string(f.in))
		}
		*f.out = v
	}
	return c, nil
}
