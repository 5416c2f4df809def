package simrm

// The simulator's own record types. Enum values equal the numbers of
// Hadoop's yarn_protos.proto enums, so the IPC binding converts by cast and
// the REST layer prints the Hadoop names.

// AppState is YarnApplicationStateProto.
type AppState int32

const (
	AppNew       AppState = 1
	AppNewSaving AppState = 2
	AppSubmitted AppState = 3
	AppAccepted  AppState = 4
	AppRunning   AppState = 5
	AppFinished  AppState = 6
	AppFailed    AppState = 7
	AppKilled    AppState = 8
)

var appStateNames = map[AppState]string{
	AppNew: "NEW", AppNewSaving: "NEW_SAVING", AppSubmitted: "SUBMITTED", AppAccepted: "ACCEPTED",
	AppRunning: "RUNNING", AppFinished: "FINISHED", AppFailed: "FAILED", AppKilled: "KILLED",
}

func (s AppState) String() string {
	if n, ok := appStateNames[s]; ok {
		return n
	}
	return "UNKNOWN"
}

// Final reports whether the state is terminal.
func (s AppState) Final() bool { return s == AppFinished || s == AppFailed || s == AppKilled }

// ParseAppState accepts Hadoop's names, case-insensitively (the REST API
// lower-cases them in some places).
func ParseAppState(s string) (AppState, bool) {
	for k, v := range appStateNames {
		if equalFold(v, s) {
			return k, true
		}
	}
	return 0, false
}

// FinalStatus is FinalApplicationStatusProto.
type FinalStatus int32

const (
	FinalUndefined FinalStatus = 0
	FinalSucceeded FinalStatus = 1
	FinalFailed    FinalStatus = 2
	FinalKilled    FinalStatus = 3
	FinalEnded     FinalStatus = 4
)

func (f FinalStatus) String() string {
	switch f {
	case FinalSucceeded:
		return "SUCCEEDED"
	case FinalFailed:
		return "FAILED"
	case FinalKilled:
		return "KILLED"
	case FinalEnded:
		return "ENDED"
	}
	return "UNDEFINED"
}

// AttemptState is YarnApplicationAttemptStateProto.
type AttemptState int32

const (
	AttemptNew             AttemptState = 1
	AttemptSubmitted       AttemptState = 2
	AttemptScheduled       AttemptState = 3
	AttemptAllocatedSaving AttemptState = 4
	AttemptAllocated       AttemptState = 5
	AttemptLaunched        AttemptState = 6
	AttemptFailed          AttemptState = 7
	AttemptRunning         AttemptState = 8
	AttemptFinishing       AttemptState = 9
	AttemptFinished        AttemptState = 10
	AttemptKilled          AttemptState = 11
)

func (s AttemptState) String() string {
	return [...]string{"", "NEW", "SUBMITTED", "SCHEDULED", "ALLOCATED_SAVING", "ALLOCATED", "LAUNCHED",
		"FAILED", "RUNNING", "FINISHING", "FINISHED", "KILLED"}[s]
}

func (s AttemptState) final() bool {
	return s == AttemptFailed || s == AttemptFinished || s == AttemptKilled
}

// ContainerState is ContainerStateProto.
type ContainerState int32

const (
	ContainerNew      ContainerState = 1
	ContainerRunning  ContainerState = 2
	ContainerComplete ContainerState = 3
)

func (s ContainerState) String() string {
	return [...]string{"", "NEW", "RUNNING", "COMPLETE"}[s]
}

// Container exit statuses (ContainerExitStatus.java).
const (
	ExitSuccess            int32 = 0
	ExitAborted            int32 = -100 // released by the AM, or lost with its node
	ExitKilledByAM         int32 = -105
	ExitKilledByRM         int32 = -106
	ExitKilledAfterAppDone int32 = -107
)

// NodeID is a NodeManager's host and RPC port.
type NodeID struct {
	Host string
	Port int32
}

func (n NodeID) String() string { return n.Host + ":" + itoa(int64(n.Port)) }

// NodeReport is a snapshot of one simulated NodeManager.
type NodeReport struct {
	ID               NodeID
	HTTPAddress      string
	Rack             string
	State            string // NodeStateProto name without the NS_ prefix
	Total            Resource
	Used             Resource
	NumContainers    int32
	HealthReport     string
	LastHealthUpdate int64
}

// ContainerInfo is a snapshot of one container (Container/ContainerReport).
type ContainerInfo struct {
	ID                  ContainerID
	Node                NodeID
	NodeHTTPAddress     string
	Resource            Resource
	Priority            int32
	AllocationRequestID int64
	State               ContainerState
	ExitStatus          int32
	Diagnostics         string
	Created, Finished   int64 // ms
	AM                  bool
	User                string
}

// ContainerStatus is a completed container as an AM learns it.
type ContainerStatus struct {
	ID          ContainerID
	State       ContainerState
	ExitStatus  int32
	Diagnostics string
	Resource    Resource
}

// AttemptReport is ApplicationAttemptReport.
type AttemptReport struct {
	ID              AttemptID
	State           AttemptState
	Host            string
	RPCPort         int32
	TrackingURL     string
	Diagnostics     string
	FinalStatus     FinalStatus
	AMContainer     *ContainerID
	AMNode          NodeID
	AMNodeHTTP      string
	Started, Finish int64
}

// AppReport is ApplicationReport plus the REST-only figures.
type AppReport struct {
	ID               AppID
	CurrentAttempt   *AttemptID
	User, Queue      string
	Name, Type       string
	Host             string
	RPCPort          int32
	TrackingURL      string
	Diagnostics      string
	State            AppState
	FinalStatus      FinalStatus
	Progress         float32
	Tags             []string
	Priority         int32
	Unmanaged        bool
	Submitted        int64
	Started          int64
	Launched         int64
	Finished         int64
	AMContainer      *ContainerInfo
	UsedResources    Resource
	ReservedResource Resource
	NeededResources  Resource
	RunningContainer int32
	MemorySeconds    int64
	VCoreSeconds     int64
	QueueUsagePct    float32
	ClusterUsagePct  float32
	// AMRMToken is set for unmanaged applications while the attempt is
	// LAUNCHED (Hadoop returns the token in the report so the client can
	// start the AM itself; only the owner may see it).
	AMRMToken *Token
	// ClusterTimestamp is the RM's, for REST clusterId.
	ClusterTimestamp int64
	AMNodeLabel      string
}

// Token is Hadoop's TokenProto in Go.
type Token struct {
	Identifier []byte
	Password   []byte
	Kind       string
	Service    string
}

// QueueReport is QueueInfo (one leaf queue, or root).
type QueueReport struct {
	Name              string
	Capacity          float32 // fraction [0,1]
	MaxCapacity       float32
	CurrentCapacity   float32 // used / guaranteed
	AbsoluteUsed      float32 // used / cluster, fraction
	State             string  // RUNNING / STOPPED
	Used              Resource
	NumApps           int32
	NumActive         int32
	NumPending        int32
	NumContainers     int32
	PendingContainers int32
	Apps              []AppID
	Children          []QueueReport
}

// ClusterMetrics is what /ws/v1/cluster/metrics reports.
type ClusterMetrics struct {
	AppsSubmitted, AppsCompleted, AppsPending, AppsRunning, AppsFailed, AppsKilled int32
	Total, Allocated, Available, Pending, Reserved                                 Resource
	ContainersAllocated, ContainersPending, ContainersReserved                     int32
	TotalNodes, ActiveNodes, LostNodes, UnhealthyNodes, DecommissionedNodes        int32
}

// ResourceRequest is one ask of an AM (ResourceRequestProto).
type ResourceRequest struct {
	Priority            int32
	ResourceName        string // host, /rack or "*"
	Capability          Resource
	NumContainers       int32
	RelaxLocality       bool
	AllocationRequestID int64
	NodeLabel           string
}

// AnyResource is ResourceRequest.ANY.
const AnyResource = "*"

// AllocateRequest is an AM heartbeat in the simulator's terms.
type AllocateRequest struct {
	ResponseID      int32
	Progress        float32
	Asks            []ResourceRequest
	Releases        []ContainerID
	BlacklistAdd    []string
	BlacklistRemove []string
	TrackingURL     string // an AM may move its tracking URL on any heartbeat
	// SchedulingRequests counts placement-constraint requests, which simrm
	// refuses as Hadoop's default (disabled) placement processor does.
	SchedulingRequests int
}

// AMCommand is AMCommandProto.
type AMCommand int32

const (
	AMCommandNone     AMCommand = 0
	AMCommandResync   AMCommand = 1
	AMCommandShutdown AMCommand = 2
)

// AllocateResponse is the RM's answer. The RM keeps the last one per
// attempt and resends it verbatim for a duplicate responseId, so it must not
// be mutated once returned.
type AllocateResponse struct {
	ResponseID      int32
	Command         AMCommand
	Allocated       []ContainerInfo
	Completed       []ContainerStatus
	Available       Resource
	NumClusterNodes int32
	// NMTokenNodes are the nodes the AM gets a fresh NM token for: the nodes
	// of this response's new containers it has no token for yet.
	NMTokenNodes []NodeID
	// UpdatedNodes are nodes whose state changed since the AM's last
	// heartbeat (lost or back).
	UpdatedNodes []NodeReport
	Attempt      AttemptID
	User         string
	Priority     int32
}

// RegisterRequest is RegisterApplicationMasterRequest.
type RegisterRequest struct {
	Host        string
	RPCPort     int32
	TrackingURL string
}

// RegisterResponse is RegisterApplicationMasterResponse.
type RegisterResponse struct {
	MaxCapability Resource
	Queue         string
	// ContainersFromPrevious are live containers of earlier attempts
	// (keep-containers-across-application-attempts).
	ContainersFromPrevious []ContainerInfo
	// NMTokenNodes are the nodes of ContainersFromPrevious, each with an
	// NM token for Attempt and User (nm_tokens_from_previous_attempts).
	NMTokenNodes           []NodeID
	Attempt                AttemptID
	User                   string
	SchedulerResourceTypes []string
}

// FinishRequest is FinishApplicationMasterRequest.
type FinishRequest struct {
	FinalStatus FinalStatus
	Diagnostics string
	TrackingURL string
}

// SubmitRequest carries the parts of ApplicationSubmissionContext simrm uses.
type SubmitRequest struct {
	ID             AppID
	Name           string
	Queue          string
	Type           string
	Tags           []string
	Priority       int32
	Unmanaged      bool
	AMResource     Resource
	MaxAttempts    int32
	KeepContainers bool
	User           string
	AMNodeLabel    string
}

// AppFilter is GetApplicationsRequest. Empty fields match everything.
type AppFilter struct {
	Types       []string // case-insensitive
	States      []AppState
	Users       []string
	Queues      []string
	Tags        []string // any tag matches; case-insensitive
	Name        string
	Limit       int64 // <= 0: no limit
	StartBegin  int64
	StartEnd    int64 // 0: no bound
	FinishBegin int64
	FinishEnd   int64 // 0: no bound
	// OwnUser restricts to the caller's applications (scope OWN).
	OwnUser string
}

func itoa(v int64) string { return pad(v, 1) }

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
