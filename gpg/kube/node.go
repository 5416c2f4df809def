package kube

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
)

// Names Koordinator and the YARN-on-Kubernetes deployments use
// (REFERENCE §6). The batch names and the arithmetic live in
// internal/kubebatch, which kuberm shares.
const (
	// BatchCPU is Koordinator's batch CPU, an integer count of milli-cores.
	BatchCPU = kubebatch.BatchCPU
	// BatchMemory is Koordinator's batch memory, in bytes.
	BatchMemory = kubebatch.BatchMemory
	// AnnotationOriginBatch holds the node's origin batch total (see kubebatch).
	AnnotationOriginBatch = kubebatch.AnnotationOriginBatch
	// AnnotationThirdPartyAllocations holds what other schedulers (YARN) hold
	// of the node's batch resources, as JSON
	// {"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{...}}]};
	// koord-manager sets the batch allocatable to max(origin - sum of the
	// koord-batch entries, 0).
	AnnotationThirdPartyAllocations = "node.koordinator.sh/thirdPartyAllocations"
	// AnnotationAllocationWritten is the GPG's own record, on the Node, of the
	// hadoop-yarn entry it last wrote into AnnotationThirdPartyAllocations
	// (gpg/kube/writeback): an entry that differs from it was written by
	// someone else.
	AnnotationAllocationWritten = "yarnfed.io/hadoop-yarn-allocation-written"

	// LabelComponent with value ComponentNodeManager marks a YARN NodeManager pod.
	LabelComponent       = "app.kubernetes.io/component"
	ComponentNodeManager = "node-manager"
	// AnnotationNodeID is the NodeManager's YARN NodeId ("host:port").
	AnnotationNodeID = "yarn.hadoop.apache.org/node-id"
	// AnnotationClusterID names the NodeManager's sub-cluster; without it the
	// Config's DefaultSubCluster applies.
	AnnotationClusterID = "yarn.hadoop.apache.org/cluster-id"
)

// Batch is an amount of Koordinator batch resources in Kubernetes units.
type Batch = kubebatch.Batch

// ErrBadOrigin is wrapped by every DecodeOriginBatch failure.
var ErrBadOrigin = kubebatch.ErrBadOrigin

// DecodeOriginBatch reads the origin batch total (kubebatch.DecodeOriginBatch).
func DecodeOriginBatch(s string) (Batch, error) { return kubebatch.DecodeOriginBatch(s) }

// EncodeOriginBatch is DecodeOriginBatch's inverse.
func EncodeOriginBatch(b Batch) string { return kubebatch.EncodeOriginBatch(b) }

// PodBatchRequests is the pod's effective batch request (kubebatch.PodBatchRequests).
func PodBatchRequests(pod *corev1.Pod) Batch { return kubebatch.PodBatchRequests(pod) }

// yarnOf converts to YARN's units, rounding down.
func yarnOf(b Batch) capacity.Resources { return capacity.Resources(b.YARN()) }

// IsNodeManager reports whether the pod is a YARN NodeManager.
func IsNodeManager(pod *corev1.Pod) bool {
	return pod.Labels[LabelComponent] == ComponentNodeManager
}

func terminated(pod *corev1.Pod) bool { return kubebatch.Terminated(pod) }

// NodeStatus says why a node contributes what it does. Only the two
// contributing statuses (Contributes) count; every other value means the
// node contributes nothing.
type NodeStatus int

const (
	NodeContributing  NodeStatus = iota
	NodeNoNodeManager            // no running NodeManager pod: YARN cannot use it
	NodeConflict                 // running NodeManagers of two sub-clusters
	NodeNotReady                 // Ready condition missing or not True
	NodeStale                    // Ready condition not refreshed within the staleness bound
	NodeBatchReset               // Koordinator removed batch from status.allocatable: YARN is drained there
	NodeBadOrigin                // origin annotation unreadable
	// NodeContributingAllocatable contributes, from the batch allocatable:
	// Koordinator <= 1.3 writes no origin annotation (nor reads
	// thirdPartyAllocations), so its allocatable is the batch total, as
	// koord-yarn-operator reads it too.
	NodeContributingAllocatable
	numNodeStatus
)

var nodeStatusNames = [...]string{"contributing", "no_node_manager", "conflict", "not_ready", "stale", "batch_reset", "bad_origin", "contributing_allocatable"}

func (s NodeStatus) String() string {
	if s < 0 || s >= numNodeStatus {
		return fmt.Sprintf("NodeStatus(%d)", int(s))
	}
	return nodeStatusNames[s]
}

// Contributes reports whether a node in this status adds its usable
// capacity to its sub-cluster.
func (s NodeStatus) Contributes() bool {
	return s == NodeContributing || s == NodeContributingAllocatable
}

// NodeResult is what one node gives YARN.
type NodeResult struct {
	// SubCluster is the sub-cluster of the node's running NodeManager(s);
	// "" when there is none (NodeNoNodeManager) or they disagree
	// (NodeConflict). The node's capacity counts there only when
	// Status.Contributes().
	SubCluster string
	Usable     capacity.Resources
	Status     NodeStatus
	// NodeID is the YARN NodeId ("host:port") of the node's NodeManager,
	// when exactly one runs there and it carries the annotation.
	NodeID string
	// FreshUntil is when the node turns stale if nothing refreshes it (zero
	// unless the status contributes).
	FreshUntil time.Time
}

// Rules for one node's contribution.
type nodeRules struct {
	defaultSubCluster string
	staleAfter        time.Duration
}

// nodeFacts is what the rule needs from a Node, read once per Node event
// (the annotation's JSON is not re-parsed on every recomputation).
type nodeFacts struct {
	ready         bool      // Ready condition True
	heartbeat     time.Time // its LastHeartbeatTime
	batchPresent  bool      // batch-cpu and batch-memory in status.allocatable
	allocatable   Batch     // their values (when present)
	origin        Batch
	originPresent bool // the origin annotation exists
	originOK      bool // ... and is readable
	// The write-back's inputs (gpg/kube/writeback): the raw
	// thirdPartyAllocations annotation and the GPG's record of its own entry,
	// kept as strings (usually absent, so empty) and parsed only by the
	// write-back.
	thirdParty, written               string
	thirdPartyPresent, writtenPresent bool
	resourceVersion                   string // the write-back's patch precondition
}

func factsOfNode(node *corev1.Node) nodeFacts {
	var f nodeFacts
	if c := readyCondition(node); c != nil {
		f.ready = c.Status == corev1.ConditionTrue
		f.heartbeat = c.LastHeartbeatTime.Time
	}
	_, cpuOK := node.Status.Allocatable[BatchCPU]
	_, memOK := node.Status.Allocatable[BatchMemory]
	f.batchPresent = cpuOK && memOK
	if f.batchPresent {
		f.allocatable = Batch{MilliCPU: kubebatch.RequestValue(node.Status.Allocatable, BatchCPU), Memory: kubebatch.RequestValue(node.Status.Allocatable, BatchMemory)}
	}
	if ann, ok := node.Annotations[AnnotationOriginBatch]; ok {
		b, err := DecodeOriginBatch(ann)
		f.origin, f.originPresent, f.originOK = b, true, err == nil
	}
	f.thirdParty, f.thirdPartyPresent = node.Annotations[AnnotationThirdPartyAllocations]
	f.written, f.writtenPresent = node.Annotations[AnnotationAllocationWritten]
	f.resourceVersion = node.ResourceVersion
	return f
}

// podFacts is what the rule needs from a Pod, read once per Pod event.
type podFacts struct {
	nodeManager bool
	running     bool   // phase Running
	terminated  bool   // phase Succeeded or Failed
	clusterID   string // a NodeManager's cluster-id annotation ("" = none)
	nodeID      string // a NodeManager's node-id annotation ("" = none)
	request     Batch  // effective batch request
}

func factsOfPod(pod *corev1.Pod) podFacts {
	f := podFacts{
		nodeManager: IsNodeManager(pod),
		running:     pod.Status.Phase == corev1.PodRunning,
		terminated:  terminated(pod),
	}
	if f.nodeManager {
		f.clusterID = pod.Annotations[AnnotationClusterID]
		f.nodeID = pod.Annotations[AnnotationNodeID]
	}
	// NodeManager pods included: the NM daemon and its sidecars (the chart's
	// hdfs-dn) take their batch requests from the pool, while YARN's
	// containers run outside the pod (the besteffort hadoop-yarn cgroup).
	f.request = PodBatchRequests(pod)
	return f
}

// evaluate is the whole per-node rule: origin batch (Koordinator <= 1.3:
// the batch allocatable) minus the effective batch requests of the node's
// non-terminated pods, NodeManager pods included, floored at 0, in YARN
// units, for the sub-cluster of its running NodeManagers; 0 when the node
// is unusable or its figures are untrustworthy.
func (r nodeRules) evaluate(node *nodeFacts, pods podList, now time.Time) NodeResult {
	sc, nodeID, nms := "", "", 0
	var used Batch
	for i := range pods {
		p := &pods[i].facts
		if !p.terminated {
			// Every non-terminated pod's request, a NodeManager's own (its
			// daemon and sidecars) included: Pending ones too, since the
			// scheduler has reserved them.
			used = used.Add(p.request)
		}
		if !p.nodeManager || !p.running {
			continue
		}
		id := p.clusterID
		if id == "" {
			id = r.defaultSubCluster
		}
		if sc != "" && sc != id {
			return NodeResult{Status: NodeConflict}
		}
		sc, nodeID = id, p.nodeID
		nms++
	}
	if nms > 1 {
		nodeID = "" // which NodeManager would own the capacity is unclear
	}
	if sc == "" {
		return NodeResult{Status: NodeNoNodeManager}
	}
	zero := NodeResult{SubCluster: sc, NodeID: nodeID}
	if !node.ready {
		zero.Status = NodeNotReady
		return zero
	}
	freshUntil := node.heartbeat.Add(r.staleAfter)
	if !now.Before(freshUntil) {
		zero.Status = NodeStale
		return zero
	}
	// koord-manager deletes batch-cpu/batch-memory from the node status when
	// its NodeMetric is stale (degrade) or colocation is off; the origin
	// annotation then says 0 (or, from older versions, an old figure). A
	// present value, even 0 (YARN may hold all of it), means Koordinator
	// vouches for the node.
	if !node.batchPresent {
		zero.Status = NodeBatchReset
		return zero
	}
	total, status := node.origin, NodeContributing
	switch {
	case !node.originPresent:
		// Koordinator <= 1.3: no origin annotation and no thirdPartyAllocations
		// either, so the allocatable is the whole batch total.
		total, status = node.allocatable, NodeContributingAllocatable
	case !node.originOK:
		zero.Status = NodeBadOrigin
		return zero
	}
	free := Batch{MilliCPU: max(total.MilliCPU-used.MilliCPU, 0), Memory: max(total.Memory-used.Memory, 0)}
	return NodeResult{SubCluster: sc, Usable: yarnOf(free), Status: status, FreshUntil: freshUntil, NodeID: nodeID}
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
