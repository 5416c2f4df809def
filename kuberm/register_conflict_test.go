package kuberm

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
)

// registerRace starts kuberm against a real API server with write run on
// the AM pod, through the admin client, just before kuberm's first
// registration patch of it (so that patch carries a stale
// resourceVersion), and returns a registered-or-refused AM's error.
func registerRace(t *testing.T, write func(ctx context.Context, e *env, p *corev1.Pod) error) (*RM, *env, yarnid.AppID, error) {
	t.Helper()
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	var (
		mu       sync.Mutex
		amPod    string
		raced    bool
		patches  int
		writeErr error
	)
	rm, cl := startRMWith(t, testConfig(e), func(rm *RM) {
		rm.kube = racingKube{CoreV1Interface: rm.kube, before: func(pod string, patch []byte) {
			mu.Lock()
			defer mu.Unlock()
			if pod != amPod || !strings.Contains(string(patch), AnnotationRegistration) {
				return
			}
			if patches++; raced {
				return
			}
			raced = true
			p, err := e.admin.Pods(testNS).Get(ctx, pod, metav1.GetOptions{})
			if err == nil {
				err = write(ctx, e, p)
			}
			writeErr = err
		}}
	})
	e.node("n1", nil, "8", "32Gi")
	app, am := runningAM(t, kl, rm, cl, "n1")
	mu.Lock()
	amPod = rm.amPodName(app, 1)
	mu.Unlock()
	regErr := am.register()
	mu.Lock()
	defer mu.Unlock()
	if !raced || writeErr != nil {
		t.Fatalf("the write between kuberm's view and its registration patch: raced %v, err %v", raced, writeErr)
	}
	t.Logf("%d registration patches", patches)
	return rm, e, app, regErr
}

// TestRegisterSurvivesKubeletStatusWrite: the kubelet writes the AM pod's
// status while the AM registers (it does, as the AM container starts), so
// kuberm's registration patch conflicts on the real API server. That is
// not a second register: the AM is registered (before, it got
// InvalidApplicationMasterRequestException "already registered" and
// failed), and the kubelet's write is kept.
func TestRegisterSurvivesKubeletStatusWrite(t *testing.T) {
	rm, e, app, err := registerRace(t, func(ctx context.Context, e *env, p *corev1.Pod) error {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "yarnfed.test/KubeletWrite", Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
		_, err := e.admin.Pods(testNS).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("register after a kubelet status write: %v (%s), want registered", err, remoteClass(err))
	}
	p, gerr := e.admin.Pods(testNS).Get(context.Background(), rm.amPodName(app, 1), metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if p.Annotations[AnnotationRegistration] == "" {
		t.Error("no registration on the AM pod")
	}
	kept := false
	for _, c := range p.Status.Conditions {
		kept = kept || c.Type == "yarnfed.test/KubeletWrite"
	}
	if !kept {
		t.Errorf("the kubelet's status write is lost: %v", p.Status.Conditions)
	}
}

// TestRegisterLosesToAConcurrentRegister: a registration written on the
// pod between kuberm's view and its patch is another register of the same
// attempt; this one is refused as an RM refuses a second register, and
// the other's registration stays.
func TestRegisterLosesToAConcurrentRegister(t *testing.T) {
	const other = `{"host":"other-register","rpc_port":1}`
	rm, e, app, err := registerRace(t, func(ctx context.Context, e *env, p *corev1.Pod) error {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationRegistration] = other
		_, err := e.admin.Pods(testNS).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
		t.Fatalf("register racing another register: %v, want InvalidApplicationMasterRequestException", err)
	}
	p, gerr := e.admin.Pods(testNS).Get(context.Background(), rm.amPodName(app, 1), metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if got := p.Annotations[AnnotationRegistration]; got != other {
		t.Errorf("registration %q, want the other register's %q kept", got, other)
	}
}
