package kubenode

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/yarnfed/yarnfed/internal/kubetest"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ServiceCIDR is the Services' ClusterIP range (kube-apiserver's
	// --service-cluster-ip-range). kube-proxy routes it inside the cluster's
	// network namespace.
	ServiceCIDR = "10.96.0.0/16"
	// ClusterDomain is the kubelet's clusterDomain and CoreDNS's zone.
	ClusterDomain = "cluster.local"
	// DNSIP is where the cluster DNS (CoreDNS) answers, UDP and TCP port
	// 53: the node's own address, reachable from bridge pods (through the
	// bridge's gateway), from hostNetwork pods and from Command's children
	// alike, and independent of kube-proxy. It is the kubelet's clusterDNS.
	DNSIP = NodeIP
)

// DialContext opens a connection from inside the cluster's network
// namespace, where ClusterIPs (ServiceCIDR), NodePorts (NodeIP:port), pod IPs
// (PodCIDR) and the API server are reachable; the test process itself lives
// outside it. network is "tcp", "tcp4", "udp" or "udp4". addr's host is an
// IP, or a name the cluster DNS answers, written in full
// (yarnfed-statestore.default.svc.cluster.local): names are resolved by the
// cluster's CoreDNS, never by the host's resolver.
//
// It fits http.Transport.DialContext as it is, and gRPC as
//
//	grpc.NewClient("passthrough:///"+addr, grpc.WithContextDialer(
//		func(ctx context.Context, a string) (net.Conn, error) { return c.DialContext(ctx, "tcp", a) }), ...)
//
// ("passthrough" so that gRPC hands the name to the dialer instead of
// resolving it on the host).
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("kubenode: dial %s: %w", addr, err)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		// Resolve first (the resolver's own sockets go through the
		// namespace too), then dial one IP: a dial of a name may race
		// several addresses on goroutines of its own, outside the
		// namespace's thread.
		ips, err := c.Resolver().LookupNetIP(ctx, "ip4", host)
		if err != nil {
			return nil, fmt.Errorf("kubenode: resolve %s through the cluster DNS: %w", host, err)
		}
		addr = net.JoinHostPort(ips[0].String(), port)
	}
	return c.ns.dial(ctx, network, addr)
}

// Resolver looks names up in the cluster DNS (CoreDNS at DNSIP:53), from the
// test process. Names must be fully qualified: the host's resolv.conf still
// supplies the search list, and it knows nothing of the cluster.
func (c *Cluster) Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return c.ns.dial(ctx, network, net.JoinHostPort(DNSIP, "53"))
		},
	}
}

// Command is an *exec.Cmd that runs name inside the cluster's network
// namespace (through nsenter --net=NetNS), e.g. a Java client that must reach
// a ClusterIP or a pod IP. It is an ordinary Cmd: set Stdout, Env, Dir as
// usual and Start, Run or Output it; its process is name itself (nsenter
// execs it). The environment is the test's with the sbin directories on
// PATH. Its resolv.conf is still the host's: give it IPs, or names through
// DNSIP. Anything still running in the namespace at cleanup is killed.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	nsenter, err := lookPath("nsenter")
	if err != nil {
		nsenter = "nsenter" // Start then fails with exec's own error
	}
	cmd := exec.Command(nsenter, append([]string{"--net=" + c.NetNS, "--", name}, args...)...)
	cmd.Env = childEnv()
	return cmd
}

// corefile serves cluster.local (and reverse lookups of pod and Service IPs)
// from the API server; `pods insecure` answers the a-b-c-d.<ns>.pod names.
// No forward plugin: nothing outside the namespace is reachable anyway.
const corefile = `.:53 {
    bind {{dnsip}}
    errors
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
    kubernetes {{domain}} in-addr.arpa ip6.arpa {
        kubeconfig {{kubeconfig}} kubenode
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
}
`

// startCoreDNS runs CoreDNS as a process of the namespace (deploy/DESIGN.md
// says why not a pod) under an identity of its own that may read what its
// kubernetes plugin watches.
func (c *Cluster) startCoreDNS(token string) *process {
	t := c.t
	dir := kubetest.BinaryDir() // scripts/kube-binaries.sh builds coredns there
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kc := c.Client()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kubenode:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	if _, err := kc.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubenode: coredns ClusterRole: %v", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubenode:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: corednsUser}},
	}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubenode: coredns ClusterRoleBinding: %v", err)
	}
	cf := c.write("etc/Corefile", []byte(strings.NewReplacer("{{dnsip}}", DNSIP, "{{domain}}", ClusterDomain,
		"{{kubeconfig}}", c.kubeconfig("coredns", token)).Replace(corefile)))
	return c.start("coredns", filepath.Join(dir, "coredns"), "-conf", cf)
}

// corednsUser is CoreDNS's user name in the static tokens file.
const corednsUser = "kubenode:coredns"

// kubeProxyConfig: the cluster's pod range as clusterCIDR (traffic to a
// Service from outside it, the test process's included, is masqueraded; pod
// to pod is not), NodePorts on the node's address, and nothing that would
// write a host-wide setting: conntrack table size and timeouts left as they
// are (nf_conntrack_max is writable only from the host's namespace), no
// localhost NodePorts (route_localnet).
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: {{kubeconfig}}
mode: {{mode}}
hostnameOverride: {{node}}
bindAddress: {{nodeIP}}
clusterCIDR: {{podcidr}}
detectLocalMode: ClusterCIDR
nodePortAddresses: ["primary"]
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`

// startKubeProxy runs kube-proxy in the namespace as system:kube-proxy (the
// bootstrap system:node-proxier binding names that user).
func (c *Cluster) startKubeProxy(token, mode string) *process {
	cfg := c.write("etc/kube-proxy.yaml", []byte(strings.NewReplacer("{{kubeconfig}}", c.kubeconfig("kube-proxy", token),
		"{{mode}}", mode, "{{node}}", NodeName, "{{nodeIP}}", NodeIP, "{{podcidr}}", PodCIDR).Replace(kubeProxyConfig)))
	return c.start("kube-proxy", filepath.Join(kubetest.BinaryDir(), "kube-proxy"), "--config", cfg, "--v", "2")
}
