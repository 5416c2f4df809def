package kubenode

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/kubetest"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvRequired=1 turns a missing prerequisite from a skip into a failure.
const EnvRequired = "YARNFED_KUBENODE_REQUIRED"

const (
	// NodeName is the one Node's name.
	NodeName = "kubenode"
	// NodeIP is the Node's InternalIP, on a dummy interface in the
	// cluster's network namespace's lo (the kubelet refuses a loopback
	// address, not a private one on the loopback device).
	NodeIP = "10.213.0.2"
	// PodCIDR is the CNI bridge's range for pods that are not hostNetwork.
	PodCIDR = "10.214.0.0/24"
	// PauseImage is the sandbox image containerd runs for every pod, built
	// here from ./pause (registry.k8s.io cannot be reached).
	PauseImage = "localhost/kubenode/pause:1"
	// NetcheckImage is a network probe built here from ./netcheck and
	// imported at Start (user 65535, entrypoint /netcheck): `serve ADDR`
	// answers HTTP with the pod's hostname, `get URL...` and `resolve
	// NAME...` print what they got, retrying for up to a minute. Run it with
	// imagePullPolicy: Never.
	NetcheckImage = "localhost/kubenode/netcheck:1"

	apiPort = 6443
	cniDir  = "/usr/lib/cni" // Debian's containernetworking-plugins
)

// Options tunes Start.
type Options struct {
	// Images are OCI archives (make image's output) imported into
	// containerd's k8s.io namespace before the kubelet starts, so pods run
	// them with imagePullPolicy: Never.
	Images []string
	// Snapshotter is containerd's snapshotter for the images: "overlayfs"
	// (default) or "native" where overlay mounts are refused.
	Snapshotter string
	// ProxyMode is kube-proxy's mode: "nftables" (default) or "iptables".
	ProxyMode string
	// Locked, if set, is called once Start holds the machine-wide lock and
	// before it changes anything: where a leftover check takes its "before"
	// picture of the host (another cluster may be running until then).
	Locked func()
}

// Timings are what Start measured, from its start.
type Timings struct {
	ControlPlane time.Duration // etcd and kube-apiserver ready
	Imported     time.Duration // containerd up, images imported
	NodeReady    time.Duration // the Node reports Ready
	Services     time.Duration // kube-proxy has synced and CoreDNS is ready
}

// Cluster is a running one-node cluster.
type Cluster struct {
	// URL is the API server's address, reachable through RESTConfig's dialer
	// (it listens inside the cluster's network namespace).
	URL string
	// CAData verifies the API server's certificate.
	CAData []byte
	// AdminToken authenticates as a member of system:masters.
	AdminToken string
	// Dir holds every file of the cluster, logs included (logs/).
	Dir string
	// CgroupRoot is the kubelet's cgroup root, in every v1 hierarchy.
	CgroupRoot string
	// ServiceCIDR is the Services' ClusterIP range (the constant
	// ServiceCIDR); kube-proxy routes it inside the network namespace, so
	// reach a ClusterIP through DialContext or Command.
	ServiceCIDR string
	// DNSIP is the cluster DNS server (the constant DNSIP, port 53): CoreDNS
	// serving ClusterDomain from the API server. Pods (dnsPolicy
	// ClusterFirst, or ClusterFirstWithHostNet on the host network) get it
	// as their nameserver, with the usual search list, so
	// <svc>.<ns>.svc.cluster.local, <pod>.<headless svc>.<ns>.svc.cluster.local
	// and their short forms resolve; the test process uses Resolver or
	// DialContext.
	DNSIP string
	// NetNS is a file naming the cluster's network namespace (a bind mount,
	// as `ip netns add` makes one): `nsenter --net=<NetNS> CMD` runs CMD in
	// it (Command does that). Gone after cleanup.
	NetNS   string
	Timings Timings

	t           testing.TB
	ns          *netns
	nsLink      string
	procs       map[string]*process
	cgroupDirs  []string
	sysctls     map[string]string
	sock        string
	snapshotter string
	cniNetwork  string
	// createdHostDirs are the HostDirs that did not exist before Start;
	// cleanup removes them when empty.
	createdHostDirs []string
	// containerIDs are the containers removeContainers deleted.
	containerIDs []string

	// mu orders Start's changes (lockState) with an interrupted teardown;
	// once runs teardown once whoever calls it (interrupt_linux.go).
	mu          sync.Mutex
	once        sync.Once
	interrupted bool
	stopWatch   func()
}

// HostDirs are the host directories the components create at fixed paths
// whatever their configuration: containerd 1.6's shim sockets
// (/run/containerd/s), the kubelet's device-plugin socket, its container log
// links, libcni's result cache. Parents come before children. Cleanup removes
// the kubelet's socket and the files that name this cluster, and each of
// these directories that Start created, once empty.
var HostDirs = []string{
	"/run/containerd", "/run/containerd/s",
	"/var/lib/kubelet", "/var/lib/kubelet/device-plugins",
	"/var/log/containers",
	"/var/lib/cni", "/var/lib/cni/results",
}

// prerequisites names what is missing, or nil.
func prerequisites() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (containerd, runc, cgroups and network namespaces need it)")
	}
	bin := kubetest.BinaryDir()
	// CoreDNS (the cluster DNS) is built beside them, in the same go build.
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "coredns"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing = append(missing, fmt.Sprintf("%s in %s (make kube-binaries, or set %s)", b, bin, kubetest.EnvAssets))
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "ip", "nsenter", "nft", "iptables", "go", "make"} {
		if _, err := lookPath(b); err != nil {
			missing = append(missing, b+" on PATH (apt-get install containerd runc iproute2 nftables iptables)")
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniDir, p)); err != nil {
			missing = append(missing, filepath.Join(cniDir, p)+" (apt-get install containernetworking-plugins)")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a one-node Kubernetes cluster needs: %s", strings.Join(missing, "; "))
	}
	return nil
}

// Start runs the cluster until its Node is Ready; it is torn down at cleanup,
// on SIGINT or SIGTERM (then the process exits with 128+signal) and a minute
// before the test binary's deadline (then it exits with 2): see
// interrupt_linux.go.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if err := prerequisites(); err != nil {
		if os.Getenv(EnvRequired) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// One cluster per machine at a time: the kubelet's device-plugin socket
	// and the kernel settings it changes are host-wide. A second Start, in
	// this process or another test binary, waits for the first's cleanup.
	lock, err := os.OpenFile(LockPath(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Logf("kubenode: waiting for another one-node cluster on this machine to stop")
		if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
			lock.Close()
			t.Fatalf("kubenode: lock: %v", err)
		}
	}
	t.Cleanup(func() { lock.Close() }) // runs after teardown (cleanups are last in, first out)
	if opts.Locked != nil {
		opts.Locked()
	}
	begin := time.Now()
	// A short path: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "kn")
	if err != nil {
		t.Fatal(err)
	}
	id := filepath.Base(dir)
	c := &Cluster{
		t: t, Dir: dir, procs: map[string]*process{},
		URL:         fmt.Sprintf("https://%s:%d", NodeIP, apiPort),
		ServiceCIDR: ServiceCIDR,
		DNSIP:       DNSIP,
		NetNS:       filepath.Join(dir, "netns"),
		AdminToken:  randomHex(t),
		CgroupRoot:  "/kubenode-" + strings.TrimPrefix(id, "kn"),
		sock:        filepath.Join(dir, "containerd.sock"),
		snapshotter: opts.Snapshotter,
		cniNetwork:  "kubenode-" + strings.TrimPrefix(id, "kn"),
	}
	if c.snapshotter == "" {
		c.snapshotter = "overlayfs"
	}
	for i := len(HostDirs) - 1; i >= 0; i-- { // deepest first
		if _, err := os.Stat(HostDirs[i]); err != nil {
			c.createdHostDirs = append(c.createdHostDirs, HostDirs[i])
		}
	}
	t.Cleanup(c.teardown)
	// SIGINT, SIGTERM and the test binary's deadline run the same
	// teardown: neither would run t.Cleanup.
	c.watchInterrupts()
	for _, d := range []string{"logs", "pki", "etc", "kubelet", "pod-logs", "cni/net.d", "cni/ipam", "containerd/root", "containerd/state", "runc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.track(func() {
		if c.ns, err = newNetns(c.NetNS); err == nil {
			c.nsLink = c.ns.link()
		}
	})
	if err != nil {
		t.Fatalf("kubenode: %v", err)
	}
	for _, args := range [][]string{
		// The node IP on lo: the kernel here has no dummy interfaces, and
		// the kubelet refuses only loopback addresses, not this one.
		{"addr", "add", NodeIP + "/32", "dev", "lo"},
		{"link", "set", "lo", "up"},
		// Components that look for "the host's address" follow the default
		// route; nothing outside the namespace is reachable anyway.
		{"route", "add", "default", "dev", "lo"},
	} {
		if err := c.ns.run("ip", args...); err != nil {
			t.Fatalf("kubenode: network namespace: %v", err)
		}
	}
	// Bridged traffic (pod to pod on kn-br0) must pass the IP hooks, or a
	// reply from a Service's pod to a client pod on the same bridge skips
	// conntrack and is never translated back from the pod's IP to the
	// ClusterIP. The setting is per network namespace here (kernel 6.x):
	// it dies with the namespace, nothing to restore.
	if err := c.ns.do(func() error {
		return os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1"), 0o644)
	}); err != nil {
		t.Fatalf("kubenode: bridge-nf-call-iptables in the network namespace (is br_netfilter loaded?): %v", err)
	}

	tokens := c.writeCredentials()
	c.startControlPlane(tokens)
	c.Timings.ControlPlane = time.Since(begin)
	t.Logf("kubenode: etcd and kube-apiserver ready after %v", c.Timings.ControlPlane.Round(time.Millisecond))

	c.startContainerd()
	images := append(c.buildImages(), opts.Images...)
	for _, img := range images {
		c.ctr("images", "import", "--snapshotter", c.snapshotter, img)
	}
	c.Timings.Imported = time.Since(begin)
	t.Logf("kubenode: containerd up, %d images imported after %v", len(images), c.Timings.Imported.Round(time.Millisecond))

	coredns := c.startCoreDNS(tokens["coredns"])
	c.startKubelet(tokens["kubelet"])
	proxyMode := opts.ProxyMode
	if proxyMode == "" {
		proxyMode = "nftables"
	}
	proxy := c.startKubeProxy(tokens["kube-proxy"], proxyMode)
	c.waitNodeReady()
	c.Timings.NodeReady = time.Since(begin)
	// kube-proxy's /healthz answers 200 once its rules are synced; CoreDNS's
	// /ready once its kubernetes plugin has listed the API.
	c.waitHTTP(proxy, "http://127.0.0.1:10256/healthz", "")
	c.waitHTTP(coredns, "http://127.0.0.1:8181/ready", "")
	c.Timings.Services = time.Since(begin)
	// The ServiceAccount admission plugin refuses pods until the
	// controller-manager has made the namespace's default account.
	c.waitDefaultServiceAccount()
	t.Logf("kubenode: node %s Ready after %v, kube-proxy (%s) and CoreDNS ready after %v", NodeName,
		c.Timings.NodeReady.Round(time.Millisecond), proxyMode, c.Timings.Services.Round(time.Millisecond))
	return c
}

// LockPath is the file Start holds an exclusive flock on while its cluster
// exists: one cluster per machine at a time.
func LockPath() string { return filepath.Join(os.TempDir(), "yarnfed-kubenode.lock") }

// track runs fn, a change of what teardown removes, whole with respect to
// an interrupted teardown (lockState). fn must not call t.Fatal.
func (c *Cluster) track(fn func()) {
	c.lockState()
	defer c.mu.Unlock()
	fn()
}

func (c *Cluster) path(p ...string) string { return filepath.Join(append([]string{c.Dir}, p...)...) }

func (c *Cluster) write(name string, b []byte) string {
	p := c.path(name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *Cluster) startControlPlane(tokens map[string]string) {
	t, bin := c.t, kubetest.BinaryDir()
	etcd := c.start("etcd", filepath.Join(bin, "etcd"),
		"--name", "kubenode", "--data-dir", c.path("etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "kubenode=http://127.0.0.1:2380",
		"--unsafe-no-fsync", // a test's data need not survive a power cut
		"--log-level", "warn")
	c.waitHTTP(etcd, "http://127.0.0.1:2379/health", "")

	certDir := c.path("pki", "apiserver")
	api := c.start("kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", "0.0.0.0", "--advertise-address", NodeIP,
		"--secure-port", strconv.Itoa(apiPort), "--cert-dir", certDir,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", c.path("pki/sa.pub"), "--service-account-signing-key-file", c.path("pki/sa.key"),
		"--service-cluster-ip-range", ServiceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--token-auth-file", c.path("pki/tokens.csv"),
		"--kubelet-client-certificate", c.path("pki/apiserver-kubelet-client.crt"),
		"--kubelet-client-key", c.path("pki/apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types", "InternalIP")
	// The self-signed serving certificate appears once the server starts.
	crt := filepath.Join(certDir, "apiserver.crt")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, err := os.ReadFile(crt); err == nil && bytes.Contains(b, []byte("CERTIFICATE")) {
			c.CAData = b
			break
		}
		if api.exited() || time.Now().After(deadline) {
			t.Fatalf("kubenode: kube-apiserver wrote no %s\n%s", crt, api.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.waitHTTP(api, c.URL+"/readyz", c.AdminToken)

	for _, name := range []string{"controller-manager", "scheduler"} {
		kc := c.kubeconfig(name, tokens[name])
		args := []string{"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
			"--leader-elect=false", "--bind-address", "127.0.0.1"}
		if name == "controller-manager" {
			args = append(args,
				"--service-account-private-key-file", c.path("pki/sa.key"),
				"--root-ca-file", crt,
				"--use-service-account-credentials")
		}
		c.start("kube-"+name, filepath.Join(bin, "kube-"+name), args...)
	}
}

// containerdConfig is containerd 1.6's config (version 2): everything it
// owns lives under the cluster's directory; CRI uses our pause image, our
// CNI directory and cgroupfs; runc's state root is private too.
const containerdConfig = `version = 2
root = "{{dir}}/containerd/root"
state = "{{dir}}/containerd/state"
oom_score = 0

[grpc]
  address = "{{sock}}"

[ttrpc]
  address = "{{dir}}/containerd-ttrpc.sock"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{{dir}}/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{pause}}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # The process lacks CAP_SYS_RESOURCE: never ask for a lower OOM score
  # than containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "{{snapshotter}}"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{{dir}}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{cnidir}}"
    conf_dir = "{{dir}}/cni/net.d"
    max_conf_num = 1
`

// cniConfig: a bridge inside the cluster's network namespace, addresses
// from host-local (its state under the cluster's directory), no masquerade
// (nothing outside the namespace to reach; kube-proxy masquerades what comes
// to a Service from outside PodCIDR), hairpin on (a pod reaching itself
// through its own Service's ClusterIP).
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "{{network}}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "kn-br0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "{{dir}}/cni/ipam",
        "ranges": [[{"subnet": "{{podcidr}}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
`

func (c *Cluster) fill(s string) string {
	return strings.NewReplacer("{{dir}}", c.Dir, "{{sock}}", c.sock, "{{pause}}", PauseImage,
		"{{snapshotter}}", c.snapshotter, "{{cnidir}}", cniDir, "{{network}}", c.cniNetwork,
		"{{podcidr}}", PodCIDR).Replace(s)
}

func (c *Cluster) startContainerd() {
	cfg := c.write("etc/containerd.toml", []byte(c.fill(containerdConfig)))
	c.write("cni/net.d/10-kubenode.conflist", []byte(c.fill(cniConfig)))
	p := c.start("containerd", "containerd", "--config", cfg, "--log-level", "info")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(c.sock); err == nil {
			if out, err := c.ctrOut("version"); err == nil && strings.Contains(out, "Server:") {
				return
			}
		}
		if p.exited() || time.Now().After(deadline) {
			c.t.Fatalf("kubenode: containerd did not answer on %s\n%s", c.sock, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ctr runs containerd's CLI against the cluster's containerd, k8s.io
// namespace (the CRI's).
func (c *Cluster) ctr(args ...string) string {
	out, err := c.ctrOut(args...)
	if err != nil {
		c.t.Fatalf("kubenode: ctr %v: %v\n%s", args, err, out)
	}
	return out
}

func (c *Cluster) ctrOut(args ...string) (string, error) {
	cmd := exec.Command("ctr", append([]string{"--address", c.sock, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ImageDigest is the digest containerd holds for an image name.
func (c *Cluster) ImageDigest(name string) string {
	for _, line := range strings.Split(c.ctr("images", "ls"), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == name {
			return f[2]
		}
	}
	return ""
}

// buildImages builds ./pause and ./netcheck statically (one go build) and
// packages each with hack/image (the make image builder), returning the
// archives.
func (c *Cluster) buildImages() []string {
	t := c.t
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Dir(self)
	root := filepath.Join(src, "..", "..", "..")
	bin := c.path("images", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	build := gobuild.Command(bin+"/", "", "./pause", "./netcheck")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("kubenode: go build ./pause ./netcheck: %v\n%s", err, out)
	}
	var archives []string
	for _, img := range []struct{ bin, name string }{{"pause", PauseImage}, {"netcheck", NetcheckImage}} {
		ctx := c.path("images", img.bin)
		if err := os.MkdirAll(ctx, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(bin, img.bin), filepath.Join(ctx, img.bin)); err != nil {
			t.Fatal(err)
		}
		df := filepath.Join(ctx, "Dockerfile")
		if err := os.WriteFile(df, []byte(fmt.Sprintf("FROM scratch\nCOPY %s /%s\nUSER 65535:65535\nENTRYPOINT [\"/%s\"]\n", img.bin, img.bin, img.bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		archive := c.path("images", img.bin+".oci.tar")
		// As make image runs it, with the image's build flags.
		cmd := exec.Command("go", append(append([]string{"run"}, gobuild.Flags...), ".", "-dockerfile", df, "-context", ctx, "-name", img.name, "-out", archive)...)
		cmd.Dir = filepath.Join(root, "hack", "image")
		cmd.Env = append(os.Environ(), gobuild.Env)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubenode: hack/image (%s): %v\n%s", img.bin, err, out)
		}
		archives = append(archives, archive)
	}
	return archives
}

// KubeletSysctls (under /proc/sys) are the kernel settings the kubelet sets at start
// (protectKernelDefaults false; true makes it refuse to start on a host
// that differs). They are not namespaced, so Start saves them and cleanup
// puts them back.
var KubeletSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// kubeletConfig is the KubeletConfiguration: cgroup v1 allowed (this host
// has no unified hierarchy), cgroupfs with a cgroup root of the test's own,
// containerd's socket, static pods off, every port and directory private.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: {{cgroupRoot}}
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://{{sock}}
failSwapOn: false
hairpinMode: none
clusterDNS: [{{dnsIP}}]
clusterDomain: {{domain}}
resolvConf: {{dir}}/etc/resolv.conf
address: {{nodeIP}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: {{dir}}/pod-logs
volumePluginDir: {{dir}}/kubelet/volume-plugins
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: {{dir}}/pki/ca.crt
authorization:
  mode: AlwaysAllow
serializeImagePulls: false
registerNode: true
# A shared CI machine's disk and memory must not evict the test's pods.
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`

func (c *Cluster) startKubelet(token string) {
	t := c.t
	// The cgroup root must exist in every v1 hierarchy; cpuset's children
	// start empty and take the parent's CPUs and memory nodes.
	hiers, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hiers {
		base := filepath.Join("/sys/fs/cgroup", h.Name())
		if h.Name() == "unified" {
			// The hybrid v2 hierarchy: runc makes the pods' cgroups there
			// on its own; cleanup removes them with the rest.
			c.track(func() { c.cgroupDirs = append(c.cgroupDirs, filepath.Join(base, c.CgroupRoot)) })
			continue
		}
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(base, c.CgroupRoot)
		var err error
		c.track(func() {
			if err = os.Mkdir(d, 0o755); err == nil {
				c.cgroupDirs = append(c.cgroupDirs, d)
			}
		})
		if err != nil {
			t.Fatalf("kubenode: cgroup %s: %v", d, err)
		}
		if h.Name() == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(base, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
				if err != nil {
					t.Fatalf("kubenode: %s: %v", d, err)
				}
			}
		}
	}
	saved := map[string]string{}
	for _, s := range KubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			saved[s] = strings.TrimSpace(string(b))
		}
	}
	c.track(func() { c.sysctls = saved })
	c.write("etc/resolv.conf", []byte("nameserver "+NodeIP+"\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"))
	cfg := c.write("etc/kubelet.yaml", []byte(strings.NewReplacer("{{cgroupRoot}}", c.CgroupRoot, "{{sock}}", c.sock,
		"{{dir}}", c.Dir, "{{nodeIP}}", NodeIP, "{{dnsIP}}", DNSIP, "{{domain}}", ClusterDomain).Replace(kubeletConfig)))
	c.start("kubelet", filepath.Join(kubetest.BinaryDir(), "kubelet"),
		"--config", cfg,
		"--kubeconfig", c.kubeconfig("kubelet", token),
		"--root-dir", c.path("kubelet"),
		"--cert-dir", c.path("kubelet", "pki"),
		"--hostname-override", NodeName,
		"--node-ip", NodeIP,
		"--v", "2")
}

// RESTConfig connects as the admin through the cluster's network namespace.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		BearerToken:     c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
		Dial:            c.ns.dial,
	}
}

// Client is an admin clientset.
func (c *Cluster) Client() kubernetes.Interface {
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		c.t.Fatal(err)
	}
	return kc
}

func (c *Cluster) waitNodeReady() {
	kc := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last string
	for {
		n, err := kc.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err == nil {
			last = ""
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						return
					}
					last = fmt.Sprintf("Ready=%s: %s: %s", cond.Status, cond.Reason, cond.Message)
				}
			}
		} else {
			last = err.Error()
		}
		if p := c.procs["kubelet"]; p.exited() {
			c.t.Fatalf("kubenode: kubelet exited (last: %s)\n%s", last, p.tail())
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("kubenode: node %s not Ready: %s\nkubelet:\n%s\ncontainerd:\n%s", NodeName, last, c.procs["kubelet"].tail(), c.procs["containerd"].tail())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) waitDefaultServiceAccount() {
	kc := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		_, err := kc.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("kubenode: no default ServiceAccount (%v)\nkube-controller-manager:\n%s", err, c.Log("kube-controller-manager"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Log is the tail of a component's log (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd, kubelet).
func (c *Cluster) Log(name string) string {
	if p := c.procs[name]; p != nil {
		return p.tail()
	}
	return ""
}
