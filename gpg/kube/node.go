package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/yarnfed/yarnfed/gpg/capacity"
)

// Names Koordinator and the YARN-on-Kubernetes deployments use
// (REFERENCE §6).
const (
	// BatchCPU is Koordinator's batch CPU, an integer count of milli-cores.
	BatchCPU corev1.ResourceName = "kubernetes.io/batch-cpu"
	// BatchMemory is Koordinator's batch memory, in bytes.
	BatchMemory corev1.ResourceName = "kubernetes.io/batch-memory"
	// AnnotationOriginBatch holds the node's origin batch total as JSON
	// {"resources":{"kubernetes.io/batch-cpu":"...","kubernetes.io/batch-memory":"..."}}.
	// Koordinator 1.4 introduced it; older versions write none.
	AnnotationOriginBatch = "node.koordinator.sh/originExtendedAllocatable"
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
type Batch struct {
	MilliCPU int64 // milli-cores
	Memory   int64 // bytes
}

// YARN converts to YARN's units, rounding down: a fraction of a core or of a
// MiB is not something YARN can hand out. Negative amounts become 0.
func (b Batch) YARN() capacity.Resources {
	return capacity.Resources{
		VCores:   max(b.MilliCPU, 0) / 1000,
		MemoryMB: max(b.Memory, 0) >> 20,
	}
}

// ErrBadOrigin is wrapped by every DecodeOriginBatch failure.
var ErrBadOrigin = errors.New("bad " + AnnotationOriginBatch + " annotation")

// originAnnotation is Koordinator's OriginAllocatable. resource.Quantity reads
// both JSON strings ("12k") and numbers (12000), as the API server and
// Koordinator write them.
type originAnnotation struct {
	Resources map[corev1.ResourceName]resource.Quantity `json:"resources"`
}

// DecodeOriginBatch reads the origin batch total from the annotation's value.
// A resource absent from the map is 0. A value that is negative, fractional
// beyond the unit or past int64 is an error: the whole annotation is then
// untrustworthy and the caller counts the node as 0, never as unlimited.
func DecodeOriginBatch(s string) (Batch, error) {
	var a originAnnotation
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return Batch{}, fmt.Errorf("%w: %v", ErrBadOrigin, err)
	}
	if a.Resources == nil {
		return Batch{}, fmt.Errorf("%w: no resources", ErrBadOrigin)
	}
	var b Batch
	for name, dst := range map[corev1.ResourceName]*int64{BatchCPU: &b.MilliCPU, BatchMemory: &b.Memory} {
		q, ok := a.Resources[name]
		if !ok {
			continue
		}
		v, ok := quantityInt64(q)
		if !ok || v < 0 {
			return Batch{}, fmt.Errorf("%w: %s %q is not an integer in [0, 2^63)", ErrBadOrigin, name, q.String())
		}
		*dst = v
	}
	return b, nil
}

// EncodeOriginBatch is DecodeOriginBatch's inverse, in the form Koordinator
// writes (tests and tools use it to make nodes).
func EncodeOriginBatch(b Batch) string {
	a := originAnnotation{Resources: map[corev1.ResourceName]resource.Quantity{
		BatchCPU:    *resource.NewQuantity(b.MilliCPU, resource.DecimalSI),
		BatchMemory: *resource.NewQuantity(b.Memory, resource.BinarySI),
	}}
	out, err := json.Marshal(a)
	if err != nil {
		panic(err) // a map of quantities always marshals
	}
	return string(out)
}

// quantityInt64 is q as an exact int64, whatever form it was written in
// (AsInt64 alone refuses some exact integers, e.g. 19 digits).
func quantityInt64(q resource.Quantity) (int64, bool) {
	if v, ok := q.AsInt64(); ok {
		return v, true
	}
	d := q.AsDec()
	var whole inf.Dec
	whole.Round(d, 0, inf.RoundDown)
	if whole.Cmp(d) != 0 {
		return 0, false // a fraction
	}
	u := whole.UnscaledBig() // scale 0: the value itself
	if !u.IsInt64() {
		return 0, false
	}
	return u.Int64(), true
}

// requestValue reads a request, rounding a fraction up and saturating at
// MaxInt64: what is subtracted errs on the side of less capacity.
func requestValue(rl corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := rl[name]
	if !ok {
		return 0
	}
	if v, ok := q.AsInt64(); ok {
		return max(v, 0)
	}
	if q.Sign() <= 0 {
		return 0
	}
	if q.CmpInt64(math.MaxInt64) >= 0 {
		return math.MaxInt64
	}
	return q.Value() // rounds up
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (b Batch) add(o Batch) Batch {
	return Batch{MilliCPU: addSat(b.MilliCPU, o.MilliCPU), Memory: addSat(b.Memory, o.Memory)}
}

func (b Batch) max(o Batch) Batch {
	return Batch{MilliCPU: max(b.MilliCPU, o.MilliCPU), Memory: max(b.Memory, o.Memory)}
}

func containerBatch(c *corev1.Container) Batch {
	return Batch{MilliCPU: requestValue(c.Resources.Requests, BatchCPU), Memory: requestValue(c.Resources.Requests, BatchMemory)}
}

// PodBatchRequests is the pod's effective batch request, by the rule the
// scheduler and kubelet use for any resource (KEP-753 with sidecars): the
// larger of (app containers + restartable init "sidecar" containers) and the
// largest init-time need (each ordinary init container plus the sidecars
// started before it), plus the pod overhead.
func PodBatchRequests(pod *corev1.Pod) Batch {
	var sum Batch
	for i := range pod.Spec.Containers {
		sum = sum.add(containerBatch(&pod.Spec.Containers[i]))
	}
	var sidecars, initPeak Batch
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := containerBatch(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = sum.add(req)
			sidecars = sidecars.add(req)
			initPeak = initPeak.max(sidecars)
		} else {
			initPeak = initPeak.max(req.add(sidecars))
		}
	}
	eff := sum.max(initPeak)
	if pod.Spec.Overhead != nil {
		eff = eff.add(Batch{MilliCPU: requestValue(pod.Spec.Overhead, BatchCPU), Memory: requestValue(pod.Spec.Overhead, BatchMemory)})
	}
	return eff
}

// IsNodeManager reports whether the pod is a YARN NodeManager.
func IsNodeManager(pod *corev1.Pod) bool {
	return pod.Labels[LabelComponent] == ComponentNodeManager
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

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
		f.allocatable = Batch{MilliCPU: requestValue(node.Status.Allocatable, BatchCPU), Memory: requestValue(node.Status.Allocatable, BatchMemory)}
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
func (r nodeRules) evaluate(node nodeFacts, pods map[string]podFacts, now time.Time) NodeResult {
	sc, nodeID, nms := "", "", 0
	var used Batch
	for _, p := range pods {
		if !p.terminated {
			// Every non-terminated pod's request, a NodeManager's own (its
			// daemon and sidecars) included: Pending ones too, since the
			// scheduler has reserved them.
			used = used.add(p.request)
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
	return NodeResult{SubCluster: sc, Usable: free.YARN(), Status: status, FreshUntil: freshUntil, NodeID: nodeID}
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
