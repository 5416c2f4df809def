package kuberm

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// TestHostNetworkPods: with host_network, AM and container pods run in the
// node's network namespace (a YARN container's address is its NodeId's
// host, the node's IP: Spark executors bind their block manager to it,
// which a pod-network pod cannot) and keep the cluster's DNS; without it
// they stay on the pod network with the default DNS policy.
func TestHostNetworkPods(t *testing.T) {
	app := yarnid.AppID{ClusterTimestamp: 1_000, ID: 7}
	at := yarnid.AttemptID{App: app, Attempt: 1}
	rec := &record.App{User: "u", MemoryMB: 1024, VCores: 1}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "uid"}}
	for _, hostNet := range []bool{false, true} {
		r := unitRM(t)
		r.cfg.HostNetwork = hostNet
		cid := yarnid.ContainerID{Attempt: at, ID: 2}
		pods := map[string]*corev1.Pod{
			"container": r.containerPod(cid, rec, containerRequest{MemoryMB: 1024, VCores: 1}, metav1.OwnerReference{}, locality{}),
			"AM":        r.amPod(secret, rec, at),
		}
		for role, p := range pods {
			if p.Spec.HostNetwork != hostNet {
				t.Errorf("host_network %v: %s pod has hostNetwork %v", hostNet, role, p.Spec.HostNetwork)
			}
			want := corev1.DNSPolicy("")
			if hostNet {
				want = corev1.DNSClusterFirstWithHostNet
			}
			if p.Spec.DNSPolicy != want {
				t.Errorf("host_network %v: %s pod has dnsPolicy %q, want %q", hostNet, role, p.Spec.DNSPolicy, want)
			}
		}
	}
}
