// Package kubenode runs a real one-node Kubernetes cluster for tests: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and
// kube-proxy built from k8s.io/kubernetes and CoreDNS from
// github.com/coredns/coredns (scripts/kube-binaries.sh), containerd and runc
// from Debian, the CNI reference plugins (Debian's containernetworking-plugins)
// for the pod network, all inside a network namespace of their own and with
// every state directory, socket and cgroup private to the test. Start brings
// it up until the Node is Ready; cleanup stops every process, removes every
// container, mount and cgroup, and restores the kernel settings the kubelet
// changes. So does a SIGINT or SIGTERM to the test process (which then
// exits with 128+signal) and, a minute before it, the test binary's
// -timeout (exit 2), neither of which would run t.Cleanup. Services route (ServiceCIDR) and names resolve (DNSIP) as on a
// real node; the test process, which stays outside the namespace, reaches
// them through Cluster.DialContext, Cluster.Resolver and Cluster.Command.
// deploy/DESIGN.md has the recipe and the measured times.
//
// It needs Linux and root (containerd, runc, cgroups, network namespaces).
// Without what it needs a test skips with the reason, unless
// YARNFED_KUBENODE_REQUIRED=1 (CI), where it fails.
package kubenode
