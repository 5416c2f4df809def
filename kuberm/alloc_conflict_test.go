package kuberm

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// fakeAlloc drives allocate's step over a fake clientset (a fake API
// server: no admission, no scheduler), so a test can make the API answer a
// given patch with a given error at a given moment. The test stands in for
// kube-scheduler (bind) and for the AM (asks what it has not received yet,
// as AMRMClientImpl's table does).
type fakeAlloc struct {
	t  *testing.T
	r  *RM
	cs *fake.Clientset
	st *amState
	v  appView
	a  attemptView
	cv *clusterView

	mu      sync.Mutex
	patches map[string]int // state patches sent, by "<state> <pod>"
}

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func newFakeAlloc(t *testing.T) *fakeAlloc {
	t.Helper()
	r := unitRM(t)
	r.cfg.Namespace = testNS
	r.log = slog.New(slog.NewTextHandler(tlog{t}, nil))
	r.metrics = newMetrics(prometheus.NewRegistry())
	app := yarnid.AppID{ClusterTimestamp: 9, ID: 1}
	at := yarnid.AttemptID{App: app, Attempt: 1}
	rec := record.App{User: testUser, MaxAttempts: 1, MemoryMB: 1024, VCores: 1}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: r.objectName(app), Namespace: testNS, UID: "app-uid",
		Annotations: map[string]string{AnnotationRecord: record.Encode(&rec)}}}
	cs := fake.NewClientset(secret)
	r.kube = cs.CoreV1()
	st, _ := r.alloc.add(at)
	f := &fakeAlloc{t: t, r: r, cs: cs, st: st, v: appView{id: app, rec: rec, uid: "app-uid"}, a: attemptView{id: at},
		cv:      &clusterView{nodes: map[string]*corev1.Node{}, byHost: map[string]*corev1.Node{}, racks: map[string]string{}},
		patches: map[string]int{}}
	f.addNode("n1", "10.0.0.1")
	return f
}

func (f *fakeAlloc) addNode(name, ip string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	f.cv.nodes[name], f.cv.byHost[name], f.cv.byHost[ip], f.cv.racks[name] = n, n, n, defaultRack
	f.cv.running++
}

// pods are the application's container pods in id order.
func (f *fakeAlloc) pods() []corev1.Pod {
	f.t.Helper()
	l, err := f.cs.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// heartbeat is one allocate with a fresh view of the pods.
func (f *fakeAlloc) heartbeat(asks ...*yarnpb.ResourceRequestProto) *yarnpb.AllocateResponseProto {
	f.t.Helper()
	f.v.pods = nil
	for _, p := range f.pods() {
		f.v.pods = append(f.v.pods, &p)
	}
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	return f.r.step(context.Background(), f.st, &f.v, &f.a, f.cv, &yarnpb.AllocateRequestProto{Ask: asks})
}

// bind is kube-scheduler binding pod to node.
func (f *fakeAlloc) bind(pod, node string) {
	f.t.Helper()
	f.modify(pod, func(p *corev1.Pod) { p.Spec.NodeName = node })
}

// modify writes a pod behind kuberm's back (through the fake's tracker,
// which no reactor sees).
func (f *fakeAlloc) modify(pod string, change func(*corev1.Pod)) {
	f.t.Helper()
	o, err := f.cs.Tracker().Get(podsGVR, testNS, pod)
	if err != nil {
		f.t.Fatal(err)
	}
	p := o.(*corev1.Pod).DeepCopy()
	change(p)
	if err := f.cs.Tracker().Update(podsGVR, p, testNS); err != nil {
		f.t.Fatal(err)
	}
}

// onStatePatch makes the API answer patches that set the container state
// to state: fail is called with the pod and the patch's ordinal for that
// pod (1 for its first), and its error, if any, is the answer.
func (f *fakeAlloc) onStatePatch(state string, fail func(pod string, n int) error) {
	f.cs.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pa := action.(k8stesting.PatchAction)
		if !patchSetsState(pa.GetPatch(), state) {
			return false, nil, nil
		}
		f.mu.Lock()
		f.patches[state+" "+pa.GetName()]++
		n := f.patches[state+" "+pa.GetName()]
		f.mu.Unlock()
		if err := fail(pa.GetName(), n); err != nil {
			return true, nil, err
		}
		return false, nil, nil
	})
}

func patchSetsState(patch []byte, state string) bool {
	var m struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	return json.Unmarshal(patch, &m) == nil && m.Metadata.Annotations[AnnotationContainerState] == state
}

// amAsks is the AM's ANY ask for what it still waits for.
func amAsks(want, got int) *yarnpb.ResourceRequestProto {
	return anyAsk(1, 1024, 1, int32(max(want-got, 0)), true)
}

func conflict(pod string) error {
	return apierrors.NewConflict(podsGVR.GroupResource(), pod, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// TestHandOutFailureCreatesNoReplacement is the cold CI run's bug: a bound
// pod whose hand-out failed (here a 500 on its patch, kept through the
// heartbeat) or whose node the view does not have yet must count toward its
// ask, so no replacement pod is created for it; the AM asked for N and gets
// exactly N containers from exactly N pods.
func TestHandOutFailureCreatesNoReplacement(t *testing.T) {
	const n = 4
	f := newFakeAlloc(t)
	failed := ""
	f.onStatePatch(stateAllocated, func(pod string, k int) error {
		if failed == "" || failed == pod && k == 1 {
			failed = pod
			return apierrors.NewInternalError(errors.New("etcd leader changed"))
		}
		return nil
	})
	got := map[string]bool{}
	take := func(resp *yarnpb.AllocateResponseProto) {
		for _, c := range resp.AllocatedContainers {
			id := yarnid.ContainerFromPB(c.GetId()).String()
			if got[id] {
				t.Errorf("container %s handed out twice", id)
			}
			got[id] = true
		}
	}
	take(f.heartbeat(amAsks(n, 0)))
	created := func() float64 { return counterValue(t, f.r.metrics.podsCreated) }
	pods := f.pods()
	if len(pods) != n {
		t.Fatalf("%d container pods after asking for %d", len(pods), n)
	}
	for i, p := range pods {
		node := "n1"
		if i == n-1 {
			node = "n9" // newer than the view
		}
		f.bind(p.Name, node)
	}
	take(f.heartbeat(amAsks(n, len(got))))
	if len(got) != n-2 || failed == "" {
		t.Fatalf("%d handed out (failed hand-out of %q), want %d: one patch failed, one node unknown", len(got), failed, n-2)
	}
	if pods := f.pods(); len(pods) != n {
		t.Fatalf("%d container pods after a failed hand-out and a node unknown to the view, want %d: no replacement for a bound pod", len(pods), n)
	}
	f.addNode("n9", "10.0.0.9")
	take(f.heartbeat(amAsks(n, len(got))))
	take(f.heartbeat(amAsks(n, len(got))))
	if len(got) != n {
		t.Errorf("%d containers handed out, want %d", len(got), n)
	}
	if pods := f.pods(); len(pods) != n || created() != n {
		t.Errorf("%d container pods, %v created in total, want %d", len(pods), created(), n)
	}
}

// TestHandOutRetriesConflict: the kubelet writes a bound pod's status
// between kuberm's view and its hand-out patch, whose resourceVersion
// precondition then conflicts. The state annotation is still unset, so the
// transition is retried on the fresh version: all N containers in one
// answer, N pods in total, the kubelet's write kept.
func TestHandOutRetriesConflict(t *testing.T) {
	const n = 4
	f := newFakeAlloc(t)
	f.heartbeat(amAsks(n, 0))
	pods := f.pods()
	for _, p := range pods {
		f.bind(p.Name, "n1")
	}
	victim := pods[1].Name
	f.onStatePatch(stateAllocated, func(pod string, k int) error {
		if pod != victim || k != 1 {
			return nil
		}
		f.modify(pod, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending; p.Status.HostIP = "10.0.0.1" })
		return conflict(pod)
	})
	resp := f.heartbeat(amAsks(n, 0))
	if len(resp.AllocatedContainers) != n {
		t.Fatalf("%d containers handed out, want %d: a conflict with an unrelated write is retried", len(resp.AllocatedContainers), n)
	}
	if k := f.patches[stateAllocated+" "+victim]; k != 2 {
		t.Errorf("%d hand-out patches of %s, want 2", k, victim)
	}
	if resp := f.heartbeat(amAsks(n, n)); len(resp.AllocatedContainers) != 0 {
		t.Errorf("%d more containers handed out", len(resp.AllocatedContainers))
	}
	pods = f.pods()
	if len(pods) != n {
		t.Errorf("%d container pods, want %d", len(pods), n)
	}
	for _, p := range pods {
		if p.Annotations[AnnotationContainerState] != stateAllocated {
			t.Errorf("pod %s state %q, want allocated", p.Name, p.Annotations[AnnotationContainerState])
		}
		if p.Name == victim && p.Status.HostIP != "10.0.0.1" {
			t.Errorf("the kubelet's status write was lost: %+v", p.Status)
		}
	}

	// A completion whose patch conflicts with the kubelet's next write is
	// retried too: reported once, in the same answer.
	f.onStatePatch(stateCompleted, func(pod string, k int) error {
		if pod != victim || k != 1 {
			return nil
		}
		f.modify(pod, func(p *corev1.Pod) { p.Status.Message = "kubelet again" })
		return conflict(pod)
	})
	f.modify(victim, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
	})
	if done := completedByID(f.heartbeat(amAsks(n, n))); len(done) != 1 {
		t.Errorf("completions %v, want %s's once", done, victim)
	}
	if done := completedByID(f.heartbeat(amAsks(n, n))); len(done) != 0 {
		t.Errorf("completions reported again: %v", done)
	}
}

// TestHandOutAtMostOnce: another writer (a second kuberm, a concurrent
// heartbeat) hands a pod out between this kuberm's view and its patch. The
// re-read sees the state changed: no second patch, the pod is not handed
// out again, not replaced, and not handed out on later heartbeats either.
// The same for a completion another writer reported first.
func TestHandOutAtMostOnce(t *testing.T) {
	const n = 3
	f := newFakeAlloc(t)
	f.heartbeat(amAsks(n, 0))
	pods := f.pods()
	for _, p := range pods {
		f.bind(p.Name, "n1")
	}
	taken := pods[0].Name
	f.onStatePatch(stateAllocated, func(pod string, k int) error {
		if pod != taken || k != 1 {
			return nil
		}
		f.modify(pod, func(p *corev1.Pod) { p.Annotations[AnnotationContainerState] = stateAllocated })
		return conflict(pod)
	})
	got := 0
	for range 3 {
		resp := f.heartbeat(amAsks(n, got+1)) // the other writer's container reached the AM
		for _, c := range resp.AllocatedContainers {
			if f.r.containerPodName(yarnid.ContainerFromPB(c.GetId())) == taken {
				t.Errorf("%s handed out though another writer had", taken)
			}
		}
		got += len(resp.AllocatedContainers)
	}
	if got != n-1 {
		t.Errorf("%d containers handed out here, want %d", got, n-1)
	}
	if k := f.patches[stateAllocated+" "+taken]; k != 1 {
		t.Errorf("%d hand-out patches of %s, want 1 (no retry over another writer's state)", k, taken)
	}
	if pods := f.pods(); len(pods) != n {
		t.Errorf("%d container pods, want %d", len(pods), n)
	}

	f.onStatePatch(stateCompleted, func(pod string, k int) error {
		if pod != taken || k != 1 {
			return nil
		}
		f.modify(pod, func(p *corev1.Pod) { p.Annotations[AnnotationContainerState] = stateCompleted })
		return conflict(pod)
	})
	f.modify(taken, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	})
	for range 2 {
		if done := completedByID(f.heartbeat(amAsks(n, n))); len(done) != 0 {
			t.Errorf("completion reported though another writer had: %v", done)
		}
	}
	if k := f.patches[stateCompleted+" "+taken]; k != 1 {
		t.Errorf("%d completion patches of %s, want 1", k, taken)
	}
}

// TestHeldPodsCountFirst: bound pods not handed out yet count toward their
// ask before the unbound ones, so when the AM lowers its ask the unbound
// pods are the surplus deleted, and it gets no more containers than it
// asks for once the bound ones are handed out.
func TestHeldPodsCountFirst(t *testing.T) {
	f := newFakeAlloc(t)
	f.heartbeat(amAsks(4, 0))
	pods := f.pods()
	if len(pods) != 4 {
		t.Fatalf("%d container pods after asking for 4", len(pods))
	}
	f.bind(pods[0].Name, "n9") // a node newer than the view
	f.bind(pods[1].Name, "n9")
	if resp := f.heartbeat(amAsks(2, 0)); len(resp.AllocatedContainers) != 0 {
		t.Fatalf("%d containers handed out on a node the view lacks", len(resp.AllocatedContainers))
	}
	left := f.pods()
	if len(left) != 2 || left[0].Name != pods[0].Name || left[1].Name != pods[1].Name {
		t.Fatalf("pods left %v, want the two bound ones: the unbound ones are the surplus of an ask of 2", names(left))
	}
	f.addNode("n9", "10.0.0.9")
	if resp := f.heartbeat(amAsks(2, 0)); len(resp.AllocatedContainers) != 2 {
		t.Errorf("%d containers handed out, want 2", len(resp.AllocatedContainers))
	}
	if resp := f.heartbeat(amAsks(2, 2)); len(resp.AllocatedContainers) != 0 || len(f.pods()) != 2 {
		t.Errorf("then %d more containers, %d pods; want none more, 2", len(resp.AllocatedContainers), len(f.pods()))
	}
}

// tlog sends kuberm's log to the test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) { w.t.Helper(); w.t.Log(string(b)); return len(b), nil }

// racingKube is kuberm's client with a hook run before each pod patch, so
// a test can write the pod between kuberm's view and its patch.
type racingKube struct {
	corev1client.CoreV1Interface
	before func(pod string, patch []byte)
}

func (k racingKube) Pods(ns string) corev1client.PodInterface {
	return racingPods{PodInterface: k.CoreV1Interface.Pods(ns), before: k.before}
}

type racingPods struct {
	corev1client.PodInterface
	before func(pod string, patch []byte)
}

func (p racingPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*corev1.Pod, error) {
	p.before(name, data)
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// TestHandOutConflictAgainstRealAPIServer is the cold CI run's failure
// against a real kube-apiserver: the kubelet writes a bound pod's status
// between kuberm's view and its hand-out patch, so the API server answers
// that patch 409 Conflict (the resourceVersion moved). The AM asked for 3:
// it gets exactly 3 containers, in one answer, from exactly 3 pods, and the
// kubelet's write is kept.
func TestHandOutConflictAgainstRealAPIServer(t *testing.T) {
	const n = 3
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	var (
		mu      sync.Mutex
		victim  string
		raced   bool
		sent    int // hand-out patches of victim
		raceErr error
		stale   bool
	)
	rm, cl := startRMWith(t, testConfig(e), func(rm *RM) {
		rm.kube = racingKube{CoreV1Interface: rm.kube, before: func(pod string, patch []byte) {
			mu.Lock()
			defer mu.Unlock()
			if victim == "" || pod != victim || !patchSetsState(patch, stateAllocated) {
				return
			}
			if sent++; raced {
				return
			}
			raced = true
			p, err := e.admin.Pods(testNS).Get(ctx, pod, metav1.GetOptions{})
			if err == nil {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
				_, err = e.admin.Pods(testNS).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
			raceErr = err
			// The patch itself now goes to the API server with a stale
			// resourceVersion: check it does conflict there.
			var m struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			if json.Unmarshal(patch, &m) == nil && err == nil {
				cur, gerr := e.admin.Pods(testNS).Get(ctx, pod, metav1.GetOptions{})
				stale = gerr == nil && cur.ResourceVersion != m.Metadata.ResourceVersion
			}
		}}
	})
	e.node("n1", nil, "8", "32Gi")
	app, am := runningAM(t, kl, rm, cl, "n1")
	if err := am.register(); err != nil {
		t.Fatal(err)
	}

	created0 := counterValue(t, rm.metrics.podsCreated)
	if resp := am.allocate(t, anyAsk(1, 1024, 1, n, true)); len(resp.AllocatedContainers) != 0 {
		t.Fatalf("%d containers before any binding", len(resp.AllocatedContainers))
	}
	pods := e.containerPods(t, app)
	if len(pods) != n {
		t.Fatalf("%d container pods after asking for %d", len(pods), n)
	}
	for _, p := range pods {
		kl.bind(p.Name, "n1")
	}
	mu.Lock()
	victim = pods[1].Name
	mu.Unlock()
	got := 0
	resp := am.allocate(t, anyAsk(1, 1024, 1, n, true))
	got += len(resp.AllocatedContainers)
	mu.Lock()
	if raceErr != nil || !raced || !stale {
		t.Fatalf("the kubelet's write between view and patch: raced %v, stale patch %v, err %v", raced, stale, raceErr)
	}
	if sent != 2 {
		t.Errorf("%d hand-out patches of %s, want 2 (the conflict, then the retry)", sent, victim)
	}
	mu.Unlock()
	if got != n {
		t.Errorf("%d containers in the answer, want %d: the conflict is retried on the fresh version", got, n)
	}
	if pods := e.containerPods(t, app); len(pods) != n {
		t.Errorf("%d container pods %v after the conflict, want %d", len(pods), names(pods), n)
	}
	for range 2 {
		resp := am.allocate(t, anyAsk(1, 1024, 1, int32(max(n-got, 0)), true))
		got += len(resp.AllocatedContainers)
	}
	if got != n {
		t.Errorf("%d containers handed out in all, want %d", got, n)
	}
	pods = e.containerPods(t, app)
	if c := counterValue(t, rm.metrics.podsCreated) - created0; len(pods) != n || c != n {
		t.Errorf("%d container pods %v, %v created, want %d", len(pods), names(pods), c, n)
	}
	for _, p := range pods {
		if p.Name == victim && (len(p.Status.Conditions) == 0 || p.Annotations[AnnotationContainerState] != stateAllocated) {
			t.Errorf("%s: state %q, conditions %v: want allocated and the kubelet's write kept", p.Name, p.Annotations[AnnotationContainerState], p.Status.Conditions)
		}
	}
}
