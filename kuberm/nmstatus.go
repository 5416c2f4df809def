package kuberm

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// containerStatusOf is a container pod as a NodeManager reports the
// container (getContainerStatuses; allocate's completed containers can use
// it too):
//   - ended (its main container terminated, or the pod Succeeded/Failed):
//     COMPLETE with the exit code; KILLED_BY_APPMASTER (-105) when the
//     AM's stopContainers deleted it, KILLED_EXCEEDED_PMEM (-104) when the
//     kernel killed it for its memory limit, ABORTED (-100) when the pod
//     failed without the container ever ending (eviction, a failed
//     launcher install);
//   - not started (no launch Secret): NEW, sub-state SCHEDULED (a
//     NodeManager does not know such a container; kuberm does);
//   - started: RUNNING, sub-state SCHEDULED while the pod waits (image
//     pull, the launcher's install, localization), RUNNING once its main
//     container runs, as a NodeManager reports a localizing container
//     RUNNING with sub-state SCHEDULED.
//
// Capability is the pod's size; the attributes carry its IPs and host name.
func containerStatusOf(p *corev1.Pod, cid yarnid.ContainerID, started bool) *yarnpb.ContainerStatusProto {
	st := &yarnpb.ContainerStatusProto{
		ContainerId: yarnid.ContainerPB(cid), Capability: podCapability(p),
		ExitStatus: proto.Int32(exitInvalid), Diagnostics: proto.String(""),
	}
	var main *corev1.ContainerStatus
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == ContainerName {
			main = &p.Status.ContainerStatuses[i]
		}
	}
	var term *corev1.ContainerStateTerminated
	if main != nil {
		term = main.State.Terminated
	}
	_, stopped := p.Annotations[AnnotationStoppedByAM]
	set := func(s yarnpb.ContainerStateProto, sub yarnpb.ContainerSubStateProto, diag string) {
		st.State, st.ContainerSubState, st.Diagnostics = s.Enum(), sub.Enum(), proto.String(diag)
	}
	switch {
	case term != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		exit, diag := nmExit(p, term)
		if stopped {
			exit, diag = exitKilledByAM, msgKilledByAM+"\n"+diag
		}
		set(yarnpb.ContainerStateProto_C_COMPLETE, yarnpb.ContainerSubStateProto_CSS_DONE, diag)
		st.ExitStatus = proto.Int32(exit)
	case !started:
		set(yarnpb.ContainerStateProto_C_NEW, yarnpb.ContainerSubStateProto_CSS_SCHEDULED,
			"allocated; its ApplicationMaster has not started it (startContainers)")
	case p.Status.Phase == corev1.PodRunning && main != nil && main.State.Running != nil:
		set(yarnpb.ContainerStateProto_C_RUNNING, yarnpb.ContainerSubStateProto_CSS_RUNNING, "")
	default:
		set(yarnpb.ContainerStateProto_C_RUNNING, yarnpb.ContainerSubStateProto_CSS_SCHEDULED, waiting(p))
	}
	var attrs []*yarnpb.StringStringMapProto
	if len(p.Status.PodIPs) > 0 {
		ips := make([]string, len(p.Status.PodIPs))
		for i, ip := range p.Status.PodIPs {
			ips[i] = ip.IP
		}
		attrs = append(attrs, &yarnpb.StringStringMapProto{Key: proto.String("IPS"), Value: proto.String(strings.Join(ips, ","))})
	}
	host := p.Spec.Hostname
	if host == "" {
		host = p.Name
	}
	st.ContainerAttributes = append(attrs, &yarnpb.StringStringMapProto{Key: proto.String("HOST"), Value: proto.String(host)})
	return st
}

// nmExit is the exit status and diagnostics of an ended container pod.
func nmExit(p *corev1.Pod, term *corev1.ContainerStateTerminated) (int32, string) {
	switch {
	case term != nil && term.Reason == "OOMKilled":
		return exitKilledPmem, fmt.Sprintf("Container killed on request: it exceeded its memory limit (OOMKilled). Exit code is %d", term.ExitCode)
	case term != nil:
		diag := fmt.Sprintf("Exit code is %d", term.ExitCode)
		if term.Reason != "" {
			diag += ", reason: " + term.Reason
		}
		if term.Message != "" {
			diag += ": " + term.Message
		}
		return term.ExitCode, diag
	case p.Status.Phase == corev1.PodSucceeded:
		return 0, ""
	}
	diag := "the container's pod failed before its container ended"
	if p.Status.Reason != "" {
		diag += ": pod " + p.Status.Reason + ": " + p.Status.Message
	}
	for _, ic := range p.Status.InitContainerStatuses {
		if t := ic.State.Terminated; t != nil && t.ExitCode != 0 {
			diag += fmt.Sprintf("; init container %s exited with %d (%s)", ic.Name, t.ExitCode, t.Reason)
		}
	}
	return exitAborted, diag
}

// waiting says what a started container's pod waits for.
func waiting(p *corev1.Pod) string {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				return fmt.Sprintf("pod %s: container %s waiting: %s %s", p.Name, cs.Name, w.Reason, w.Message)
			}
		}
	}
	return "pod " + p.Name + " is starting"
}

// podCapability is the pod's main container's requests in YARN units
// (batch resources or cpu/memory, whichever it asks for).
func podCapability(p *corev1.Pod) *yarnpb.ResourceProto {
	for _, c := range p.Spec.Containers {
		if c.Name != ContainerName {
			continue
		}
		rq := c.Resources.Requests
		var memBytes, milli int64
		if q, ok := rq[kubebatch.BatchMemory]; ok {
			memBytes = q.Value()
		} else if q, ok := rq[corev1.ResourceMemory]; ok {
			memBytes = q.Value()
		}
		if q, ok := rq[kubebatch.BatchCPU]; ok {
			milli = q.Value() // batch-cpu counts milli-cores as integers
		} else if q, ok := rq[corev1.ResourceCPU]; ok {
			milli = q.MilliValue()
		}
		return resourcePB(kubebatch.Resources{MemoryMB: (memBytes + 1<<20 - 1) >> 20, VCores: (milli + 999) / 1000})
	}
	return resourcePB(kubebatch.Resources{})
}
