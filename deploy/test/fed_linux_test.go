package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/deploy/test/kubenode"
)

// fedImage is the tag `make image` builds for the scenarios; kubenode
// imports it as docker.io/library/yarnfed:kubenode-fed, and the operator
// overlay's images: entry points every workload at it.
const (
	fedImageName = "yarnfed"
	fedImageTag  = "kubenode-fed"
)

// makeFedImage runs the operator's `make image` for the scenarios' tag and
// returns the archive kubenode imports.
func makeFedImage(t *testing.T) string {
	t.Helper()
	archive := filepath.Join(t.TempDir(), "yarnfed.oci.tar")
	begin := time.Now()
	cmd := exec.Command("make", "-s", "image", "IMAGE="+fedImageName+":"+fedImageTag, "IMAGE_ARCHIVE="+archive)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Logf("make image: %v", time.Since(begin).Round(time.Millisecond))
	return archive
}

// fedOptions describe one federation the scenarios install.
type fedOptions struct {
	namespace string
	// subClusters: one simulated RM (simrm, as a pod) and one sub-cluster
	// agent each. The base ships SC-1's agent; the others are copies of it,
	// as deploy/README.md tells an operator to make them.
	subClusters []string
	// amrmproxyOnNode: label the Node yarnfed.io/subcluster=SC-1 so this
	// federation's AMRMProxy DaemonSet runs there. A second federation on
	// the same node cannot (host ports 8049/8070): its DaemonSet selects
	// yarnfed.io/federation=<namespace>, which the node lacks, as README's
	// "Two federations in one cluster" says to do.
	amrmproxyOnNode bool
	// clusterTimestamp: the first simrm's; each next one gets +1 (two RMs
	// started in the same millisecond would hand out the same ids).
	clusterTimestamp int64
	// hostDir: where the node's hostPath volumes live for this test (the
	// statestore's PersistentVolumes, the AMRMProxy's state directory).
	hostDir string
}

// federation is one installed federation in the one-node cluster.
type federation struct {
	t    *testing.T
	c    *kubenode.Cluster
	kc   kubernetes.Interface
	ns   string
	opts fedOptions
	pki  string // `yarnfed certs` output: ca.crt, ca.key, one directory per party
	ap   *applier
	// objects are what was applied: the rendered overlay as adapted, and
	// the simrm fixtures.
	objects []*unstructured.Unstructured
	// web reaches pod and node IPs from the test process (through the
	// cluster's network namespace).
	web *http.Client
	// acked: every application the router acknowledged to a client.
	acked map[string]bool
}

// installFederation does what deploy/README.md walks an operator through,
// against the one-node cluster: namespace labelled for Pod Security, a CA
// and per-role certificates from `yarnfed certs` stored as Secrets, the
// operator's overlay rendered with kustomize (namespace, image, version
// label, transformers/instance), applied server-side, and every rollout
// waited for. What it changes for this one 2-core node is listed in
// adaptToOneNode, each with its reason; the sub-cluster RMs are simrm pods.
func installFederation(ctx context.Context, t *testing.T, c *kubenode.Cluster, opts fedOptions) *federation {
	t.Helper()
	begin := time.Now()
	f := &federation{t: t, c: c, kc: c.Client(), ns: opts.namespace, opts: opts, ap: newApplier(t, c.RESTConfig())}
	f.web = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: c.DialContext, DisableKeepAlives: true}}

	// Step 3: the namespace, labelled as README says.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/warn":    "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
	}}}
	if _, err := f.kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: create namespace: %v", f.ns, err)
	}
	f.makeSecrets(ctx)
	if opts.amrmproxyOnNode {
		patch := []byte(`{"metadata":{"labels":{"yarnfed.io/subcluster":"SC-1"}}}`)
		if _, err := f.kc.CoreV1().Nodes().Patch(ctx, kubenode.NodeName, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("label node: %v", err)
		}
	}

	// Step 2: the operator's overlay.
	r := f.renderOverlay()
	f.objects = f.adaptToOneNode(r)
	f.objects = append(f.objects, f.simRMs()...)
	f.persistentVolumes(ctx, r)

	// Step 4: apply and wait.
	for _, u := range f.objects {
		if _, err := f.ap.apply(ctx, u, false); err != nil {
			t.Fatalf("%s: apply %s %s: %v", f.ns, u.GetKind(), u.GetName(), err)
		}
	}
	f.waitRollouts(ctx, "install")
	t.Logf("%s: installed, every rollout complete after %v", f.ns, time.Since(begin).Round(time.Millisecond))
	return f
}

// certParties, as README step 3 lists them, plus one agent per
// sub-cluster and the operator's admin certificate (yarnfedctl).
func (f *federation) certArgs() []string {
	args := []string{"yarnfed-statestore=replica", "yarnfed-router=router", "yarnfed-amrmproxy=amrmproxy", "yarnfed-gpg=gpg", "ops=admin"}
	for _, sc := range f.opts.subClusters {
		args = append(args, sc+"=agent")
	}
	return args
}

// makeSecrets runs `yarnfed certs` (the image's own binary, as built by
// make image) into a directory of this federation (its own CA) and creates
// the Secrets README's loop creates.
func (f *federation) makeSecrets(ctx context.Context) {
	t := f.t
	f.pki = filepath.Join(t.TempDir(), "pki")
	bin := filepath.Join(repoRoot(t), "bin", "linux", "yarnfed")
	if out, err := exec.Command(bin, append([]string{"certs", "--dir", f.pki}, f.certArgs()...)...).CombinedOutput(); err != nil {
		t.Fatalf("yarnfed certs: %v\n%s", err, out)
	}
	secret := func(name, dir string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: map[string][]byte{}}
		for _, k := range []string{"ca.crt", "cert.crt", "cert.key"} {
			b, err := os.ReadFile(filepath.Join(f.pki, dir, k))
			if err != nil {
				t.Fatal(err)
			}
			s.Data[k] = b
		}
		if _, err := f.kc.CoreV1().Secrets(f.ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create Secret %s: %v", f.ns, name, err)
		}
	}
	for _, role := range []string{"statestore", "router", "amrmproxy", "gpg"} {
		secret("yarnfed-"+role+"-tls", "yarnfed-"+role)
	}
	for _, sc := range f.opts.subClusters {
		secret("yarnfed-agent-"+strings.ToLower(sc)+"-tls", sc)
	}
}

// renderOverlay writes the operator's kustomization of README step 2 (their
// namespace, overlays/three, transformers/instance, the image and its
// version label) and renders it.
func (f *federation) renderOverlay() *rendered {
	return operatorOverlay(f.t, f.ns, "three", fmt.Sprintf(`images:
  - name: yarnfed
    newName: %s
    newTag: %s
labels:
  - pairs:
      app.kubernetes.io/version: %s
    includeSelectors: false
    fields:
      - {kind: Deployment, path: spec/template/metadata/labels, create: true}
      - {kind: StatefulSet, path: spec/template/metadata/labels, create: true}
      - {kind: DaemonSet, path: spec/template/metadata/labels, create: true}
`, fedImageName, fedImageTag, fedImageTag))
}

// The simulated RMs' ports: a Hadoop RM's defaults.
const (
	rmClientPort    = 8032
	rmSchedulerPort = 8030
	rmAdminPort     = 8033
	rmWebPort       = 8088
)

func simrmName(sc string) string { return "simrm-" + strings.ToLower(sc) }

// rmArg is an agent's --rm for the simrm of sub-cluster sc, by its Service
// name (the RMs' addresses an operator writes in subcluster-agent.yaml).
func rmArg(sc string) string {
	h := simrmName(sc)
	return fmt.Sprintf("--rm=clientrm=%s:%d,amrm=%s:%d,admin=%s:%d,web=%s:%d", h, rmClientPort, h, rmSchedulerPort, h, rmAdminPort, h, rmWebPort)
}

// adaptToOneNode returns the rendered objects with what this cluster needs
// and a real one does not, and the operator's own edits README asks for:
//
//   - imagePullPolicy Never: no registry; the image is imported (README
//     step 1's `ctr images import`).
//   - CPU and memory requests cut to 10m/32Mi: the node has 2 cores shared
//     with the control plane, and the base asks 1.5 cores for the store
//     alone. Limits stay.
//   - no required anti-affinity on the store: three voters on one node is
//     exactly what it forbids in production, and this cluster has one node.
//   - the AMRMProxy's hostPath under the test's directory, not the
//     machine's /var/lib; in a second federation its nodeSelector names the
//     federation (README: two federations' proxies need different nodes).
//   - operator edits: the agent's --rm addresses point at the simrm
//     Services; one more agent per extra sub-cluster, a copy of SC-1's with
//     its id, RMs and Secret (README: "Another sub-cluster SC-2").
func (f *federation) adaptToOneNode(r *rendered) []*unstructured.Unstructured {
	t := f.t
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	adaptPod := func(spec *corev1.PodSpec) {
		for i := range spec.Containers {
			c := &spec.Containers[i]
			c.ImagePullPolicy = corev1.PullNever
			c.Resources.Requests = small.DeepCopy()
		}
	}
	var out []*unstructured.Unstructured
	toU := func(obj kruntime.Object) *unstructured.Unstructured {
		m, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
		if tmpls, ok, _ := unstructured.NestedSlice(m, "spec", "volumeClaimTemplates"); ok {
			for _, v := range tmpls {
				vm := v.(map[string]any)
				unstructured.RemoveNestedField(vm, "metadata", "creationTimestamp")
				delete(vm, "status")
			}
			_ = unstructured.SetNestedSlice(m, tmpls, "spec", "volumeClaimTemplates")
		}
		return &unstructured.Unstructured{Object: m}
	}
	for _, u := range r.objects {
		switch u.GetKind() {
		case "StatefulSet":
			s := &appsv1.StatefulSet{}
			mustFromU(t, u, s)
			adaptPod(&s.Spec.Template.Spec)
			s.Spec.Template.Spec.Affinity = nil
			out = append(out, toU(s))
		case "DaemonSet":
			d := &appsv1.DaemonSet{}
			mustFromU(t, u, d)
			adaptPod(&d.Spec.Template.Spec)
			for i := range d.Spec.Template.Spec.Volumes {
				if hp := d.Spec.Template.Spec.Volumes[i].HostPath; hp != nil {
					hp.Path = filepath.Join(f.opts.hostDir, f.ns, "amrmproxy")
				}
			}
			if !f.opts.amrmproxyOnNode {
				d.Spec.Template.Spec.NodeSelector = map[string]string{"yarnfed.io/federation": f.ns}
			}
			out = append(out, toU(d))
		case "Deployment":
			d := &appsv1.Deployment{}
			mustFromU(t, u, d)
			adaptPod(&d.Spec.Template.Spec)
			if d.Spec.Template.Labels["app.kubernetes.io/component"] != "subcluster-agent" {
				out = append(out, toU(d))
				continue
			}
			if d.Name != "yarnfed-agent-sc-1" {
				t.Fatalf("%s: an agent Deployment %s beside the base's SC-1: this test copies SC-1's", f.ns, d.Name)
			}
			for _, sc := range f.opts.subClusters {
				a := d.DeepCopy()
				lower := strings.ToLower(sc)
				a.Name = "yarnfed-agent-" + lower
				a.Spec.Selector.MatchLabels["yarnfed.io/subcluster"] = sc
				a.Spec.Template.Labels["yarnfed.io/subcluster"] = sc
				c := &a.Spec.Template.Spec.Containers[0]
				var args []string
				for _, arg := range c.Args {
					switch {
					case strings.HasPrefix(arg, "--rm="):
						continue
					case strings.HasPrefix(arg, "--subcluster-id="):
						arg = "--subcluster-id=" + sc
					}
					args = append(args, arg)
				}
				c.Args = append(args, rmArg(sc))
				for i := range a.Spec.Template.Spec.Volumes {
					if s := a.Spec.Template.Spec.Volumes[i].Secret; s != nil && s.SecretName == "yarnfed-agent-sc-1-tls" {
						s.SecretName = "yarnfed-agent-" + lower + "-tls"
					}
				}
				out = append(out, toU(a))
			}
		default:
			out = append(out, u)
		}
	}
	return out
}

func mustFromU(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// simRMs are the sub-clusters' RMs: one `yarnfed simrm` Deployment and
// Service each (test fixtures standing for the operator's YARN clusters),
// with the restricted profile's settings like every yarnfed pod.
func (f *federation) simRMs() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	no, yes := false, true
	for i, sc := range f.opts.subClusters {
		name := simrmName(sc)
		labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "yarnfed-test"}
		ports := []corev1.ContainerPort{{Name: "client", ContainerPort: rmClientPort}, {Name: "scheduler", ContainerPort: rmSchedulerPort},
			{Name: "admin", ContainerPort: rmAdminPort}, {Name: "web", ContainerPort: rmWebPort}}
		d := &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						AutomountServiceAccountToken: &no,
						SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: ptr(int64(65532)),
							SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
						Containers: []corev1.Container{{
							Name: "simrm", Image: fedImageName + ":" + fedImageTag, ImagePullPolicy: corev1.PullNever,
							Command: []string{"/yarnfed"},
							Args: []string{"simrm", "--cluster-id", sc, "--nodes", "4",
								"--cluster-timestamp", strconv.FormatInt(f.opts.clusterTimestamp+int64(i), 10),
								"--client-address", fmt.Sprintf("0.0.0.0:%d", rmClientPort),
								"--scheduler-address", fmt.Sprintf("0.0.0.0:%d", rmSchedulerPort),
								"--admin-address", fmt.Sprintf("0.0.0.0:%d", rmAdminPort),
								"--webapp-address", fmt.Sprintf("0.0.0.0:%d", rmWebPort)},
							Ports: ports,
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/ws/v1/cluster/info", Port: intstr.FromString("web")}}, PeriodSeconds: 2},
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
							SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
								Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						}},
					},
				},
			},
		}
		svc := &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, Labels: labels},
			Spec:       corev1.ServiceSpec{Selector: labels},
		}
		for _, p := range ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, TargetPort: intstr.FromString(p.Name)})
		}
		for _, obj := range []kruntime.Object{svc, d} {
			m, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				f.t.Fatal(err)
			}
			delete(m, "status")
			unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
			unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

// persistentVolumes gives each statestore replica's claim a volume: this
// cluster has no provisioner, so, as an operator without one does, one
// PersistentVolume per claim the StatefulSet will make, bound to it in
// advance (claimRef), of the claim template's size. hostPath directories
// owned by the pods' uid (hostPath gets no fsGroup ownership change).
func (f *federation) persistentVolumes(ctx context.Context, r *rendered) {
	t := f.t
	for _, s := range r.statefulSets {
		for _, ct := range s.Spec.VolumeClaimTemplates {
			for i := int32(0); i < *s.Spec.Replicas; i++ {
				claim := fmt.Sprintf("%s-%s-%d", ct.Name, s.Name, i)
				dir := filepath.Join(f.opts.hostDir, f.ns, claim)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				uid := 65532
				if sc := s.Spec.Template.Spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
					uid = int(*sc.RunAsUser)
				}
				if err := os.Chown(dir, uid, uid); err != nil {
					t.Fatal(err)
				}
				pv := &corev1.PersistentVolume{
					ObjectMeta: metav1.ObjectMeta{Name: f.ns + "-" + claim},
					Spec: corev1.PersistentVolumeSpec{
						Capacity:                      ct.Spec.Resources.Requests,
						AccessModes:                   ct.Spec.AccessModes,
						PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
						PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr(corev1.HostPathDirectory)}},
						ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: f.ns, Name: claim},
					},
				}
				if _, err := f.kc.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create PersistentVolume %s: %v", pv.Name, err)
				}
			}
		}
	}
}

// rolloutState says whether every workload of the federation finished
// rolling out (what `kubectl rollout status` waits for) and, if not, what
// is missing.
func (f *federation) rolloutState(ctx context.Context) (bool, string) {
	var missing []string
	for _, u := range f.objects {
		name := u.GetName()
		switch u.GetKind() {
		case "Deployment":
			d, err := f.kc.AppsV1().Deployments(f.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				missing = append(missing, err.Error())
				continue
			}
			want := *d.Spec.Replicas
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
				missing = append(missing, fmt.Sprintf("deployment/%s: %d updated, %d total, %d available of %d", name, st.UpdatedReplicas, st.Replicas, st.AvailableReplicas, want))
			}
		case "StatefulSet":
			s, err := f.kc.AppsV1().StatefulSets(f.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				missing = append(missing, err.Error())
				continue
			}
			want := *s.Spec.Replicas
			st := s.Status
			if st.ObservedGeneration < s.Generation || st.ReadyReplicas != want || st.UpdatedReplicas != want || st.CurrentRevision != st.UpdateRevision {
				missing = append(missing, fmt.Sprintf("statefulset/%s: %d ready, %d updated of %d", name, st.ReadyReplicas, st.UpdatedReplicas, want))
			}
		case "DaemonSet":
			d, err := f.kc.AppsV1().DaemonSets(f.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				missing = append(missing, err.Error())
				continue
			}
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberAvailable != st.DesiredNumberScheduled {
				missing = append(missing, fmt.Sprintf("daemonset/%s: %d updated, %d available of %d", name, st.UpdatedNumberScheduled, st.NumberAvailable, st.DesiredNumberScheduled))
			}
		}
	}
	return len(missing) == 0, strings.Join(missing, "; ")
}

// waitRollouts polls until every workload rolled out; at the deadline it
// fails with the namespace's pods, events and container logs.
func (f *federation) waitRollouts(ctx context.Context, what string) {
	f.t.Helper()
	f.waitFor(ctx, what+": rollouts", f.rolloutState)
}

// waitFor polls cond until it holds; at ctx's end the test fails with why
// and the namespace's diagnostics.
func (f *federation) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, string)) {
	f.t.Helper()
	var last string
	for {
		ok, why := cond(ctx)
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			f.t.Fatalf("%s: %s never held (last: %s)\n%s", f.ns, what, last, f.diagnose())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// diagnose is what an operator would look at: every pod's phase,
// conditions and container states, the namespace's events, and the logs
// (current and previous) of every container not ready or restarted, all
// through the API server.
func (f *federation) diagnose() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	pods, err := f.kc.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(&b, "list pods: %v\n", err)
		return b.String()
	}
	fmt.Fprintf(&b, "=== pods of %s\n", f.ns)
	type logReq struct {
		pod, container string
		previous       bool
	}
	var logs []logReq
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s: %s node=%q ip=%s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.PodIP)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		b.WriteString("\n")
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  %s ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
			if w := cs.State.Waiting; w != nil {
				fmt.Fprintf(&b, " waiting %s: %s", w.Reason, w.Message)
			}
			if term := cs.LastTerminationState.Terminated; term != nil {
				fmt.Fprintf(&b, " last exit %d %s %s", term.ExitCode, term.Reason, term.Message)
			}
			b.WriteString("\n")
			if !cs.Ready || cs.RestartCount > 0 {
				logs = append(logs, logReq{p.Name, cs.Name, false})
				if cs.RestartCount > 0 {
					logs = append(logs, logReq{p.Name, cs.Name, true})
				}
			}
		}
	}
	evs, err := f.kc.CoreV1().Events(f.ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		sort.Slice(evs.Items, func(i, j int) bool { return evTime(evs.Items[i]).Before(evTime(evs.Items[j])) })
		items := evs.Items
		if len(items) > 60 {
			items = items[len(items)-60:]
		}
		fmt.Fprintf(&b, "=== events of %s (last %d)\n", f.ns, len(items))
		for _, e := range items {
			fmt.Fprintf(&b, "%s %s %s/%s: %s: %s (x%d)\n", evTime(e).Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
	if pvcs, err := f.kc.CoreV1().PersistentVolumeClaims(f.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pvcs.Items {
			fmt.Fprintf(&b, "pvc/%s: %s volume=%s\n", p.Name, p.Status.Phase, p.Spec.VolumeName)
		}
	}
	for i, l := range logs {
		if i >= 12 {
			fmt.Fprintf(&b, "=== (%d more containers' logs left out)\n", len(logs)-i)
			break
		}
		tail := int64(40)
		raw, err := f.kc.CoreV1().Pods(f.ns).GetLogs(l.pod, &corev1.PodLogOptions{Container: l.container, Previous: l.previous, TailLines: &tail}).DoRaw(ctx)
		fmt.Fprintf(&b, "=== logs %s/%s previous=%v\n", l.pod, l.container, l.previous)
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
		}
		b.Write(raw)
	}
	return b.String()
}

func evTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// pods lists the federation's pods with the given app.kubernetes.io/name
// that are running and not being deleted.
func (f *federation) pods(ctx context.Context, name string) []corev1.Pod {
	f.t.Helper()
	l, err := f.kc.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		f.t.Fatalf("%s: list pods %s: %v", f.ns, name, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// get fetches url (a pod or node IP) from inside the cluster's network.
func (f *federation) get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := f.web.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	return resp.StatusCode, b, err
}

// metric is the sum of the samples of name whose labels contain every
// label in match (Prometheus text format, as scraped).
func metric(body []byte, name string, match ...string) (float64, bool) {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.eE+-]+|NaN)$`)
	sum, found := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ok := true
		for _, l := range match {
			if !strings.Contains(m[1], l) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	return sum, found
}

// forwarder is `kubectl port-forward` for the test process: it listens on
// the host's loopback and relays each connection into the cluster's
// network namespace, to the address target returns at that moment (a
// Service's ClusterIP, or a pod's IP). Clients that cannot take a dialer
// (hadoopipc dials by address) reach the cluster through it.
type forwarder struct {
	l      net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	// accepted counts the client's connections (each a new one through
	// the Service).
	accepted atomic.Int64
}

func forward(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error), target func() (string, error)) *forwarder {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fw := &forwarder{l: l, conns: map[net.Conn]bool{}}
	t.Cleanup(fw.close)
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			fw.accepted.Add(1)
			go fw.relay(in, dial, target)
		}
	}()
	return fw
}

func (fw *forwarder) track(c net.Conn) bool {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.closed {
		c.Close()
		return false
	}
	fw.conns[c] = true
	return true
}

func (fw *forwarder) close() {
	fw.mu.Lock()
	fw.closed = true
	for c := range fw.conns {
		c.Close()
	}
	fw.mu.Unlock()
	fw.l.Close()
}

func (fw *forwarder) relay(in net.Conn, dial func(ctx context.Context, network, addr string) (net.Conn, error), target func() (string, error)) {
	if !fw.track(in) {
		return
	}
	defer in.Close()
	addr, err := target()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	out, err := dial(ctx, "tcp", addr)
	cancel()
	if err != nil {
		return
	}
	if !fw.track(out) {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}

// TestRouterAdminACLWithoutUserDatabase: the image is FROM scratch, with no
// /etc/passwd, so the pods' uid 65532 has no name. A router.json without
// admin_acl makes the router take the name of the user it runs as, find
// none, and exit at start: found applying overlays/three to the one-node
// cluster (both router pods in CrashLoopBackOff, "admin_acl: no ACL given
// and the user this process runs as is unknown"), which the drift test
// cannot see (it runs the binary as the test's own, named, user). Every
// overlay's router config must name its admins.
func TestRouterAdminACLWithoutUserDatabase(t *testing.T) {
	for _, o := range overlays {
		r := render(t, o)
		found := false
		for name, cm := range r.configMaps {
			b, ok := cm.Data["router.json"]
			if !ok {
				continue
			}
			found = true
			var cfg struct {
				AdminACL *string `json:"admin_acl"`
			}
			if err := json.Unmarshal([]byte(b), &cfg); err != nil {
				t.Fatalf("%s: %s: %v", o, name, err)
			}
			if cfg.AdminACL == nil || strings.TrimSpace(*cfg.AdminACL) == "" {
				t.Errorf("%s: ConfigMap %s: router.json sets no admin_acl: in the image (no user database) the router exits at start", o, name)
			}
		}
		if !found {
			t.Errorf("%s: no router.json in any ConfigMap", o)
		}
	}
}
