package kuberm

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// Unmanaged AMs (ApplicationSubmissionContext.unmanaged_am), as Hadoop's RM
// serves them (RMAppAttemptImpl's unmanaged path): the application gets no
// AM pod; its one attempt is LAUNCHED as soon as it is accepted, and the
// submitter, who runs the AM itself, takes the attempt's AMRMToken from the
// application report (only the application's own user, only while the
// attempt is LAUNCHED). The AM then registers, allocates and finishes as any
// AM; its containers are pods as any. With no pod, the attempt's liveness
// is its heartbeats: one that makes no ApplicationMasterProtocol call for
// am_liveness_expiry fails (AMLivelinessMonitor), and an unmanaged
// application is never retried (RMAppImpl.AttemptFailedTransition).
//
// Everything but the heartbeat clock is in the API server: the attempt is
// the application Secret itself (record.Unmanaged), its registration is in
// the record (AMRegistration), its verdict is the record's final state. The
// clock is this process's, as the RM's AMLivelinessMonitor is memory only:
// a restarted kuberm starts every unmanaged attempt's clock again at its
// own start (an RM registers recovered attempts with the monitor at
// recovery), because an AM cannot heartbeat while kuberm is down.

// LabelUnmanaged marks the Secret of an unmanaged application: "true" while
// it is live, so their number can be counted (max_unmanaged_applications).
const LabelUnmanaged = "yarnfed.io/unmanaged"

// unmanagedOver is LabelUnmanaged's value once the application is over.
const unmanagedOver = "over"

// amLiveness is when each unmanaged attempt last called the scheduler port
// in this process. Only attempts that logged in with a valid token of a
// live unmanaged attempt are added; entries go when the application is over
// (Reconcile), so it holds at most one per live unmanaged application.
type amLiveness struct {
	mu   sync.Mutex
	seen map[yarnid.AttemptID]time.Time
}

func (l *amLiveness) ping(at yarnid.AttemptID, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[yarnid.AttemptID]time.Time{}
	}
	l.seen[at] = t
}

func (l *amLiveness) last(at yarnid.AttemptID) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[at]
}

func (l *amLiveness) forget(app yarnid.AppID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for at := range l.seen {
		if at.App == app {
			delete(l.seen, at)
		}
	}
}

// unmanagedAttempt is the one attempt of an unmanaged application.
func unmanagedAttempt(id yarnid.AppID) yarnid.AttemptID {
	return yarnid.AttemptID{App: id, Attempt: 1}
}

// viewUnmanaged derives an unmanaged application's state from its record:
// LAUNCHED (ACCEPTED) until the AM registers, then RUNNING; the recorded
// final state once over. The attempt has no AM container (zero id).
func (r *RM) viewUnmanaged(id yarnid.AppID, rec record.App, pods []*corev1.Pod) appView {
	v := appView{id: id, rec: rec, pods: pods, launch: rec.SubmitTime}
	a := attemptView{id: unmanagedAttempt(id), exitCode: exitInvalid, start: rec.SubmitTime, launch: rec.SubmitTime,
		state: yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED,
		diag:  "unmanaged AM: waiting for its submitter to launch it and register"}
	v.state, v.final = yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED
	if reg := rec.AMRegistration; reg != nil {
		cp := *reg
		a.reg, a.host, a.diag = &cp, reg.Host, ""
		a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING
		v.state, v.host = yarnpb.YarnApplicationStateProto_RUNNING, reg.Host
	}
	v.diagnostics = a.diag
	if rec.Final() {
		v.state, v.final, v.diagnostics, v.finish = rec.State, rec.FinalStatus, rec.Diagnostics, rec.FinishTime
		a.finish, a.diag = rec.FinishTime, rec.Diagnostics
		switch rec.State {
		case yarnpb.YarnApplicationStateProto_FINISHED:
			a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED
		case yarnpb.YarnApplicationStateProto_KILLED:
			a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_KILLED
		default:
			a.state = yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED
		}
	}
	v.attempts = []attemptView{a}
	return v
}

// reportToken is the AMRMToken an application report carries: only for an
// unmanaged application whose attempt is LAUNCHED (not yet registered, not
// over), and only to the application's own user, as
// RMAppImpl.createAndGetApplicationReport gives it. Everyone else, and
// every later report, gets none: the token is the AM's whole credential.
func (r *RM) reportToken(v *appView, caller string) *commonpb.TokenProto {
	if !v.rec.Unmanaged || caller == "" || caller != v.rec.User || len(v.attempts) == 0 {
		return nil
	}
	a := &v.attempts[len(v.attempts)-1]
	if a.state != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED {
		return nil
	}
	r.metrics.uamTokens.Inc()
	return r.AMRMToken(a.id)
}

// amLiveAttempt is liveAttempt for a call of the scheduler port: a call of
// a live unmanaged attempt is its heartbeat.
func (r *RM) amLiveAttempt(ctx context.Context, at yarnid.AttemptID) (appView, *attemptView, error) {
	v, a, err := r.liveAttempt(ctx, at)
	if err == nil && v.rec.Unmanaged {
		r.uamLive.ping(at, r.now())
	}
	return v, a, err
}

// registerUnmanaged records an unmanaged AM's registration in its
// application's record, with the Secret's resourceVersion as read here: of
// two concurrent registers one loses (Conflict), as for AM pods.
func (r *RM) registerUnmanaged(ctx context.Context, at yarnid.AttemptID, reg record.AMRegistration) error {
	s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.objectName(at.App), metav1.GetOptions{})
	if err != nil {
		return kubeErr("get application secret", err)
	}
	rec, err := record.Decode(s.Annotations[AnnotationRecord])
	if err != nil {
		return err
	}
	if rec.Final() {
		return fmt.Errorf("%w: %s is not the live attempt", ErrAttemptNotFound, at)
	}
	rec.AMRegistration = &reg
	s.Annotations[AnnotationRecord] = record.Encode(&rec)
	_, err = r.kube.Secrets(r.cfg.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: Application Master is already registered : %s", ErrInvalidAMRequest, at.App)
	}
	if err != nil {
		return kubeErr("record the AM registration", err)
	}
	return nil
}

// checkUnmanagedRoom refuses an unmanaged submission when
// max_unmanaged_applications are live already. Live ones carry
// LabelUnmanaged=true (finish turns it to unmanagedOver), so they are
// counted with a metadata-only List, in pages, up to the bound: the check
// reads no submission whatever their number. Concurrent submissions may
// pass the bound by their number.
func (r *RM) checkUnmanagedRoom(ctx context.Context, id yarnid.AppID, user string) error {
	limit := r.cfg.MaxUnmanagedApps
	live, cont := 0, ""
	for live < limit {
		list, err := r.meta.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(r.cfg.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: r.selector(LabelUnmanaged, "true"), Limit: int64(limit - live), Continue: cont})
		if err != nil {
			return kubeErr("list unmanaged applications", err)
		}
		live += len(list.Items)
		if cont = list.Continue; cont == "" {
			break
		}
	}
	if live >= limit {
		r.metrics.uamRefused.Inc()
		return fmt.Errorf("%w: cannot accept submission of application %s by user %s: %d unmanaged applications are live, the limit (max_unmanaged_applications)",
			ErrInvalidSubmission, id, user, live)
	}
	return nil
}

// syncUnmanaged is Reconcile's work for an unmanaged application not over:
// fail it once its AM's heartbeats stopped for am_liveness_expiry. The clock
// starts at the latest of its submission, its registration, this process's
// start and its last call here.
func (r *RM) syncUnmanaged(ctx context.Context, v *appView) error {
	at := unmanagedAttempt(v.id)
	last := max(v.rec.SubmitTime, r.started.UnixMilli(), r.uamLive.last(at).UnixMilli())
	if reg := v.rec.AMRegistration; reg != nil {
		last = max(last, reg.Time)
	}
	expiry := r.cfg.AMLivenessExpiry.D()
	if r.now().UnixMilli()-last <= expiry.Milliseconds() {
		return nil
	}
	diag := fmt.Sprintf("Application %s failed 1 times due to ApplicationMaster for attempt %s timed out (no heartbeat for %s, am_liveness_expiry). Failing the application.",
		v.id, at, expiry)
	if err := r.finish(ctx, v.id, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED, diag); err != nil {
		return err
	}
	r.metrics.uamExpired.Inc()
	r.log.Info("unmanaged AM expired", "attempt", at, "expiry", expiry)
	// As any application over: the attempt's state goes, its containers go
	// (the reconcile loop retries a deletion that fails here).
	r.alloc.forget(v.id, yarnid.AttemptID{})
	r.uamLive.forget(v.id)
	r.deleteContainers(ctx, v.pods, yarnid.AttemptID{})
	return nil
}

// containerOwner is the owner reference of an attempt's container pods: the
// application Secret, as the AM pod names it; an unmanaged attempt has no
// pod, so its Secret's uid from the view.
func (r *RM) containerOwner(v *appView, a *attemptView) (metav1.OwnerReference, bool) {
	if a.pod == nil {
		if v.uid == "" {
			r.log.Error("application view without its Secret's uid: no container pods", "app", v.id)
			return metav1.OwnerReference{}, false
		}
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: r.objectName(v.id), UID: v.uid}, true
	}
	if len(a.pod.OwnerReferences) == 0 {
		r.log.Error("AM pod without an owner reference: no container pods", "pod", a.pod.Name)
		return metav1.OwnerReference{}, false
	}
	return a.pod.OwnerReferences[0], true
}
