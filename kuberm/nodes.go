package kuberm

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// defaultRack is the rack of a node without a zone label (Hadoop's
// NetworkTopology.DEFAULT_RACK); other racks are "/<zone>".
const defaultRack = "/default-rack"

// nodeView is a Node as a YARN NodeReport sees it.
type nodeView struct {
	name       string
	id         *yarnpb.NodeIdProto // r.nodeID: <InternalIP>:<NM face port>
	rack       string
	state      yarnpb.NodeStateProto
	batch      bool                // the node advertises Koordinator batch resources
	capability kubebatch.Resources // what YARN may use here: total - others' requests
	used       kubebatch.Resources // what kuberm's own pods request here
	containers int32
	health     string
	heartbeat  int64
}

// clusterHasBatch reports whether Koordinator publishes batch resources on
// any Ready node: then pods request kubernetes.io/batch-*, else cpu/memory.
func (r *RM) clusterHasBatch(ctx context.Context) (bool, error) {
	nodes, err := r.kube.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, kubeErr("list nodes", err)
	}
	for i := range nodes.Items {
		if ready(&nodes.Items[i]) && kubebatch.HasBatch(&nodes.Items[i]) {
			return true, nil
		}
	}
	return false, nil
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func heartbeat(n *corev1.Node) int64 {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && !c.LastHeartbeatTime.IsZero() {
			return c.LastHeartbeatTime.UnixMilli()
		}
	}
	return 0
}

// ours reports whether a pod is one this kuberm created: it is YARN's
// usage, never also subtracted from YARN's capacity.
func (r *RM) ours(p *corev1.Pod) bool {
	return p.Namespace == r.cfg.Namespace && p.Labels[LabelSubCluster] == r.cfg.SubClusterID
}

// Nodes computes every Node's capacity for YARN, by gpg/kube's rule
// (internal/kubebatch): the node's origin batch total (Koordinator >= 1.4;
// older: its batch allocatable) minus the effective batch requests of every
// non-terminated pod on it that kuberm did not create, floored at 0, in
// whole vcores and MiB. kuberm's own pods are its usage. A node without
// batch resources counts cpu/memory allocatable the same way.
func (r *RM) Nodes(ctx context.Context) ([]nodeView, error) {
	views, _, err := r.nodes(ctx)
	return views, err
}

// nodes is Nodes with the Node objects (by name order).
func (r *RM) nodes(ctx context.Context) ([]nodeView, []*corev1.Node, error) {
	nodes, err := r.kube.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, kubeErr("list nodes", err)
	}
	pods, err := r.kube.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return nil, nil, kubeErr("list pods", err)
	}
	byNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" && !kubebatch.Terminated(p) {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	out := make([]nodeView, 0, len(nodes.Items))
	objs := make([]*corev1.Node, 0, len(nodes.Items))
	for i := range nodes.Items {
		out = append(out, r.nodeView(&nodes.Items[i], byNode[nodes.Items[i].Name]))
		objs = append(objs, &nodes.Items[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	sort.Slice(objs, func(i, j int) bool { return objs[i].Name < objs[j].Name })
	return out, objs, nil
}

func (r *RM) nodeView(n *corev1.Node, pods []*corev1.Pod) nodeView {
	v := nodeView{name: n.Name, id: r.nodeID(n), rack: defaultRack, batch: kubebatch.HasBatch(n), heartbeat: heartbeat(n),
		state: yarnpb.NodeStateProto_NS_RUNNING, health: "Healthy"}
	if z := n.Labels[corev1.LabelTopologyZone]; z != "" {
		v.rack = "/" + z
	}
	requests := kubebatch.PodStandardRequests
	var total kubebatch.Batch
	if v.batch {
		requests = kubebatch.PodBatchRequests
		total = kubebatch.Batch{
			MilliCPU: kubebatch.RequestValue(n.Status.Allocatable, kubebatch.BatchCPU),
			Memory:   kubebatch.RequestValue(n.Status.Allocatable, kubebatch.BatchMemory),
		}
		if ann, ok := n.Annotations[kubebatch.AnnotationOriginBatch]; ok {
			origin, err := kubebatch.DecodeOriginBatch(ann)
			if err != nil {
				total = kubebatch.Batch{} // never "unlimited"
				v.health = err.Error()
			} else {
				total = origin
			}
		}
	} else {
		total = kubebatch.Batch{
			MilliCPU: n.Status.Allocatable.Cpu().MilliValue(),
			Memory:   n.Status.Allocatable.Memory().Value(),
		}
	}
	var others, mine kubebatch.Batch
	for _, p := range pods {
		if r.ours(p) {
			mine = mine.Add(requests(p))
			v.containers++
		} else {
			others = others.Add(requests(p))
		}
	}
	v.capability = total.SubFloor(others).YARN()
	v.used = mine.YARN()
	if !ready(n) {
		v.state, v.health = yarnpb.NodeStateProto_NS_UNHEALTHY, "the node's Ready condition is not True"
	}
	if n.Spec.Unschedulable {
		v.state, v.health = yarnpb.NodeStateProto_NS_DECOMMISSIONED, "the node is cordoned (unschedulable)"
	}
	return v
}
