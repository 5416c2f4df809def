package kuberm

import (
	"strings"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// The contract between the three parts of a YARN container under kuberm
// (DESIGN.md, "How the launch context reaches a pod"):
//   - allocate creates the container's pod when kube-scheduler may place
//     it: the launcher image, the container's size, the NodeManager's
//     environment, and a volume of the launch Secret, which does not exist
//     yet, so the kubelet holds the pod in ContainerCreating;
//   - startContainers (the NM face) checks the container token and creates
//     that Secret from the AM's launch context, owned by the pod;
//   - the launcher (`yarnfed kuberm launch`) reads it at LaunchMountPath,
//     localizes the resources, writes the credentials and runs the command.

const (
	// RoleContainer is LabelRole's value on the pods of allocated containers.
	RoleContainer = "container"
	// LabelContainerID is the YARN ContainerId of a container pod (ids are
	// valid label values: letters, digits, '_', at most 63 characters).
	LabelContainerID = "yarnfed.io/container-id"
	// LaunchMountPath is where the launch Secret appears in the pod.
	LaunchMountPath = "/var/run/yarnfed/launch"
	// DataLaunchContext is the launch Secret's key holding the
	// ContainerLaunchContextProto startContainers received (deterministic
	// encoding; its tokens field is the Credentials' token storage bytes).
	DataLaunchContext = "launch-context"
	// LaunchSecretType is the type of launch Secrets.
	LaunchSecretType = "yarnfed.io/container-launch"
)

// containerPodName is the pod of a YARN container: DNS-1123, unique per
// sub-cluster (the prefix) and container id.
func (r *RM) containerPodName(cid yarnid.ContainerID) string {
	return r.prefix + "-" + strings.ReplaceAll(cid.String(), "_", "-")
}

// launchSecretName is the Secret startContainers creates and the pod
// mounts.
func (r *RM) launchSecretName(cid yarnid.ContainerID) string {
	return r.containerPodName(cid) + "-launch"
}

// nodeID is how YARN names a node: host = the Node's InternalIP (else its
// name), port = the NM face's advertised port. An AM connects to NodeId
// host:port; node IPs are routable from pods where node names often do not
// resolve.
func (r *RM) nodeID(n *corev1.Node) *yarnpb.NodeIdProto {
	host := n.Name
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && a.Address != "" {
			host = a.Address
			break
		}
	}
	return &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(r.nmPort)}
}
