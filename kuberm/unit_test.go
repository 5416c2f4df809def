package kuberm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// unitRM is an RM with no API server, for the pure parts.
func unitRM(t *testing.T) *RM {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SubClusterID, cfg.Image, cfg.Epoch = "SC-u", "img", 3
	return &RM{cfg: cfg, epoch: cfg.epoch(), prefix: namePrefix(cfg.SubClusterID), now: func() time.Time { return time.UnixMilli(1_000) }}
}

func TestPodResources(t *testing.T) {
	batch := podResources(1536, 3, true)
	if q := batch.Requests[kubebatch.BatchCPU]; q.Value() != 3000 {
		t.Errorf("batch-cpu %v, want 3000 (milli-cores as an integer)", q.String())
	}
	if q := batch.Requests[kubebatch.BatchMemory]; q.Value() != 1536<<20 {
		t.Errorf("batch-memory %v, want 1536 MiB in bytes", q.String())
	}
	std := podResources(1024, 2, false)
	if q := std.Requests[corev1.ResourceCPU]; q.MilliValue() != 2000 {
		t.Errorf("cpu %v, want 2", q.String())
	}
	// Counting our own pods back gives what YARN granted, by the same rule
	// the node capacity uses.
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: batch}}}}
	if got := kubebatch.PodBatchRequests(pod).YARN(); got != (kubebatch.Resources{MemoryMB: 1536, VCores: 3}) {
		t.Errorf("batch pod counts as %+v", got)
	}
	pod.Spec.Containers[0].Resources = std
	if got := kubebatch.PodStandardRequests(pod).YARN(); got != (kubebatch.Resources{MemoryMB: 1024, VCores: 2}) {
		t.Errorf("cpu/memory pod counts as %+v", got)
	}
}

func TestCheckSubmissionNormalizes(t *testing.T) {
	r := unitRM(t)
	id := yarnid.AppID{ClusterTimestamp: 9, ID: 1}
	sc := submissionFor(id, 1500, 1)
	sc.MaxAppAttempts = proto.Int32(10)
	sub, err := r.checkSubmission(sc, "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	if sub.rec.MemoryMB != 2048 || sub.rec.VCores != 1 || sub.rec.MaxAttempts != 2 || sub.rec.User != "bob" || !sub.rec.Batch {
		t.Errorf("record %+v: want 2048 MB (rounded), 1 vcore, attempts capped at 2", sub.rec)
	}
	// The legacy resource field alone works; nothing at all is the minimum.
	sc.AmContainerResourceRequest = nil
	sc.Resource = &yarnpb.ResourceProto{Memory: proto.Int64(3000), VirtualCores: proto.Int32(2)}
	if sub, err = r.checkSubmission(sc, "bob", false); err != nil || sub.rec.MemoryMB != 3072 || sub.rec.VCores != 2 {
		t.Errorf("legacy resource: %+v, %v", sub.rec, err)
	}
	sc.Resource = nil
	if sub, err = r.checkSubmission(sc, "bob", false); err != nil || sub.rec.MemoryMB != 1024 || sub.rec.VCores != 1 {
		t.Errorf("no resource: %+v, %v", sub.rec, err)
	}
	// An unmanaged AM has no AM container: no size, one attempt.
	sc.UnmanagedAm = proto.Bool(true)
	sc.Resource = &yarnpb.ResourceProto{Memory: proto.Int64(1 << 40), VirtualCores: proto.Int32(1)}
	if sub, err = r.checkSubmission(sc, "bob", false); err != nil || !sub.rec.Unmanaged || sub.rec.MemoryMB != 0 || sub.rec.VCores != 0 || sub.rec.MaxAttempts != 1 {
		t.Errorf("unmanaged AM: %+v, %v; want unmanaged, no AM size, 1 attempt", sub.rec, err)
	}
	sc.Resource = nil
	sc.UnmanagedAm = nil
	sc.ApplicationTags = make([]string, record.MaxTags+1)
	if _, err := r.checkSubmission(sc, "bob", false); !errors.Is(err, ErrInvalidSubmission) {
		t.Errorf("too many tags: %v", err)
	}
}

func amPodFor(r *RM, id yarnid.AppID, attempt int32, phase corev1.PodPhase, node string, exit *int32) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: r.amPodName(id, attempt), Labels: map[string]string{
		LabelSubCluster: r.cfg.SubClusterID, LabelApplication: id.String(), LabelAttempt: strings.TrimLeft(yarnid.Pad(int64(attempt), 1), "0"), LabelRole: RoleAM}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: amContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *exit}}}}
	}
	return p
}

func containerPodFor(r *RM, id yarnid.AppID, attempt int32, phase corev1.PodPhase) *corev1.Pod {
	p := amPodFor(r, id, attempt, phase, "n", nil)
	p.Name = r.containerPodName(yarnid.NewContainerID(yarnid.AttemptID{App: id, Attempt: attempt}, r.epoch, 2))
	p.Labels[LabelRole] = RoleContainer
	return p
}

// TestViewStates is the phase table of DESIGN.md.
func TestViewStates(t *testing.T) {
	r := unitRM(t)
	id := yarnid.AppID{ClusterTimestamp: 9, ID: 4}
	rec := record.App{MaxAttempts: 2}
	one, zero := int32(1), int32(0)
	type want struct {
		st yarnpb.YarnApplicationStateProto
		fs yarnpb.FinalApplicationStatusProto
	}
	A, R, F, FL, K := yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.YarnApplicationStateProto_RUNNING,
		yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED
	U, S, FF, KK := yarnpb.FinalApplicationStatusProto_APP_UNDEFINED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED,
		yarnpb.FinalApplicationStatusProto_APP_FAILED, yarnpb.FinalApplicationStatusProto_APP_KILLED
	tests := []struct {
		name string
		rec  record.App
		pods []*corev1.Pod
		want want
	}{
		{"no pod yet", rec, nil, want{A, U}},
		{"pending, unbound", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodPending, "", nil)}, want{A, U}},
		{"pending, bound", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodPending, "n", nil)}, want{A, U}},
		{"running", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodRunning, "n", nil)}, want{R, U}},
		{"unknown", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodUnknown, "n", nil)}, want{R, U}},
		// An AM that exits 0 without unregistering fails its attempt.
		{"succeeded without unregistering", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodSucceeded, "n", &zero)}, want{A, U}},
		{"succeeded without unregistering, last attempt", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodFailed, "n", &one), amPodFor(r, id, 2, corev1.PodSucceeded, "n", &zero)}, want{FL, FF}},
		{"unregistered, then exited", record.App{MaxAttempts: 2, State: F, FinalStatus: S}, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodSucceeded, "n", &zero)}, want{F, S}},
		{"failed with attempts left", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodFailed, "n", &one)}, want{A, U}},
		{"failed, last attempt", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodFailed, "n", &one), amPodFor(r, id, 2, corev1.PodFailed, "n", &one)}, want{FL, FF}},
		{"second attempt running", rec, []*corev1.Pod{amPodFor(r, id, 2, corev1.PodRunning, "n", nil), amPodFor(r, id, 1, corev1.PodFailed, "n", &one)}, want{R, U}},
		{"recorded kill wins over a running pod", record.App{MaxAttempts: 2, State: K, FinalStatus: KK}, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodRunning, "n", nil)}, want{K, KK}},
		{"container pods are not attempts", rec, []*corev1.Pod{amPodFor(r, id, 1, corev1.PodRunning, "n", nil), containerPodFor(r, id, 2, corev1.PodSucceeded)}, want{R, U}},
		{"a pod of another application is ignored", rec, []*corev1.Pod{amPodFor(r, yarnid.AppID{ClusterTimestamp: 9, ID: 5}, 1, corev1.PodRunning, "n", nil)}, want{A, U}},
	}
	for _, tc := range tests {
		v := r.view(id, tc.rec, tc.pods)
		if v.state != tc.want.st || v.final != tc.want.fs {
			t.Errorf("%s: %v/%v, want %v/%v (%s)", tc.name, v.state, v.final, tc.want.st, tc.want.fs, v.diagnostics)
		}
	}
}

// TestRESTConfigClientLimits: kuberm's API client is not held to
// client-go's default 5 requests/s (found by `yarnfed bench kuberm`:
// startContainers took 4.8 s queued behind the limiter).
func TestRESTConfigClientLimits(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	body := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"}\n" +
		"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.WriteFile(kc, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := (&Config{Kubeconfig: kc}).RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rc.QPS < 50 || rc.Burst < 100 {
		t.Errorf("QPS %v, burst %d: want at least 50 and 100 (client-go's default 5 and 10 queue kuberm)", rc.QPS, rc.Burst)
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.SubClusterID, good.Image = "SC-1", "img"
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	bad := []func(*Config){
		func(c *Config) { c.SubClusterID = "" },
		func(c *Config) { c.SubClusterID = "has space" },
		func(c *Config) { c.Namespace = "Bad_NS" },
		func(c *Config) { c.Image = "" },
		func(c *Config) { c.MaxAllocationMB = 1 },
		func(c *Config) { c.MaxAppAttempts = 0 },
		func(c *Config) { c.Epoch = 1 << 23 },
		func(c *Config) { c.ResyncInterval = 0 },
	}
	for i, f := range bad {
		c := good
		f(&c)
		if c.Validate() == nil {
			t.Errorf("bad config %d accepted", i)
		}
	}
	a, b := good, good
	b.SubClusterID = "SC-2"
	if a.epoch() == b.epoch() || a.epoch() < 1 || a.epoch() > 4095 {
		t.Errorf("derived epochs %d, %d", a.epoch(), b.epoch())
	}
}

func TestNodeViewRules(t *testing.T) {
	r := unitRM(t)
	r.cfg.Namespace = "yarn"
	readyNode := func(ann string, alloc corev1.ResourceList) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{}}}
		if ann != "" {
			n.Annotations[kubebatch.AnnotationOriginBatch] = ann
		}
		n.Status.Allocatable = alloc
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		return n
	}
	batchAlloc := corev1.ResourceList{kubebatch.BatchCPU: resource.MustParse("3000"), kubebatch.BatchMemory: resource.MustParse("3Gi")}
	podReq := func(ns string, ours bool, cpu, mem string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{}}}
		if ours {
			p.Labels[LabelSubCluster] = r.cfg.SubClusterID
		}
		p.Spec.Containers = []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			kubebatch.BatchCPU: resource.MustParse(cpu), kubebatch.BatchMemory: resource.MustParse(mem)}}}}
		return p
	}
	origin := kubebatch.EncodeOriginBatch(kubebatch.Batch{MilliCPU: 10_000, Memory: 10 << 30})
	v := r.nodeView(readyNode(origin, batchAlloc), []*corev1.Pod{podReq("other", false, "2500", "1Gi"), podReq("yarn", true, "2000", "2Gi"),
		podReq("other", true, "1000", "1Gi")}) // labelled like ours but in another namespace: not ours
	if v.capability != (kubebatch.Resources{MemoryMB: 8 << 10, VCores: 6}) || v.used != (kubebatch.Resources{MemoryMB: 2 << 10, VCores: 2}) || v.containers != 1 {
		t.Errorf("origin node: capability %+v used %+v containers %d", v.capability, v.used, v.containers)
	}
	// Koordinator <= 1.3: no origin, the batch allocatable is the total.
	if v := r.nodeView(readyNode("", batchAlloc), nil); v.capability != (kubebatch.Resources{MemoryMB: 3 << 10, VCores: 3}) {
		t.Errorf("no origin: %+v", v.capability)
	}
	// An unreadable origin counts as nothing, never as unlimited.
	if v := r.nodeView(readyNode(`{"resources":{"kubernetes.io/batch-cpu":"-5"}}`, batchAlloc), nil); v.capability != (kubebatch.Resources{}) {
		t.Errorf("bad origin: %+v", v.capability)
	}
	nr := readyNode(origin, batchAlloc)
	nr.Status.Conditions[0].Status = corev1.ConditionFalse
	if v := r.nodeView(nr, nil); v.state != yarnpb.NodeStateProto_NS_UNHEALTHY {
		t.Errorf("not ready node: %v", v.state)
	}
}

func TestNamePrefix(t *testing.T) {
	a, b := namePrefix("SC_1"), namePrefix("SC-1")
	if a == b || !strings.HasPrefix(a, "sc-1-") || len(namePrefix(strings.Repeat("X", 63))) != 40+1+6 {
		t.Errorf("prefixes %q %q", a, b)
	}
	if msgs := validation.IsDNS1123Subdomain(unitRM(t).amPodName(yarnid.AppID{ClusterTimestamp: 1700000000000, ID: 12345}, 2)); len(msgs) > 0 {
		t.Errorf("pod name not a DNS subdomain: %v", msgs)
	}
}
