package test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

// TestOneNodeClusterRunsYarnfedPod: the image `make image` builds (no Docker
// engine) is imported into a real node's containerd with the digest make
// printed, and a pod of it runs to completion under the restricted Pod
// Security profile's settings (non-root by the image's own USER, no
// privilege escalation, no capabilities, RuntimeDefault seccomp): once on
// the host network, once on the CNI bridge's pod network. Its output comes
// back through the API server from the kubelet, and is the binary's own.
func TestOneNodeClusterRunsYarnfedPod(t *testing.T) {
	const image = "yarnfed:kubenode-test"
	root := repoRoot(t)
	archive := filepath.Join(t.TempDir(), "yarnfed.oci.tar")
	begin := time.Now()
	cmd := exec.Command("make", "-s", "image", "IMAGE="+image, "IMAGE_ARCHIVE="+archive)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	digest := regexp.MustCompile(`(?m)^sha256:[0-9a-f]{64}$`).FindString(string(out))
	if digest == "" {
		t.Fatalf("make image printed no digest:\n%s", out)
	}
	t.Logf("make image: %s in %v", digest, time.Since(begin).Round(time.Millisecond))
	want, err := exec.Command(filepath.Join(root, "bin", "linux", "yarnfed"), "version").Output()
	if err != nil {
		t.Fatalf("bin/linux/yarnfed version: %v", err)
	}

	var snap hostSnapshot
	var c *kubenode.Cluster
	// The cluster lives for this subtest; its cleanup has run when t.Run
	// returns, and what it leaves on the host is checked below.
	t.Run("pods", func(t *testing.T) {
		c = kubenode.Start(t, kubenode.Options{Images: []string{archive}, Locked: func() { snap = takeHostSnapshot(t) }})
		runVersionPods(t, c, image, digest, string(want))
	})
	if c == nil {
		return
	}
	checkNoLeftovers(t, tracesOf(c), snap)
}

// clusterTraces name what of one cluster could be left on the host (a
// cluster of another process: TestOneNodeClusterInterrupted's child).
type clusterTraces struct {
	Dir        string // Cluster.Dir
	CgroupRoot string // Cluster.CgroupRoot
	NetNSLink  string // Cluster.NetNSLink()
}

func tracesOf(c *kubenode.Cluster) clusterTraces {
	return clusterTraces{Dir: c.Dir, CgroupRoot: c.CgroupRoot, NetNSLink: c.NetNSLink()}
}

// hostSnapshot is what a cluster must leave as it found it on the host.
type hostSnapshot struct {
	sysctls  map[string]string
	absent   []string // HostDirs that did not exist
	nft      string   // the host namespace's nftables ruleset
	iptables string   // and its iptables rules (both families)
}

func takeHostSnapshot(t *testing.T) hostSnapshot {
	s := hostSnapshot{sysctls: readSysctls(), nft: hostNft(t), iptables: hostIptables(t)}
	for _, d := range kubenode.HostDirs {
		if _, err := os.Stat(d); err != nil {
			s.absent = append(s.absent, d)
		}
	}
	return s
}

// hostNft is `nft list ruleset` in the test's (the host's) network
// namespace, "" where nft is missing (Start then fails or skips anyway).
func hostNft(t *testing.T) string {
	if _, err := exec.LookPath("nft"); err != nil {
		return ""
	}
	out, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list ruleset: %v\n%s", err, out)
	}
	return string(out)
}

// hostIptables is iptables-save and ip6tables-save without their comment
// lines (which carry the time) and packet counters.
func hostIptables(t *testing.T) string {
	var b strings.Builder
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(cmd); err != nil {
			continue
		}
		out, err := exec.Command(cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "#") {
				b.WriteString(regexp.MustCompile(`\[\d+:\d+\]`).ReplaceAllString(line, "") + "\n")
			}
		}
	}
	return b.String()
}

// checkNoLeftovers: after c's cleanup, nothing of it remains on the host: its
// directory, mounts, cgroups, processes (by command line or by network
// namespace), host directories it created, kernel settings the kubelet
// changed, firewall rules in the host's namespace; and its network namespace
// (where kube-proxy's rules live) is gone with every process in it.
func checkNoLeftovers(t *testing.T, c clusterTraces, before hostSnapshot) {
	t.Helper()
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is still there (%v)", c.Dir, err)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), c.Dir) {
		t.Errorf("mounts under %s remain", c.Dir)
	}
	if left, _ := filepath.Glob("/sys/fs/cgroup/*" + c.CgroupRoot); len(left) > 0 {
		t.Errorf("cgroups remain: %v", left)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if b, _ := os.ReadFile(p + "/cmdline"); strings.Contains(string(b), c.Dir) {
			t.Errorf("a process of the cluster remains: %s: %q", p, b)
		}
		if l, _ := os.Readlink(p + "/ns/net"); l == c.NetNSLink {
			b, _ := os.ReadFile(p + "/cmdline")
			t.Errorf("a process remains in the cluster's network namespace %s: %s: %q", l, p, b)
		}
		fds, _ := filepath.Glob(p + "/fd/*")
		for _, fd := range fds {
			if l, _ := os.Readlink(fd); l == c.NetNSLink {
				t.Errorf("%s holds the cluster's network namespace %s open", fd, l)
			}
		}
	}
	for _, d := range before.absent {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s did not exist before the cluster and does after", d)
		}
	}
	if after := readSysctls(); !maps.Equal(before.sysctls, after) {
		t.Errorf("kernel settings the kubelet changes were not restored: before %v, after %v", before.sysctls, after)
	}
	if after := hostNft(t); after != before.nft {
		t.Errorf("the host's nftables ruleset changed:\nbefore:\n%s\nafter:\n%s", before.nft, after)
	}
	if after := hostIptables(t); after != before.iptables {
		t.Errorf("the host's iptables rules changed:\nbefore:\n%s\nafter:\n%s", before.iptables, after)
	}
}

func readSysctls() map[string]string {
	m := map[string]string{}
	for _, s := range kubenode.KubeletSysctls {
		b, _ := os.ReadFile("/proc/sys/" + s)
		m[s] = strings.TrimSpace(string(b))
	}
	return m
}

func runVersionPods(t *testing.T, c *kubenode.Cluster, image, digest, want string) {
	if got := c.ImageDigest("docker.io/library/" + image); got != digest {
		t.Fatalf("containerd holds docker.io/library/%s as %q, make image built %s", image, got, digest)
	}

	kc := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	for _, host := range []bool{true, false} {
		pod := versionPod(image, host)
		if _, err := kc.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
	podNet := netip.MustParsePrefix(kubenode.PodCIDR)
	for _, host := range []bool{true, false} {
		name := versionPod(image, host).Name
		p := waitPodDone(ctx, t, c, kc, name)
		t.Logf("pod %s: %s after %v (IP %s)", name, p.Status.Phase, time.Since(start).Round(time.Millisecond), p.Status.PodIP)
		ip, err := netip.ParseAddr(p.Status.PodIP)
		switch {
		case err != nil:
			t.Errorf("pod %s: IP %q: %v", name, p.Status.PodIP, err)
		case host && p.Status.PodIP != kubenode.NodeIP:
			t.Errorf("hostNetwork pod %s has IP %s, want the node's %s", name, ip, kubenode.NodeIP)
		case !host && !podNet.Contains(ip):
			t.Errorf("pod %s has IP %s, outside the CNI range %s", name, ip, podNet)
		}
		logs, err := kc.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("pod %s logs (API server -> kubelet): %v", name, err)
		}
		if string(logs) != want {
			t.Errorf("pod %s printed %q, the binary prints %q", name, logs, want)
		}
	}
	t.Logf("timings: control plane %v, images imported %v, node Ready %v (from Start)",
		c.Timings.ControlPlane.Round(time.Millisecond), c.Timings.Imported.Round(time.Millisecond), c.Timings.NodeReady.Round(time.Millisecond))
}

func versionPod(image string, hostNetwork bool) *corev1.Pod {
	name := "yarnfed-version-podnet"
	if hostNetwork {
		name = "yarnfed-version-hostnet"
	}
	return restrictedPod(name, "yarnfed", image, hostNetwork, "version")
}

// restrictedPod is a one-container pod in "default" that runs IMAGE with
// ARGS once, under the restricted Pod Security profile's settings: non-root,
// no privilege escalation, no capabilities, RuntimeDefault seccomp, and no
// service-account token. The image must already be in the node's containerd.
func restrictedPod(name, container, image string, hostNetwork bool, args ...string) *corev1.Pod {
	no, yes := false, true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			HostNetwork:                  hostNetwork,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{
				// No runAsUser: the kubelet must find the image's own USER
				// non-root, or it refuses to start the container.
				RunAsNonRoot:   &yes,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            container,
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
				Args:            args,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// waitPodDone polls the pod until it Succeeded; a failure, a container stuck
// waiting for a reason that will not clear, or the deadline fails the test
// with the node's view.
func waitPodDone(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	stuck := map[string]bool{"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true, "RunContainerError": true}
	var last string
	for {
		p, err := kc.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = fmt.Sprintf("phase %s %s", p.Status.Phase, p.Status.Message)
			if p.Status.Phase == corev1.PodSucceeded {
				return p
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					last += fmt.Sprintf("; %s waiting: %s: %s", cs.Name, w.Reason, w.Message)
					if stuck[w.Reason] {
						p.Status.Phase = corev1.PodFailed
					}
				}
				if term := cs.State.Terminated; term != nil {
					last += fmt.Sprintf("; %s terminated: exit %d %s %s", cs.Name, term.ExitCode, term.Reason, term.Message)
				}
			}
			if p.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod %s failed: %s\nkubelet:\n%s", name, last, c.Log("kubelet"))
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not done: %s\nkubelet:\n%s\ncontainerd:\n%s", name, last, c.Log("kubelet"), c.Log("containerd"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
