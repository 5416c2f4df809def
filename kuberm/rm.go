// Package kuberm is a YARN ResourceManager backed by the Kubernetes API: a
// Kubernetes cluster (or namespace) joins the federation as a sub-cluster
// with no YARN process inside it. See DESIGN.md.
package kuberm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/yarnfed/yarnfed/internal/hadoopcreds"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// Sentinel errors; ipc.go turns them into Hadoop exception classes.
var (
	ErrApplicationNotFound = errors.New("application not found")
	ErrAttemptNotFound     = errors.New("application attempt not found")
	ErrContainerNotFound   = errors.New("container not found")
	ErrInvalidResource     = errors.New("invalid resource request")
	ErrInvalidSubmission   = errors.New("invalid submission")
	// ErrKube is a failure of the Kubernetes API server (the caller may
	// retry): java.io.IOException on the wire.
	ErrKube = errors.New("kubernetes API")
)

// RM is one kuberm: an RM whose applications live in the Kubernetes API.
type RM struct {
	cfg       Config
	log       *slog.Logger
	kube      corev1client.CoreV1Interface
	meta      metadata.Interface // metadata-only Lists (unmanaged.go's count)
	epoch     int64
	prefix    string       // of object names (namePrefix)
	masterKey []byte       // AMRMTokens' HMAC key (amrm.go), read at Start
	nmPort    int32        // the NodeIds' port: the NM face's advertised port, set by Start
	ts        int64        // cluster timestamp of the ids it hands out
	seq       atomic.Int32 // last application sequence handed out
	now       func() time.Time
	started   time.Time
	metrics   *metrics
	alloc     allocator  // allocate's in-memory attempt states (alloc.go)
	uamLive   amLiveness // unmanaged AMs' last scheduler calls (unmanaged.go)

	mu      sync.Mutex
	servers []*hadoopipc.Server
	web     *http.Server
	addrs   Addrs
	wg      sync.WaitGroup
	running bool
}

// Addrs are the bound addresses (NM: the NodeManager face).
type Addrs struct{ Client, Scheduler, Admin, Web, NM string }

// New validates cfg and connects (lazily) to the API server.
func New(cfg Config) (*RM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kuberm config: %w", err)
	}
	rc, err := cfg.RESTConfig()
	if err != nil {
		return nil, err
	}
	rc.Timeout = cfg.APITimeout.D()
	kc, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kuberm: kubernetes client: %w", err)
	}
	mc, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kuberm: kubernetes metadata client: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	r := &RM{cfg: cfg, log: log.With("subcluster", cfg.SubClusterID), kube: kc, meta: mc, epoch: cfg.epoch(), prefix: namePrefix(cfg.SubClusterID), now: now, started: now()}
	r.ts = cfg.ClusterTimestamp
	if r.ts == 0 {
		r.ts = r.started.UnixMilli()
	}
	r.metrics = newMetrics(cfg.Registerer)
	return r, nil
}

// ClusterTimestamp is the first part of the ids this RM hands out.
func (r *RM) ClusterTimestamp() int64 { return r.ts }

func (r *RM) selector(extra ...string) string {
	sel := labels.Set{LabelSubCluster: r.cfg.SubClusterID}
	for i := 0; i+1 < len(extra); i += 2 {
		sel[extra[i]] = extra[i+1]
	}
	return sel.String()
}

func kubeErr(op string, err error) error { return fmt.Errorf("%w: %s: %w", ErrKube, op, err) }

// seedSequence continues after the highest sequence already used with this
// cluster timestamp (a fixed cluster_timestamp across restarts), so ids
// are not handed out twice.
func (r *RM) seedSequence(ctx context.Context) error {
	list, err := r.kube.Secrets(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector()})
	if err != nil {
		return kubeErr("list application secrets", err)
	}
	for i := range list.Items {
		id, err := yarnid.ParseAppID(list.Items[i].Labels[LabelApplication])
		if err == nil && id.ClusterTimestamp == r.ts && id.ID > r.seq.Load() {
			r.seq.Store(id.ID)
		}
	}
	return nil
}

// NewApplication hands out the next id.
func (r *RM) NewApplication() yarnid.AppID {
	return yarnid.AppID{ClusterTimestamp: r.ts, ID: r.seq.Add(1)}
}

// submission is a checked ApplicationSubmissionContext.
type submission struct {
	id  yarnid.AppID
	rec record.App
	raw []byte
}

// checkSubmission is ClientRMService's validation of a submission.
func (r *RM) checkSubmission(sc *yarnpb.ApplicationSubmissionContextProto, user string, batch bool) (submission, error) {
	if sc == nil || sc.ApplicationId == nil {
		return submission{}, fmt.Errorf("%w: ApplicationId is not provided", ErrInvalidSubmission)
	}
	id := yarnid.AppFromPB(sc.ApplicationId)
	if id.ClusterTimestamp <= 0 || id.ID <= 0 {
		return submission{}, fmt.Errorf("%w: invalid application id %s", ErrInvalidSubmission, id)
	}
	if len(sc.GetApplicationName()) > record.MaxNameLen {
		return submission{}, fmt.Errorf("%w: application name longer than %d", ErrInvalidSubmission, record.MaxNameLen)
	}
	if len(sc.GetApplicationTags()) > record.MaxTags {
		return submission{}, fmt.Errorf("%w: more than %d application tags", ErrInvalidSubmission, record.MaxTags)
	}
	for _, t := range sc.GetApplicationTags() {
		if len(t) > record.MaxTagLen {
			return submission{}, fmt.Errorf("%w: an application tag is longer than %d", ErrInvalidSubmission, record.MaxTagLen)
		}
	}
	// The RM reads these when it launches the AM (AMLauncher); kuberm reads
	// them now, so a submission it could never launch is refused, not
	// accepted and failed later.
	if _, err := hadoopcreds.Decode(sc.GetAmContainerSpec().GetTokens()); err != nil {
		return submission{}, fmt.Errorf("%w: the AM launch context's tokens: %w", ErrInvalidSubmission, err)
	}
	if q := sc.GetQueue(); q != r.cfg.Queue && q != "root."+r.cfg.Queue {
		return submission{}, fmt.Errorf("%w: application %s submitted by user %s to unknown queue: %s", ErrInvalidSubmission, id, user, q)
	}
	mem, vc := int64(-1), int32(-1)
	if res := sc.GetResource(); res != nil {
		mem, vc = res.GetMemory(), res.GetVirtualCores()
	}
	// Hadoop 3 clients send the AM size as the ANY request.
	for _, rr := range sc.GetAmContainerResourceRequest() {
		if n := rr.GetResourceName(); n == "*" || n == "" {
			mem, vc = rr.GetCapability().GetMemory(), rr.GetCapability().GetVirtualCores()
		}
	}
	if mem == -1 && vc == -1 {
		mem, vc = r.cfg.MinAllocationMB, r.cfg.MinAllocationVCores
	}
	if sc.GetUnmanagedAm() {
		// No AM container: RMAppManager validates no AM resource request.
		mem, vc = 0, 0
	}
	if mem < 0 || vc < 0 {
		return submission{}, fmt.Errorf("%w: Invalid resource request, requested resource <memory:%d, vCores:%d> has a negative value", ErrInvalidResource, mem, vc)
	}
	if mem > r.cfg.MaxAllocationMB || vc > r.cfg.MaxAllocationVCores {
		return submission{}, fmt.Errorf("%w: Invalid resource request! Cannot allocate containers as requested resource <memory:%d, vCores:%d> is greater than the maximum allowed allocation <memory:%d, vCores:%d>",
			ErrInvalidResource, mem, vc, r.cfg.MaxAllocationMB, r.cfg.MaxAllocationVCores)
	}
	// Round up to the minimum allocation, as the scheduler normalizes.
	if !sc.GetUnmanagedAm() {
		mem = roundUp(max(mem, r.cfg.MinAllocationMB), r.cfg.MinAllocationMB)
		vc = int32(roundUp(int64(max(vc, r.cfg.MinAllocationVCores)), int64(r.cfg.MinAllocationVCores)))
	}

	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(sc)
	if err != nil {
		return submission{}, fmt.Errorf("%w: %v", ErrInvalidSubmission, err)
	}
	if len(raw) > record.MaxSubmissionBytes {
		return submission{}, fmt.Errorf("%w: submission context of %d bytes exceeds %d", ErrInvalidSubmission, len(raw), record.MaxSubmissionBytes)
	}
	attempts := sc.GetMaxAppAttempts()
	if attempts <= 0 || attempts > r.cfg.MaxAppAttempts {
		attempts = r.cfg.MaxAppAttempts
	}
	if sc.GetUnmanagedAm() {
		attempts = 1 // an unmanaged application is never retried
	}
	rec := record.App{
		User: user, Queue: r.cfg.Queue, Name: sc.GetApplicationName(), Type: sc.GetApplicationType(),
		Tags: sc.GetApplicationTags(), Priority: sc.GetPriority().GetPriority(), SubmitTime: r.now().UnixMilli(),
		MaxAttempts: attempts, MemoryMB: mem, VCores: vc, Batch: batch, Digest: digest(raw), Unmanaged: sc.GetUnmanagedAm(),
	}
	return submission{id: id, rec: rec, raw: raw}, nil
}

func roundUp(v, step int64) int64 { return (v + step - 1) / step * step }

// Submit stores the application (its Secret) and creates its first AM
// pod. Submitting a known id again succeeds without effect, as on an RM
// (the router may retry a submission).
func (r *RM) Submit(ctx context.Context, sc *yarnpb.ApplicationSubmissionContextProto, user string) error {
	batch, err := r.clusterHasBatch(ctx)
	if err != nil {
		return err
	}
	sub, err := r.checkSubmission(sc, user, batch)
	if err != nil {
		return err
	}
	labels := map[string]string{LabelSubCluster: r.cfg.SubClusterID, LabelApplication: sub.id.String()}
	if sub.rec.Unmanaged {
		if err := r.checkUnmanagedRoom(ctx, sub.id, user); err != nil {
			return err
		}
		labels[LabelUnmanaged] = "true"
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.objectName(sub.id), Namespace: r.cfg.Namespace,
			Labels:      labels,
			Annotations: map[string]string{AnnotationRecord: record.Encode(&sub.rec), AnnotationDigest: sub.rec.Digest},
		},
		Type: SecretType,
		Data: map[string][]byte{DataSubmission: sub.raw},
	}
	created, err := r.kube.Secrets(r.cfg.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Names carry the sub-cluster, so the Secret is ours: a resubmission.
		r.log.Info("application submitted again: no effect", "app", sub.id)
		return nil
	}
	if err != nil {
		return kubeErr("create application secret", err)
	}
	r.metrics.submitted.Inc()
	r.log.Info("application submitted", "app", sub.id, "user", user, "memory_mb", sub.rec.MemoryMB, "vcores", sub.rec.VCores, "batch", sub.rec.Batch, "unmanaged", sub.rec.Unmanaged)
	if sub.rec.Unmanaged {
		return nil // no AM pod: its submitter launches the AM (unmanaged.go)
	}
	// The first attempt now; should this fail or the process die, the
	// reconcile loop creates it from the Secret.
	if err := r.launchAttempt(ctx, created, &sub.rec, 1); err != nil {
		r.log.Warn("AM pod not created; the reconcile loop retries", "app", sub.id, "err", err)
	}
	return nil
}

// retireApp deletes what an application over no longer needs: every
// container pod (their launch Secrets are owned by them) and the AM pods'
// launch Secrets, once (AnnotationRetired on the AM pod records it).
func (r *RM) retireApp(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if isContainerPod(p) {
			r.deletePod(ctx, p)
			continue
		}
		at, ok := podAttempt(p)
		if !ok || p.Annotations[AnnotationRetired] != "" {
			continue
		}
		if !terminated(p) {
			continue // a kill deletes it; its Secret goes with it
		}
		err := r.kube.Secrets(r.cfg.Namespace).Delete(ctx, r.launchSecretName(r.amContainerID(at)), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			r.log.Warn("delete AM launch secret; the reconcile loop retries", "pod", p.Name, "err", err)
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationRetired: "true"}}})
		if _, err := r.kube.Pods(r.cfg.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			r.log.Warn("mark AM pod retired; the reconcile loop retries", "pod", p.Name, "err", err)
		}
	}
}

// launchAttempt creates the AM pod of an attempt. A pod the API server
// refuses for good (invalid, forbidden by admission) fails the application.
func (r *RM) launchAttempt(ctx context.Context, secret *corev1.Secret, rec *record.App, attempt int32) error {
	sc, err := record.DecodeSubmission(secret.Data[DataSubmission])
	if err != nil {
		return err
	}
	at := yarnid.AttemptID{App: yarnid.AppFromPB(sc.ApplicationId), Attempt: attempt}
	pod, err := r.kube.Pods(r.cfg.Namespace).Create(ctx, r.amPod(secret, rec, at), metav1.CreateOptions{})
	switch {
	case err == nil:
		r.metrics.podsCreated.Inc()
		return r.ensureAMLaunch(ctx, pod, sc, at)
	case apierrors.IsAlreadyExists(err):
		if pod, err = r.kube.Pods(r.cfg.Namespace).Get(ctx, r.amPodName(at.App, at.Attempt), metav1.GetOptions{}); err != nil {
			return kubeErr("get AM pod", err)
		}
		return r.ensureAMLaunch(ctx, pod, sc, at)
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		diag := fmt.Sprintf("Application %s failed: the AM pod of attempt %d was refused by the Kubernetes API server: %v", at.App, attempt, err)
		if ferr := r.finish(ctx, at.App, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED, diag); ferr != nil {
			return errors.Join(kubeErr("create AM pod", err), ferr)
		}
		return kubeErr("create AM pod", err)
	default:
		return kubeErr("create AM pod", err)
	}
}

// finish records a final state in the application's Secret, unless one is
// recorded already (the first final state wins: a kill racing the AM's
// exit keeps whichever was written first).
func (r *RM) finish(ctx context.Context, id yarnid.AppID, st yarnpb.YarnApplicationStateProto, fs yarnpb.FinalApplicationStatusProto, diag string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.objectName(id), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: %s", ErrApplicationNotFound, id)
		}
		if err != nil {
			return kubeErr("get application secret", err)
		}
		rec, err := record.Decode(s.Annotations[AnnotationRecord])
		if err != nil {
			return err
		}
		if rec.Final() {
			return nil
		}
		rec.State, rec.FinalStatus, rec.Diagnostics, rec.FinishTime = st, fs, diag, r.now().UnixMilli()
		s.Annotations[AnnotationRecord] = record.Encode(&rec)
		if rec.Unmanaged && s.Labels != nil {
			s.Labels[LabelUnmanaged] = unmanagedOver // no longer counted (unmanaged.go)
		}
		_, err = r.kube.Secrets(r.cfg.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return kubeErr("update application secret", err)
		}
		return err
	})
}

// Kill records the application KILLED, then deletes every pod of it.
func (r *RM) Kill(ctx context.Context, id yarnid.AppID, user, diag string) error {
	msg := fmt.Sprintf("Application %s was killed by user %s", id, user)
	if diag != "" {
		msg += " with diagnostic message: " + diag
	}
	if err := r.finish(ctx, id, yarnpb.YarnApplicationStateProto_KILLED, yarnpb.FinalApplicationStatusProto_APP_KILLED, msg); err != nil {
		return err
	}
	return r.deletePods(ctx, id)
}

// deletePods deletes the pods of an application that have not ended.
func (r *RM) deletePods(ctx context.Context, id yarnid.AppID) error {
	pods, err := r.kube.Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector(LabelApplication, id.String())})
	if err != nil {
		return kubeErr("list application pods", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		err := r.kube.Pods(r.cfg.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return kubeErr("delete pod "+p.Name, err)
		}
		r.metrics.podsDeleted.Inc()
	}
	return nil
}

// App returns one application.
func (r *RM) App(ctx context.Context, id yarnid.AppID) (appView, error) {
	s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.objectName(id), metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && s.Labels[LabelSubCluster] != r.cfg.SubClusterID) {
		//lint:ignore ST1005 the text of the RM's own ApplicationNotFoundException, which clients show
		return appView{}, fmt.Errorf("%w: Application with id '%s' doesn't exist in RM. Please check that the job submission was successful.", ErrApplicationNotFound, id)
	}
	if err != nil {
		return appView{}, kubeErr("get application secret", err)
	}
	rec, err := record.Decode(s.Annotations[AnnotationRecord])
	if err != nil {
		return appView{}, err
	}
	pods, err := r.kube.Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector(LabelApplication, id.String())})
	if err != nil {
		return appView{}, kubeErr("list application pods", err)
	}
	v := r.view(id, rec, podPtrs(pods.Items))
	v.uid = s.UID
	return v, nil
}

func podPtrs(items []corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// appSet is every application with its pods, from one List of each.
type appSet struct {
	secrets []*corev1.Secret
	pods    map[string][]*corev1.Pod // by application id
}

func (r *RM) listAll(ctx context.Context) (appSet, error) {
	// Application Secrets only: launch Secrets (labelled with a role, up
	// to 512 KiB each) stay out of the resync's List.
	secrets, err := r.kube.Secrets(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector() + ",!" + LabelRole})
	if err != nil {
		return appSet{}, kubeErr("list application secrets", err)
	}
	pods, err := r.kube.Pods(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.selector()})
	if err != nil {
		return appSet{}, kubeErr("list application pods", err)
	}
	set := appSet{pods: map[string][]*corev1.Pod{}}
	for i := range secrets.Items {
		if secrets.Items[i].Type == SecretType {
			set.secrets = append(set.secrets, &secrets.Items[i])
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		set.pods[p.Labels[LabelApplication]] = append(set.pods[p.Labels[LabelApplication]], p)
	}
	return set, nil
}

// Apps returns every application this kuberm holds, oldest first. Secrets
// whose record cannot be read are skipped and logged.
func (r *RM) Apps(ctx context.Context) ([]appView, error) {
	set, err := r.listAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]appView, 0, len(set.secrets))
	for _, s := range set.secrets {
		id, err := yarnid.ParseAppID(s.Labels[LabelApplication])
		if err != nil {
			r.log.Warn("skipping a secret with a bad application id label", "secret", s.Name, "err", err)
			continue
		}
		rec, err := record.Decode(s.Annotations[AnnotationRecord])
		if err != nil {
			r.log.Warn("skipping an application whose record cannot be read", "app", id, "err", err)
			continue
		}
		v := r.view(id, rec, set.pods[id.String()])
		v.uid = s.UID
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].rec.SubmitTime != out[j].rec.SubmitTime {
			return out[i].rec.SubmitTime < out[j].rec.SubmitTime
		}
		return out[i].id.String() < out[j].id.String()
	})
	return out, nil
}

// Reconcile makes the Kubernetes objects match the applications once: it
// creates a missing first attempt (a crash between Secret and pod), the
// next attempt after a failed one while attempts remain, records final
// states in the Secret (so they survive the pods), and finishes an
// interrupted kill. Idempotent; Run calls it every resync interval.
func (r *RM) Reconcile(ctx context.Context) error {
	set, err := r.listAll(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range set.secrets {
		id, err := yarnid.ParseAppID(s.Labels[LabelApplication])
		if err != nil {
			continue
		}
		rec, err := record.Decode(s.Annotations[AnnotationRecord])
		if err != nil {
			continue // logged by Apps; nothing safe to do with it
		}
		if err := r.sync(ctx, s, id, rec, set.pods[id.String()]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (r *RM) sync(ctx context.Context, s *corev1.Secret, id yarnid.AppID, rec record.App, pods []*corev1.Pod) error {
	v := r.view(id, rec, pods)
	if rec.Final() {
		r.alloc.forget(id, yarnid.AttemptID{})
		r.uamLive.forget(id)
		if rec.State == yarnpb.YarnApplicationStateProto_KILLED {
			for _, p := range pods { // AM and container pods
				if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					return r.deletePods(ctx, id)
				}
			}
		}
		// An application over keeps no container pods, ended ones
		// included, and no launch Secret: they hold its credentials
		// (delegation tokens, AMRMTokens), which must not outlive it. The
		// AM pods stay (attempt reports read them); their Secrets go.
		r.retireApp(ctx, pods)
		return nil
	}
	if rec.Unmanaged {
		return r.syncUnmanaged(ctx, &v)
	}
	if len(v.attempts) == 0 {
		return r.launchAttempt(ctx, s, &rec, 1)
	}
	latest := v.attempts[len(v.attempts)-1]
	// Only the latest attempt keeps containers (no work-preserving AM
	// restart: keep_containers_across_application_attempts is not served).
	live := latest.id
	if latest.state == yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
		live = yarnid.AttemptID{}
	}
	r.alloc.forget(id, live)
	r.deleteContainers(ctx, pods, live)
	switch {
	case latest.state == yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED && latest.id.Attempt < rec.MaxAttempts:
		r.log.Info("AM attempt failed; launching the next", "app", id, "attempt", latest.id.Attempt, "diagnostics", latest.diag)
		return r.launchAttempt(ctx, s, &rec, latest.id.Attempt+1)
	case v.state == yarnpb.YarnApplicationStateProto_FINISHED || v.state == yarnpb.YarnApplicationStateProto_FAILED:
		return r.finish(ctx, id, v.state, v.final, v.diagnostics)
	case latest.pod != nil && latest.pod.Status.Phase == corev1.PodPending && latest.pod.DeletionTimestamp == nil:
		// A crash between the AM pod and its launch Secret leaves the pod
		// waiting for the Secret: create it.
		sc, err := record.DecodeSubmission(s.Data[DataSubmission])
		if err != nil {
			return err
		}
		return r.ensureAMLaunch(ctx, latest.pod, sc, latest.id)
	}
	return nil
}
