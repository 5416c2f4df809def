package kuberm

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// TestLocalityAffinity: relaxed asks prefer, strict asks require, and the
// blacklist excludes in every required term.
func TestLocalityAffinity(t *testing.T) {
	relaxed := locality{hostnames: []string{"h1"}, zones: []string{"z1"}}.affinity().NodeAffinity
	if relaxed.RequiredDuringSchedulingIgnoredDuringExecution != nil || len(relaxed.PreferredDuringSchedulingIgnoredDuringExecution) != 2 ||
		relaxed.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight != 100 || relaxed.PreferredDuringSchedulingIgnoredDuringExecution[1].Weight != 50 {
		t.Errorf("relaxed: %+v", relaxed)
	}
	strict := locality{hostnames: []string{"h1"}, noZone: true, strict: true, avoid: []string{"bad"}}.affinity().NodeAffinity
	terms := strict.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 || terms[0].MatchExpressions[0].Values[0] != "h1" || terms[1].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Fatalf("strict terms %+v", terms)
	}
	for _, term := range terms {
		last := term.MatchExpressions[len(term.MatchExpressions)-1]
		if last.Operator != corev1.NodeSelectorOpNotIn || !reflect.DeepEqual(last.Values, []string{"bad"}) {
			t.Errorf("term %+v does not exclude the blacklisted host", term)
		}
	}
	onlyAvoid := locality{avoidZone: []string{"z9"}}.affinity().NodeAffinity
	if r := onlyAvoid.RequiredDuringSchedulingIgnoredDuringExecution; r == nil || len(r.NodeSelectorTerms) != 1 ||
		r.NodeSelectorTerms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpNotIn {
		t.Errorf("blacklist alone: %+v", onlyAvoid)
	}
	if (locality{}).affinity() != nil {
		t.Error("no locality, yet an affinity")
	}
}

// TestAskTable: num_containers replaces, a hand-out decrements every
// level it satisfied, an empty key goes.
func TestAskTable(t *testing.T) {
	r := unitRM(t)
	st := &amState{asks: map[askKey]*ask{}}
	r.applyAsks(st, []*yarnpb.ResourceRequestProto{anyAsk(1, 1000, 1, 3, true), nameAsk(1, 1000, 1, "10.0.0.1", 2, true), nameAsk(1, 1000, 1, "/z1", 1, true)})
	r.applyAsks(st, []*yarnpb.ResourceRequestProto{anyAsk(1, 1000, 1, 2, true)}) // replaces, not adds
	k := askKey{Priority: 1, AllocationID: -1, MemoryMB: 1000, VCores: 1}
	e := st.asks[k]
	if e == nil || e.num != 2 || e.hosts["10.0.0.1"] != 2 || e.racks["/z1"] != 1 || e.size.MemoryMB != 1024 {
		t.Fatalf("ask %+v", e)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	st.decrement(k, n, "/z1")
	if e.num != 1 || e.hosts["10.0.0.1"] != 1 || len(e.racks) != 0 {
		t.Errorf("after one hand-out on n1: %+v", e)
	}
	st.decrement(k, n, "/z1")
	if _, ok := st.asks[k]; ok {
		t.Errorf("an ask with nothing outstanding is kept: %+v", st.asks[k])
	}
}

// TestContainerCompletion is how a handed-out pod's end becomes a YARN
// exit status.
func TestContainerCompletion(t *testing.T) {
	cv := &clusterView{nodes: map[string]*corev1.Node{"n": {}}}
	now := metav1.NewTime(time.Now().Truncate(time.Second)) // the API's resolution
	grace := int64(30)
	later := metav1.NewTime(now.Add(30 * time.Second))
	endedAt := func(code int32, reason string, at time.Time) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(at)}}}}
	}
	pod := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		f(p)
		return p
	}
	term := func(code int32) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "OOMKilled"}}}}
	}
	cases := []struct {
		name string
		p    *corev1.Pod
		exit int32
		done bool
		diag string
	}{
		{"running", pod(func(*corev1.Pod) {}), 0, false, ""},
		{"exited", pod(func(p *corev1.Pod) { p.Status.Phase, p.Status.ContainerStatuses = corev1.PodFailed, term(137) }), 137, true, "OOMKilled"},
		{"launcher not installed", pod(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: InstallContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}
		}), 2, true, "launcher"},
		{"evicted", pod(func(p *corev1.Pod) { p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted" }), exitPreempted, true, diagPreempted},
		{"preempted by kube-scheduler", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &now
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler}}
		}), exitPreempted, true, diagPreempted},
		{"unreachable node", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &now
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
		}), exitAborted, true, diagLost},
		{"deleted by someone", pod(func(p *corev1.Pod) { p.DeletionTimestamp = &now }), exitAborted, true, diagDeleted},
		// A graceful deletion: its SIGTERM ends the container (143) and
		// the pod reads Failed; the deletion is reported, with the exit.
		{"deleted by someone, the container killed by it", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &later, &grace
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = endedAt(143, "Error", now.Add(time.Second))
		}), exitAborted, true, "deletion requested at " + now.UTC().Format(time.RFC3339) + " with a grace period of 30s; the container then ended: Exit code: 143"},
		// Ended on its own, deleted afterwards: the container's own exit.
		{"ended, then deleted by someone", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &later, &grace
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = endedAt(0, "Completed", now.Add(-2*time.Second))
		}), 0, true, "Exit code: 0, reason: Completed"},
		{"ended with an error, then deleted by someone", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &later, &grace
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = endedAt(3, "Error", now.Add(-2*time.Second))
		}), 3, true, "Exit code: 3"},
		{"stopped by its AM", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &now
			p.Annotations = map[string]string{AnnotationStoppedByAM: "true"}
		}), exitKilledByAM, true, diagStopped},
		{"node gone", pod(func(p *corev1.Pod) { p.Spec.NodeName = "gone" }), exitAborted, true, diagLost},
	}
	for _, tc := range cases {
		exit, diag, done := completion(tc.p, cv)
		if exit != tc.exit || done != tc.done || !strings.Contains(diag, tc.diag) {
			t.Errorf("%s: exit %d done %v diag %q, want %d %v ~%q", tc.name, exit, done, diag, tc.exit, tc.done, tc.diag)
		}
	}
}

// TestResponseIDWraps: ids loop from MaxInt32 to 0, as Hadoop's.
func TestResponseIDWraps(t *testing.T) {
	if nextResponseID(1<<31-1) != 0 || nextResponseID(-1) != 0 || nextResponseID(5) != 6 {
		t.Error("responseId arithmetic")
	}
}

// TestContainerConfigValidate: the container pods' block.
func TestContainerConfigValidate(t *testing.T) {
	base := DefaultConfig()
	base.SubClusterID, base.Image = "SC-1", "img"
	ok := base
	ok.HostPaths = []HostPath{{Path: "/opt/jdk", MountPath: "/opt/jdk"}}
	ok.Env = map[string]string{"JAVA_HOME": "/opt/jdk"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for name, mut := range map[string]func(c *Config){
		"relative host path":            func(c *Config) { c.HostPaths = []HostPath{{Path: "opt", MountPath: "/opt"}} },
		"mount over the launcher's dir": func(c *Config) { c.HostPaths = []HostPath{{Path: "/opt", MountPath: "/var/run/yarnfed/bin"}} },
		"mount over /var/run":           func(c *Config) { c.HostPaths = []HostPath{{Path: "/opt", MountPath: "/var/run"}} },
		"mount over the log dir":        func(c *Config) { c.HostPaths = []HostPath{{Path: "/opt", MountPath: c.LogDir}} },
		"mount over /tmp":               func(c *Config) { c.HostPaths = []HostPath{{Path: "/data", MountPath: "/tmp/"}} },
		"env overriding CONTAINER_ID":   func(c *Config) { c.Env = map[string]string{"CONTAINER_ID": "x"} },
		"env with a bad name":           func(c *Config) { c.Env = map[string]string{"A=B": "x"} },
	} {
		c := base
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
