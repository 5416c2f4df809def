package test

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/yarnfed/yarnfed/internal/gobuild"
	"github.com/yarnfed/yarnfed/internal/kubetest"
)

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// sharedSecrets are the Secrets an operator fills with random bytes, by key
// (deploy/README.md: `kubectl create secret generic NAME
// --from-literal=KEY=$(head -c 32 /dev/urandom | base64)`). The test fills
// each once per federation, so every replica mounting it sees the same
// bytes, as every pod of a namespace sees one Secret.
var sharedSecrets = map[string][]string{
	// The router's hadoop.auth cookie signing key (components/kerberos).
	"yarnfed-router-cookie-secret": {"secret"},
}

// certParties says which `yarnfed certs` party fills each Secret the
// manifests mount (deploy/README.md creates them the same way). A Secret
// volume missing here fails the test unless it is optional (keytabs).
var certParties = map[string]string{
	"yarnfed-statestore-tls": "yarnfed-statestore=replica",
	"yarnfed-router-tls":     "yarnfed-router=router",
	"yarnfed-amrmproxy-tls":  "yarnfed-amrmproxy=amrmproxy",
	"yarnfed-gpg-tls":        "yarnfed-gpg=gpg",
	"yarnfed-agent-sc-1-tls": "SC-1=agent",
}

// TestManifestsRunTheBinaries is the drift test: for each overlay it starts
// every role's real binary (cmd/yarnfed) with exactly the command, args,
// environment and mounted files its manifest gives the pod, with two
// rewrites a pod does not need: mount paths become temporary directories,
// and every host:port becomes a free port on 127.0.0.1 (a pod's own
// listen address and its DNS names map to the same port; a Service name maps
// to a pod it selects through the Service's targetPort; a name that is
// neither must be an RM, run here as `yarnfed simrm`). An address that
// resolves to nothing, a flag or config key the binary lacks, or a role that
// never becomes ready fails the test. Ready means the manifest's own
// readiness probe (or, without one, its liveness probe) answers 200.
func TestManifestsRunTheBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and a whole federation")
	}
	cluster := kubetest.Start(t, kubetest.Options{}) // skips first when the binaries are missing
	bin := buildYarnfed(t)
	for _, o := range overlays {
		t.Run(o, func(t *testing.T) {
			r := render(t, o)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			token := gpgIdentity(ctx, t, cluster, r)
			kubeconfig := cluster.WriteKubeconfig(t, token)
			h := newHarness(t, r, bin, kubeconfig)
			h.run(ctx)
		})
	}
}

// buildYarnfed builds the server binary from this checkout.
func buildYarnfed(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "yarnfed")
	cmd := gobuild.Command(out, "", "./cmd/yarnfed")
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/yarnfed: %v\n%s", err, b)
	}
	return out
}

type harness struct {
	t          *testing.T
	r          *rendered
	bin        string
	kubeconfig string
	dir        string
	pods       []*pod
	ports      map[string]int // "pod/port" or "ext:host/port" -> loopback port
	used       map[int]bool   // ports handed out
	pki        string
	rms        map[string]bool     // outside hosts run as simrm
	krb        *krbEnv             // the KDC, when the overlay carries a krb5.conf (kerberos_test.go)
	args       map[string][]string // pod -> its args as rewritten
	secrets    map[string][]byte   // "secret/key" -> content of sharedSecrets
}

func newHarness(t *testing.T, r *rendered, bin, kubeconfig string) *harness {
	h := &harness{t: t, r: r, bin: bin, kubeconfig: kubeconfig, dir: t.TempDir(), pods: r.pods(), ports: map[string]int{}, used: map[int]bool{}}
	h.pki = filepath.Join(h.dir, "pki")
	args := []string{"certs", "--dir", h.pki}
	for _, k := range sortedKeys(certParties) {
		args = append(args, certParties[k])
	}
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("yarnfed certs: %v\n%s", err, b)
	}
	h.args = map[string][]string{}
	h.startKerberos()
	return h
}

// freePort picks a free loopback port below the kernel's ephemeral range.
// A port from ":0" is handed to the process only after we close it, and in
// between any outgoing connection on this busy machine may take it as its
// local port (those come from the ephemeral range); ports below the range
// are only ever bound explicitly.
func freePort(t testing.TB) int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil && v > 20000 {
				low = v
			}
		}
	}
	for i := 0; i < 100; i++ {
		port := low - 12000 + rand.IntN(11000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (h *harness) port(key string) int {
	if p, ok := h.ports[key]; ok {
		return p
	}
	// Each key its own port: a port picked and closed earlier is free
	// again until its process binds it, and may be picked twice.
	for {
		p := freePort(h.t)
		if !h.used[p] {
			h.used[p] = true
			h.ports[key] = p
			return p
		}
	}
}

// hostPort matches host:port inside arguments and config files.
var hostPort = regexp.MustCompile(`([A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})\b`)

// resolve maps an address as pod p would use it to its loopback stand-in.
func (h *harness) resolve(p *pod, host string, port int) (string, error) {
	ns := h.r.namespace
	short := strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc")
	short = strings.TrimSuffix(short, "."+ns)
	switch {
	case host == "0.0.0.0" || host == "127.0.0.1" || host == "localhost" || host == p.name+".pod-ip":
		if _, ok := containerPort(p.template, strconv.Itoa(port)); !ok {
			return "", fmt.Errorf("%s listens on %d, a port its container does not declare", p.name, port)
		}
		return h.loop(p.name + "/" + strconv.Itoa(port)), nil
	}
	// <pod>.<headless service>: a StatefulSet pod's stable DNS name.
	if podName, svcName, ok := strings.Cut(short, "."); ok {
		svc := h.r.service(svcName)
		if svc != nil && svc.Spec.ClusterIP == corev1.ClusterIPNone {
			for _, q := range h.pods {
				if q.name != podName || q.kind != "StatefulSet" {
					continue
				}
				if sts := h.r.statefulSet(q.owner); sts.Spec.ServiceName != svcName || !selects(svc.Spec.Selector, q.template.Labels) {
					return "", fmt.Errorf("%s: pod %s is not governed by headless Service %s", host, podName, svcName)
				}
				if _, ok := containerPort(q.template, strconv.Itoa(port)); !ok {
					return "", fmt.Errorf("%s:%d: pod %s declares no such port", host, port, podName)
				}
				return h.loop(q.name + "/" + strconv.Itoa(port)), nil
			}
			return "", fmt.Errorf("%s: no pod %s behind headless Service %s", host, podName, svcName)
		}
	}
	// <service>: through the Service's port to a pod it selects.
	if svc := h.r.service(short); svc != nil && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) != port {
				continue
			}
			for _, q := range h.pods {
				if !selects(svc.Spec.Selector, q.template.Labels) {
					continue
				}
				cp, ok := containerPort(q.template, sp.TargetPort.String())
				if !ok {
					return "", fmt.Errorf("Service %s port %d targets %s, which pod %s does not declare", svc.Name, port, sp.TargetPort.String(), q.name)
				}
				return h.loop(q.name + "/" + strconv.Itoa(int(cp))), nil
			}
			return "", fmt.Errorf("Service %s selects no pod", svc.Name)
		}
		return "", fmt.Errorf("Service %s has no port %d", svc.Name, port)
	}
	if strings.Contains(short, ".") && !strings.HasSuffix(host, ".svc") && !strings.Contains(host, ".svc.") {
		// Outside the cluster: only RMs are expected there.
		return h.loop("ext:" + host + "/" + strconv.Itoa(port)), nil
	}
	return "", fmt.Errorf("%s:%d: no Service or pod of the manifests answers there", host, port)
}

// sharedSecret is the content of one key of a sharedSecrets Secret: 32
// random bytes in base64, as README's command makes it, the same for every
// pod of this federation.
func (h *harness) sharedSecret(secret, key string) []byte {
	if h.secrets == nil {
		h.secrets = map[string][]byte{}
	}
	id := secret + "/" + key
	if _, ok := h.secrets[id]; !ok {
		raw := make([]byte, 32)
		if _, err := crand.Read(raw); err != nil {
			h.t.Fatal(err)
		}
		h.secrets[id] = []byte(base64.StdEncoding.EncodeToString(raw))
	}
	return h.secrets[id]
}

func (h *harness) loop(key string) string { return "127.0.0.1:" + strconv.Itoa(h.port(key)) }

// rewrite replaces mount paths and addresses in s as pod p sees them.
func (h *harness) rewrite(p *pod, mounts map[string]string, s string) (string, error) {
	paths := sortedKeys(mounts)
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, mp := range paths {
		s = strings.ReplaceAll(s, mp, mounts[mp])
	}
	var firstErr error
	s = hostPort.ReplaceAllStringFunc(s, func(m string) string {
		sub := hostPort.FindStringSubmatch(m)
		port, _ := strconv.Atoi(sub[2])
		if strings.HasPrefix(sub[1], h.dir) || strings.HasPrefix(sub[1], "/") {
			return m
		}
		out, err := h.resolve(p, sub[1], port)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return out
	})
	return s, firstErr
}

// expandEnv applies Kubernetes' $(VAR) expansion ($$ escapes a dollar).
func expandEnv(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if s[i] == '$' && i+1 < len(s) && s[i+1] == '(' {
			if end := strings.IndexByte(s[i:], ')'); end > 0 {
				if v, ok := env[s[i+2:i+end]]; ok {
					b.WriteString(v)
					i += end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// process is a started role with its log.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (h *harness) start(name string, args []string, env []string, cwd string) *process {
	h.t.Helper()
	logPath := filepath.Join(h.dir, strings.ReplaceAll(name, "/", "_")+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(h.bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = env, logf, logf, cwd
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			h.t.Logf("%s: still running 20 s after SIGTERM; killed", name)
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// waitHTTP polls url until 200; the process exiting first (a bad flag or
// config key) fails at once with its log.
func (h *harness) waitHTTP(ctx context.Context, p *process, url string) {
	h.t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		select {
		case <-p.done:
			h.t.Fatalf("%s exited before %s answered 200 (exit: %v):\n%s", p.name, url, p.cmd.ProcessState, p.tail())
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("%s: %s never answered 200 (last: %s):\n%s", p.name, url, last, p.tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// started is a pod's process and where its probe answers.
type started struct {
	proc     *process
	probeURL string
}

// launch starts pod p's container as the manifest describes it.
func (h *harness) launch(p *pod) *started {
	t := h.t
	t.Helper()
	spec := p.template.Spec
	if len(spec.InitContainers) > 0 {
		t.Fatalf("%s: init containers are not run by this test; add them here first", p.name)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, this test runs one", p.name, len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/yarnfed" {
		t.Fatalf("%s: command %v, want [/yarnfed] (the image's binary)", p.name, c.Command)
	}
	// Environment, as the kubelet builds it.
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expandEnv(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = p.name
			case "metadata.namespace":
				env[e.Name] = h.r.namespace
			case "status.podIP":
				env[e.Name] = p.name + ".pod-ip"
			default:
				t.Fatalf("%s: env %s from field %s: not emulated", p.name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		default:
			t.Fatalf("%s: env %s: source not emulated", p.name, e.Name)
		}
	}
	// Volumes become directories; ConfigMap files are rewritten like args.
	podDir := filepath.Join(h.dir, p.name)
	vols := map[string]string{}
	var configFiles []string
	keytabDirs, keytabOptional := map[string]string{}, map[string]bool{}
	for _, v := range spec.Volumes {
		d := filepath.Join(podDir, "vol", v.Name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case v.ConfigMap != nil:
			cm := h.r.configMap(t, v.ConfigMap.Name)
			for _, k := range sortedKeys(cm.Data) {
				writeFile(t, filepath.Join(d, k), []byte(cm.Data[k]))
				configFiles = append(configFiles, filepath.Join(d, k))
			}
		case v.Secret != nil && sharedSecrets[v.Secret.SecretName] != nil:
			for _, k := range sharedSecrets[v.Secret.SecretName] {
				writeFile(t, filepath.Join(d, k), h.sharedSecret(v.Secret.SecretName, k))
			}
		case v.Secret != nil && keytabSecrets[v.Secret.SecretName]:
			// Filled below, once the configs naming the keytabs are rewritten.
			keytabDirs[d] = v.Secret.SecretName
			keytabOptional[d] = v.Secret.Optional != nil && *v.Secret.Optional
		case v.Secret != nil:
			party, ok := certParties[v.Secret.SecretName]
			if !ok {
				if v.Secret.Optional == nil || !*v.Secret.Optional {
					t.Fatalf("%s: Secret %s is required but this test (and deploy/README.md) knows no party for it", p.name, v.Secret.SecretName)
				}
				break // an optional Secret left out: an empty directory
			}
			name, _, _ := strings.Cut(party, "=")
			for _, f := range []string{"ca.crt", "cert.crt", "cert.key"} {
				b, err := os.ReadFile(filepath.Join(h.pki, name, f))
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(d, f), b)
			}
		case v.EmptyDir != nil, v.HostPath != nil:
		default:
			t.Fatalf("%s: volume %s: source not emulated", p.name, v.Name)
		}
		vols[v.Name] = d
	}
	for _, pvc := range p.claims {
		d := filepath.Join(podDir, "pvc", pvc.Name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		vols[pvc.Name] = d
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		d, ok := vols[m.Name]
		if !ok {
			t.Fatalf("%s: mount %s names no volume", p.name, m.Name)
		}
		mounts[m.MountPath] = d
	}
	for _, f := range configFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := h.rewrite(p, mounts, string(b))
		if err != nil {
			t.Fatalf("%s: config file %s: %v", p.name, filepath.Base(f), err)
		}
		s = h.inCluster(t, p, s)
		writeFile(t, f, []byte(s))
	}
	var args []string
	for _, a := range c.Args {
		s, err := h.rewrite(p, mounts, expandEnv(a, env))
		if err != nil {
			t.Fatalf("%s: arg %q: %v", p.name, a, err)
		}
		args = append(args, s)
	}
	h.fillKeytabs(p, keytabDirs, keytabOptional, configFiles, args)
	h.args[p.name] = args
	var envList []string
	for _, k := range sortedKeys(env) {
		envList = append(envList, k+"="+env[k])
	}
	// The container's root filesystem is read-only and FROM scratch (no
	// /tmp): the process runs in an empty directory standing for it, with
	// HOME there and TMPDIR missing, and must leave the directory empty.
	rootfs := filepath.Join(podDir, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Runs after the process is stopped (cleanups run last-in first-out).
		if left, _ := os.ReadDir(rootfs); len(left) > 0 {
			t.Errorf("%s wrote %s outside its volumes: a read-only root filesystem would refuse it", p.name, left[0].Name())
		}
	})
	envList = append(envList, "PATH="+os.Getenv("PATH"), "HOME="+rootfs, "TMPDIR="+filepath.Join(rootfs, "no-tmp-in-the-image"))

	probe := c.ReadinessProbe
	if probe == nil {
		probe = c.LivenessProbe
	}
	if probe == nil || probe.HTTPGet == nil {
		t.Fatalf("%s: no HTTP readiness or liveness probe", p.name)
	}
	port, ok := containerPort(p.template, probe.HTTPGet.Port.String())
	if !ok {
		t.Fatalf("%s: probe port %s is not a container port", p.name, probe.HTTPGet.Port.String())
	}
	url := "http://" + h.loop(p.name+"/"+strconv.Itoa(int(port))) + probe.HTTPGet.Path
	t.Logf("%s: yarnfed %s", p.name, strings.Join(args, " "))
	return &started{proc: h.start(p.name, args, envList, rootfs), probeURL: url}
}

// inCluster points a GPG "kubernetes" entry without a kubeconfig (in-cluster:
// the pod's ServiceAccount) at the same ServiceAccount's token through a
// kubeconfig file, since the test runs no pod.
func (h *harness) inCluster(t *testing.T, p *pod, s string) string {
	var doc map[string]any
	if json.Unmarshal([]byte(s), &doc) != nil {
		return s
	}
	kube, ok := doc["kubernetes"].([]any)
	if !ok {
		return s
	}
	for _, k := range kube {
		if m, ok := k.(map[string]any); ok && m["kubeconfig"] == "" {
			if p.template.Spec.ServiceAccountName == "" {
				t.Fatalf("%s: in-cluster Kubernetes access without a ServiceAccount", p.name)
			}
			// In a pod the in-cluster config reads the token the kubelet
			// mounts; without the mount there is none to stand in for.
			if a := p.template.Spec.AutomountServiceAccountToken; a != nil && !*a {
				t.Fatalf("%s: in-cluster Kubernetes access, but automountServiceAccountToken is false: the pod has no token", p.name)
			}
			m["kubeconfig"] = h.kubeconfig
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startRMs runs a simulated RM for each outside host the manifests name (the
// sub-cluster agents' --rm): the first RM of an agent active, the others
// standby. Any outside address that is not an agent's RM fails the test.
func (h *harness) startRMs(ctx context.Context) {
	t := h.t
	rms := map[string]bool{}
	for _, p := range h.pods {
		c := p.template.Spec.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != "subcluster-agent" {
			continue
		}
		first := true
		for _, a := range c.Args {
			v, ok := strings.CutPrefix(a, "--rm=")
			if !ok {
				continue
			}
			addrs := map[string]string{}
			host := ""
			for _, kv := range strings.Split(v, ",") {
				k, addr, ok := strings.Cut(kv, "=")
				if !ok {
					t.Fatalf("%s: --rm %q: this test needs the explicit clientrm=,amrm=,admin=,web= form", p.name, v)
				}
				hh, port, err := net.SplitHostPort(addr)
				if err != nil {
					t.Fatal(err)
				}
				if host != "" && hh != host {
					t.Fatalf("%s: --rm %q names two hosts", p.name, v)
				}
				host = hh
				pn, _ := strconv.Atoi(port)
				addrs[k] = h.loop("ext:" + hh + "/" + strconv.Itoa(pn))
			}
			rms[host] = true
			web := addrs["web"]
			if h.krb != nil {
				// A Kerberized RM: the web address the manifests name takes
				// only SPNEGO, in front of the simrm's own web port.
				web = h.loop("simrm-web:" + host)
			}
			args := []string{"simrm", "--cluster-id", host, "--nodes", "2",
				"--client-address", addrs["clientrm"], "--scheduler-address", addrs["amrm"],
				"--admin-address", addrs["admin"], "--webapp-address", web}
			if !first {
				args = append(args, "--standby")
			}
			proc := h.start("simrm-"+host, args, []string{"PATH=" + os.Getenv("PATH")}, h.dir)
			h.waitHTTP(ctx, proc, "http://"+web+"/ws/v1/cluster/info")
			if h.krb != nil {
				h.frontRM(host, addrs["web"], web, first)
			}
			first = false
		}
	}
	h.rms = rms
}

// checkOutside fails on any outside address that is not an agent's RM.
func (h *harness) checkOutside() {
	for key := range h.ports {
		if host, ok := strings.CutPrefix(key, "ext:"); ok {
			host, _, _ = strings.Cut(host, "/")
			if !h.rms[host] && (h.krb == nil || !h.krb.hosts[host]) {
				h.t.Fatalf("address %s is neither a Service or pod of the manifests nor an agent's RM", host)
			}
		}
	}
}

// role is the first argument of a pod's container: the yarnfed subcommand.
func role(p *pod) string {
	c := p.template.Spec.Containers[0]
	if len(c.Args) == 0 {
		return ""
	}
	return c.Args[0]
}

// run starts the federation in dependency order and waits for each role.
func (h *harness) run(ctx context.Context) {
	order := []string{"statestore", "subcluster-agent", "router", "amrmproxy", "gpg"}
	var stores []*started
	known := map[string]bool{}
	for _, r := range order {
		known[r] = true
	}
	for _, p := range h.pods {
		if !known[role(p)] {
			h.t.Fatalf("%s: role %q is not one this test starts", p.name, role(p))
		}
	}
	for _, r := range order {
		var group []*started
		for _, p := range h.pods {
			if role(p) == r {
				group = append(group, h.launch(p))
			}
		}
		if r == "subcluster-agent" {
			// The RMs' addresses are known once the agents' args resolved.
			h.startRMs(ctx)
		}
		for _, s := range group {
			h.waitHTTP(ctx, s.proc, s.probeURL)
		}
		h.t.Logf("%s: %d ready", r, len(group))
		if r == "statestore" {
			stores = group
		}
	}
	h.checkOutside()
	scraped := map[string]bool{}
	// Prometheus finds each role's metrics where the pod's annotations say,
	// and the GPG's Kubernetes source synced its informers with the
	// ServiceAccount's token (RBAC it lacked would leave it unsynced).
	for _, p := range h.pods {
		ann := p.template.Annotations
		port, ok := containerPort(p.template, ann["prometheus.io/port"])
		if !ok {
			h.t.Fatalf("%s: prometheus.io/port %q is not a container port", p.name, ann["prometheus.io/port"])
		}
		url := "http://" + h.loop(p.name+"/"+strconv.Itoa(int(port))) + ann["prometheus.io/path"]
		want := "yarnfed_"
		if role(p) == "gpg" {
			want = "yarnfed_gpg_kube_synced{"
		}
		h.waitMetric(ctx, p, url, want)
		// What the role exposes is what the source scan behind the
		// monitoring tests found (monitoring_test.go).
		resp, err := http.Get(url)
		if err != nil {
			h.t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			h.t.Fatal(err)
		}
		checkScrapedMetrics(h.t, p.name, body, scraped)
	}
	checkLibraryMetricsSeen(h.t, scraped)
	// Every role is ready; the router sees the sub-cluster the agent
	// registered from the manifests' RM addresses.
	for _, p := range h.pods {
		if role(p) != "router" {
			continue
		}
		if h.krb != nil {
			cfg := ""
			for _, a := range h.args[p.name] {
				if v, ok := strings.CutPrefix(a, "--config="); ok {
					cfg = v
				}
			}
			if cfg == "" {
				h.t.Fatalf("%s: no --config=", p.name)
			}
			h.checkKerberosRouter(ctx, p, cfg)
			continue
		}
		port, _ := containerPort(p.template, "web")
		url := "http://" + h.loop(p.name+"/"+strconv.Itoa(int(port))) + "/ws/v1/cluster/info"
		resp, err := http.Get(url)
		if err != nil {
			h.t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			h.t.Fatalf("router %s: %s", url, resp.Status)
		}
	}
	if h.krb != nil {
		h.checkRMFronts()
	}
	h.stopLeader(ctx, stores)
}

// stopLeader sends the state store leader SIGTERM, as the kubelet does when
// a rolling update replaces its pod: it must hand leadership over before it
// exits (its log says so), and the others must name the new leader.
func (h *harness) stopLeader(ctx context.Context, stores []*started) {
	t := h.t
	leaderOf := func(s *started) string {
		resp, err := http.Get(s.probeURL)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		_, after, _ := strings.Cut(string(b), "leader=")
		id, _, _ := strings.Cut(after, " ")
		return id
	}
	var leader *started
	id := leaderOf(stores[0])
	for _, s := range stores {
		if s.proc.name == id {
			leader = s
		}
	}
	if leader == nil {
		t.Fatalf("the replicas name leader %q, which is none of them", id)
	}
	_ = leader.proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-leader.proc.done:
	case <-ctx.Done():
		t.Fatalf("%s: still running after SIGTERM", id)
	}
	if full, _ := os.ReadFile(leader.proc.log); !strings.Contains(string(full), "statestore: leadership transferred") {
		t.Fatalf("%s stopped without handing leadership over:\n%s", id, leader.proc.tail())
	}
	for _, s := range stores {
		if s == leader {
			continue
		}
		for l := leaderOf(s); l == "" || l == id; l = leaderOf(s) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never named a new leader after %s stopped", s.proc.name, id)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	t.Logf("statestore: %s handed leadership over on SIGTERM", id)
}

// waitMetric polls a Prometheus endpoint until a sample line starting with
// prefix has the value 1 (or, for "yarnfed_", until any yarnfed metric is
// there).
func (h *harness) waitMetric(ctx context.Context, p *pod, url, prefix string) {
	h.t.Helper()
	var last string
	for {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = resp.Status
			if resp.StatusCode == http.StatusOK {
				for _, line := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(line, prefix) && (prefix == "yarnfed_" || strings.HasSuffix(line, " 1")) {
						return
					}
				}
				last = "no sample " + prefix + " ... 1"
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("%s: %s: %s", p.name, url, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
