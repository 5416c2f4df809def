// Package kubebatch is the arithmetic of Koordinator batch resources that
// several components share (REFERENCE §6): the resource and annotation
// names, reading a node's origin batch total, a pod's effective batch
// request by the scheduler's rule, and the conversion to YARN units. It is
// pure: no clients, no clocks. gpg/kube (capacity per NodeManager
// sub-cluster) and kuberm (a Kubernetes cluster as an RM) both count with
// it, so "the batch capacity YARN may use" means the same in both.
package kubebatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// BatchCPU is Koordinator's batch CPU, an integer count of milli-cores.
	BatchCPU corev1.ResourceName = "kubernetes.io/batch-cpu"
	// BatchMemory is Koordinator's batch memory, in bytes.
	BatchMemory corev1.ResourceName = "kubernetes.io/batch-memory"
	// AnnotationOriginBatch holds the node's origin batch total as JSON
	// {"resources":{"kubernetes.io/batch-cpu":"...","kubernetes.io/batch-memory":"..."}}.
	// Koordinator 1.4 introduced it; older versions write none.
	AnnotationOriginBatch = "node.koordinator.sh/originExtendedAllocatable"
)

// Batch is an amount of Koordinator batch resources in Kubernetes units.
type Batch struct {
	MilliCPU int64 // milli-cores
	Memory   int64 // bytes
}

// Resources is an amount in YARN's units. Its fields are those of
// gpg/capacity.Resources, so the GPG converts with a plain conversion.
type Resources struct {
	MemoryMB int64 // MiB: floor(bytes / 2^20)
	VCores   int64 // floor(milli-cores / 1000)
}

// YARN converts to YARN's units, rounding down: a fraction of a core or of a
// MiB is not something YARN can hand out. Negative amounts become 0.
func (b Batch) YARN() Resources {
	return Resources{
		VCores:   max(b.MilliCPU, 0) / 1000,
		MemoryMB: max(b.Memory, 0) >> 20,
	}
}

// Add sums, saturating at MaxInt64.
func (b Batch) Add(o Batch) Batch {
	return Batch{MilliCPU: addSat(b.MilliCPU, o.MilliCPU), Memory: addSat(b.Memory, o.Memory)}
}

// Max is the larger of each resource.
func (b Batch) Max(o Batch) Batch {
	return Batch{MilliCPU: max(b.MilliCPU, o.MilliCPU), Memory: max(b.Memory, o.Memory)}
}

// SubFloor subtracts, flooring each resource at 0.
func (b Batch) SubFloor(o Batch) Batch {
	return Batch{MilliCPU: max(b.MilliCPU-o.MilliCPU, 0), Memory: max(b.Memory-o.Memory, 0)}
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
		v, ok := QuantityInt64(q)
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

// QuantityInt64 is q as an exact int64, whatever form it was written in
// (AsInt64 alone refuses some exact integers, e.g. 19 digits).
func QuantityInt64(q resource.Quantity) (int64, bool) {
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

// RequestValue reads a request, rounding a fraction up and saturating at
// MaxInt64: what is subtracted errs on the side of less capacity.
func RequestValue(rl corev1.ResourceList, name corev1.ResourceName) int64 {
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

// names says which resources a Batch counts: Koordinator's batch pair, or
// the standard cpu/memory (a cluster without Koordinator).
type names struct{ cpu, memory corev1.ResourceName }

func (n names) of(rl corev1.ResourceList) Batch {
	b := Batch{Memory: RequestValue(rl, n.memory)}
	if n.cpu == corev1.ResourceCPU {
		// cpu is in cores with milli fractions: read milli-cores.
		if q, ok := rl[corev1.ResourceCPU]; ok && q.Sign() > 0 {
			if q.CmpInt64(math.MaxInt64/1000) >= 0 {
				b.MilliCPU = math.MaxInt64
			} else {
				b.MilliCPU = q.MilliValue() // rounds up
			}
		}
	} else {
		b.MilliCPU = RequestValue(rl, n.cpu)
	}
	return b
}

// PodBatchRequests is the pod's effective batch request, by the rule the
// scheduler and kubelet use for any resource (KEP-753 with sidecars): the
// larger of (app containers + restartable init "sidecar" containers) and the
// largest init-time need (each ordinary init container plus the sidecars
// started before it), plus the pod overhead.
func PodBatchRequests(pod *corev1.Pod) Batch {
	return names{BatchCPU, BatchMemory}.pod(pod)
}

// PodStandardRequests is the same rule over cpu (as milli-cores) and
// memory (bytes): what a pod takes from a node without Koordinator.
func PodStandardRequests(pod *corev1.Pod) Batch {
	return names{corev1.ResourceCPU, corev1.ResourceMemory}.pod(pod)
}

func (n names) pod(pod *corev1.Pod) Batch {
	var sum Batch
	for i := range pod.Spec.Containers {
		sum = sum.Add(n.of(pod.Spec.Containers[i].Resources.Requests))
	}
	var sidecars, initPeak Batch
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req := n.of(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = sum.Add(req)
			sidecars = sidecars.Add(req)
			initPeak = initPeak.Max(sidecars)
		} else {
			initPeak = initPeak.Max(req.Add(sidecars))
		}
	}
	eff := sum.Max(initPeak)
	if pod.Spec.Overhead != nil {
		eff = eff.Add(n.of(pod.Spec.Overhead))
	}
	return eff
}

// Terminated reports a pod in a final phase: its requests are released.
func Terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// HasBatch reports whether the node advertises both batch resources in its
// allocatable (Koordinator is present and has not reset them).
func HasBatch(node *corev1.Node) bool {
	_, cpuOK := node.Status.Allocatable[BatchCPU]
	_, memOK := node.Status.Allocatable[BatchMemory]
	return cpuOK && memOK
}
