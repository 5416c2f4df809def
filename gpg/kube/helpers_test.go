package kube

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Builders for test Nodes and Pods, in the shape the API server returns them.

var testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

type nodeOpt func(*corev1.Node)

// mkNode is a Ready node (heartbeat at testNow) whose Koordinator batch
// resources are present in status.allocatable and whose origin annotation
// is origin ("" = no annotation).
func mkNode(name, origin string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"other": "x"}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("64"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				BatchCPU:              resource.MustParse("1k"),
				BatchMemory:           resource.MustParse("1Gi"),
			},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(testNow)},
			},
		},
	}
	if origin != "" {
		n.Annotations[AnnotationOriginBatch] = origin
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func ready(status corev1.ConditionStatus, heartbeat time.Time) nodeOpt {
	return func(n *corev1.Node) {
		c := readyCondition(n)
		c.Status = status
		c.LastHeartbeatTime = metav1.NewTime(heartbeat)
	}
}

func noReadyCondition(n *corev1.Node) { n.Status.Conditions = n.Status.Conditions[:1] }

func allocatable(rl corev1.ResourceList) nodeOpt {
	return func(n *corev1.Node) { n.Status.Allocatable = rl }
}

type podOpt func(*corev1.Pod)

// mkPod is a Running pod bound to node with one container requesting
// cpu milli batch-cpu and mem batch-memory (each "" = no request).
func mkPod(ns, name, node, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "/" + name),
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "y"}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: reqs(cpu, mem)}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// reqs builds batch requests; "" leaves a resource out. A normal cpu request
// rides along, as real pods have one.
func reqs(cpu, mem string) corev1.ResourceList {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if cpu != "" {
		rl[BatchCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[BatchMemory] = resource.MustParse(mem)
	}
	return rl
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

// nodeManager marks the pod a NodeManager of clusterID ("" = no annotation).
func nodeManager(clusterID string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels[LabelComponent] = ComponentNodeManager
		p.Annotations[AnnotationNodeID] = p.Spec.NodeName + ":8041"
		if clusterID != "" {
			p.Annotations[AnnotationClusterID] = clusterID
		}
	}
}

func initContainer(cpu, mem string, sidecar bool) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Image: "busybox", Resources: corev1.ResourceRequirements{Requests: reqs(cpu, mem)}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func container(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("extra%d", len(p.Spec.Containers)), Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: reqs(cpu, mem)}})
	}
}

func overhead(cpu, mem string) podOpt {
	return func(p *corev1.Pod) { p.Spec.Overhead = reqs(cpu, mem) }
}

func origin(cpu, mem string) string {
	return `{"resources":{"kubernetes.io/batch-cpu":"` + cpu + `","kubernetes.io/batch-memory":"` + mem + `"}}`
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// compute is the rule over API objects (see evaluate); the source keeps
// facts, not objects, so only tests start from objects.
func (r nodeRules) compute(node *corev1.Node, pods []*corev1.Pod, now time.Time) NodeResult {
	var facts podList
	for _, p := range pods {
		facts = facts.with(p.Namespace+"/"+p.Name, factsOfPod(p))
	}
	nf := factsOfNode(node)
	return r.evaluate(&nf, facts, now)
}
