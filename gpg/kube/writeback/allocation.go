package writeback

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
)

// The hadoop-yarn entry, as koord-yarn-operator writes it (yarn-copilot's
// SetYARNAllocatedResource) and koord-manager reads it (it sums the
// resources of every entry whose priority is koord-batch).
const (
	AllocationName     = "hadoop-yarn"
	AllocationPriority = "koord-batch"
)

// ErrBadAllocations is wrapped when a Node's thirdPartyAllocations or the
// GPG's record cannot be read.
var ErrBadAllocations = errors.New("bad " + kube.AnnotationThirdPartyAllocations + " annotation")

// entry is one ThirdPartyAllocation: {"name","priority","resources"}.
type entry struct {
	Name      string              `json:"name"`
	Priority  string              `json:"priority"`
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// ToBatch is YARN's allocation in Koordinator's units, as yarn-copilot
// converts it: vcores x 1000 milli-cores, MB x 2^20 bytes.
func ToBatch(r capacity.Resources) kube.Batch {
	return kube.Batch{MilliCPU: max(r.VCores, 0) * 1000, Memory: max(r.MemoryMB, 0) << 20}
}

// resources is b as the entry's resource list (batch-cpu a decimal count of
// milli-cores, batch-memory binary bytes: what resource.NewQuantity gives
// yarn-copilot, so "4k" and "4Gi").
func resources(b kube.Batch) corev1.ResourceList {
	return corev1.ResourceList{
		kube.BatchCPU:    *resource.NewQuantity(b.MilliCPU, resource.DecimalSI),
		kube.BatchMemory: *resource.NewQuantity(b.Memory, resource.BinarySI),
	}
}

func batchOf(rl corev1.ResourceList) kube.Batch {
	var b kube.Batch
	if q, ok := rl[kube.BatchCPU]; ok {
		b.MilliCPU = q.Value()
	}
	if q, ok := rl[kube.BatchMemory]; ok {
		b.Memory = q.Value()
	}
	return b
}

// parsed is a Node's thirdPartyAllocations: every entry kept verbatim (ours
// is replaced, others are never touched), and ours read.
type parsed struct {
	entries  []json.RawMessage
	ours     int // index of the hadoop-yarn entry, -1 if none
	oursVal  kube.Batch
	topLevel map[string]json.RawMessage
}

func parseAllocations(raw string, present bool) (parsed, error) {
	p := parsed{ours: -1}
	if !present {
		return p, nil
	}
	if err := json.Unmarshal([]byte(raw), &p.topLevel); err != nil || p.topLevel == nil {
		return p, fmt.Errorf("%w: %v", ErrBadAllocations, err)
	}
	if a, ok := p.topLevel["allocations"]; ok && string(a) != "null" {
		if err := json.Unmarshal(a, &p.entries); err != nil {
			return p, fmt.Errorf("%w: allocations: %v", ErrBadAllocations, err)
		}
	}
	for i, e := range p.entries {
		var v entry
		if err := json.Unmarshal(e, &v); err != nil {
			return p, fmt.Errorf("%w: entry %d: %v", ErrBadAllocations, i, err)
		}
		if v.Name == AllocationName {
			if p.ours >= 0 {
				return p, fmt.Errorf("%w: two %s entries", ErrBadAllocations, AllocationName)
			}
			p.ours, p.oursVal = i, batchOf(v.Resources)
		}
	}
	return p, nil
}

// with returns the annotation value with the hadoop-yarn entry set to b,
// every other entry and key as they were.
func (p parsed) with(b kube.Batch) (string, error) {
	e, err := json.Marshal(entry{Name: AllocationName, Priority: AllocationPriority, Resources: resources(b)})
	if err != nil {
		return "", err
	}
	entries := append([]json.RawMessage(nil), p.entries...)
	if p.ours >= 0 {
		entries[p.ours] = e
	} else {
		entries = append(entries, e)
	}
	top := map[string]json.RawMessage{}
	for k, v := range p.topLevel {
		top[k] = v
	}
	if top["allocations"], err = json.Marshal(entries); err != nil {
		return "", err
	}
	out, err := json.Marshal(top)
	return string(out), err
}

// The GPG's record of what it wrote: the entry's resources, in the same
// JSON.
func encodeWritten(b kube.Batch) string {
	out, err := json.Marshal(resources(b))
	if err != nil {
		panic(err) // a resource list always marshals
	}
	return string(out)
}

func decodeWritten(s string) (kube.Batch, error) {
	var rl corev1.ResourceList
	if err := json.Unmarshal([]byte(s), &rl); err != nil {
		return kube.Batch{}, fmt.Errorf("%w: %s: %v", ErrBadAllocations, kube.AnnotationAllocationWritten, err)
	}
	return batchOf(rl), nil
}

// ownership says whether a Node's hadoop-yarn entry is ours to write.
type ownership int

const (
	free    ownership = iota // no entry and no record: nobody writes it yet
	ours                     // the entry is what our record says we wrote
	foreign                  // someone else wrote (or removed) it
)

// owner decides from one consistent view of a Node (both annotations come
// from the same object version, so our own patch can never look foreign):
// no hadoop-yarn entry is free (nobody claims YARN's holding there; a
// removal is how an operator hands a Node over), an entry without our
// record or differing from it, or anything unreadable, is foreign.
func owner(p parsed, perr error, written string, writtenPresent bool) (ownership, string) {
	if perr != nil {
		return foreign, perr.Error()
	}
	switch {
	case p.ours < 0:
		return free, ""
	case !writtenPresent:
		return foreign, "a hadoop-yarn entry the GPG did not write"
	}
	w, err := decodeWritten(written)
	if err != nil {
		return foreign, err.Error()
	}
	if w != p.oursVal {
		return foreign, fmt.Sprintf("the hadoop-yarn entry (%d milli-cores, %d bytes) differs from what the GPG wrote (%d, %d)",
			p.oursVal.MilliCPU, p.oursVal.Memory, w.MilliCPU, w.Memory)
	}
	return ours, ""
}
