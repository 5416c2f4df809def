package kuberm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// allocate: the AM's heartbeat, with the rules of Hadoop 3.4's
// ApplicationMasterService and DefaultAMSProcessor, over pods
// (DESIGN.md, "allocate"). One call:
//   - checks the attempt is registered in this process (after a kuberm
//     restart it is not: ApplicationMasterNotRegisteredException, on which
//     AMRMClientImpl registers again and re-sends its asks) and the
//     responseId (a repeated id gets the last answer again, a wrong one
//     InvalidApplicationMasterRequestException);
//   - applies the asks (num_containers replaces), the blacklist and the
//     releases (pods deleted, reported completed with ABORTED);
//   - hands out the attempt's pods kube-scheduler has bound, as allocated
//     containers with a container token and, once per node, an NM token;
//   - reports handed-out pods that ended (exit status), were evicted or
//     preempted (PREEMPTED), deleted by someone else or lost their node
//     (ABORTED), each once;
//   - makes the attempt's pending pods match its outstanding asks:
//     creates the missing ones, deletes the surplus unbound ones.

// ContainerExitStatus values (Hadoop's).
const (
	exitAborted    = -100
	exitPreempted  = -102
	exitKilledByAM = -105
)

// The RM's diagnostics (SchedulerUtils).
const (
	diagReleased  = "Container released by application"
	diagLost      = "Container released on a *lost* node"
	diagPreempted = "Container preempted by scheduler"
	// diagDeleted: a handed-out pod deleted through the Kubernetes API by
	// neither kuberm nor the container's AM (an operator, a controller).
	diagDeleted = "Container aborted: its pod was deleted outside YARN, by neither the ResourceManager nor the ApplicationMaster"
	diagStopped = "Container killed by the ApplicationMaster." // the NodeManager's, for stopContainers
)

// AnnotationStoppedByAM marks a container pod its AM stopped through the
// NM face (stopContainers): allocate reports it KILLED_BY_APPMASTER.
const AnnotationStoppedByAM = "yarnfed.io/stopped-by-am"

const (
	// nmHTTPPort is the NodeManager web port containers are told (NM_HTTP_PORT,
	// the node HTTP address): kuberm has no NM web face, so 0.
	nmHTTPPort = 0
	// containerTokenExpiry is how long an AM may wait before starting a
	// container (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms).
	containerTokenExpiry = 10 * time.Minute
	// Bounds on what one attempt can make kuberm hold or create.
	maxAskKeys           = 256  // distinct (priority, allocation id, capability)
	maxAskNames          = 1024 // host and rack asks per key
	maxBlacklist         = 1024
	maxResourceName      = 255
	maxPendingPods       = 1000 // unbound container pods per attempt
	maxCreatePerAllocate = 100  // pods created by one allocate call
	// seqBlock container sequence numbers are reserved in the application
	// Secret at a time, so ids stay unique across kuberm restarts even for
	// containers whose pods were deleted.
	seqBlock = 256
	// clusterViewTTL bounds how stale the nodes an allocate uses may be
	// (one List of nodes and of pods serves every AM's heartbeats within it).
	clusterViewTTL = time.Second
)

// ErrInvalidRelease is InvalidContainerReleaseException.
var ErrInvalidRelease = errors.New("invalid container release")

// askKey identifies an ask as AMRMClientImpl keys its table: priority,
// allocation request id and capability (as asked, before normalization).
type askKey struct {
	Priority     int32
	AllocationID int64
	MemoryMB     int64
	VCores       int32
}

func (k askKey) less(o askKey) bool {
	if k.Priority != o.Priority {
		return k.Priority < o.Priority // lower is higher priority in YARN
	}
	if k.AllocationID != o.AllocationID {
		return k.AllocationID < o.AllocationID
	}
	if k.MemoryMB != o.MemoryMB {
		return k.MemoryMB < o.MemoryMB
	}
	return k.VCores < o.VCores
}

// ask is the outstanding request of one key: the ANY count, and the host
// and rack counts the locality comes from.
type ask struct {
	num   int32 // the ANY ask's num_containers
	relax bool  // the ANY ask's relax_locality
	hosts map[string]int32
	racks map[string]int32
	size  containerRequest
}

// amState is what kuberm keeps in memory of a registered attempt, as
// ApplicationMasterService's cache: lost with the process, which is why a
// restarted kuberm answers ApplicationMasterNotRegisteredException.
type amState struct {
	mu        sync.Mutex // one call of the attempt at a time
	at        yarnid.AttemptID
	gone      bool // forgotten (attempt over) while a call waited
	last      *yarnpb.AllocateResponseProto
	asks      map[askKey]*ask
	blacklist map[string]bool
	nmNodes   map[string]bool   // nodes this attempt has an NM token for
	live      map[string]string // handed-out containers not reported completed: id -> pod
	progress  float32
	seqNext   int64 // reserved container sequences [seqNext, seqEnd)
	seqEnd    int64
}

// allocator holds the attempts' states and the shared cluster view.
type allocator struct {
	mu       sync.Mutex
	attempts map[yarnid.AttemptID]*amState
	view     *clusterView
	stopped  map[yarnid.ContainerID]bool // stopped by their AM in this process, not yet reported
}

func (al *allocator) get(at yarnid.AttemptID) *amState {
	al.mu.Lock()
	defer al.mu.Unlock()
	return al.attempts[at]
}

// add registers a fresh state; false if the attempt has one already.
func (al *allocator) add(at yarnid.AttemptID) (*amState, bool) {
	al.mu.Lock()
	defer al.mu.Unlock()
	if al.attempts == nil {
		al.attempts = map[yarnid.AttemptID]*amState{}
	}
	if _, ok := al.attempts[at]; ok {
		return nil, false
	}
	st := &amState{at: at, last: &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0)}, asks: map[askKey]*ask{},
		blacklist: map[string]bool{}, nmNodes: map[string]bool{}, live: map[string]string{}}
	al.attempts[at] = st
	return st, true
}

// forget drops the states of app's attempts other than keep (the zero
// attempt drops them all).
func (al *allocator) forget(app yarnid.AppID, keep yarnid.AttemptID) {
	al.mu.Lock()
	var drop []*amState
	for at, st := range al.attempts {
		if at.App == app && at != keep {
			delete(al.attempts, at)
			drop = append(drop, st)
		}
	}
	for cid := range al.stopped {
		if cid.Attempt.App == app && cid.Attempt != keep {
			delete(al.stopped, cid)
		}
	}
	al.mu.Unlock()
	for _, st := range drop {
		st.mu.Lock()
		st.gone = true
		st.mu.Unlock()
	}
}

// nextResponseID loops between 0 and MaxInt32, as Hadoop's does.
func nextResponseID(id int32) int32 { return (id + 1) & math.MaxInt32 }

// retriable turns an API server failure into RetriableException: the RM
// proxy of an AM retries it, where an IOException would end its heartbeat.
func retriable(err error) error {
	if errors.Is(err, ErrKube) {
		return hadoopipc.Errorf(hadoopipc.ClassRetriable, "%v", err)
	}
	return err
}

func (r *RM) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	at, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	st := r.alloc.get(at)
	if st == nil {
		if _, _, err := r.liveAttempt(ctx, at); err != nil {
			return nil, retriable(err)
		}
		//lint:ignore ST1005 the text of the RM's own ApplicationMasterNotRegisteredException, which AMs log
		return nil, fmt.Errorf("%w: AM is not registered for known application attempt: %s or RM had restarted after AM registered.  AM should re-register.", ErrAMNotRegistered, at)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gone {
		//lint:ignore ST1005 the text of the RM's own ApplicationAttemptNotFoundException, which AMs log
		return nil, fmt.Errorf("%w: Application attempt %s doesn't exist in ApplicationMasterService cache.", ErrAttemptNotFound, at)
	}
	last := st.last
	if nextResponseID(req.GetResponseId()) == last.GetResponseId() {
		return last, nil // a resend: the AM did not get the last answer
	}
	if req.GetResponseId() != last.GetResponseId() {
		return nil, fmt.Errorf("%w: Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d",
			ErrInvalidAMRequest, at, last.GetResponseId(), req.GetResponseId())
	}
	if err := r.checkAllocate(st, req); err != nil {
		return nil, err
	}
	v, a, err := r.amLiveAttempt(ctx, at)
	if errors.Is(err, ErrAttemptNotFound) {
		r.alloc.forget(at.App, yarnid.AttemptID{})
		return nil, err
	}
	if err != nil {
		return nil, retriable(err)
	}
	cv, err := r.clusterView(ctx)
	if err != nil {
		return nil, retriable(err)
	}
	// Nothing below fails the call: what was written is in the answer, what
	// could not be is retried on the next heartbeat.
	resp := r.step(ctx, st, &v, a, cv, req)
	resp.ResponseId = proto.Int32(nextResponseID(last.GetResponseId()))
	st.last = resp
	return resp, nil
}

// checkAllocate validates a request before anything changes: a refused
// heartbeat leaves the attempt as it was (DefaultAMSProcessor's order).
func (r *RM) checkAllocate(st *amState, req *yarnpb.AllocateRequestProto) error {
	if len(req.GetSchedulingRequests()) > 0 {
		return fmt.Errorf("%w: Found non empty SchedulingRequest of AllocateRequest for application=%s, however the configured processor is disabled", ErrInvalidAMRequest, st.at)
	}
	for _, rel := range req.GetRelease() {
		if yarnid.ContainerFromPB(rel).Attempt.App != st.at.App {
			return fmt.Errorf("%w: Cannot release container : %s not belonging to this application attempt : %s", ErrInvalidRelease, yarnid.ContainerFromPB(rel), st.at)
		}
	}
	if bl := req.GetBlacklistRequest(); bl != nil && len(st.blacklist)+len(bl.GetBlacklistAdditions()) > maxBlacklist {
		return fmt.Errorf("%w: more than %d blacklisted resources", ErrInvalidResource, maxBlacklist)
	}
	newKeys := 0
	names := map[askKey]int{}
	for _, rr := range req.GetAsk() {
		c := rr.GetCapability()
		name := rr.GetResourceName()
		switch {
		case c == nil:
			return fmt.Errorf("%w: Invalid resource ask by application %s: no capability", ErrInvalidResource, st.at.App)
		case c.GetMemory() < 0 || c.GetVirtualCores() < 0:
			return fmt.Errorf("%w: Invalid resource request, requested resource <memory:%d, vCores:%d> has a negative value", ErrInvalidResource, c.GetMemory(), c.GetVirtualCores())
		case c.GetMemory() > r.cfg.MaxAllocationMB || c.GetVirtualCores() > r.cfg.MaxAllocationVCores:
			return fmt.Errorf("%w: Invalid resource request! Cannot allocate containers as requested resource <memory:%d, vCores:%d> is greater than the maximum allowed allocation <memory:%d, vCores:%d>",
				ErrInvalidResource, c.GetMemory(), c.GetVirtualCores(), r.cfg.MaxAllocationMB, r.cfg.MaxAllocationVCores)
		case rr.GetNumContainers() < 0:
			return fmt.Errorf("%w: Invalid resource ask by application %s: num_containers %d < 0", ErrInvalidResource, st.at.App, rr.GetNumContainers())
		case name == "" || len(name) > maxResourceName:
			return fmt.Errorf("%w: Invalid resource ask by application %s: resource name %q", ErrInvalidResource, st.at.App, name)
		}
		k := keyOf(rr)
		if _, ok := st.asks[k]; !ok && names[k] == 0 {
			newKeys++
		}
		names[k]++
		if e := st.asks[k]; e != nil && len(e.hosts)+len(e.racks)+names[k] > maxAskNames || names[k] > maxAskNames {
			return fmt.Errorf("%w: more than %d resource names asked at one priority", ErrInvalidResource, maxAskNames)
		}
	}
	if len(st.asks)+newKeys > maxAskKeys {
		return fmt.Errorf("%w: more than %d distinct asks (priority, allocation request id, capability)", ErrInvalidResource, maxAskKeys)
	}
	return nil
}

func keyOf(rr *yarnpb.ResourceRequestProto) askKey {
	return askKey{Priority: rr.GetPriority().GetPriority(), AllocationID: rr.GetAllocationRequestId(),
		MemoryMB: rr.GetCapability().GetMemory(), VCores: rr.GetCapability().GetVirtualCores()}
}

// normalize rounds a size up to the minimum allocation's multiples, as the
// scheduler does.
func (r *RM) normalize(mem int64, vc int32) (int64, int32) {
	mem = roundUp(max(mem, r.cfg.MinAllocationMB), r.cfg.MinAllocationMB)
	vc = int32(roundUp(int64(max(vc, r.cfg.MinAllocationVCores)), int64(r.cfg.MinAllocationVCores)))
	return mem, vc
}

// applyAsks is the replace rule: each (key, resource name) carries the
// total outstanding, not an increment.
func (r *RM) applyAsks(st *amState, asks []*yarnpb.ResourceRequestProto) {
	for _, rr := range asks {
		k := keyOf(rr)
		e := st.asks[k]
		if e == nil {
			mem, vc := r.normalize(k.MemoryMB, k.VCores)
			e = &ask{relax: true, hosts: map[string]int32{}, racks: map[string]int32{}, size: containerRequest{
				Priority: k.Priority, AllocationID: k.AllocationID, AskMemoryMB: k.MemoryMB, AskVCores: k.VCores, MemoryMB: mem, VCores: vc}}
			st.asks[k] = e
		}
		n, name := rr.GetNumContainers(), rr.GetResourceName()
		switch {
		case name == "*":
			e.num, e.relax = n, rr.GetRelaxLocality()
		case strings.HasPrefix(name, "/"):
			setCount(e.racks, name, n)
		default:
			setCount(e.hosts, name, n)
		}
		if e.num == 0 && len(e.hosts) == 0 && len(e.racks) == 0 {
			delete(st.asks, k)
		}
	}
}

func setCount(m map[string]int32, name string, n int32) {
	if n == 0 {
		delete(m, name)
		return
	}
	m[name] = n
}

// decrement consumes one container of an ask at every locality level the
// node satisfied, as AppSchedulingInfo.allocate does.
func (st *amState) decrement(k askKey, n *corev1.Node, rack string) {
	e := st.asks[k]
	if e == nil {
		return
	}
	if e.num > 0 {
		e.num--
	}
	for _, h := range nodeNames(n) {
		if e.hosts[h] > 0 {
			e.hosts[h]--
			if e.hosts[h] == 0 {
				delete(e.hosts, h)
			}
		}
	}
	if e.racks[rack] > 0 {
		if e.racks[rack]--; e.racks[rack] == 0 {
			delete(e.racks, rack)
		}
	}
	if e.num == 0 && len(e.hosts) == 0 && len(e.racks) == 0 {
		delete(st.asks, k)
	}
}

// nodeNames are the names an AM may ask for a node by: its name and its
// addresses (the NodeId host is its InternalIP).
func nodeNames(n *corev1.Node) []string {
	out := []string{n.Name}
	for _, a := range n.Status.Addresses {
		if a.Address != "" && a.Address != n.Name {
			out = append(out, a.Address)
		}
	}
	return out
}

// clusterView is the nodes as allocate needs them: by name, by every name
// an AM may ask for, their racks and YARN capacity.
type clusterView struct {
	at      time.Time
	nodes   map[string]*corev1.Node // by node name
	byHost  map[string]*corev1.Node // by nodeNames
	racks   map[string]string       // node name -> rack
	running int32
	free    kubebatch.Resources // headroom: capability - used over running nodes
}

func (r *RM) clusterView(ctx context.Context) (*clusterView, error) {
	r.alloc.mu.Lock()
	cv := r.alloc.view
	r.alloc.mu.Unlock()
	if cv != nil && r.now().Sub(cv.at) < clusterViewTTL {
		return cv, nil
	}
	views, nodes, err := r.nodes(ctx)
	if err != nil {
		return nil, err
	}
	cv = &clusterView{at: r.now(), nodes: map[string]*corev1.Node{}, byHost: map[string]*corev1.Node{}, racks: map[string]string{}}
	for _, n := range nodes {
		cv.nodes[n.Name] = n
		for _, h := range nodeNames(n) {
			cv.byHost[h] = n
		}
	}
	for _, v := range views {
		cv.racks[v.name] = v.rack
		if v.state == yarnpb.NodeStateProto_NS_RUNNING {
			cv.running++
			cv.free.MemoryMB += max(0, v.capability.MemoryMB-v.used.MemoryMB)
			cv.free.VCores += max(0, v.capability.VCores-v.used.VCores)
		}
	}
	r.alloc.mu.Lock()
	r.alloc.view = cv
	r.alloc.mu.Unlock()
	return cv, nil
}

func containerIDOf(p *corev1.Pod) (yarnid.ContainerID, bool) {
	cid, err := yarnid.ParseContainerID(p.Labels[LabelContainerID])
	return cid, err == nil
}

func isContainerPod(p *corev1.Pod) bool { return p.Labels[LabelRole] == RoleContainer }

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// errStateChanged: a pod's container state is no longer the one the caller
// saw in its view (another writer marked it first), or the pod changed so
// the transition no longer applies.
var errStateChanged = errors.New("container state changed since the view")

// markTries bounds markPod's patches: a conflict from an unrelated write (the
// scheduler's binding, the kubelet's status) is re-read and retried.
const markTries = 3

// markPod records what the AM was told of a pod (AnnotationContainerState)
// as a compare-and-set of that annotation: each patch is conditioned on the
// resourceVersion of a version of the pod whose state is the one the caller
// saw, so of two writers at most one makes a transition (DESIGN.md,
// "Hand-out at most once"). A conflict re-reads the pod and retries only
// while its state is still the one seen (and, for a hand-out, the pod is
// still bound to the same node and neither ending nor being deleted);
// otherwise the answer is errStateChanged and nothing is written.
func (r *RM) markPod(ctx context.Context, p *corev1.Pod, state string) error {
	from := p.Annotations[AnnotationContainerState]
	rv, err := r.setAnnotationCAS(ctx, p, AnnotationContainerState, state, func(fresh *corev1.Pod) error {
		if got := fresh.Annotations[AnnotationContainerState]; fresh.UID != p.UID || got != from {
			return fmt.Errorf("%w: pod %s is %q, was %q", errStateChanged, p.Name, got, from)
		}
		if state == stateAllocated && (fresh.Spec.NodeName != p.Spec.NodeName || fresh.DeletionTimestamp != nil || terminated(fresh)) {
			return fmt.Errorf("%w: pod %s is no longer bound and live", errStateChanged, p.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationContainerState] = state
	p.ResourceVersion = rv
	return nil
}

// setAnnotationCAS sets one annotation of p with a merge patch conditioned
// on the resourceVersion of a version of the pod that still holds: first
// p's own, then, after each Conflict (an unrelated write such as the
// scheduler's binding or the kubelet's status, or a competing writer), a
// fresh read's, while still(fresh) accepts it; still's error is returned
// as it is and nothing is written. At most markTries patches. It returns
// the patched pod's resourceVersion.
func (r *RM) setAnnotationCAS(ctx context.Context, p *corev1.Pod, key, value string, still func(fresh *corev1.Pod) error) (string, error) {
	rv := p.ResourceVersion
	for try := 1; ; try++ {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations":     map[string]string{key: value},
			"resourceVersion": rv,
		}})
		out, err := r.kube.Pods(r.cfg.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			return out.ResourceVersion, nil
		}
		if !apierrors.IsConflict(err) || try == markTries {
			return "", kubeErr("set "+key+" on pod "+p.Name, err)
		}
		fresh, err := r.kube.Pods(r.cfg.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return "", kubeErr("get pod "+p.Name, err)
		}
		if err := still(fresh); err != nil {
			return "", err
		}
		rv = fresh.ResourceVersion
	}
}

func (r *RM) deletePod(ctx context.Context, p *corev1.Pod) {
	err := r.kube.Pods(r.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.log.Warn("delete container pod; the next heartbeat retries", "pod", p.Name, "err", err)
		return
	}
	r.metrics.podsDeleted.Inc()
}

func completedStatus(cid yarnid.ContainerID, exit int32, diag string, req containerRequest) *yarnpb.ContainerStatusProto {
	return &yarnpb.ContainerStatusProto{ContainerId: yarnid.ContainerPB(cid), State: yarnpb.ContainerStateProto_C_COMPLETE.Enum(),
		ExitStatus: proto.Int32(exit), Diagnostics: proto.String(diag),
		Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(req.MemoryMB), VirtualCores: proto.Int32(req.VCores)},
		ExecutionType: yarnpb.ExecutionTypeProto_GUARANTEED.Enum()}
}

// disruption is the pod's DisruptionTarget condition reason, if any.
func disruption(p *corev1.Pod) (reason, msg string) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason, c.Message
		}
	}
	return "", ""
}

// completion says whether a handed-out pod's container is over for YARN,
// with its exit status and diagnostics: its exit code once it ended;
// PREEMPTED when the kubelet evicted it or kube-scheduler preempted it;
// ABORTED (a lost node) when the taint manager removed it from an
// unreachable node or its Node is gone; ABORTED too when someone other than
// kuberm and its AM deleted it before its container ended (DESIGN.md,
// "Completed containers": what a Hadoop RM reports for a container that
// vanishes for reasons outside the application, and what AMs replace).
func completion(p *corev1.Pod, cv *clusterView) (exit int32, diag string, done bool) {
	reason, msg := disruption(p)
	if p.Annotations[AnnotationStoppedByAM] != "" && (terminated(p) || p.DeletionTimestamp != nil) {
		return exitKilledByAM, diagStopped, true
	}
	preempted := p.Status.Reason == "Evicted" || reason == corev1.PodReasonPreemptionByScheduler ||
		reason == corev1.PodReasonTerminationByKubelet || reason == "EvictionByEvictionAPI"
	switch {
	case reason == "DeletionByTaintManager":
		return exitAborted, diagLost + ": " + msg, true
	case preempted && (terminated(p) || p.DeletionTimestamp != nil):
		d := diagPreempted
		if m := strings.TrimSpace(p.Status.Message + " " + msg); m != "" {
			d += ": " + m
		}
		return exitPreempted, d, true
	case p.DeletionTimestamp != nil && !endedBeforeDeletion(p):
		// The deletion's SIGTERM usually ends the container (exit 143) and
		// the pod then reads Failed: that exit code is the kill's, not the
		// container's own, so the deletion is what is reported.
		return exitAborted, deletedDiag(p), true
	case terminated(p):
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; cs.Name == ContainerName && t != nil {
				return t.ExitCode, terminationDiag(t), true
			}
		}
		for _, cs := range p.Status.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				return t.ExitCode, "the launcher could not be installed: " + terminationDiag(t), true
			}
		}
		return exitAborted, strings.TrimSpace("the container's pod ended without running it: " + p.Status.Reason + " " + p.Status.Message), true
	case p.Spec.NodeName != "" && cv.nodes[p.Spec.NodeName] == nil:
		return exitAborted, diagLost + ": node " + p.Spec.NodeName + " is gone", true
	}
	return 0, "", false
}

// deletionRequested is when a pod's deletion was asked: its
// deletionTimestamp is that moment plus the grace period.
func deletionRequested(p *corev1.Pod) time.Time {
	at := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return at
}

// endedBeforeDeletion reports whether the pod's main container had ended on
// its own before its deletion was asked (then its exit code is the
// container's). Both times have a resolution of a second: an end within the
// deletion's second counts as caused by it.
func endedBeforeDeletion(p *corev1.Pod) bool {
	asked := deletionRequested(p)
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == ContainerName && t != nil {
			return t.FinishedAt.Time.Before(asked)
		}
	}
	return false
}

func deletedDiag(p *corev1.Pod) string {
	d := fmt.Sprintf("%s: pod %s, deletion requested at %s", diagDeleted, p.Name, deletionRequested(p).UTC().Format(time.RFC3339))
	if g := p.DeletionGracePeriodSeconds; g != nil {
		d += fmt.Sprintf(" with a grace period of %ds", *g)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == ContainerName && t != nil {
			d += "; the container then ended: " + terminationDiag(t)
		}
	}
	return d
}

func terminationDiag(t *corev1.ContainerStateTerminated) string {
	d := "Exit code: " + strconv.Itoa(int(t.ExitCode))
	if t.Reason != "" {
		d += ", reason: " + t.Reason
	}
	if t.Message != "" {
		d += ": " + t.Message
	}
	return d
}

// containerPB is an allocated Container as the AM gets it.
func (r *RM) containerPB(cid yarnid.ContainerID, n *corev1.Node, req containerRequest, user string, now time.Time) *yarnpb.ContainerProto {
	nid := r.nodeID(n)
	res := &yarnpb.ResourceProto{Memory: proto.Int64(req.MemoryMB), VirtualCores: proto.Int32(req.VCores)}
	tok := r.containerToken(containerGrant{ID: cid, Node: nid, User: user, Resource: res, Priority: req.Priority,
		AllocationID: req.AllocationID, Created: now.UnixMilli(), Expiry: now.Add(containerTokenExpiry).UnixMilli()})
	return &yarnpb.ContainerProto{Id: yarnid.ContainerPB(cid), NodeId: nid,
		NodeHttpAddress: proto.String(nid.GetHost() + ":" + strconv.Itoa(nmHTTPPort)), Resource: res,
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(req.Priority)}, ContainerToken: tok,
		ExecutionType: yarnpb.ExecutionTypeProto_GUARANTEED.Enum(), AllocationRequestId: proto.Int64(req.AllocationID), Version: proto.Int32(0)}
}

// step does one heartbeat's work; see the top of this file.
func (r *RM) step(ctx context.Context, st *amState, v *appView, a *attemptView, cv *clusterView, req *yarnpb.AllocateRequestProto) *yarnpb.AllocateResponseProto {
	now := r.now()
	at := st.at
	r.applyAsks(st, req.GetAsk())
	if bl := req.GetBlacklistRequest(); bl != nil {
		for _, h := range bl.GetBlacklistAdditions() {
			st.blacklist[h] = true
		}
		for _, h := range bl.GetBlacklistRemovals() {
			delete(st.blacklist, h)
		}
	}
	if p := req.GetProgress(); !math.IsNaN(float64(p)) {
		st.progress = float32(math.Max(0, math.Min(1, float64(p))))
	}
	resp := &yarnpb.AllocateResponseProto{}
	var maxSeq int64 = 1 // the AM container's
	byName := map[string]*corev1.Pod{}
	for _, p := range v.pods {
		if !isContainerPod(p) {
			continue
		}
		byName[p.Name] = p
		if cid, ok := containerIDOf(p); ok && cid.Attempt.App == at.App {
			maxSeq = max(maxSeq, cid.Sequence())
		}
	}

	// Releases: the pod goes, the AM hears ABORTED (as the RM reports a
	// released container). Unknown or already completed ids are ignored.
	for _, rel := range req.GetRelease() {
		cid := yarnid.ContainerFromPB(rel)
		p := byName[r.containerPodName(cid)]
		if p == nil || p.Annotations[AnnotationContainerState] != stateAllocated {
			continue
		}
		if err := r.markPod(ctx, p, stateCompleted); err != nil {
			r.log.Warn("release: the next heartbeat retries", "container", cid, "err", err)
			continue
		}
		r.deletePod(ctx, p)
		creq, _ := requestOf(p)
		resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, completedStatus(cid, exitAborted, diagReleased, creq))
		delete(st.live, cid.String())
	}

	pending := map[askKey][]*corev1.Pod{}
	held := map[askKey]int{} // bound, not handed out yet: count toward their asks
	seen := map[string]bool{}
	npending := 0
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names) // container ids sort by sequence: answers list them in order
	for _, name := range names {
		p := byName[name]
		cid, ok := containerIDOf(p)
		if !ok || cid.Attempt != at {
			continue
		}
		seen[cid.String()] = true
		creq, _ := requestOf(p)
		switch p.Annotations[AnnotationContainerState] {
		case stateCompleted:
		case stateAllocated:
			exit, diag, done := completion(p, cv)
			if !done {
				st.live[cid.String()] = p.Name
				continue
			}
			if err := r.markPod(ctx, p, stateCompleted); err != nil {
				r.log.Warn("completion: the next heartbeat retries", "container", cid, "err", err)
				continue
			}
			resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, completedStatus(cid, exit, diag, creq))
			delete(st.live, cid.String())
			r.metrics.containersCompleted.Inc()
			r.log.Info("container completed", "container", cid, "exit", exit, "diagnostics", diag)
		default: // not handed out yet
			if p.DeletionTimestamp != nil {
				continue
			}
			if terminated(p) {
				r.deletePod(ctx, p) // never reached the AM: nothing to report
				continue
			}
			if p.Spec.NodeName == "" {
				pending[creq.key()] = append(pending[creq.key()], p)
				npending++
				continue
			}
			n := cv.nodes[p.Spec.NodeName]
			if n == nil {
				held[creq.key()]++
				continue // a node newer than the view, or one going: see next time
			}
			if err := r.markPod(ctx, p, stateAllocated); err != nil {
				r.log.Warn("hand out: the next heartbeat retries", "container", cid, "err", err)
				held[creq.key()]++
				continue
			}
			c := r.containerPB(cid, n, creq, v.rec.User, now)
			resp.AllocatedContainers = append(resp.AllocatedContainers, c)
			if k := nodeIDString(c.NodeId); !st.nmNodes[k] {
				st.nmNodes[k] = true
				resp.NmTokens = append(resp.NmTokens, &yarnpb.NMTokenProto{NodeId: c.NodeId, Token: r.nmToken(at, c.NodeId, v.rec.User)})
			}
			st.live[cid.String()] = p.Name
			st.decrement(creq.key(), n, cv.racks[n.Name])
			r.metrics.containersAllocated.Inc()
		}
	}
	// Handed-out pods gone entirely (deleted with no grace by someone else):
	// ABORTED, as a container whose node is lost (see completion).
	for id := range st.live {
		if seen[id] {
			continue
		}
		cid, err := yarnid.ParseContainerID(id)
		if err != nil {
			delete(st.live, id)
			continue
		}
		exit, diag := int32(exitAborted), diagDeleted+": pod "+st.live[id]+" is gone"
		if r.alloc.takeStopped(cid) {
			exit, diag = exitKilledByAM, diagStopped
		}
		resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, completedStatus(cid, exit, diag, containerRequest{}))
		delete(st.live, id)
		r.log.Info("container completed", "container", cid, "exit", exit, "diagnostics", diag)
	}

	r.matchAsks(ctx, st, v, a, cv, pending, held, npending, maxSeq)

	resp.NumClusterNodes = proto.Int32(cv.running)
	resp.Limit = resourcePB(cv.free)
	resp.ApplicationPriority = &yarnpb.PriorityProto{Priority: proto.Int32(v.rec.Priority)}
	return resp
}

// matchAsks makes the pods not handed out of each ask match its outstanding
// count: the bound ones (held: their hand-out failed or waits for their
// node) count first and are never surplus, then the unbound ones (pending);
// the surplus unbound pods are deleted (newest first), the missing ones
// created, within maxPendingPods and maxCreatePerAllocate.
func (r *RM) matchAsks(ctx context.Context, st *amState, v *appView, a *attemptView, cv *clusterView, pending map[askKey][]*corev1.Pod, held map[askKey]int, npending int, maxSeq int64) {
	keys := make([]askKey, 0, len(st.asks))
	for k := range st.asks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	for k, pods := range pending {
		want := int32(0)
		if e := st.asks[k]; e != nil {
			want = max(e.num-int32(held[k]), 0)
		}
		for i := len(pods) - 1; i >= 0 && int32(i) >= want; i-- { // pods are in sequence order
			r.deletePod(ctx, pods[i])
			npending--
		}
	}
	owner, ok := r.containerOwner(v, a)
	if !ok {
		return
	}
	created := 0
	for _, k := range keys {
		e := st.asks[k]
		missing := int(e.num) - held[k] - len(pending[k])
		if missing <= 0 {
			continue
		}
		loc := r.localityOf(st, e, cv)
		for ; missing > 0 && created < maxCreatePerAllocate && npending < maxPendingPods; missing-- {
			seq, err := r.nextSeq(ctx, st, maxSeq)
			if err != nil {
				r.log.Warn("container ids not reserved; the next heartbeat retries", "attempt", st.at, "err", err)
				return
			}
			cid := yarnid.NewContainerID(st.at, r.epoch, seq)
			_, err = r.kube.Pods(r.cfg.Namespace).Create(ctx, r.containerPod(cid, &v.rec, e.size, owner, loc), metav1.CreateOptions{})
			if err != nil {
				r.log.Warn("container pod not created; the next heartbeat retries", "container", cid, "err", err)
				return
			}
			r.metrics.podsCreated.Inc()
			created++
			npending++
		}
	}
}

// localityOf turns an ask's host and rack counts into node affinity: hosts
// by kubernetes.io/hostname, racks ("/<zone>", as NodeReports name them)
// by topology.kubernetes.io/zone; required when the ANY ask does not relax
// locality, else preferred. Blacklisted hosts and racks are excluded.
func (r *RM) localityOf(st *amState, e *ask, cv *clusterView) locality {
	hostname := func(name string) string {
		if n := cv.byHost[name]; n != nil {
			if h := n.Labels[labelHostname]; h != "" {
				return h
			}
			return n.Name
		}
		return name // unknown: honest unschedulable when strict
	}
	loc := locality{strict: !e.relax}
	for _, h := range sortedNames(e.hosts) {
		loc.hostnames = appendUnique(loc.hostnames, hostname(h))
	}
	for _, rk := range sortedNames(e.racks) {
		if rk == defaultRack {
			loc.noZone = true
		} else {
			loc.zones = appendUnique(loc.zones, strings.TrimPrefix(rk, "/"))
		}
	}
	for _, b := range sortedNames(st.blacklist) {
		switch {
		case b == defaultRack:
		case strings.HasPrefix(b, "/"):
			loc.avoidZone = appendUnique(loc.avoidZone, strings.TrimPrefix(b, "/"))
		default:
			loc.avoid = appendUnique(loc.avoid, hostname(b))
		}
	}
	return loc
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// nextSeq hands out a container sequence number, reserving a block in the
// application Secret (record.App.ContainerSeq) when the attempt has none
// left: ids then stay unique across attempts and kuberm restarts, even for
// containers whose pods are gone.
func (r *RM) nextSeq(ctx context.Context, st *amState, seen int64) (int64, error) {
	if st.seqNext > seen && st.seqNext < st.seqEnd {
		st.seqNext++
		return st.seqNext - 1, nil
	}
	var base int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.objectName(st.at.App), metav1.GetOptions{})
		if err != nil {
			return kubeErr("get application secret", err)
		}
		rec, err := record.Decode(s.Annotations[AnnotationRecord])
		if err != nil {
			return err
		}
		base = max(rec.ContainerSeq, seen, st.seqEnd-1, 1)
		rec.ContainerSeq = base + seqBlock
		s.Annotations[AnnotationRecord] = record.Encode(&rec)
		_, err = r.kube.Secrets(r.cfg.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return kubeErr("reserve container ids", err)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	st.seqNext, st.seqEnd = base+2, base+seqBlock+1
	return base + 1, nil
}

// adoptAttempt fills a fresh state from the attempt's pods at register:
// after a restart, the handed-out containers still running are watched
// again (their completions reported), and the pods never handed out are
// adopted: they count toward the asks the AM re-sends.
func (r *RM) adoptAttempt(st *amState, v *appView) {
	for _, p := range v.pods {
		cid, ok := containerIDOf(p)
		if !ok || !isContainerPod(p) || cid.Attempt != st.at {
			continue
		}
		if p.Annotations[AnnotationContainerState] == stateAllocated {
			st.live[cid.String()] = p.Name
		}
	}
}

// deleteContainers deletes the live container pods of an application's
// attempts other than keep (the zero attempt: all of them), as an RM kills
// an attempt's containers when it ends and an application's when it is
// over.
func (r *RM) deleteContainers(ctx context.Context, pods []*corev1.Pod, keep yarnid.AttemptID) {
	for _, p := range pods {
		cid, ok := containerIDOf(p)
		if !ok || !isContainerPod(p) || cid.Attempt == keep || p.DeletionTimestamp != nil || terminated(p) {
			continue
		}
		r.deletePod(ctx, p)
	}
}

// containerReports are the reports of an attempt's containers that were
// handed out (getContainers; getContainerReport with one id), from their
// pods.
func (r *RM) containerReports(ctx context.Context, v *appView, at yarnid.AttemptID, only *yarnid.ContainerID) ([]*yarnpb.ContainerReportProto, error) {
	var out []*yarnpb.ContainerReportProto
	nodes := map[string]*corev1.Node{}
	for _, p := range v.pods {
		cid, ok := containerIDOf(p)
		if !ok || !isContainerPod(p) || cid.Attempt != at || (only != nil && cid != *only) || p.Annotations[AnnotationContainerState] == "" {
			continue
		}
		req, _ := requestOf(p)
		rep := &yarnpb.ContainerReportProto{
			ContainerId: yarnid.ContainerPB(cid),
			Resource:    &yarnpb.ResourceProto{Memory: proto.Int64(req.MemoryMB), VirtualCores: proto.Int32(req.VCores)},
			NodeId:      &yarnpb.NodeIdProto{Host: proto.String(orNA(p.Spec.NodeName)), Port: proto.Int32(r.nmPort)},
			Priority:    &yarnpb.PriorityProto{Priority: proto.Int32(req.Priority)}, CreationTime: proto.Int64(p.CreationTimestamp.UnixMilli()),
			LogUrl: proto.String("N/A"), ContainerExitStatus: proto.Int32(exitInvalid), ContainerState: yarnpb.ContainerStateProto_C_NEW.Enum(),
			NodeHttpAddress: proto.String(""), ExecutionType: yarnpb.ExecutionTypeProto_GUARANTEED.Enum(),
		}
		if name := p.Spec.NodeName; name != "" {
			n, seen := nodes[name]
			if !seen {
				got, err := r.kube.Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, kubeErr("get node "+name, err)
				}
				if err == nil {
					n = got
				}
				nodes[name] = n
			}
			if n != nil {
				rep.NodeId = r.nodeID(n)
				rep.NodeHttpAddress = proto.String(rep.NodeId.GetHost() + ":" + strconv.Itoa(nmHTTPPort))
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name != ContainerName {
				continue
			}
			if t := cs.State.Terminated; t != nil {
				rep.ContainerExitStatus, rep.DiagnosticsInfo = proto.Int32(t.ExitCode), proto.String(terminationDiag(t))
				rep.FinishTime = proto.Int64(t.FinishedAt.UnixMilli())
			}
		}
		switch {
		case terminated(p) || p.Annotations[AnnotationContainerState] == stateCompleted:
			rep.ContainerState = yarnpb.ContainerStateProto_C_COMPLETE.Enum()
		case p.Status.Phase == corev1.PodRunning:
			rep.ContainerState = yarnpb.ContainerStateProto_C_RUNNING.Enum()
		}
		out = append(out, rep)
	}
	return out, nil
}

// stopContainerPod is how the NM face's stopContainers ends a container:
// the pod is marked stopped by its AM, then deleted, so allocate reports
// KILLED_BY_APPMASTER (-105, the NodeManager's "Container killed by the
// ApplicationMaster.") and not a kill by someone else. The mark is also
// kept in memory for a pod that is gone before the next heartbeat.
func (r *RM) stopContainerPod(ctx context.Context, p *corev1.Pod) error {
	cid, ok := containerIDOf(p)
	if !ok || !isContainerPod(p) {
		return fmt.Errorf("%w: pod %s is not a container pod", ErrContainerNotFound, p.Name)
	}
	r.alloc.mu.Lock()
	if r.alloc.stopped == nil {
		r.alloc.stopped = map[yarnid.ContainerID]bool{}
	}
	r.alloc.stopped[cid] = true
	r.alloc.mu.Unlock()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationStoppedByAM: "true"}}})
	if _, err := r.kube.Pods(r.cfg.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return kubeErr("mark pod "+p.Name+" stopped", err)
	}
	err := r.kube.Pods(r.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return kubeErr("delete pod "+p.Name, err)
	}
	r.metrics.podsDeleted.Inc()
	return nil
}

func (al *allocator) takeStopped(cid yarnid.ContainerID) bool {
	al.mu.Lock()
	defer al.mu.Unlock()
	ok := al.stopped[cid]
	delete(al.stopped, cid)
	return ok
}
