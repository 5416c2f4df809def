package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informers keep only what the capacity rule reads: at 10,000 nodes and
// tens of pods per node, whole Pod objects (managed fields, env, volumes,
// statuses) would cost gigabytes. Each transform builds a fresh small object
// (it may be handed an object already in the cache, so it must not mutate its
// input into something else, and applying it twice must give the same result).

func trimmedMeta(m *metav1.ObjectMeta, keepAnnotations ...string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
	}
	for _, k := range keepAnnotations {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string, len(keepAnnotations))
			}
			out.Annotations[k] = v
		}
	}
	return out
}

func batchOnly(rl corev1.ResourceList) corev1.ResourceList {
	var out corev1.ResourceList
	for _, name := range [...]corev1.ResourceName{BatchCPU, BatchMemory} {
		if q, ok := rl[name]; ok {
			if out == nil {
				out = make(corev1.ResourceList, 2)
			}
			out[name] = q
		}
	}
	return out
}

// trimContainers drops containers without batch requests: they add nothing
// to the effective request (an init container's peak counts the sidecars
// before it, which the app-container sum already holds).
func trimContainers(cs []corev1.Container) []corev1.Container {
	var out []corev1.Container
	for i := range cs {
		req := batchOnly(cs[i].Resources.Requests)
		if req == nil {
			continue
		}
		c := corev1.Container{Resources: corev1.ResourceRequirements{Requests: req}}
		if cs[i].RestartPolicy != nil && *cs[i].RestartPolicy == corev1.ContainerRestartPolicyAlways {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		out = append(out, c)
	}
	return out
}

// TrimPod keeps a pod's name, namespace, node, phase, the NodeManager label
// and annotations, and its batch requests (containers, init containers with
// their sidecar flag, overhead).
func TrimPod(pod *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: trimmedMeta(&pod.ObjectMeta),
		Spec: corev1.PodSpec{
			NodeName:       pod.Spec.NodeName,
			Containers:     trimContainers(pod.Spec.Containers),
			InitContainers: trimContainers(pod.Spec.InitContainers),
			Overhead:       batchOnly(pod.Spec.Overhead),
		},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if IsNodeManager(pod) {
		out.Labels = map[string]string{LabelComponent: ComponentNodeManager}
		for _, k := range [...]string{AnnotationClusterID, AnnotationNodeID} {
			if v, ok := pod.Annotations[k]; ok {
				if out.Annotations == nil {
					out.Annotations = make(map[string]string, 2)
				}
				out.Annotations[k] = v
			}
		}
	}
	return out
}

// TrimNode keeps a node's name, the origin batch annotation, the batch
// entries of status.allocatable and the Ready condition.
func TrimNode(node *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		ObjectMeta: trimmedMeta(&node.ObjectMeta, AnnotationOriginBatch),
		Status:     corev1.NodeStatus{Allocatable: batchOnly(node.Status.Allocatable)},
	}
	if c := readyCondition(node); c != nil {
		out.Status.Conditions = []corev1.NodeCondition{{
			Type:              c.Type,
			Status:            c.Status,
			LastHeartbeatTime: c.LastHeartbeatTime,
		}}
	}
	return out
}

// transform is the informers' TransformFunc. Tombstones and foreign types
// pass through untouched.
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return TrimPod(o), nil
	case *corev1.Node:
		return TrimNode(o), nil
	}
	return obj, nil
}
