package kuberm

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// How pods become YARN states (DESIGN.md, "Pod phases").

// attemptView is one AM attempt as its pod shows it.
type attemptView struct {
	id        yarnid.AttemptID
	container yarnid.ContainerID
	pod       *corev1.Pod
	state     yarnpb.YarnApplicationAttemptStateProto
	host      string                 // the node the pod is bound to
	reg       *record.AMRegistration // set once the AM registered
	exitCode  int32                  // the AM container's, -1000 (ContainerExitStatus.INVALID) until it ends
	diag      string
	start     int64 // pod creation, ms
	launch    int64 // AM container started, ms (0 = not yet)
	finish    int64 // AM container ended, ms (0 = not yet)
}

// appView is an application: its record plus its attempts' pods.
type appView struct {
	id          yarnid.AppID
	rec         record.App
	attempts    []attemptView // by attempt number
	pods        []*corev1.Pod // every pod of the application (AM and container pods)
	uid         types.UID     // the application Secret's (App and Apps set it)
	state       yarnpb.YarnApplicationStateProto
	final       yarnpb.FinalApplicationStatusProto
	diagnostics string
	host        string
	launch      int64
	finish      int64
}

const exitInvalid = -1000 // ContainerExitStatus.INVALID

func ms(t interface{ UnixMilli() int64 }, zero bool) int64 {
	if zero {
		return 0
	}
	return t.UnixMilli()
}

// viewAttempt reads one AM pod.
func (r *RM) viewAttempt(id yarnid.AttemptID, p *corev1.Pod) attemptView {
	a := attemptView{id: id, container: r.amContainerID(id), pod: p, host: p.Spec.NodeName, exitCode: exitInvalid,
		start: ms(p.CreationTimestamp, p.CreationTimestamp.IsZero())}
	if reg, ok := registrationOf(p); ok {
		a.reg = &reg
	}
	var cs *corev1.ContainerStatus
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == amContainerName {
			cs = &p.Status.ContainerStatuses[i]
		}
	}
	if cs != nil {
		if s := cs.State.Running; s != nil {
			a.launch = ms(s.StartedAt, s.StartedAt.IsZero())
		}
		if s := cs.State.Terminated; s != nil {
			a.exitCode = s.ExitCode
			a.launch = ms(s.StartedAt, s.StartedAt.IsZero())
			a.finish = ms(s.FinishedAt, s.FinishedAt.IsZero())
		}
	}
	switch p.Status.Phase {
	case corev1.PodRunning:
		a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING
	case corev1.PodSucceeded:
		// An AM that exits without unregistering fails its attempt, whatever
		// its exit code, as on an RM (one that unregistered has its final
		// state recorded, which view lets win).
		a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED
		a.diag = fmt.Sprintf("AM container %s exited with exitCode: %d before the AM unregistered", a.container, a.exitCode)
	case corev1.PodFailed:
		a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED
		a.diag = fmt.Sprintf("AM container %s exited with exitCode: %d", a.container, a.exitCode)
		if cs != nil && cs.State.Terminated != nil && cs.State.Terminated.Reason != "" {
			a.diag += ", reason: " + cs.State.Terminated.Reason
			if m := cs.State.Terminated.Message; m != "" {
				a.diag += ": " + m
			}
		}
		if p.Status.Reason != "" { // e.g. Evicted, with the kubelet's message
			a.diag += "; pod " + p.Status.Reason + ": " + p.Status.Message
		}
	case corev1.PodUnknown:
		a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING
		a.diag = "the AM pod's state is Unknown: its node stopped reporting"
	default: // Pending (or a phase this version does not know)
		if p.Spec.NodeName == "" {
			a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED
			a.diag = "waiting for kube-scheduler to place the AM pod " + p.Name
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					a.diag += ": " + c.Reason + ": " + c.Message
				}
			}
		} else {
			a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED
			a.diag = "AM pod " + p.Name + " bound to node " + p.Spec.NodeName + ", starting"
		}
	}
	return a
}

// view derives the application's state: a recorded final state wins;
// otherwise its latest attempt's pod decides.
func (r *RM) view(id yarnid.AppID, rec record.App, pods []*corev1.Pod) appView {
	if rec.Unmanaged {
		return r.viewUnmanaged(id, rec, pods) // no AM pod (unmanaged.go)
	}
	v := appView{id: id, rec: rec, pods: pods}
	for _, p := range pods {
		at, ok := podAttempt(p)
		if !ok || at.App != id || p.Labels[LabelRole] != RoleAM {
			continue
		}
		v.attempts = append(v.attempts, r.viewAttempt(at, p))
	}
	sort.Slice(v.attempts, func(i, j int) bool { return v.attempts[i].id.Attempt < v.attempts[j].id.Attempt })
	if len(v.attempts) > 0 {
		v.launch = v.attempts[0].launch
		latest := v.attempts[len(v.attempts)-1]
		v.host = latest.host
		v.finish = latest.finish
	}
	if rec.Final() {
		v.state, v.final, v.diagnostics, v.finish = rec.State, rec.FinalStatus, rec.Diagnostics, rec.FinishTime
		if n := len(v.attempts); n > 0 && rec.State == yarnpb.YarnApplicationStateProto_FINISHED {
			// The AM unregistered: its attempt finished once its pod ended.
			if l := &v.attempts[n-1]; l.pod.Status.Phase == corev1.PodSucceeded || l.pod.Status.Phase == corev1.PodFailed {
				l.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED
			}
		}
		return v
	}
	if len(v.attempts) == 0 {
		v.state, v.final = yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED
		v.diagnostics = "the AM pod is being created"
		return v
	}
	latest := v.attempts[len(v.attempts)-1]
	v.diagnostics = latest.diag
	v.final = yarnpb.FinalApplicationStatusProto_APP_UNDEFINED
	switch latest.state {
	case yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING:
		v.state = yarnpb.YarnApplicationStateProto_RUNNING
	case yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED:
		v.state, v.final = yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED
	case yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED:
		if latest.id.Attempt >= rec.MaxAttempts {
			v.state, v.final = yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED
			v.diagnostics = fmt.Sprintf("Application %s failed %d times due to %s. Failing the application.", id, latest.id.Attempt, latest.diag)
		} else {
			// The reconcile loop launches the next attempt.
			v.state = yarnpb.YarnApplicationStateProto_ACCEPTED
			v.diagnostics = fmt.Sprintf("attempt %d failed (%s); launching attempt %d", latest.id.Attempt, latest.diag, latest.id.Attempt+1)
		}
	default:
		v.state = yarnpb.YarnApplicationStateProto_ACCEPTED
	}
	return v
}
