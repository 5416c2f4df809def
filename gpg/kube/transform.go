package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The informers store records, not API objects: the transform turns each
// Node and Pod into its identity plus the facts the rule reads, so the
// annotation JSON and the requests are read once per event and a stored pod
// costs a few hundred bytes. Even a *corev1.Pod stripped to those fields costs
// ~2 KB (PodSpec and PodStatus are large structs when empty): at 10,000 nodes
// and 50,000 pods that kept 162 MiB live, records keep 43 MiB.

// identity keeps what the informer's store and the handlers use: the key
// (namespace/name) and the resource version.
func identity(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

// nodeRecord is a stored Node.
type nodeRecord struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	facts nodeFacts
}

func (r *nodeRecord) DeepCopyObject() runtime.Object {
	c := *r
	c.ObjectMeta = *r.ObjectMeta.DeepCopy()
	return &c
}

// podRecord is a stored Pod.
type podRecord struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	node  string // spec.nodeName
	facts podFacts
}

func (r *podRecord) DeepCopyObject() runtime.Object {
	c := *r
	c.ObjectMeta = *r.ObjectMeta.DeepCopy()
	return &c
}

func recordOfNode(n *corev1.Node) *nodeRecord {
	return &nodeRecord{ObjectMeta: identity(&n.ObjectMeta), facts: factsOfNode(n)}
}

func recordOfPod(p *corev1.Pod) *podRecord {
	return &podRecord{ObjectMeta: identity(&p.ObjectMeta), node: p.Spec.NodeName, facts: factsOfPod(p)}
}

// transform is the informers' TransformFunc. Records (an object already in
// the cache handed back), tombstones and foreign types pass through.
func transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return recordOfPod(o), nil
	case *corev1.Node:
		return recordOfNode(o), nil
	}
	return obj, nil
}
