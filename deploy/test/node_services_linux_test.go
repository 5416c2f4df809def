package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

// TestOneNodeClusterServicesAndDNS: on the one-node cluster, kube-proxy (in
// each of its modes, nftables and iptables)
// routes Services and CoreDNS answers for them, as deploy/'s overlays need.
// A pod behind a NodePort Service answers through its ClusterIP and its DNS
// name from another pod (on the bridge, and on the host network with
// ClusterFirstWithHostNet), from itself (hairpin), and from the test process
// (DialContext: by ClusterIP, by name, by NodeIP:nodePort); a StatefulSet
// pod's headless name (pod.svc.ns.svc.cluster.local and its short search
// forms) resolves inside a pod to the pod's IP. Command runs inside the
// network namespace (kube-proxy's ruleset is there, not on the host). After
// cleanup nothing is left: no rules in the host's namespace, no process or
// file in the cluster's, no mounts.
func TestOneNodeClusterServicesAndDNS(t *testing.T) {
	// kube-proxy's two modes: nftables (kubenode's default) and iptables
	// (iptables-nft here), one cluster each.
	for _, mode := range []string{"nftables", "iptables"} {
		t.Run(mode, func(t *testing.T) {
			var snap hostSnapshot
			var c *kubenode.Cluster
			t.Run("cluster", func(t *testing.T) {
				c = kubenode.Start(t, kubenode.Options{ProxyMode: mode, Locked: func() { snap = takeHostSnapshot(t) }})
				runServicesAndDNS(t, c, mode)
			})
			if c == nil {
				return
			}
			checkNoLeftovers(t, tracesOf(c), snap)
		})
	}
}

func runServicesAndDNS(t *testing.T, c *kubenode.Cluster, mode string) {
	kc := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	begin := time.Now()
	const ns = "default"
	labels := map[string]string{"app": "web"}
	web := netcheckPod("web", labels, false, "serve", ":8080")
	web.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	web.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 1,
	}
	mustCreate(t, func() error { _, err := kc.CoreV1().Pods(ns).Create(ctx, web, metav1.CreateOptions{}); return err })
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}
	mustCreate(t, func() error { _, err := kc.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); return err })

	// A StatefulSet behind a headless Service, as the statestore's peers.
	dbLabels := map[string]string{"app": "db"}
	peers := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db-peers", Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: dbLabels, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}},
		},
	}
	mustCreate(t, func() error {
		_, err := kc.CoreV1().Services(ns).Create(ctx, peers, metav1.CreateOptions{})
		return err
	})
	one := int32(1)
	dbPod := netcheckPod("", dbLabels, false, "serve", ":8080")
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &one, ServiceName: peers.Name,
			Selector: &metav1.LabelSelector{MatchLabels: dbLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: dbPod.ObjectMeta, Spec: dbPod.Spec},
		},
	}
	sts.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	mustCreate(t, func() error {
		_, err := kc.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
		return err
	})

	webPod := waitPod(ctx, t, c, kc, ns, "web", func(p *corev1.Pod) bool { return podReady(p) })
	db0 := waitPod(ctx, t, c, kc, ns, "db-0", func(p *corev1.Pod) bool { return p.Status.PodIP != "" && p.Status.Phase == corev1.PodRunning })
	svc, err := kc.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
	t.Logf("web: pod %s, ClusterIP %s, NodePort %d; db-0: %s; both up %v after the Node was Ready", webPod.Status.PodIP, clusterIP, nodePort, db0.Status.PodIP, time.Since(begin).Round(time.Millisecond))

	// From other pods: the bridge, and the host network with the cluster's
	// DNS (as the AMRMProxy DaemonSet runs), and from web itself.
	wantGet := map[string]string{
		"http://" + clusterIP + "/":              "web",
		"http://web/":                            "web", // the search list's <ns>.svc.cluster.local
		"http://web.default.svc.cluster.local/":  "web",
		"http://db-0.db-peers:8080/":             "db-0",
		"http://db-0.db-peers.default.svc:8080/": "db-0",
	}
	wantResolve := map[string]string{
		"db-0.db-peers.default.svc.cluster.local": db0.Status.PodIP,
		"db-0.db-peers.default.svc":               db0.Status.PodIP,
		"db-0.db-peers":                           db0.Status.PodIP,
		"web.default.svc.cluster.local":           clusterIP,
		"web":                                     clusterIP,
	}
	var gets, names []string
	for u := range wantGet {
		gets = append(gets, u)
	}
	for n := range wantResolve {
		names = append(names, n)
	}
	for _, host := range []bool{false, true} {
		name := "client-podnet"
		if host {
			name = "client-hostnet"
		}
		out := runNetcheck(ctx, t, c, kc, ns, name, host, append([]string{"get"}, gets...))
		checkLines(t, name, out, wantGet)
		out = runNetcheck(ctx, t, c, kc, ns, name+"-dns", host, append([]string{"resolve"}, names...))
		checkLines(t, name+"-dns", out, wantResolve)
	}
	t.Logf("four client pods done %v after the Node was Ready", time.Since(begin).Round(time.Millisecond))
	// Hairpin: a pod reaches itself through its own Service (the Service
	// publishes it unready: its client container's exit makes it so). The
	// Service's name is not the pod's: the pod's /etc/hosts names itself.
	self := netcheckPod("self", map[string]string{"app": "self"}, false, "serve", ":8080")
	client := self.Spec.Containers[0]
	client.Name, client.Args = "client", []string{"get", "http://loop/"}
	self.Spec.Containers = append(self.Spec.Containers, client)
	selfSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "loop", Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: self.Labels, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	mustCreate(t, func() error {
		_, err := kc.CoreV1().Services(ns).Create(ctx, selfSvc, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error { _, err := kc.CoreV1().Pods(ns).Create(ctx, self, metav1.CreateOptions{}); return err })
	var exit int32
	waitPod(ctx, t, c, kc, ns, "self", func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "client" && cs.State.Terminated != nil {
				exit = cs.State.Terminated.ExitCode
				return true
			}
		}
		return false
	})
	logs, err := kc.CoreV1().Pods(ns).GetLogs("self", &corev1.PodLogOptions{Container: "client"}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod self, container client: logs: %v", err)
	}
	if exit != 0 {
		t.Errorf("pod self through its own Service (hairpin): exit %d\n%s", exit, logs)
	}
	checkLines(t, "self (hairpin)", string(logs), map[string]string{"http://loop/": "self"})

	t.Logf("hairpin pod done %v after the Node was Ready", time.Since(begin).Round(time.Millisecond))
	// From the test process, through the namespace.
	tr := &http.Transport{DialContext: c.DialContext}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, u := range []string{
		"http://" + clusterIP + "/",
		"http://web.default.svc.cluster.local/",
		fmt.Sprintf("http://%s:%d/", kubenode.NodeIP, nodePort),
		"http://" + net.JoinHostPort(webPod.Status.PodIP, "8080") + "/",
		"http://db-0.db-peers.default.svc.cluster.local:8080/",
	} {
		want := "web"
		if strings.Contains(u, "db-0") {
			want = "db-0"
		}
		if got, err := httpGet(ctx, hc, u); err != nil || got != want {
			t.Errorf("test process GET %s: %q, %v; want %q", u, got, err, want)
		}
	}
	ips, err := c.Resolver().LookupHost(ctx, "db-0.db-peers.default.svc.cluster.local")
	if err != nil || len(ips) != 1 || ips[0] != db0.Status.PodIP {
		t.Errorf("Resolver: db-0.db-peers.default.svc.cluster.local = %v, %v; want [%s]", ips, err, db0.Status.PodIP)
	}

	// Command runs inside the namespace: kube-proxy's rules are there (and
	// not on the host, which checkNoLeftovers compares before and after):
	// its own table in nftables mode, its chains in iptables-nft's tables.
	marker := map[string]string{"nftables": "table ip kube-proxy", "iptables": "chain KUBE-SERVICES"}[mode]
	out, err := c.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil || !strings.Contains(string(out), marker) {
		t.Errorf("nft list ruleset in the cluster's namespace (want %q): %v\n%s", marker, err, out)
	}
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// netcheckPod is a pod of kubenode.NetcheckImage under the restricted
// profile's settings; on the host network its DNS is still the cluster's.
func netcheckPod(name string, labels map[string]string, hostNetwork bool, args ...string) *corev1.Pod {
	p := restrictedPod(name, "netcheck", kubenode.NetcheckImage, hostNetwork, args...)
	p.Labels = labels
	if hostNetwork {
		p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	return p
}

// runNetcheck runs netcheck ARGS in a pod to completion and returns its
// output.
func runNetcheck(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, ns, name string, hostNetwork bool, args []string) string {
	t.Helper()
	pod := netcheckPod(name, nil, hostNetwork, args...)
	mustCreate(t, func() error { _, err := kc.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); return err })
	p := waitPod(ctx, t, c, kc, ns, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs, err := kc.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("pod %s logs: %v", name, err)
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod %s (netcheck %v) %s:\n%s", name, args, p.Status.Phase, logs)
	}
	return string(logs)
}

// checkLines wants, for each key, a line "key value" in out.
func checkLines(t *testing.T, who, out string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			got[k] = v
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s gave %q, want %q (output:\n%s)", who, k, got[k], v, out)
		}
	}
}

func httpGet(ctx context.Context, hc *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return strings.TrimSpace(string(b)), err
}

// waitPod polls a pod until done(pod); a container stuck for a reason that
// will not clear, or the deadline, fails the test with the node's view.
func waitPod(ctx context.Context, t *testing.T, c *kubenode.Cluster, kc kubernetes.Interface, ns, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	stuck := map[string]bool{"ErrImageNeverPull": true, "CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true, "RunContainerError": true}
	var last string
	for {
		p, err := kc.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			if done(p) {
				return p
			}
			last = fmt.Sprintf("phase %s %s", p.Status.Phase, p.Status.Message)
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil {
					last += fmt.Sprintf("; %s waiting: %s: %s", cs.Name, w.Reason, w.Message)
					if stuck[w.Reason] {
						t.Fatalf("pod %s stuck: %s\nkubelet:\n%s", name, last, c.Log("kubelet"))
					}
				}
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s: %s\nkubelet:\n%s", name, last, c.Log("kubelet"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
