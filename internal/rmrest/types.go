// Package rmrest holds Go types for the ResourceManager REST API
// (/ws/v1/cluster/...) as Hadoop 3.4 serves it, in JSON and XML, plus a
// small client. Field names and element names follow the RM webapp DAO
// classes (org.apache.hadoop.yarn.server.resourcemanager.webapp.dao), which
// is what Hadoop's Jersey/JAXB layer renders: JSON objects are wrapped in
// their root element name ({"clusterInfo":{...}}), XML documents use it as
// the root element.
package rmrest

import (
	"encoding/json"
	"encoding/xml"
)

// ResourceInfo is a resource amount (memory in MB, vCores) with Hadoop
// 3's per-type breakdown.
type ResourceInfo struct {
	Memory               int64                 `json:"memory" xml:"memory"`
	VCores               int32                 `json:"vCores" xml:"vCores"`
	ResourceInformations *ResourceInformations `json:"resourceInformations,omitempty" xml:"resourceInformations,omitempty"`
}

// ResourceInformations lists the resource types of a ResourceInfo.
type ResourceInformations struct {
	ResourceInformation []ResourceInformation `json:"resourceInformation" xml:"resourceInformation"`
}

// ResourceInformation is one resource type's amount.
type ResourceInformation struct {
	Attributes        struct{} `json:"attributes" xml:"attributes"`
	MaximumAllocation int64    `json:"maximumAllocation" xml:"maximumAllocation"`
	MinimumAllocation int64    `json:"minimumAllocation" xml:"minimumAllocation"`
	Name              string   `json:"name" xml:"name"`
	ResourceType      string   `json:"resourceType" xml:"resourceType"`
	Units             string   `json:"units" xml:"units"`
	Value             int64    `json:"value" xml:"value"`
}

// NewResourceInfo fills a ResourceInfo the way the RM renders one: memory
// and vCores plus the memory-mb and vcores resource informations.
func NewResourceInfo(memoryMB int64, vcores int32) ResourceInfo {
	const unbounded = int64(^uint64(0) >> 1)
	return ResourceInfo{Memory: memoryMB, VCores: vcores, ResourceInformations: &ResourceInformations{
		ResourceInformation: []ResourceInformation{
			{MaximumAllocation: unbounded, Name: "memory-mb", ResourceType: "COUNTABLE", Units: "Mi", Value: memoryMB},
			{MaximumAllocation: unbounded, Name: "vcores", ResourceType: "COUNTABLE", Units: "", Value: int64(vcores)},
		},
	}}
}

// ClusterInfo is /ws/v1/cluster/info.
type ClusterInfo struct {
	XMLName                       xml.Name `json:"-" xml:"clusterInfo"`
	ID                            int64    `json:"id" xml:"id"`
	StartedOn                     int64    `json:"startedOn" xml:"startedOn"`
	State                         string   `json:"state" xml:"state"`
	HAState                       string   `json:"haState" xml:"haState"`
	RMStateStoreName              string   `json:"rmStateStoreName" xml:"rmStateStoreName"`
	ResourceManagerVersion        string   `json:"resourceManagerVersion" xml:"resourceManagerVersion"`
	ResourceManagerBuildVersion   string   `json:"resourceManagerBuildVersion" xml:"resourceManagerBuildVersion"`
	ResourceManagerVersionBuiltOn string   `json:"resourceManagerVersionBuiltOn" xml:"resourceManagerVersionBuiltOn"`
	HadoopVersion                 string   `json:"hadoopVersion" xml:"hadoopVersion"`
	HadoopBuildVersion            string   `json:"hadoopBuildVersion" xml:"hadoopBuildVersion"`
	HadoopVersionBuiltOn          string   `json:"hadoopVersionBuiltOn" xml:"hadoopVersionBuiltOn"`
	HAZooKeeperConnectionState    string   `json:"haZooKeeperConnectionState" xml:"haZooKeeperConnectionState"`
}

// ClusterInfoResponse is the JSON envelope of ClusterInfo.
type ClusterInfoResponse struct {
	ClusterInfo ClusterInfo `json:"clusterInfo"`
}

// ClusterMetrics is /ws/v1/cluster/metrics (ClusterMetricsInfo).
type ClusterMetrics struct {
	XMLName               xml.Name `json:"-" xml:"clusterMetrics"`
	AppsSubmitted         int32    `json:"appsSubmitted" xml:"appsSubmitted"`
	AppsCompleted         int32    `json:"appsCompleted" xml:"appsCompleted"`
	AppsPending           int32    `json:"appsPending" xml:"appsPending"`
	AppsRunning           int32    `json:"appsRunning" xml:"appsRunning"`
	AppsFailed            int32    `json:"appsFailed" xml:"appsFailed"`
	AppsKilled            int32    `json:"appsKilled" xml:"appsKilled"`
	ReservedMB            int64    `json:"reservedMB" xml:"reservedMB"`
	AvailableMB           int64    `json:"availableMB" xml:"availableMB"`
	AllocatedMB           int64    `json:"allocatedMB" xml:"allocatedMB"`
	PendingMB             int64    `json:"pendingMB" xml:"pendingMB"`
	ReservedVirtualCores  int64    `json:"reservedVirtualCores" xml:"reservedVirtualCores"`
	AvailableVirtualCores int64    `json:"availableVirtualCores" xml:"availableVirtualCores"`
	AllocatedVirtualCores int64    `json:"allocatedVirtualCores" xml:"allocatedVirtualCores"`
	PendingVirtualCores   int64    `json:"pendingVirtualCores" xml:"pendingVirtualCores"`
	ContainersAllocated   int32    `json:"containersAllocated" xml:"containersAllocated"`
	ContainersReserved    int32    `json:"containersReserved" xml:"containersReserved"`
	ContainersPending     int32    `json:"containersPending" xml:"containersPending"`
	TotalMB               int64    `json:"totalMB" xml:"totalMB"`
	UtilizedMB            int64    `json:"utilizedMB" xml:"utilizedMB"`
	TotalVirtualCores     int64    `json:"totalVirtualCores" xml:"totalVirtualCores"`
	UtilizedVirtualCores  int64    `json:"utilizedVirtualCores" xml:"utilizedVirtualCores"`
	UtilizedMBPercent     int32    `json:"utilizedMBPercent" xml:"utilizedMBPercent"`
	UtilizedVCoresPercent int32    `json:"utilizedVirtualCoresPercent" xml:"utilizedVirtualCoresPercent"`
	RMSchedulerBusyPct    int32    `json:"rmSchedulerBusyPercent" xml:"rmSchedulerBusyPercent"`
	TotalNodes            int32    `json:"totalNodes" xml:"totalNodes"`
	LostNodes             int32    `json:"lostNodes" xml:"lostNodes"`
	UnhealthyNodes        int32    `json:"unhealthyNodes" xml:"unhealthyNodes"`
	DecommissioningNodes  int32    `json:"decommissioningNodes" xml:"decommissioningNodes"`
	DecommissionedNodes   int32    `json:"decommissionedNodes" xml:"decommissionedNodes"`
	RebootedNodes         int32    `json:"rebootedNodes" xml:"rebootedNodes"`
	ActiveNodes           int32    `json:"activeNodes" xml:"activeNodes"`
	ShutdownNodes         int32    `json:"shutdownNodes" xml:"shutdownNodes"`
	ContainerAssignedPerS int32    `json:"containerAssignedPerSecond" xml:"containerAssignedPerSecond"`

	TotalUsedResourcesAcrossPartition       *ResourceInfo `json:"totalUsedResourcesAcrossPartition,omitempty" xml:"totalUsedResourcesAcrossPartition,omitempty"`
	TotalClusterResourcesAcrossPartition    *ResourceInfo `json:"totalClusterResourcesAcrossPartition,omitempty" xml:"totalClusterResourcesAcrossPartition,omitempty"`
	TotalReservedResourcesAcrossPartition   *ResourceInfo `json:"totalReservedResourcesAcrossPartition,omitempty" xml:"totalReservedResourcesAcrossPartition,omitempty"`
	TotalAllocatedContainersAcrossPartition int32         `json:"totalAllocatedContainersAcrossPartition" xml:"totalAllocatedContainersAcrossPartition"`
	CrossPartitionMetricsAvailable          bool          `json:"crossPartitionMetricsAvailable" xml:"crossPartitionMetricsAvailable"`
	RMEventQueueSize                        int32         `json:"rmEventQueueSize" xml:"rmEventQueueSize"`
	SchedulerEventQueueSize                 int32         `json:"schedulerEventQueueSize" xml:"schedulerEventQueueSize"`
}

// ClusterMetricsResponse is the JSON envelope of ClusterMetrics.
type ClusterMetricsResponse struct {
	ClusterMetrics ClusterMetrics `json:"clusterMetrics"`
}

// App is one application (AppInfo).
type App struct {
	XMLName                    xml.Name `json:"-" xml:"app"`
	ID                         string   `json:"id" xml:"id"`
	User                       string   `json:"user" xml:"user"`
	Name                       string   `json:"name" xml:"name"`
	Queue                      string   `json:"queue" xml:"queue"`
	State                      string   `json:"state" xml:"state"`
	FinalStatus                string   `json:"finalStatus" xml:"finalStatus"`
	Progress                   float32  `json:"progress" xml:"progress"`
	TrackingUI                 string   `json:"trackingUI" xml:"trackingUI"`
	TrackingURL                string   `json:"trackingUrl,omitempty" xml:"trackingUrl,omitempty"`
	Diagnostics                string   `json:"diagnostics" xml:"diagnostics"`
	ClusterID                  int64    `json:"clusterId" xml:"clusterId"`
	RMClusterID                string   `json:"rmClusterId" xml:"rmClusterId"`
	ApplicationType            string   `json:"applicationType" xml:"applicationType"`
	ApplicationTags            string   `json:"applicationTags" xml:"applicationTags"`
	Priority                   int32    `json:"priority" xml:"priority"`
	StartedTime                int64    `json:"startedTime" xml:"startedTime"`
	LaunchTime                 int64    `json:"launchTime" xml:"launchTime"`
	FinishedTime               int64    `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime                int64    `json:"elapsedTime" xml:"elapsedTime"`
	AMContainerLogs            string   `json:"amContainerLogs,omitempty" xml:"amContainerLogs,omitempty"`
	AMHostHTTPAddress          string   `json:"amHostHttpAddress,omitempty" xml:"amHostHttpAddress,omitempty"`
	AMRPCAddress               string   `json:"amRPCAddress,omitempty" xml:"amRPCAddress,omitempty"`
	MasterNodeID               string   `json:"masterNodeId" xml:"masterNodeId"`
	AllocatedMB                int64    `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores            int64    `json:"allocatedVCores" xml:"allocatedVCores"`
	ReservedMB                 int64    `json:"reservedMB" xml:"reservedMB"`
	ReservedVCores             int64    `json:"reservedVCores" xml:"reservedVCores"`
	RunningContainers          int32    `json:"runningContainers" xml:"runningContainers"`
	MemorySeconds              int64    `json:"memorySeconds" xml:"memorySeconds"`
	VCoreSeconds               int64    `json:"vcoreSeconds" xml:"vcoreSeconds"`
	QueueUsagePercentage       float32  `json:"queueUsagePercentage" xml:"queueUsagePercentage"`
	ClusterUsagePercentage     float32  `json:"clusterUsagePercentage" xml:"clusterUsagePercentage"`
	ResourceSecondsMap         LongMap  `json:"resourceSecondsMap" xml:"resourceSecondsMap>entry"`
	PreemptedResourceMB        int64    `json:"preemptedResourceMB" xml:"preemptedResourceMB"`
	PreemptedResourceVCores    int64    `json:"preemptedResourceVCores" xml:"preemptedResourceVCores"`
	NumNonAMContainerPreempted int32    `json:"numNonAMContainerPreempted" xml:"numNonAMContainerPreempted"`
	NumAMContainerPreempted    int32    `json:"numAMContainerPreempted" xml:"numAMContainerPreempted"`
	PreemptedMemorySeconds     int64    `json:"preemptedMemorySeconds" xml:"preemptedMemorySeconds"`
	PreemptedVcoreSeconds      int64    `json:"preemptedVcoreSeconds" xml:"preemptedVcoreSeconds"`
	PreemptedResourceSecsMap   LongMap  `json:"preemptedResourceSecondsMap" xml:"preemptedResourceSecondsMap>entry"`
	LogAggregationStatus       string   `json:"logAggregationStatus" xml:"logAggregationStatus"`
	UnmanagedApplication       bool     `json:"unmanagedApplication" xml:"unmanagedApplication"`
	AppNodeLabelExpression     string   `json:"appNodeLabelExpression,omitempty" xml:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpression      string   `json:"amNodeLabelExpression,omitempty" xml:"amNodeLabelExpression,omitempty"`
	// HasAppNodeLabelExpression and HasAMNodeLabelExpression say the
	// expression is set even when empty: the RM omits a null expression
	// and sends an empty one as "" (see App.MarshalJSON).
	HasAppNodeLabelExpression bool `json:"-" xml:"-"`
	HasAMNodeLabelExpression  bool `json:"-" xml:"-"`
	// ResourceInfo is set by code that builds an App (simrm, the router's
	// IPC fallback). An App decoded from an RM's JSON keeps that
	// resourceInfo undecoded instead (written back byte for byte); read
	// it with Resources.
	ResourceInfo *AppResourceInfo `json:"resourceInfo,omitempty" xml:"resourceInfo,omitempty"`
	Timeouts     *Timeouts        `json:"timeouts,omitempty" xml:"timeouts,omitempty"`
	// SubClusters is not an RM field: the yarnfed router adds it to an
	// application that spans sub-clusters (clients that do not know it
	// ignore it; an RM never sends it).
	SubClusters *AppSubClusters `json:"subClusters,omitempty" xml:"subClusters,omitempty"`

	// resourceInfoJSON is the resourceInfo an RM sent, undecoded.
	resourceInfoJSON json.RawMessage
}

// AppSubClusters lists the sub-clusters an application runs in: its home
// and each secondary where its unmanaged AM runs.
type AppSubClusters struct {
	SubCluster []AppSubCluster `json:"subCluster" xml:"subCluster"`
}

// AppSubCluster is an application's part in one sub-cluster, from that
// RM's report of the application (its UAM's on a secondary).
type AppSubCluster struct {
	SubClusterID      string `json:"subClusterId" xml:"subClusterId"`
	Home              bool   `json:"home" xml:"home"`
	State             string `json:"state,omitempty" xml:"state,omitempty"`
	RunningContainers int32  `json:"runningContainers" xml:"runningContainers"`
	AllocatedMB       int64  `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores   int64  `json:"allocatedVCores" xml:"allocatedVCores"`
	// Error says why the sub-cluster's part is unknown (it did not answer).
	Error string `json:"error,omitempty" xml:"error,omitempty"`
}

// AppResourceInfo is an application's usage per node partition (the
// capacity scheduler's ResourcesInfo).
type AppResourceInfo struct {
	ResourceUsagesByPartition []PartitionUsage `json:"resourceUsagesByPartition" xml:"resourceUsagesByPartition"`
}

// PartitionUsage is one partition's usage ("" is the default partition).
type PartitionUsage struct {
	PartitionName string       `json:"partitionName" xml:"partitionName"`
	Used          ResourceInfo `json:"used" xml:"used"`
	Reserved      ResourceInfo `json:"reserved" xml:"reserved"`
	Pending       ResourceInfo `json:"pending" xml:"pending"`
	AMUsed        ResourceInfo `json:"amUsed" xml:"amUsed"`
	AMLimit       ResourceInfo `json:"amLimit" xml:"amLimit"`
	UserAMLimit   ResourceInfo `json:"userAmLimit" xml:"userAmLimit"`
}

// Timeouts are an application's timeouts (AppTimeoutsInfo).
type Timeouts struct {
	Timeout []Timeout `json:"timeout" xml:"timeout"`
}

// Timeout is one application timeout; an application without one reports
// LIFETIME, "UNLIMITED", -1.
type Timeout struct {
	Type                   string `json:"type" xml:"type"`
	ExpiryTime             string `json:"expiryTime" xml:"expiryTime"`
	RemainingTimeInSeconds int64  `json:"remainingTimeInSeconds" xml:"remainingTimeInSeconds"`
}

// Apps is the collection of /ws/v1/cluster/apps. An empty list renders as
// {"apps":{}} (JAXB omits the empty element), which decodes to a nil App.
type Apps struct {
	XMLName xml.Name `json:"-" xml:"apps"`
	App     []App    `json:"app,omitempty" xml:"app"`
}

// AppsResponse is the JSON envelope of Apps.
type AppsResponse struct {
	Apps Apps `json:"apps"`
}

// AppResponse is the JSON envelope of one App (/apps/{appid}).
type AppResponse struct {
	App App `json:"app"`
}

// AppAttempt is one application attempt (AppAttemptInfo).
type AppAttempt struct {
	XMLName          xml.Name `json:"-" xml:"appAttempt"`
	ID               int32    `json:"id" xml:"id"`
	StartTime        int64    `json:"startTime" xml:"startTime"`
	FinishedTime     int64    `json:"finishedTime" xml:"finishedTime"`
	ContainerID      string   `json:"containerId" xml:"containerId"`
	NodeHTTPAddress  string   `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID           string   `json:"nodeId" xml:"nodeId"`
	LogsLink         string   `json:"logsLink" xml:"logsLink"`
	BlacklistedNodes string   `json:"blacklistedNodes" xml:"blacklistedNodes"`
	// NodesBlacklistedBySystem: nodes the RM's AM blacklisting excluded.
	NodesBlacklistedBySystem string `json:"nodesBlacklistedBySystem" xml:"nodesBlacklistedBySystem"`
	AppAttemptID             string `json:"appAttemptId" xml:"appAttemptId"`
	ExportPorts              string `json:"exportPorts" xml:"exportPorts"`
	AppAttemptState          string `json:"appAttemptState" xml:"appAttemptState"`
}

// AppAttempts is /apps/{appid}/appattempts.
type AppAttempts struct {
	XMLName    xml.Name     `json:"-" xml:"appAttempts"`
	AppAttempt []AppAttempt `json:"appAttempt,omitempty" xml:"appAttempt"`
}

// AppAttemptsResponse is the JSON envelope of AppAttempts.
type AppAttemptsResponse struct {
	AppAttempts AppAttempts `json:"appAttempts"`
}

// Container is one container of an attempt (the webapp ContainerInfo):
// /apps/{appid}/appattempts/{attemptid}/containers[/{containerid}].
type Container struct {
	XMLName             xml.Name `json:"-" xml:"container"`
	ContainerID         string   `json:"containerId" xml:"containerId"`
	AllocatedMB         int64    `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores     int32    `json:"allocatedVCores" xml:"allocatedVCores"`
	AssignedNodeID      string   `json:"assignedNodeId" xml:"assignedNodeId"`
	Priority            int32    `json:"priority" xml:"priority"`
	StartedTime         int64    `json:"startedTime" xml:"startedTime"`
	FinishedTime        int64    `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime         int64    `json:"elapsedTime" xml:"elapsedTime"`
	DiagnosticsInfo     string   `json:"diagnosticsInfo" xml:"diagnosticsInfo"`
	LogURL              string   `json:"logUrl" xml:"logUrl"`
	ContainerExitStatus int32    `json:"containerExitStatus" xml:"containerExitStatus"`
	ContainerState      string   `json:"containerState" xml:"containerState"`
	NodeHTTPAddress     string   `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID              string   `json:"nodeId" xml:"nodeId"`
}

// ContainerResponse is the JSON envelope of one Container.
type ContainerResponse struct {
	Container Container `json:"container"`
}

// Containers is ContainersInfo.
type Containers struct {
	XMLName   xml.Name    `json:"-" xml:"containers"`
	Container []Container `json:"container,omitempty" xml:"container"`
}

// ContainersResponse is the JSON envelope of Containers.
type ContainersResponse struct {
	Containers Containers `json:"containers"`
}

// AppAttemptResponse is the JSON envelope of one AppAttempt
// (/apps/{appid}/appattempts/{attemptid}).
type AppAttemptResponse struct {
	AppAttempt AppAttempt `json:"appAttempt"`
}

// Activities is ActivitiesInfo (/scheduler/activities) without
// allocations.
type Activities struct {
	XMLName    xml.Name `json:"-" xml:"activities"`
	NodeID     string   `json:"nodeId,omitempty" xml:"nodeId,omitempty"`
	Timestamp  int64    `json:"timestamp" xml:"timestamp"`
	DateTime   string   `json:"dateTime" xml:"dateTime"`
	Diagnostic string   `json:"diagnostic,omitempty" xml:"diagnostic,omitempty"`
}

// ActivitiesResponse is the JSON envelope of Activities.
type ActivitiesResponse struct {
	Activities Activities `json:"activities"`
}

// Node is one NodeManager (NodeInfo).
type Node struct {
	XMLName               xml.Name     `json:"-" xml:"node"`
	Rack                  string       `json:"rack" xml:"rack"`
	State                 string       `json:"state" xml:"state"`
	ID                    string       `json:"id" xml:"id"`
	NodeHostName          string       `json:"nodeHostName" xml:"nodeHostName"`
	NodeHTTPAddress       string       `json:"nodeHTTPAddress" xml:"nodeHTTPAddress"`
	LastHealthUpdate      int64        `json:"lastHealthUpdate" xml:"lastHealthUpdate"`
	Version               string       `json:"version" xml:"version"`
	HealthReport          string       `json:"healthReport" xml:"healthReport"`
	NumContainers         int32        `json:"numContainers" xml:"numContainers"`
	UsedMemoryMB          int64        `json:"usedMemoryMB" xml:"usedMemoryMB"`
	AvailMemoryMB         int64        `json:"availMemoryMB" xml:"availMemoryMB"`
	UsedVirtualCores      int64        `json:"usedVirtualCores" xml:"usedVirtualCores"`
	AvailableVirtualCores int64        `json:"availableVirtualCores" xml:"availableVirtualCores"`
	MemUtilization        float32      `json:"memUtilization" xml:"memUtilization"`
	CPUUtilization        float32      `json:"cpuUtilization" xml:"cpuUtilization"`
	NumRunningOpportConts int32        `json:"numRunningOpportContainers" xml:"numRunningOpportContainers"`
	UsedMemoryOpportGB    int64        `json:"usedMemoryOpportGB" xml:"usedMemoryOpportGB"`
	UsedVCoresOpport      int32        `json:"usedVirtualCoresOpport" xml:"usedVirtualCoresOpport"`
	NumQueuedContainers   int32        `json:"numQueuedContainers" xml:"numQueuedContainers"`
	AllocationTags        struct{}     `json:"allocationTags" xml:"allocationTags"`
	ResourceUtilization   NodeUtil     `json:"resourceUtilization" xml:"resourceUtilization"`
	UsedResource          ResourceInfo `json:"usedResource" xml:"usedResource"`
	AvailableResource     ResourceInfo `json:"availableResource" xml:"availableResource"`
	NodeAttributesInfo    struct{}     `json:"nodeAttributesInfo" xml:"nodeAttributesInfo"`
	TotalResource         ResourceInfo `json:"totalResource" xml:"totalResource"`
}

// NodeUtil is a node's measured utilization (ResourceUtilizationInfo).
type NodeUtil struct {
	NodePhysicalMemoryMB                 int64   `json:"nodePhysicalMemoryMB" xml:"nodePhysicalMemoryMB"`
	NodeVirtualMemoryMB                  int64   `json:"nodeVirtualMemoryMB" xml:"nodeVirtualMemoryMB"`
	NodeCPUUsage                         float32 `json:"nodeCPUUsage" xml:"nodeCPUUsage"`
	AggregatedContainersPhysicalMemoryMB int64   `json:"aggregatedContainersPhysicalMemoryMB" xml:"aggregatedContainersPhysicalMemoryMB"`
	AggregatedContainersVirtualMemoryMB  int64   `json:"aggregatedContainersVirtualMemoryMB" xml:"aggregatedContainersVirtualMemoryMB"`
	ContainersCPUUsage                   float32 `json:"containersCPUUsage" xml:"containersCPUUsage"`
}

// Nodes is /ws/v1/cluster/nodes.
type Nodes struct {
	XMLName xml.Name `json:"-" xml:"nodes"`
	Node    []Node   `json:"node,omitempty" xml:"node"`
}

// NodesResponse is the JSON envelope of Nodes.
type NodesResponse struct {
	Nodes Nodes `json:"nodes"`
}

// NodeResponse is the JSON envelope of one Node (/nodes/{nodeid}).
type NodeResponse struct {
	Node Node `json:"node"`
}

// Scheduler is /ws/v1/cluster/scheduler with the capacity scheduler's
// shape (CapacitySchedulerInfo).
type Scheduler struct {
	XMLName       xml.Name      `json:"-" xml:"scheduler"`
	SchedulerInfo SchedulerInfo `json:"schedulerInfo" xml:"schedulerInfo"`
}

// SchedulerResponse is the JSON envelope of Scheduler.
type SchedulerResponse struct {
	Scheduler Scheduler `json:"scheduler"`
}

// XSINamespace is the XML Schema instance namespace JAXB uses for xsi:type.
const XSINamespace = "http://www.w3.org/2001/XMLSchema-instance"

// SchedulerInfo is the root queue of the capacity scheduler. Type is
// "capacityScheduler" (JSON "type", XML xsi:type). Hadoop 3.4 sends many
// more fields (capacity vectors, partitions, health); these are the ones a
// federation reads.
type SchedulerInfo struct {
	XSI                string        `json:"-" xml:"xmlns:xsi,attr,omitempty"`
	XSIType            string        `json:"-" xml:"xsi:type,attr,omitempty"`
	Type               string        `json:"type" xml:"-"`
	Capacity           float32       `json:"capacity" xml:"capacity"`
	UsedCapacity       float32       `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity        float32       `json:"maxCapacity" xml:"maxCapacity"`
	Weight             float32       `json:"weight" xml:"weight"`
	NormalizedWeight   float32       `json:"normalizedWeight" xml:"normalizedWeight"`
	QueueName          string        `json:"queueName" xml:"queueName"`
	QueuePath          string        `json:"queuePath" xml:"queuePath"`
	MaxParallelApps    int32         `json:"maxParallelApps" xml:"maxParallelApps"`
	IsAbsoluteResource bool          `json:"isAbsoluteResource" xml:"isAbsoluteResource"`
	Queues             *QueueList    `json:"queues,omitempty" xml:"queues,omitempty"`
	MaximumAllocation  *ResourceInfo `json:"maximumAllocation,omitempty" xml:"maximumAllocation,omitempty"`
	QueuePriority      int32         `json:"queuePriority" xml:"queuePriority"`
	OrderingPolicyInfo string        `json:"orderingPolicyInfo" xml:"orderingPolicyInfo"`
	Mode               string        `json:"mode" xml:"mode"`
	QueueType          string        `json:"queueType" xml:"queueType"`
	CreationMethod     string        `json:"creationMethod" xml:"creationMethod"`
}

// QueueList wraps child queues ({"queue":[...]}).
type QueueList struct {
	Queue []Queue `json:"queue" xml:"queue"`
}

// Queue is a capacity scheduler queue (CapacitySchedulerQueueInfo, and for
// leaves CapacitySchedulerLeafQueueInfo with Type
// "capacitySchedulerLeafQueueInfo").
type Queue struct {
	XSIType              string        `json:"-" xml:"xsi:type,attr,omitempty"`
	Type                 string        `json:"type,omitempty" xml:"-"`
	QueuePath            string        `json:"queuePath" xml:"queuePath"`
	Capacity             float32       `json:"capacity" xml:"capacity"`
	UsedCapacity         float32       `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity          float32       `json:"maxCapacity" xml:"maxCapacity"`
	AbsoluteCapacity     float32       `json:"absoluteCapacity" xml:"absoluteCapacity"`
	AbsoluteMaxCapacity  float32       `json:"absoluteMaxCapacity" xml:"absoluteMaxCapacity"`
	AbsoluteUsedCapacity float32       `json:"absoluteUsedCapacity" xml:"absoluteUsedCapacity"`
	Weight               float32       `json:"weight" xml:"weight"`
	NormalizedWeight     float32       `json:"normalizedWeight" xml:"normalizedWeight"`
	NumApplications      int32         `json:"numApplications" xml:"numApplications"`
	MaxParallelApps      int32         `json:"maxParallelApps" xml:"maxParallelApps"`
	QueueName            string        `json:"queueName" xml:"queueName"`
	IsAbsoluteResource   bool          `json:"isAbsoluteResource" xml:"isAbsoluteResource"`
	State                string        `json:"state" xml:"state"`
	Queues               *QueueList    `json:"queues,omitempty" xml:"queues,omitempty"`
	ResourcesUsed        ResourceInfo  `json:"resourcesUsed" xml:"resourcesUsed"`
	NodeLabels           []string      `json:"nodeLabels" xml:"nodeLabels"`
	AllocatedContainers  int32         `json:"allocatedContainers" xml:"allocatedContainers"`
	ReservedContainers   int32         `json:"reservedContainers" xml:"reservedContainers"`
	PendingContainers    int32         `json:"pendingContainers" xml:"pendingContainers"`
	MaximumAllocation    *ResourceInfo `json:"maximumAllocation,omitempty" xml:"maximumAllocation,omitempty"`
	QueuePriority        int32         `json:"queuePriority" xml:"queuePriority"`
	OrderingPolicyInfo   string        `json:"orderingPolicyInfo" xml:"orderingPolicyInfo"`
	Mode                 string        `json:"mode" xml:"mode"`
	QueueType            string        `json:"queueType" xml:"queueType"`
	CreationMethod       string        `json:"creationMethod" xml:"creationMethod"`
	// Leaf-only fields.
	NumActiveApplications  int32   `json:"numActiveApplications" xml:"numActiveApplications"`
	NumPendingApplications int32   `json:"numPendingApplications" xml:"numPendingApplications"`
	NumContainers          int32   `json:"numContainers" xml:"numContainers"`
	MaxApplications        int32   `json:"maxApplications" xml:"maxApplications"`
	MaxApplicationsPerUser int32   `json:"maxApplicationsPerUser" xml:"maxApplicationsPerUser"`
	UserLimit              float32 `json:"userLimit" xml:"userLimit"`
	UserLimitFactor        float32 `json:"userLimitFactor" xml:"userLimitFactor"`
	ConfiguredMaxAMLimit   float32 `json:"configuredMaxAMResourceLimit" xml:"configuredMaxAMResourceLimit"`
	PreemptionDisabled     bool    `json:"preemptionDisabled" xml:"preemptionDisabled"`
	DefaultPriority        int32   `json:"defaultPriority" xml:"defaultPriority"`
}

// NewApplication is the answer of POST /apps/new-application.
type NewApplication struct {
	XMLName                   xml.Name     `json:"-" xml:"NewApplication"`
	ApplicationID             string       `json:"application-id" xml:"application-id"`
	MaximumResourceCapability ResourceInfo `json:"maximum-resource-capability" xml:"maximum-resource-capability"`
}

// AppState is GET/PUT /apps/{appid}/state (no JSON envelope; XML root
// <appstate>).
type AppState struct {
	XMLName xml.Name `json:"-" xml:"appstate"`
	State   string   `json:"state" xml:"state"`
}

// RemoteException is the error body Hadoop's web services send:
// {"RemoteException":{"exception":..,"message":..,"javaClassName":..}}.
type RemoteException struct {
	XMLName       xml.Name `json:"-" xml:"RemoteException"`
	Exception     string   `json:"exception" xml:"exception"`
	Message       string   `json:"message" xml:"message"`
	JavaClassName string   `json:"javaClassName" xml:"javaClassName"`
}

// RemoteExceptionResponse is the JSON envelope of RemoteException.
type RemoteExceptionResponse struct {
	RemoteException RemoteException `json:"RemoteException"`
}

// Java class names of the web services' exceptions.
const (
	ClassNotFound      = "org.apache.hadoop.yarn.webapp.NotFoundException"
	ClassBadRequest    = "org.apache.hadoop.yarn.webapp.BadRequestException"
	ClassForbidden     = "org.apache.hadoop.yarn.webapp.ForbiddenException"
	ClassWebApp        = "org.apache.hadoop.yarn.webapp.WebApplicationException"
	ClassStandbyWebApp = "org.apache.hadoop.ipc.StandbyException"
)
