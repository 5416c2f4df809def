package kuberm

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmdefaults"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// The ApplicationMasterProtocol: AMRMTokens kuberm issues and verifies,
// registerApplicationMaster and finishApplicationMaster; allocate is
// alloc.go.

const (
	// KindAMRMToken is the AMRMToken's kind, as Hadoop names it.
	KindAMRMToken = "YARN_AM_RM_TOKEN"
	// AnnotationRegistration on an AM pod is the JSON record.AMRegistration of its
	// attempt once the AM registered (pod metadata is mutable; the spec is not).
	AnnotationRegistration = "yarnfed.io/am-registration"
	masterKeyBytes         = 32
	dataMasterKey          = "key"
)

var (
	ErrInvalidAMRequest = errors.New("invalid application master request")
	ErrAMNotRegistered  = errors.New("application master not registered")
	ErrInvalidToken     = errors.New("invalid token")
)

func (r *RM) masterKeyName() string { return r.prefix + "-amrm-master-key" }

// loadMasterKey reads the AMRMToken master key from its Secret, creating it
// on first start: tokens stay valid across kuberm restarts, as an RM keeps
// its master key in its state store.
func (r *RM) loadMasterKey(ctx context.Context) error {
	s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.masterKeyName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		key := make([]byte, masterKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return fmt.Errorf("kuberm: master key: %w", err)
		}
		s, err = r.kube.Secrets(r.cfg.Namespace).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: r.masterKeyName(), Namespace: r.cfg.Namespace,
				Labels: map[string]string{LabelSubCluster: r.cfg.SubClusterID}},
			Data: map[string][]byte{dataMasterKey: key},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // another kuberm process won the race
			s, err = r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.masterKeyName(), metav1.GetOptions{})
		}
	}
	if err != nil {
		return kubeErr("AMRMToken master key", err)
	}
	if len(s.Data[dataMasterKey]) != masterKeyBytes {
		return fmt.Errorf("%w: master key Secret %s holds %d bytes, want %d", ErrBadRecord, s.Name, len(s.Data[dataMasterKey]), masterKeyBytes)
	}
	r.masterKey = s.Data[dataMasterKey]
	return nil
}

func (r *RM) sign(identifier []byte) []byte {
	m := hmac.New(sha1.New, r.masterKey)
	m.Write(identifier)
	return m.Sum(nil)
}

// AMRMToken is the token of an attempt: what its AM finds in its
// credentials once the launcher delivers them (until then, tests and
// in-process callers take it here).
func (r *RM) AMRMToken(at yarnid.AttemptID) *commonpb.TokenProto {
	id, err := proto.MarshalOptions{Deterministic: true}.Marshal(&yarnpb.AMRMTokenIdentifierProto{
		AppAttemptId: yarnid.AttemptPB(at), KeyId: proto.Int32(1)})
	if err != nil {
		panic(err) // two plain fields always marshal
	}
	return &commonpb.TokenProto{Identifier: id, Password: r.sign(id), Kind: proto.String(KindAMRMToken),
		Service: proto.String(r.Addrs().Scheduler)}
}

// checkToken verifies an AMRMToken identifier's form and returns its
// attempt and password.
func (r *RM) checkToken(identifier []byte) (yarnid.AttemptID, []byte, error) {
	var tid yarnpb.AMRMTokenIdentifierProto
	if len(identifier) > 1024 {
		return yarnid.AttemptID{}, nil, fmt.Errorf("%w: identifier of %d bytes", ErrInvalidToken, len(identifier))
	}
	if err := proto.Unmarshal(identifier, &tid); err != nil || tid.AppAttemptId == nil || tid.GetKeyId() != 1 {
		return yarnid.AttemptID{}, nil, fmt.Errorf("%w: not an AMRMToken identifier of this RM", ErrInvalidToken)
	}
	return yarnid.AttemptFromPB(tid.AppAttemptId), r.sign(identifier), nil
}

// amrmSecrets is the scheduler port's SecretManager: tokens of attempts
// that are their application's latest and not over (Hadoop's
// AMRMTokenSecretManager forgets attempts that ended).
type amrmSecrets struct{ r *RM }

func (s amrmSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	at, pw, err := s.r.checkToken(identifier)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.r.cfg.APITimeout.D())
	defer cancel()
	if _, _, err := s.r.liveAttempt(ctx, at); err != nil {
		if errors.Is(err, ErrKube) {
			return nil, "", hadoopipc.Errorf(hadoopipc.ClassRetriable, "%v", err)
		}
		return nil, "", fmt.Errorf("%w: Password not found for ApplicationAttempt %s", ErrInvalidToken, at)
	}
	return pw, at.String(), nil
}

// liveAttempt returns the application and the attempt if it is the
// application's latest and the application is not over.
func (r *RM) liveAttempt(ctx context.Context, at yarnid.AttemptID) (appView, *attemptView, error) {
	v, err := r.App(ctx, at.App)
	if err != nil {
		return appView{}, nil, err
	}
	if n := len(v.attempts); n == 0 || v.attempts[n-1].id != at || v.rec.Final() {
		return appView{}, nil, fmt.Errorf("%w: %s is not the live attempt", ErrAttemptNotFound, at)
	}
	return v, &v.attempts[len(v.attempts)-1], nil
}

// amAttempt authorizes an AM call: the caller logged in with an AMRMToken,
// which names the attempt.
func (r *RM) amAttempt(ctx context.Context) (yarnid.AttemptID, error) {
	u, ok := hadoopipc.UserFromContext(ctx)
	if !ok || u.AuthMethod != "TOKEN" || len(u.TokenID) == 0 {
		return yarnid.AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]")
	}
	at, _, err := r.checkToken(u.TokenID)
	if err != nil {
		return yarnid.AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%v", err)
	}
	return at, nil
}

func registrationOf(p *corev1.Pod) (record.AMRegistration, bool) {
	s, ok := p.Annotations[AnnotationRegistration]
	if !ok {
		return record.AMRegistration{}, false
	}
	var reg record.AMRegistration
	if len(s) > record.MaxRecordBytes || json.Unmarshal([]byte(s), &reg) != nil {
		return record.AMRegistration{}, false
	}
	return reg, true
}

func (r *RM) registerAM(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	at, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	v, a, err := r.amLiveAttempt(ctx, at)
	if err != nil {
		return nil, err
	}
	// Registered means registered with this process, as in the RM's
	// ApplicationMasterService cache: after a kuberm restart the pod still
	// carries the old registration, and the AM registers again to resync
	// (AMRMClientImpl does on ApplicationMasterNotRegisteredException).
	if r.alloc.get(at) != nil {
		return nil, fmt.Errorf("%w: Application Master is already registered : %s", ErrInvalidAMRequest, at.App)
	}
	if len(req.GetHost()) > 1024 || len(req.GetTrackingUrl()) > 4096 {
		return nil, fmt.Errorf("%w: host or tracking URL too long", ErrInvalidAMRequest)
	}
	regRec := record.AMRegistration{Host: req.GetHost(), RPCPort: req.GetRpcPort(), TrackingURL: req.GetTrackingUrl(), Time: r.now().UnixMilli()}
	if a.pod == nil {
		// An unmanaged AM: the registration goes into its record.
		if err := r.registerUnmanaged(ctx, at, regRec); err != nil {
			return nil, err
		}
	} else {
		if err := r.recordRegistration(ctx, at, a.pod, regRec); err != nil {
			return nil, err
		}
	}
	st, ok := r.alloc.add(at)
	if !ok {
		return nil, fmt.Errorf("%w: Application Master is already registered : %s", ErrInvalidAMRequest, at.App)
	}
	r.alloc.forget(at.App, at) // earlier attempts' states, if any were left
	r.adoptAttempt(st, &v)
	r.log.Info("AM registered", "attempt", at, "host", req.GetHost(), "tracking_url", req.GetTrackingUrl(), "resync", a.reg != nil)
	return &yarnpb.RegisterApplicationMasterResponseProto{
		MaximumCapability: r.maxCapability(), Queue: proto.String(v.rec.Queue),
		SchedulerResourceTypes: []yarnpb.SchedulerResourceTypes{yarnpb.SchedulerResourceTypes_MEMORY, yarnpb.SchedulerResourceTypes_CPU},
		// AMRMClient re-initializes its resource types from these: an empty
		// list breaks every Resource it builds afterwards.
		ResourceTypes: rmdefaults.ResourceTypes(),
	}, nil
}

// recordRegistration writes the AM's registration on its pod. The patch
// carries the pod's resourceVersion, so of two concurrent registers one
// loses. A conflict is mostly not that, though: the kubelet writes the AM
// pod's status just as the AM starts and registers. So a conflict re-reads
// the pod and patches again while the registration on it is still the one
// seen (none, or an earlier kuberm's before a resync); a registration that
// changed meanwhile is a concurrent register, and this one is refused as
// the RM refuses a second one.
func (r *RM) recordRegistration(ctx context.Context, at yarnid.AttemptID, p *corev1.Pod, regRec record.AMRegistration) error {
	reg, _ := json.Marshal(regRec)
	seen := p.Annotations[AnnotationRegistration]
	_, err := r.setAnnotationCAS(ctx, p, AnnotationRegistration, string(reg), func(fresh *corev1.Pod) error {
		if fresh.UID != p.UID || fresh.Annotations[AnnotationRegistration] != seen {
			return fmt.Errorf("%w: Application Master is already registered : %s", ErrInvalidAMRequest, at.App)
		}
		return nil
	})
	return err
}

func (r *RM) finishAM(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	at, err := r.amAttempt(ctx)
	if err != nil {
		return nil, err
	}
	_, a, err := r.amLiveAttempt(ctx, at)
	if errors.Is(err, ErrAttemptNotFound) {
		// Already over (a resent finish after success, or a kill): as an RM
		// that has unregistered the attempt, answer unregistered.
		if v, aerr := r.App(ctx, at.App); aerr == nil && v.rec.Final() {
			return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if a.reg == nil { // the AM pod's registration, or an unmanaged AM's record's
		return nil, fmt.Errorf("%w: Application Master is trying to unregister before registering for: %s", ErrAMNotRegistered, at)
	}
	fs := req.GetFinalApplicationStatus()
	switch fs {
	case yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED, yarnpb.FinalApplicationStatusProto_APP_FAILED,
		yarnpb.FinalApplicationStatusProto_APP_KILLED, yarnpb.FinalApplicationStatusProto_APP_ENDED:
	default:
		return nil, fmt.Errorf("%w: final status %v is not a final status", ErrInvalidAMRequest, fs)
	}
	diag := req.GetDiagnostics()
	if len(diag) > 16<<10 {
		diag = diag[:16<<10]
	}
	// As an RM: the application is FINISHED whatever the AM's verdict; its
	// final status is the AM's.
	if err := r.finish(ctx, at.App, yarnpb.YarnApplicationStateProto_FINISHED, fs, diag); err != nil {
		return nil, err
	}
	// The application is over: its containers go (the reconcile loop
	// retries a deletion that fails here).
	r.alloc.forget(at.App, yarnid.AttemptID{})
	if v, err := r.App(ctx, at.App); err == nil {
		r.deleteContainers(ctx, v.pods, yarnid.AttemptID{})
	}
	r.log.Info("AM unregistered", "attempt", at, "final_status", fs)
	return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
}
