package kubenode

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/yarnfed/yarnfed/gpg/kube/kubetest"
	"golang.org/x/sys/unix"
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
}

// Timings are what Start measured, from its start.
type Timings struct {
	ControlPlane time.Duration // etcd and kube-apiserver ready
	Imported     time.Duration // containerd up, images imported
	NodeReady    time.Duration // the Node reports Ready
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
	Timings    Timings

	t           testing.TB
	ns          *netns
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

// sbinDirs hold runc and ip on Debian; a non-login root shell's or CI's
// PATH may lack them.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// childPath is PATH with the sbin directories appended where missing.
func childPath() string {
	path := os.Getenv("PATH")
	have := map[string]bool{}
	for _, d := range filepath.SplitList(path) {
		have[d] = true
	}
	for _, d := range sbinDirs {
		if !have[d] {
			path += string(filepath.ListSeparator) + d
		}
	}
	return path
}

// childEnv is every child's environment: the test's, with childPath (so
// containerd's shims find runc, and the kubelet mount and friends).
func childEnv() []string {
	env := []string{"PATH=" + childPath()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// lookPath finds name on childPath.
func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(childPath()) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// prerequisites names what is missing, or nil.
func prerequisites() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (containerd, runc, cgroups and network namespaces need it)")
	}
	bin := kubetest.BinaryDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing = append(missing, fmt.Sprintf("%s in %s (make kube-binaries, or set %s)", b, bin, kubetest.EnvAssets))
		}
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "ip", "go", "make"} {
		if _, err := lookPath(b); err != nil {
			missing = append(missing, b+" on PATH (apt-get install containerd runc iproute2)")
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

// Start runs the cluster until its Node is Ready; it is torn down at cleanup.
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
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "yarnfed-kubenode.lock"), os.O_CREATE|os.O_RDWR, 0o600)
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
	for _, d := range []string{"logs", "pki", "etc", "kubelet", "pod-logs", "cni/net.d", "cni/ipam", "containerd/root", "containerd/state", "runc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if c.ns, err = newNetns(); err != nil {
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

	tokens := c.writeCredentials()
	c.startControlPlane(tokens)
	c.Timings.ControlPlane = time.Since(begin)
	t.Logf("kubenode: etcd and kube-apiserver ready after %v", c.Timings.ControlPlane.Round(time.Millisecond))

	c.startContainerd()
	images := append([]string{c.buildPause()}, opts.Images...)
	for _, img := range images {
		c.ctr("images", "import", "--snapshotter", c.snapshotter, img)
	}
	c.Timings.Imported = time.Since(begin)
	t.Logf("kubenode: containerd up, %d images imported after %v", len(images), c.Timings.Imported.Round(time.Millisecond))

	c.startKubelet(tokens["kubelet"])
	c.waitNodeReady()
	c.Timings.NodeReady = time.Since(begin)
	// The ServiceAccount admission plugin refuses pods until the
	// controller-manager has made the namespace's default account.
	c.waitDefaultServiceAccount()
	t.Logf("kubenode: node %s Ready after %v", NodeName, c.Timings.NodeReady.Round(time.Millisecond))
	return c
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func (c *Cluster) path(p ...string) string { return filepath.Join(append([]string{c.Dir}, p...)...) }

func (c *Cluster) write(name string, b []byte) string {
	p := c.path(name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// writeCredentials writes the service-account key pair, the static tokens
// of every component (the kubelet's in system:nodes, so the Node authorizer
// and NodeRestriction treat it as the node), a CA and the API server's
// client certificate for the kubelet's API. It returns the tokens by user.
func (c *Cluster) writeCredentials() map[string]string {
	t := c.t
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	c.write("pki/sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	c.write("pki/sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))

	tokens := map[string]string{"admin": c.AdminToken}
	var csv bytes.Buffer
	for _, u := range []struct{ key, user, groups string }{
		{"admin", "kubenode-admin", "system:masters"},
		{"kubelet", "system:node:" + NodeName, "system:nodes"},
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
	} {
		if tokens[u.key] == "" {
			tokens[u.key] = randomHex(t)
		}
		fmt.Fprintf(&csv, "%s,%s,%s,\"%s\"\n", tokens[u.key], u.user, u.user, u.groups)
	}
	c.write("pki/tokens.csv", csv.Bytes())

	caKey, caCert := newCert(t, nil, nil, pkix.Name{CommonName: "kubenode-ca"}, true)
	c.write("pki/ca.crt", caCert)
	ca, err := tls.X509KeyPair(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ckey, ccert := newCert(t, &ca, caCertParsed(t, caCert), pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, false)
	c.write("pki/apiserver-kubelet-client.key", ckey)
	c.write("pki/apiserver-kubelet-client.crt", ccert)
	return tokens
}

func caCertParsed(t testing.TB, p []byte) *x509.Certificate {
	b, _ := pem.Decode(p)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// newCert makes a key and certificate, self-signed when parent is nil.
func newCert(t testing.TB, parent *tls.Certificate, parentCert *x509.Certificate, subject pkix.Name, isCA bool) (keyPEM, certPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	signer, signerCert := any(key), tmpl
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage = nil
	} else {
		signer, signerCert = parent.PrivateKey, parentCert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// kubeconfig writes a kubeconfig for a token (the API server's serving
// certificate is its own CA).
func (c *Cluster) kubeconfig(name, token string) string {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubenode"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubenode"] = &clientcmdapi.Context{Cluster: "kubenode", AuthInfo: name}
	cfg.CurrentContext = "kubenode"
	p := c.path("etc", name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
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
		"--service-cluster-ip-range", "10.96.0.0/16",
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
// (no iptables here) and no hairpin.
const cniConfig = `{
  "cniVersion": "1.0.0",
  "name": "{{network}}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "kn-br0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": false,
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

// buildPause builds ./pause statically and packages it with hack/image (the
// make image builder), returning the archive.
func (c *Cluster) buildPause() string {
	t := c.t
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Dir(self)
	root := filepath.Join(src, "..", "..", "..")
	ctx := c.path("pause-image")
	if err := os.MkdirAll(ctx, 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(ctx, "pause"), "./pause")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("kubenode: go build ./pause: %v\n%s", err, out)
	}
	df := filepath.Join(ctx, "Dockerfile")
	if err := os.WriteFile(df, []byte("FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT [\"/pause\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := c.path("pause.oci.tar")
	img := exec.Command("go", "run", ".", "-dockerfile", df, "-context", ctx, "-name", PauseImage, "-out", archive)
	img.Dir = filepath.Join(root, "hack", "image")
	if out, err := img.CombinedOutput(); err != nil {
		t.Fatalf("kubenode: hack/image (pause): %v\n%s", err, out)
	}
	return archive
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
			c.cgroupDirs = append(c.cgroupDirs, filepath.Join(base, c.CgroupRoot))
			continue
		}
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(base, c.CgroupRoot)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("kubenode: cgroup %s: %v", d, err)
		}
		c.cgroupDirs = append(c.cgroupDirs, d)
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
	c.sysctls = map[string]string{}
	for _, s := range KubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			c.sysctls[s] = strings.TrimSpace(string(b))
		}
	}
	c.write("etc/resolv.conf", []byte("nameserver "+NodeIP+"\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"))
	cfg := c.write("etc/kubelet.yaml", []byte(strings.NewReplacer("{{cgroupRoot}}", c.CgroupRoot, "{{sock}}", c.sock,
		"{{dir}}", c.Dir, "{{nodeIP}}", NodeIP).Replace(kubeletConfig)))
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

// process is a started child with its log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (c *Cluster) start(name, path string, args ...string) *process {
	logPath := c.path("logs", name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = c.Dir
	// Its own process group; the parent's death kills it (a test binary
	// killed by a timeout must not leave a kubelet behind).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.ns.start(cmd); err != nil {
		logf.Close()
		c.t.Fatalf("kubenode: start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	c.procs[name] = p
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

func (p *process) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP polls url (inside the namespace) until it answers 200.
func (c *Cluster) waitHTTP(p *process, url, bearer string) {
	tr := &http.Transport{DialContext: c.ns.dial}
	if c.CAData != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAData)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		if p.exited() || time.Now().After(deadline) {
			c.t.Fatalf("kubenode: %s never answered %s (last: %v)\n%s", p.name, url, last, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// teardown stops everything Start started and removes every trace of it:
// the kubelet first (it would restart what we remove), containers through
// containerd (which unmounts their root filesystems), leftover shims and
// container processes by their cgroups and sockets, the servers, then
// mounts, cgroups, kernel settings and files.
func (c *Cluster) teardown() {
	t := c.t
	if t.Failed() {
		c.keepLogs()
	}
	c.drain()
	c.procs["kubelet"].stop()
	c.procs["kube-scheduler"].stop()
	c.procs["kube-controller-manager"].stop()
	if p := c.procs["containerd"]; p != nil && !p.exited() {
		c.removeContainers()
	}
	c.procs["containerd"].stop()
	c.killLeftovers()
	c.procs["kube-apiserver"].stop()
	c.procs["etcd"].stop()
	c.unmountAll()
	c.removeCgroups()
	for s, v := range c.sysctls {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil && strings.TrimSpace(string(b)) != v {
			if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
				t.Errorf("kubenode: restore %s=%s: %v", s, v, err)
			}
		}
	}
	c.removeHostFiles()
	for _, d := range c.createdHostDirs {
		_ = os.Remove(d) // only when empty: something else may have come to use it
	}
	if c.ns != nil {
		c.ns.close()
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		t.Errorf("kubenode: remove %s: %v", c.Dir, err)
	}
}

// drain deletes every pod and waits (briefly) until the kubelet has stopped
// their sandboxes, so the CRI tears their networks down through CNI as it
// would on a real node; removeContainers is the fallback.
func (c *Cluster) drain() {
	kubelet, api, ctrd := c.procs["kubelet"], c.procs["kube-apiserver"], c.procs["containerd"]
	if kubelet == nil || api == nil || ctrd == nil || kubelet.exited() || api.exited() || ctrd.exited() {
		return
	}
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	nss, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Logf("kubenode: drain: %v", err)
		return
	}
	zero := int64(0)
	for _, ns := range nss.Items {
		if err := kc.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			c.t.Logf("kubenode: drain %s: %v", ns.Name, err)
		}
	}
	for {
		out, err := c.ctrOut("tasks", "ls", "-q")
		if err == nil && strings.TrimSpace(out) == "" {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Logf("kubenode: drain: tasks still running after 45 s: %s", out)
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// removeContainers kills and deletes every task and container of the CRI's
// namespace.
func (c *Cluster) removeContainers() {
	out, err := c.ctrOut("tasks", "ls", "-q")
	if err != nil {
		c.t.Logf("kubenode: ctr tasks ls: %v: %s", err, out)
	}
	for _, id := range strings.Fields(out) {
		if o, err := c.ctrOut("tasks", "delete", "--force", id); err != nil {
			c.t.Logf("kubenode: ctr tasks delete %s: %v: %s", id, err, o)
		}
	}
	out, _ = c.ctrOut("containers", "ls", "-q")
	for _, id := range strings.Fields(out) {
		c.containerIDs = append(c.containerIDs, id)
		if o, err := c.ctrOut("containers", "delete", id); err != nil {
			c.t.Logf("kubenode: ctr containers delete %s: %v: %s", id, err, o)
		}
	}
}

// killLeftovers kills what outlived containerd: processes in the test's
// cgroups (containers) and shims serving its containerd (found by the socket
// address on their command line, which names the test's directory).
func (c *Cluster) killLeftovers() {
	pids := map[int]bool{}
	for _, d := range c.cgroupDirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids[pid] = true
				}
			}
			return nil
		})
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("containerd-shim")) && bytes.Contains(b, []byte(c.sock)) {
			pids[pid] = true
		}
	}
	for pid := range pids {
		if pid != os.Getpid() {
			c.t.Logf("kubenode: killing leftover process %d", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountAll detaches every mount under the cluster's directory, deepest
// first (container root filesystems, pod volumes, sandbox namespaces).
func (c *Cluster) unmountAll() {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		c.t.Errorf("kubenode: %v", err)
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == c.Dir || strings.HasPrefix(f[4], c.Dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			c.t.Errorf("kubenode: unmount %s: %v", m, err)
		}
	}
}

// removeCgroups removes the test's cgroup trees, leaves first, waiting
// briefly for killed processes to leave them.
func (c *Cluster) removeCgroups() {
	for _, root := range c.cgroupDirs {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for i := 0; i < 50; i++ {
				if err = unix.Rmdir(d); err == nil || errors.Is(err, unix.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				c.t.Errorf("kubenode: remove cgroup %s: %v", d, err)
			}
		}
	}
}

// removeHostFiles removes what the kubelet and the CNI library put outside
// the cluster's directory: the kubelet's /var/log/containers links into it,
// and libcni's cached results for its network.
func (c *Cluster) removeHostFiles() {
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if dst, err := os.Readlink(l); err == nil && strings.HasPrefix(dst, c.Dir+"/") {
			_ = os.Remove(l)
		}
	}
	for _, d := range c.createdHostDirs {
		if d == "/var/lib/kubelet/device-plugins" {
			_ = os.Remove(filepath.Join(d, "kubelet.sock"))
		}
	}
	// libcni names a cached result <network>-<sandbox id>-<interface>; the
	// loopback network's name is not ours, its sandbox ids are.
	results, _ := filepath.Glob("/var/lib/cni/results/" + c.cniNetwork + "-*")
	for _, id := range c.containerIDs {
		more, _ := filepath.Glob("/var/lib/cni/results/*-" + id + "-*")
		results = append(results, more...)
	}
	for _, r := range results {
		_ = os.Remove(r)
	}
}

// keepLogs copies the components' logs to $YARNFED_ARTIFACTS/kubenode/ when
// set (CI keeps that directory), and prints where.
func (c *Cluster) keepLogs() {
	art := os.Getenv("YARNFED_ARTIFACTS")
	if art == "" {
		return
	}
	dst := filepath.Join(art, "kubenode", filepath.Base(c.Dir))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return
	}
	logs, _ := filepath.Glob(c.path("logs", "*.log"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(l)), b, 0o644)
		}
	}
	c.t.Logf("kubenode: logs kept in %s", dst)
}
