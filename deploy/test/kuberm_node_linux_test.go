package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

const (
	// kubermImage is the yarnfed image (`make image`, FROM scratch,
	// /yarnfed) as containerd names it: kuberm's AM and container pods run
	// it, with the JDK, the shell and Hadoop from host paths.
	kubermImageTag = "kubenode-kuberm"
	kubermImage    = "docker.io/library/yarnfed:" + kubermImageTag
	// kubermNS holds the applications' Secrets and pods.
	kubermNS         = "yarn"
	kubermSubCluster = "SC-kube"
	kubermSA         = "yarnfed-kuberm"
)

// kubermPorts: every port kuberm serves, bound on the node's IP (Hadoop's
// numbers: client 8032, scheduler 8030, admin 8033, NodeManager 8041, web
// 8088).
var kubermPorts = map[string]string{
	"client_address":    kubenode.NodeIP + ":8032",
	"scheduler_address": kubenode.NodeIP + ":8030",
	"admin_address":     kubenode.NodeIP + ":8033",
	"nm_address":        kubenode.NodeIP + ":8041",
	"web_address":       kubenode.NodeIP + ":8088",
}

// TestKubermOnNode is issue 24's proof on the one-node Kubernetes with a
// real kubelet, containerd and kube-scheduler: `yarnfed kuberm` runs YARN
// applications, unmodified, as pods of our FROM-scratch image, with no YARN
// process anywhere. One cluster and one image serve every scenario, each a
// subtest and its own proof; each scenario that needs a federation starts
// its own (startKubeFed: a fresh state store, a kuberm with the scenario's
// configuration, a router) and stops it at its end, after its leak check:
//
//   - host-path runtime: a pod of the FROM-scratch yarnfed image as uid
//     65534 (nobody) runs bash, java and Hadoop classes from read-only host paths;
//     each system mount, dropped in turn, fails the pod with its own error
//     (so the list in systemMounts is what is needed, not a guess);
//   - node IP reachable: `yarnfed kuberm`, a process of the node's network
//     namespace bound to the node's InternalIP, is reached at every port it
//     prints from a pod on the pod network and from the test process;
//   - distributed shell: the stock DS client through the router, the pods
//     checked as they come and go, then no container pod or launch Secret
//     left; and a second application killed through the router leaves no
//     pod at all (kuberm_ds_linux_test.go);
//   - unmanaged AM: Hadoop's UnmanagedAMLauncher through the router, the
//     distributed shell AM on the host, its containers pods
//     (kuberm_uam_linux_test.go);
//   - Spark Pi: Spark's own spark-submit in cluster mode, kuberm with
//     host_network (kuberm_spark_linux_test.go);
//   - spanning: the distributed shell through the router and the
//     AMRMProxy, its AM on a real Hadoop NodeManager (SC-1: Hadoop's own
//     RM and NM), its containers on that NodeManager and on kuberm
//     (kuberm_span_linux_test.go);
//   - bench: the CI smoke of `yarnfed bench kuberm` against a standalone
//     Hadoop RM + NM beside kuberm (kuberm_bench_linux_test.go);
//   - failures: Koordinator batch resources patched on the Node before that
//     scenario's kuberm starts, a container pod deleted mid-application,
//     kuberm restarted mid-application (kuberm_fail_linux_test.go). Last:
//     the patch stays on the Node, and with it every later pod would be a
//     batch pod.
//
// A scenario that fails does not stop the later ones (each has its own
// federation and context); `-run 'TestKubermOnNode/<scenario>'` runs one
// scenario on a cluster of its own.
func TestKubermOnNode(t *testing.T) {
	total := time.Now()
	rt := needJavaRuntime(t)
	archive := makeKubermImage(t)
	bin := filepath.Join(repoRoot(t), "bin", "linux", "yarnfed")
	hd := makeHostDirs(t, rt)

	starting := time.Now()
	t.Logf("step java runtime, image and host directories: %v", starting.Sub(total).Round(time.Millisecond))
	var locked time.Time
	c := kubenode.Start(t, kubenode.Options{Images: []string{archive}, Locked: func() { locked = time.Now() }})
	kc := c.Client()
	// Each scenario has a deadline of its own within this one (the
	// package's -timeout is 60 minutes), so a stuck one leaves time for
	// the next.
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	yarnNamespace(ctx, t, kc, kubermNS)
	kubeconfig := kubermKubeconfig(ctx, t, c, kc)
	t.Logf("step cluster up: %v after the lock (%v waiting for it)", time.Since(locked).Round(time.Millisecond), locked.Sub(starting).Round(time.Millisecond))

	scenario := func(name string, limit time.Duration, run func(ctx context.Context, t *testing.T)) {
		begin := time.Now()
		ran := false // not when -run leaves it out
		t.Run(name, func(t *testing.T) {
			ran = true
			sctx, scancel := context.WithTimeout(ctx, limit)
			defer scancel()
			run(sctx, t)
		})
		if ran {
			t.Logf("step %s: %v", name, time.Since(begin).Round(time.Millisecond))
		}
	}
	scenario("host-path runtime", 10*time.Minute, func(ctx context.Context, t *testing.T) {
		checkHostPathRuntime(ctx, t, kc, rt, hd)
	})
	scenario("node IP reachable", 5*time.Minute, func(ctx context.Context, t *testing.T) {
		checkNodeIPReachable(ctx, t, c, kc, bin, kubeconfig, rt)
	})
	scenario("distributed shell", 20*time.Minute, func(ctx context.Context, t *testing.T) {
		runDistributedShell(ctx, t, c, kc, bin, kubeconfig, rt, hd)
	})
	scenario("unmanaged AM", 20*time.Minute, func(ctx context.Context, t *testing.T) {
		uamRun(ctx, t, c, kc, bin, kubeconfig, rt, hd)
	})
	scenario("Spark Pi", 20*time.Minute, func(ctx context.Context, t *testing.T) {
		sparkRun(ctx, t, c, kc, bin, kubeconfig, rt)
	})
	scenario("spanning", 20*time.Minute, func(ctx context.Context, t *testing.T) {
		spanRun(ctx, t, c, kc, bin, kubeconfig, rt, hd)
	})
	scenario("bench", 20*time.Minute, func(ctx context.Context, t *testing.T) {
		kbenchRun(ctx, t, c, kc, bin, kubeconfig, rt)
	})
	scenario("failures", 35*time.Minute, func(ctx context.Context, t *testing.T) {
		failRun(ctx, t, c, kc, bin, kubeconfig, rt, hd)
	})
	t.Logf("whole test: %v (%v of it waiting for the node's lock)", time.Since(total).Round(time.Millisecond), locked.Sub(starting).Round(time.Millisecond))
}

// makeKubermImage runs the operator's `make image` for this test's tag; it
// also leaves bin/linux/yarnfed, the binary the node's processes run.
func makeKubermImage(t *testing.T) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "yarnfed.oci.tar")
	begin := time.Now()
	cmd := exec.Command("make", "-s", "image", "IMAGE=yarnfed:"+kubermImageTag, "IMAGE_ARCHIVE="+archive)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image: %v", time.Since(begin).Round(time.Millisecond))
	return archive
}

// checkHostPathRuntime: the runtime a YARN container pod gets from the
// host. One pod with every mount runs `java -version` and Hadoop's
// VersionInfo from the jars directory and writes its termination message
// (what the distributed shell check reads back); one pod per system mount
// that systemMounts says is needed runs without it and must fail the way it
// says; one more shows
// what `java` on PATH needs beyond $JAVA_HOME/bin/java (Debian's
// alternatives links).
func checkHostPathRuntime(ctx context.Context, t *testing.T, kc kubernetes.Interface, rt javaRuntime, hd hostDirs) {
	env := map[string]string{"JAVA_HOME": rt.javaHome}
	script := `set -e
"$JAVA_HOME/bin/java" -version
"$JAVA_HOME/bin/java" -cp '` + hd.jars + `/*' org.apache.hadoop.util.VersionInfo
"$JAVA_HOME/bin/java" -cp '` + hd.jars + `/*' org.apache.hadoop.security.UserGroupInformation
id
if touch /tmp/kuberm-probe 2>/dev/null; then echo "/tmp writable"; else echo "/tmp not writable"; fi
echo runtime-ok >/dev/termination-log`
	system := systemMounts(rt.javaHome)
	var all []string
	for _, m := range system {
		all = append(all, m.Path)
	}
	all = append(all, hd.jars)
	type podCase struct {
		name   string
		mounts []string
		script string
		fail   *regexp.Regexp // nil: must succeed
	}
	cases := []podCase{{name: "runtime-all", mounts: all, script: script}}
	for i, m := range system {
		if m.FailsWith == nil {
			continue
		}
		var without []string
		for j, p := range all {
			if j != i {
				without = append(without, p)
			}
		}
		name := "runtime-without" + strings.NewReplacer("/", "-", ".", "-").Replace(m.Path)
		cases = append(cases, podCase{name: name, mounts: without, script: script, fail: m.FailsWith})
	}
	cases = append(cases, podCase{name: "runtime-java-on-path", mounts: append(append([]string{}, all...), "/etc/alternatives"),
		script: "set -e; command -v java; java -version"})

	begin := time.Now()
	for _, pc := range cases {
		if _, err := kc.CoreV1().Pods(kubermNS).Create(ctx, runtimePod(kubermNS, pc.name, kubermImage, pc.mounts, env, pc.script), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pc.name, err)
		}
	}
	for _, pc := range cases {
		o := waitPodEnded(ctx, t, kc, kubermNS, pc.name)
		t.Logf("pod %s (%d mounts) after %v: %s", pc.name, len(pc.mounts), time.Since(begin).Round(time.Millisecond), o)
		if pc.fail == nil {
			if o.phase != corev1.PodSucceeded {
				t.Errorf("pod %s: want Succeeded, got %s", pc.name, o)
			}
			continue
		}
		if o.phase != corev1.PodFailed {
			t.Errorf("pod %s: a pod without that mount must fail, got %s", pc.name, o)
		} else if !pc.fail.MatchString(o.message + "\n" + o.logs) {
			t.Errorf("pod %s failed, but not with %s: %s", pc.name, pc.fail, o)
		}
	}
	o := waitPodEnded(ctx, t, kc, kubermNS, "runtime-all")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`openjdk version "17`),
		regexp.MustCompile(`(?m)^Hadoop 3\.4\.\d+$`),
		regexp.MustCompile(`uid=` + podUID + `\(nobody\)`),
		regexp.MustCompile(`User: nobody`),
	} {
		if !want.MatchString(o.logs) {
			t.Errorf("pod runtime-all's output lacks %s:\n%s", want, o.logs)
		}
	}
	if o.message != "runtime-ok\n" {
		t.Errorf("pod runtime-all's termination message is %q, want what it wrote to /dev/termination-log", o.message)
	}
	for _, pc := range cases {
		_ = kc.CoreV1().Pods(kubermNS).Delete(ctx, pc.name, metav1.DeleteOptions{})
	}
}

// kubermKubeconfig gives kuberm what an operator gives it: a ServiceAccount
// bound to exactly kuberm/rbac.yaml (cluster-wide, ClusterRoleBinding) and
// kuberm/rbac-namespace.yaml (RoleBinding in its namespace), and a
// kubeconfig with a token of that account (TokenRequest). A verb the files
// lack fails kuberm here as it would in production.
func kubermKubeconfig(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface) string {
	t.Helper()
	if _, err := kc.CoreV1().ServiceAccounts(kubermNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kubermSA}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kubermSA, Namespace: kubermNS}}
	user := "system:serviceaccount:" + kubermNS + ":" + kubermSA
	for _, f := range []struct {
		file string
		ns   string // "": cluster-wide
	}{{"rbac.yaml", ""}, {"rbac-namespace.yaml", kubermNS}} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "kuberm", f.file))
		if err != nil {
			t.Fatal(err)
		}
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(b, &role); err != nil {
			t.Fatalf("kuberm/%s: %v", f.file, err)
		}
		if _, err := kc.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatalf("kuberm/%s: %v", f.file, err)
		}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
		if f.ns == "" {
			_, err = kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
		} else {
			_, err = kc.RbacV1().RoleBindings(f.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, RoleRef: ref, Subjects: subject}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("bind kuberm/%s: %v", f.file, err)
		}
		// The authorizer reads bindings from a cache: wait until each rule
		// is in force, or kuberm's first calls may be refused.
		for _, rule := range role.Rules {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					attrs := &authzv1.ResourceAttributes{Namespace: f.ns, Verb: verb, Resource: res, Group: rule.APIGroups[0]}
					waitFor(ctx, t, fmt.Sprintf("%s may %s %s", user, verb, res), func() (bool, string) {
						r, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
							Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + kubermNS}, ResourceAttributes: attrs},
						}, metav1.CreateOptions{})
						if err != nil {
							return false, err.Error()
						}
						return r.Status.Allowed, r.Status.Reason
					})
				}
			}
		}
	}
	exp := int64(3600)
	tr, err := kc.CoreV1().ServiceAccounts(kubermNS).CreateToken(ctx, kubermSA, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", user, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubenode"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[kubermSA] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["kubenode"] = &clientcmdapi.Context{Cluster: "kubenode", AuthInfo: kubermSA, Namespace: kubermNS}
	cfg.CurrentContext = "kubenode"
	p := filepath.Join(t.TempDir(), "kuberm.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubermConfig is `yarnfed kuberm`'s JSON configuration for this node:
// every port on the node's InternalIP, the pods' image, the ServiceAccount's
// kubeconfig; extra adds or overrides keys.
func kubermConfig(t *testing.T, kubeconfig string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"subcluster_id":   kubermSubCluster,
		"namespace":       kubermNS,
		"kubeconfig":      kubeconfig,
		"image":           kubermImage,
		"resync_interval": "500ms",
		"run_as_user":     podUIDNum,
		"log_level":       "info",
	}
	for k, v := range kubermPorts {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kuberm.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("kuberm configuration:\n%s", b)
	return p
}

// kubermStarted matches the last address line `yarnfed kuberm` prints once
// every listener is bound.
var kubermStarted = regexp.MustCompile(`(?m)^\s+webapp\s+\S+`)

// checkNodeIPReachable: `yarnfed kuberm` runs as a process of the node's
// network namespace (what a process on the node, or a hostNetwork pod, is)
// bound to the node's InternalIP, which is the host of the NodeIds it hands
// out. Every address it prints must answer a TCP connection from a pod on
// the pod network (the network YARN container pods, AMs included, are on)
// and from the test process (the router's and the clients' side); the REST
// port must answer /healthz from both.
func checkNodeIPReachable(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, bin, kubeconfig string, rt javaRuntime) {
	node, err := kc.CoreV1().Nodes().Get(ctx, kubenode.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var internal string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal != kubenode.NodeIP {
		t.Fatalf("node %s's InternalIP is %q, kuberm binds %s: NodeIds would not lead to it", node.Name, internal, kubenode.NodeIP)
	}

	p := startNodeProcess(t, c, "kuberm", bin, "kuberm", "--no-store", "--config", kubermConfig(t, kubeconfig, nil))
	p.waitOutput(ctx, t, kubermStarted)
	addrs := listenAddrs(p.output())
	for _, k := range []string{"client", "scheduler", "admin", "webapp"} {
		if addrs[k] == "" {
			t.Fatalf("kuberm printed no %s address:\n%s", k, p.output())
		}
	}
	t.Logf("kuberm serves %v", addrs)

	// From the test process, through the node's network namespace.
	for name, a := range addrs {
		conn, err := c.DialContext(ctx, "tcp", a)
		if err != nil {
			t.Errorf("test process -> kuberm %s at %s: %v", name, a, err)
			continue
		}
		conn.Close()
	}
	web := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: c.DialContext, DisableKeepAlives: true}}
	resp, err := web.Get("http://" + addrs["webapp"] + "/healthz")
	if err != nil {
		t.Errorf("test process -> kuberm /healthz: %v", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("test process -> kuberm /healthz: %s %s", resp.Status, body)
		}
	}

	// From a pod on the pod network, with bash's /dev/tcp (the container
	// pods' runtime: the yarnfed image plus the host's bash).
	var script strings.Builder
	script.WriteString("set -e\n")
	for name, a := range addrs {
		h, port, _ := net.SplitHostPort(a)
		fmt.Fprintf(&script, "exec 3<>/dev/tcp/%s/%s; exec 3>&-; echo 'connected %s %s'\n", h, port, name, a)
	}
	h, port, _ := net.SplitHostPort(addrs["webapp"])
	fmt.Fprintf(&script, "exec 3<>/dev/tcp/%s/%s; printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3; read -r status <&3; echo \"healthz: $status\"\n", h, port)
	mounts := []string{}
	for _, m := range systemMounts(rt.javaHome) {
		mounts = append(mounts, m.Path)
	}
	const probe = "kuberm-probe"
	if _, err := kc.CoreV1().Pods(kubermNS).Create(ctx, runtimePod(kubermNS, probe, kubermImage, mounts, nil, script.String()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := waitPodEnded(ctx, t, kc, kubermNS, probe)
	t.Logf("pod %s: %s", probe, o)
	if o.phase != corev1.PodSucceeded {
		t.Errorf("a pod on the pod network cannot reach kuberm at the node IP: %s", o)
	}
	for name, a := range addrs {
		if !strings.Contains(o.logs, "connected "+name+" "+a+"\n") {
			t.Errorf("pod -> kuberm %s at %s: no connection", name, a)
		}
	}
	if !regexp.MustCompile(`healthz: HTTP/1\.[01] 200`).MatchString(o.logs) {
		t.Errorf("pod -> kuberm /healthz: %q", o.logs)
	}
	pod, err := kc.CoreV1().Pods(kubermNS).Get(ctx, probe, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err != nil || !netip.MustParsePrefix(kubenode.PodCIDR).Contains(ip) {
		t.Errorf("probe pod IP %q is not on the pod network %s", pod.Status.PodIP, kubenode.PodCIDR)
	}
	_ = kc.CoreV1().Pods(kubermNS).Delete(ctx, probe, metav1.DeleteOptions{})
}
