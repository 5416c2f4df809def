package kuberm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

const (
	testNS   = "yarn"
	rmUser   = "yarnfed-kuberm"
	testUser = "alice"
)

// env is a real kube-apiserver with kuberm's RBAC granted to rmUser.
type env struct {
	t     *testing.T
	c     *kubetest.Cluster
	admin corev1client.CoreV1Interface
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := kubetest.Start(t, kubetest.Options{Users: []kubetest.User{{Name: rmUser}}})
	admin, err := corev1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{testNS, "other"} {
		// kuberm's namespace enforces Pod Security "restricted": every AM
		// pod must pass it.
		labels := map[string]string{}
		if ns == testNS {
			labels["pod-security.kubernetes.io/enforce"] = "restricted"
		}
		if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// kuberm runs with exactly the shipped RBAC: the cluster-wide read
	// role, and the apps role bound in its namespace only.
	c.GrantClusterRole(t, "rbac.yaml", rmUser)
	c.GrantClusterRoleInNamespace(t, "rbac-namespace.yaml", rmUser, testNS)
	return &env{t: t, c: c, admin: admin}
}

func testConfig(e *env) Config {
	cfg := DefaultConfig()
	cfg.SubClusterID = "SC-kube"
	cfg.Namespace = testNS
	cfg.ClientAddress = "127.0.0.1:0"
	cfg.SchedulerAddress = "127.0.0.1:0"
	cfg.AdminAddress = "127.0.0.1:0"
	cfg.NMAddress = "127.0.0.1:0"
	cfg.WebAddress = "127.0.0.1:0"
	cfg.Image = "registry.example/yarn-am:1"
	cfg.ClusterTimestamp = 1_700_000_000_000
	cfg.Epoch = 7
	cfg.ResyncInterval = config.Duration(time.Hour) // tests call Reconcile themselves
	cfg.HeartbeatInterval = config.Duration(time.Hour)
	cfg.REST = e.c.RESTConfig(e.c.Users[rmUser].Token)
	return cfg
}

// startRM starts a kuberm and an IPC client to it, as testUser.
func startRM(t *testing.T, cfg Config) (*RM, *hadoopipc.Client) {
	t.Helper()
	return startRMWith(t, cfg, nil)
}

// startRMWith is startRM with prepare run on the RM before it starts (a
// test's own API client, say).
func startRMWith(t *testing.T, cfg Config, prepare func(*RM)) (*RM, *hadoopipc.Client) {
	t.Helper()
	rm, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(rm)
	}
	if err := rm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rm.Close)
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client},
		Protocol: hadoopipc.ProtocolApplicationClient, User: testUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return rm, cl
}

// runningAM submits an application as testUser, binds its AM pod to node
// and runs it (kl plays the kubelet), and returns an AM client holding the
// attempt's token, not registered yet.
func runningAM(t *testing.T, kl *fakeKubelet, rm *RM, cl *hadoopipc.Client, node string) (yarnid.AppID, *testAM) {
	t.Helper()
	app := newApp(t, cl)
	if err := submit(t, cl, submissionFor(app, 1024, 1)); err != nil {
		t.Fatal(err)
	}
	at := yarnid.AttemptID{App: app, Attempt: 1}
	kl.bind(rm.amPodName(app, 1), node)
	kl.run(rm.amPodName(app, 1))
	return app, &testAM{cl: amClient(t, rm, rm.AMRMToken(at), "")}
}

// node creates a Ready Node; with batch set, Koordinator-shaped (batch
// allocatable and origin annotation).
func (e *env) node(name string, batch *kubebatch.Batch, cpu, mem string) {
	e.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110")}
	if batch != nil {
		n.Annotations[kubebatch.AnnotationOriginBatch] = kubebatch.EncodeOriginBatch(*batch)
		alloc[kubebatch.BatchCPU] = *resource.NewQuantity(batch.MilliCPU, resource.DecimalSI)
		alloc[kubebatch.BatchMemory] = *resource.NewQuantity(batch.Memory, resource.BinarySI)
	}
	created, err := e.admin.Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created.Status = corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}}
	if _, err := e.admin.Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// fakeKubelet stands in for kube-scheduler and the kubelet, which this API
// server has none of: it binds pods, writes their status as a kubelet
// would, and completes graceful deletions.
type fakeKubelet struct {
	t     *testing.T
	admin corev1client.CoreV1Interface
}

func (e *env) fakeKubelet() *fakeKubelet { return &fakeKubelet{t: e.t, admin: e.admin} }

func (k *fakeKubelet) bind(pod, node string) {
	k.t.Helper()
	err := k.admin.Pods(testNS).Bind(context.Background(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: testNS},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		k.t.Fatalf("bind %s to %s: %v", pod, node, err)
	}
}

// run moves an AM pod to Running with its AM container started.
func (k *fakeKubelet) run(pod string) { k.t.Helper(); k.runAs(pod, amContainerName, "") }

// exit ends an AM pod's container with code (and a reason such as OOMKilled).
func (k *fakeKubelet) exit(pod string, code int32, reason string) {
	k.t.Helper()
	k.exitAs(pod, amContainerName, code, reason)
}

// runAs moves a pod to Running with its main container (named container)
// started and, when ip is set, that pod IP.
func (k *fakeKubelet) runAs(pod, container, ip string) {
	k.t.Helper()
	k.status(pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		if ip != "" {
			s.PodIP, s.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		}
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Ready: true, Image: "x",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	})
}

// exitAs ends a pod's main container (named container) with code, as a
// kubelet writes it: Succeeded for 0, else Failed.
func (k *fakeKubelet) exitAs(pod, container string, code int32, reason string) {
	k.t.Helper()
	k.status(pod, func(s *corev1.PodStatus) {
		s.Phase = corev1.PodSucceeded
		if code != 0 {
			s.Phase = corev1.PodFailed
		}
		now := metav1.Now()
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: "x",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}}}}
	})
}

func (k *fakeKubelet) status(pod string, f func(*corev1.PodStatus)) {
	k.t.Helper()
	ctx := context.Background()
	p, err := k.admin.Pods(testNS).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		k.t.Fatalf("get %s: %v", pod, err)
	}
	f(&p.Status)
	if _, err := k.admin.Pods(testNS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		k.t.Fatalf("status of %s: %v", pod, err)
	}
}

// finishDeletions removes pods whose deletion was requested, as a kubelet
// does once their containers stopped; it returns how many.
func (k *fakeKubelet) finishDeletions() int {
	k.t.Helper()
	ctx := context.Background()
	pods, err := k.admin.Pods(testNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			continue
		}
		zero := int64(0)
		if err := k.admin.Pods(testNS).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			k.t.Fatal(err)
		}
		n++
	}
	return n
}

// ---- the YARN client side ----

func newApp(t *testing.T, cl *hadoopipc.Client) yarnid.AppID {
	t.Helper()
	resp := &yarnpb.GetNewApplicationResponseProto{}
	if err := cl.Call(context.Background(), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, resp); err != nil {
		t.Fatal(err)
	}
	return yarnid.AppFromPB(resp.ApplicationId)
}

func submissionFor(id yarnid.AppID, memMB int64, vcores int32) *yarnpb.ApplicationSubmissionContextProto {
	return &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: yarnid.AppPB(id), ApplicationName: proto.String("distshell"), Queue: proto.String("default"),
		ApplicationType: proto.String("YARN"), ApplicationTags: []string{"team-a"},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{
			Command: []string{"{{JAVA_HOME}}/bin/java", "-Xmx512m", "org.example.AM", "1><LOG_DIR>/AppMaster.stdout"},
			Environment: []*yarnpb.StringStringMapProto{
				{Key: proto.String("CLASSPATH"), Value: proto.String("{{PWD}}<CPS>./*")},
				{Key: proto.String("JAVA_HOME"), Value: proto.String("/usr/lib/jvm/java-17")},
			},
		},
		AmContainerResourceRequest: []*yarnpb.ResourceRequestProto{{
			ResourceName: proto.String("*"), NumContainers: proto.Int32(1), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(0)},
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(memMB), VirtualCores: proto.Int32(vcores)},
		}},
	}
}

func submit(t *testing.T, cl *hadoopipc.Client, sc *yarnpb.ApplicationSubmissionContextProto) error {
	t.Helper()
	return cl.Call(context.Background(), "submitApplication",
		&yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: sc}, &yarnpb.SubmitApplicationResponseProto{})
}

func report(t *testing.T, cl *hadoopipc.Client, id yarnid.AppID) *yarnpb.ApplicationReportProto {
	t.Helper()
	resp := &yarnpb.GetApplicationReportResponseProto{}
	if err := cl.Call(context.Background(), "getApplicationReport",
		&yarnpb.GetApplicationReportRequestProto{ApplicationId: yarnid.AppPB(id)}, resp); err != nil {
		t.Fatal(err)
	}
	return resp.ApplicationReport
}

func wantState(t *testing.T, rep *yarnpb.ApplicationReportProto, st yarnpb.YarnApplicationStateProto, fs yarnpb.FinalApplicationStatusProto) {
	t.Helper()
	if rep.GetYarnApplicationState() != st || rep.GetFinalApplicationStatus() != fs {
		t.Fatalf("%s: state %v/%v, want %v/%v (diagnostics %q)", yarnid.AppFromPB(rep.ApplicationId),
			rep.GetYarnApplicationState(), rep.GetFinalApplicationStatus(), st, fs, rep.GetDiagnostics())
	}
}

func remoteClass(err error) string {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

// fakeStore is a state store that records membership writes.
type fakeStore struct {
	mu         sync.Mutex
	rows       map[string]Registration
	heartbeats int
	lastState  bool
}

func (s *fakeStore) RegisterSubCluster(_ context.Context, r Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[string]Registration{}
	}
	if r.SubClusterID == "" || r.ClientRMServiceAddress == "" || r.AMRMServiceAddress == "" || r.RMAdminServiceAddress == "" || r.RMWebServiceAddress == "" {
		return errors.New("fakeStore: the state store refuses a row without its id or one of the four RM addresses")
	}
	s.rows[r.SubClusterID] = r
	return nil
}

func (s *fakeStore) SubClusterHeartbeat(_ context.Context, id string, running bool, capability string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return ErrNotRegistered
	}
	r.Capability = capability
	s.rows[id] = r
	s.heartbeats++
	s.lastState = running
	return nil
}
