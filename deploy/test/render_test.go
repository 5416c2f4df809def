package test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// overlays are the directories under deploy/overlays; every one is rendered,
// applied and run.
var overlays = []string{"three", "five", "kerberos"}

// repoRoot is the yarnfed checkout this module sits in (deploy/test).
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// rendered is one overlay's output: the raw objects (for applying) and the
// typed workloads and their companions (for running and checking).
type rendered struct {
	name      string
	namespace string
	objects   []*unstructured.Unstructured

	statefulSets  []*appsv1.StatefulSet
	deployments   []*appsv1.Deployment
	daemonSets    []*appsv1.DaemonSet
	services      []*corev1.Service
	configMaps    map[string]*corev1.ConfigMap
	pdbs          []*policyv1.PodDisruptionBudget
	clusterRoles  []*rbacv1.ClusterRole
	roleBindings  []*rbacv1.ClusterRoleBinding
	serviceAccnts []*corev1.ServiceAccount
}

// render runs kustomize on deploy/overlays/NAME from the checkout on disk,
// as `kubectl kustomize` would (no network: every resource is local).
func render(t testing.TB, overlay string) *rendered {
	t.Helper()
	return renderDir(t, filepath.Join(repoRoot(t), "deploy", "overlays", overlay), overlay)
}

// renderDir renders the kustomization in dir (an overlay of the checkout's,
// or an operator's own written by a test) and names the result overlay.
func renderDir(t testing.TB, dir, overlay string) *rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{name: overlay, configMaps: map[string]*corev1.ConfigMap{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(y), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: decode rendered YAML: %v", overlay, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		r.objects = append(r.objects, u)
		if ns := u.GetNamespace(); ns != "" {
			if r.namespace != "" && r.namespace != ns {
				t.Fatalf("%s: objects in two namespaces (%s, %s)", overlay, r.namespace, ns)
			}
			r.namespace = ns
		}
		var into any
		switch u.GetKind() {
		case "StatefulSet":
			v := &appsv1.StatefulSet{}
			r.statefulSets, into = append(r.statefulSets, v), v
		case "Deployment":
			v := &appsv1.Deployment{}
			r.deployments, into = append(r.deployments, v), v
		case "DaemonSet":
			v := &appsv1.DaemonSet{}
			r.daemonSets, into = append(r.daemonSets, v), v
		case "Service":
			v := &corev1.Service{}
			r.services, into = append(r.services, v), v
		case "ConfigMap":
			v := &corev1.ConfigMap{}
			r.configMaps[u.GetName()], into = v, v
		case "PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			r.pdbs, into = append(r.pdbs, v), v
		case "ClusterRole":
			v := &rbacv1.ClusterRole{}
			r.clusterRoles, into = append(r.clusterRoles, v), v
		case "ClusterRoleBinding":
			v := &rbacv1.ClusterRoleBinding{}
			r.roleBindings, into = append(r.roleBindings, v), v
		case "ServiceAccount":
			v := &corev1.ServiceAccount{}
			r.serviceAccnts, into = append(r.serviceAccnts, v), v
		case "Secret":
			t.Fatalf("%s: a Secret in the manifests (%s): certificates and keytabs are the operator's, never committed", overlay, u.GetName())
		default:
			t.Fatalf("%s: %s %s: a kind this test does not know how to check", overlay, u.GetKind(), u.GetName())
		}
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
			t.Fatalf("%s: %s %s: %v", overlay, u.GetKind(), u.GetName(), err)
		}
	}
	if r.namespace == "" {
		t.Fatalf("%s: the overlay sets no namespace", overlay)
	}
	return r
}

// pod is one instance of a workload as the test runs it: the pod's name,
// its template and (StatefulSet) its claim templates.
type pod struct {
	name     string
	kind     string // StatefulSet, Deployment, DaemonSet
	owner    string
	template corev1.PodTemplateSpec
	claims   []corev1.PersistentVolumeClaim
}

// pods lists one pod per Deployment and DaemonSet and every replica of each
// StatefulSet (their peers must all be there).
func (r *rendered) pods() []*pod {
	var out []*pod
	for _, s := range r.statefulSets {
		n := int32(1)
		if s.Spec.Replicas != nil {
			n = *s.Spec.Replicas
		}
		for i := int32(0); i < n; i++ {
			out = append(out, &pod{name: fmt.Sprintf("%s-%d", s.Name, i), kind: "StatefulSet", owner: s.Name, template: s.Spec.Template, claims: s.Spec.VolumeClaimTemplates})
		}
	}
	for _, d := range r.deployments {
		out = append(out, &pod{name: d.Name + "-7d9f8-x2k4q", kind: "Deployment", owner: d.Name, template: d.Spec.Template})
	}
	for _, d := range r.daemonSets {
		out = append(out, &pod{name: d.Name + "-n8d2w", kind: "DaemonSet", owner: d.Name, template: d.Spec.Template})
	}
	return out
}

// configMap finds a ConfigMap by the name a volume gives it (kustomize has
// already appended the content hash to both).
func (r *rendered) configMap(t testing.TB, name string) *corev1.ConfigMap {
	t.Helper()
	cm, ok := r.configMaps[name]
	if !ok {
		t.Fatalf("%s: no ConfigMap %q in the manifests", r.name, name)
	}
	return cm
}

func (r *rendered) service(name string) *corev1.Service {
	for _, s := range r.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (r *rendered) statefulSet(name string) *appsv1.StatefulSet {
	for _, s := range r.statefulSets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// selects reports whether a Service selector matches a pod template.
func selects(sel map[string]string, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// containerPort resolves a port (number or name) on a pod template.
func containerPort(tpl corev1.PodTemplateSpec, port string) (int32, bool) {
	for _, c := range tpl.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port || fmt.Sprint(p.ContainerPort) == port {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRenderOverlays: every overlay renders, and the static promises hold
// (peers = headless Service DNS names, a PDB that keeps a majority, the GPG's
// read-only ClusterRole identical to gpg/kube/rbac.yaml's).
func TestRenderOverlays(t *testing.T) {
	for _, o := range append(overlays, "koordinator-writeback") {
		t.Run(o, func(t *testing.T) {
			r := render(t, o)
			checkStatestore(t, r)
			checkGPGRBAC(t, r)
			checkProbesAndScrape(t, r)
			checkStoreAddresses(t, r)
			checkKeytabMounts(t, r)
			checkClusterScopedNames(t, r)
			checkRecommendedLabels(t, r)
			checkServiceAccountTokens(t, r)
			checkStartupProbes(t, r)
			checkCookieSecret(t, r)
		})
	}
}

// statestoreConfig is the part of statestore/node.Config the checks read
// (the binary itself validates the whole file when the drift test runs it).
type statestoreConfig struct {
	RaftAddress string   `json:"raft_address"`
	GRPCAddress string   `json:"grpc_address"`
	Bootstrap   bool     `json:"bootstrap"`
	Peers       []string `json:"peers"`
}

func checkStatestore(t *testing.T, r *rendered) {
	if len(r.statefulSets) != 1 {
		t.Fatalf("want one StatefulSet (the state store), have %d", len(r.statefulSets))
	}
	sts := r.statefulSets[0]
	replicas := *sts.Spec.Replicas
	if replicas%2 == 0 {
		t.Errorf("StatefulSet %s: %d replicas, want an odd number", sts.Name, replicas)
	}
	headless := r.service(sts.Spec.ServiceName)
	switch {
	case headless == nil:
		t.Fatalf("StatefulSet %s: serviceName %q is not a Service in the manifests", sts.Name, sts.Spec.ServiceName)
	case headless.Spec.ClusterIP != corev1.ClusterIPNone:
		t.Errorf("Service %s: not headless (clusterIP %q)", headless.Name, headless.Spec.ClusterIP)
	case !headless.Spec.PublishNotReadyAddresses:
		t.Errorf("Service %s: replicas need each other's DNS names before any is ready (publishNotReadyAddresses)", headless.Name)
	case !selects(headless.Spec.Selector, sts.Spec.Template.Labels):
		t.Errorf("Service %s: selector %v does not select the StatefulSet's pods %v", headless.Name, headless.Spec.Selector, sts.Spec.Template.Labels)
	}
	raftPort, ok := containerPort(sts.Spec.Template, "raft")
	if !ok {
		t.Fatalf("StatefulSet %s: no container port named raft", sts.Name)
	}
	cfg := loadStatestoreConfig(t, r, sts)
	if !cfg.Bootstrap {
		t.Errorf("statestore config: bootstrap is off; a new federation's replicas would wait forever")
	}
	if len(cfg.Peers) != int(replicas) {
		t.Fatalf("statestore config names %d peers, the StatefulSet runs %d replicas", len(cfg.Peers), replicas)
	}
	for i, p := range cfg.Peers {
		wantID := fmt.Sprintf("%s-%d", sts.Name, i)
		want := fmt.Sprintf("%s=%s.%s:%d", wantID, wantID, headless.Name, raftPort)
		if p != want {
			t.Errorf("peer %d is %q, want %q (pod name = node id, the headless Service's DNS name, the raft port)", i, p, want)
		}
	}
	if !strings.HasSuffix(cfg.RaftAddress, fmt.Sprintf(":%d", raftPort)) {
		t.Errorf("raft_address %q does not listen on the raft container port %d", cfg.RaftAddress, raftPort)
	}
	var pdb *policyv1.PodDisruptionBudget
	for _, p := range r.pdbs {
		if selects(p.Spec.Selector.MatchLabels, sts.Spec.Template.Labels) {
			pdb = p
		}
	}
	if pdb == nil || pdb.Spec.MinAvailable == nil {
		t.Fatalf("no PodDisruptionBudget with minAvailable for the state store")
	}
	if got, majority := pdb.Spec.MinAvailable.IntValue(), int(replicas)/2+1; got < majority || got >= int(replicas) {
		t.Errorf("PDB %s: minAvailable %d; a majority of %d is %d (and %d blocks every drain)", pdb.Name, got, replicas, majority, replicas)
	}
	if sts.Spec.Template.Spec.TerminationGracePeriodSeconds == nil || *sts.Spec.Template.Spec.TerminationGracePeriodSeconds < 15 {
		t.Errorf("StatefulSet %s: terminationGracePeriodSeconds must leave room for the leadership hand-over (10 s)", sts.Name)
	}
	aff := sts.Spec.Template.Spec.Affinity
	if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Errorf("StatefulSet %s: no required pod anti-affinity: two voters could share a node", sts.Name)
	}
}

func loadStatestoreConfig(t *testing.T, r *rendered, sts *appsv1.StatefulSet) statestoreConfig {
	t.Helper()
	var cfg statestoreConfig
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		cm := r.configMap(t, v.ConfigMap.Name)
		for _, k := range sortedKeys(cm.Data) {
			if err := jsonUnmarshalLoose([]byte(cm.Data[k]), &cfg); err != nil {
				t.Fatalf("ConfigMap %s key %s: %v", cm.Name, k, err)
			}
			return cfg
		}
	}
	t.Fatalf("StatefulSet %s mounts no ConfigMap", sts.Name)
	return cfg
}

func checkGPGRBAC(t *testing.T, r *rendered) {
	want := readRBACRules(t, "rbac.yaml")
	var found bool
	for _, cr := range r.clusterRoles {
		if cr.Name == instanceName(r, writerRole) && r.name == "koordinator-writeback" {
			continue // TestKoordinatorWritebackRBAC
		}
		if cr.Name != instanceName(r, readerRole) {
			t.Errorf("unexpected ClusterRole %s", cr.Name)
			continue
		}
		found = true
		if fmt.Sprint(cr.Rules) != fmt.Sprint(want) {
			t.Errorf("ClusterRole %s rules %v differ from gpg/kube/rbac.yaml's %v (the role gpg/kube's real API server test proves sufficient)", cr.Name, cr.Rules, want)
		}
		for _, rule := range cr.Rules {
			for _, v := range rule.Verbs {
				if v != "get" && v != "list" && v != "watch" {
					t.Errorf("ClusterRole %s grants %q: the GPG only reads", cr.Name, v)
				}
			}
		}
	}
	if !found {
		t.Fatalf("no ClusterRole %s", instanceName(r, readerRole))
	}
	var sa string
	for _, d := range r.deployments {
		if strings.Contains(d.Name, "gpg") {
			sa = d.Spec.Template.Spec.ServiceAccountName
		}
	}
	if sa == "" {
		t.Fatal("the GPG Deployment runs under no ServiceAccount")
	}
	bound := false
	for _, b := range r.roleBindings {
		for _, s := range b.Subjects {
			if b.RoleRef.Name == instanceName(r, readerRole) && s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == r.namespace {
				bound = true
			}
		}
	}
	if !bound {
		t.Errorf("no ClusterRoleBinding gives ServiceAccount %s/%s the capacity reader role", r.namespace, sa)
	}
}

// readRBACRules reads one of gpg/kube's ClusterRoles (rbac.yaml: the one
// gpg/kube's real API server test runs the capacity source with;
// rbac-writeback.yaml: the one gpg/kube/writeback's test adds for the
// write-back).
func readRBACRules(t *testing.T, file string) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "gpg", "kube", file))
	if err != nil {
		t.Fatal(err)
	}
	var cr rbacv1.ClusterRole
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&cr); err != nil {
		t.Fatal(err)
	}
	return cr.Rules
}

// The GPG's ClusterRoles as gpg/kube names them; in a federation each is
// prefixed with the namespace (transformers/instance), see instanceName.
const (
	readerRole = "yarnfed-gpg-capacity-reader"
	writerRole = "yarnfed-gpg-allocation-writer"
)

// instanceName is the name of a cluster-scoped object of r's federation:
// <namespace>:<name>, so that federations in two namespaces never share one.
func instanceName(r *rendered, name string) string { return r.namespace + ":" + name }

// TestKoordinatorWritebackRBAC: the koordinator-writeback overlay (base +
// components/koordinator-writeback) is the base plus exactly
// gpg/kube/rbac-writeback.yaml's role, bound to the GPG's ServiceAccount in
// the overlay's namespace; the base alone never grants it.
func TestKoordinatorWritebackRBAC(t *testing.T) {
	r := render(t, "koordinator-writeback")
	checkGPGRBAC(t, r)
	want := readRBACRules(t, "rbac-writeback.yaml")
	var found bool
	for _, cr := range r.clusterRoles {
		if cr.Name == instanceName(r, writerRole) {
			found = true
			if fmt.Sprint(cr.Rules) != fmt.Sprint(want) {
				t.Errorf("ClusterRole %s rules %v differ from gpg/kube/rbac-writeback.yaml's %v", cr.Name, cr.Rules, want)
			}
		}
	}
	if !found {
		t.Fatalf("no ClusterRole %s", instanceName(r, writerRole))
	}
	bound := false
	for _, b := range r.roleBindings {
		for _, s := range b.Subjects {
			if b.RoleRef.Name == instanceName(r, writerRole) && s.Kind == "ServiceAccount" && s.Name == "yarnfed-gpg" && s.Namespace == r.namespace {
				bound = true
			}
		}
	}
	if !bound {
		t.Errorf("no ClusterRoleBinding gives ServiceAccount %s/yarnfed-gpg the %s role", r.namespace, writerRole)
	}
	for _, o := range overlays {
		ro := render(t, o)
		for _, cr := range ro.clusterRoles {
			if cr.Name == instanceName(ro, writerRole) {
				t.Errorf("overlay %s grants %s without the component", o, writerRole)
			}
		}
	}
}

// checkProbesAndScrape: every workload is probed on a port it declares and
// tells Prometheus where its metrics are.
func checkProbesAndScrape(t *testing.T, r *rendered) {
	for _, p := range r.pods() {
		ann := p.template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] == "" || ann["prometheus.io/path"] == "" {
			t.Errorf("%s %s: no prometheus.io/scrape, port and path annotations", p.kind, p.owner)
		}
		for _, c := range p.template.Spec.Containers {
			if c.LivenessProbe == nil {
				t.Errorf("%s %s: container %s has no liveness probe", p.kind, p.owner, c.Name)
			}
		}
	}
}

// checkStoreAddresses: every --store address of every role reaches the state
// store's gRPC port, through a Service selecting the StatefulSet's pods or a
// replica's stable DNS name; and the replicas advertise their stable DNS
// names (followers forward writes there).
func checkStoreAddresses(t *testing.T, r *rendered) {
	sts := r.statefulSets[0]
	grpcPort, ok := containerPort(sts.Spec.Template, "grpc")
	if !ok {
		t.Fatalf("StatefulSet %s: no container port named grpc", sts.Name)
	}
	reaches := func(addr string) error {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		host = strings.TrimSuffix(strings.TrimSuffix(host, ".cluster.local"), ".svc")
		host = strings.TrimSuffix(host, "."+r.namespace)
		if pod, svc, ok := strings.Cut(host, "."); ok && svc == sts.Spec.ServiceName && strings.HasPrefix(pod, sts.Name+"-") {
			if port != strconv.Itoa(int(grpcPort)) {
				return fmt.Errorf("port %s is not the replicas' gRPC port %d", port, grpcPort)
			}
			return nil
		}
		svc := r.service(host)
		if svc == nil || !selects(svc.Spec.Selector, sts.Spec.Template.Labels) {
			return fmt.Errorf("%s is not a Service selecting the state store pods", host)
		}
		for _, sp := range svc.Spec.Ports {
			if strconv.Itoa(int(sp.Port)) == port {
				if cp, ok := containerPort(sts.Spec.Template, sp.TargetPort.String()); ok && cp == grpcPort {
					return nil
				}
				return fmt.Errorf("Service %s port %s targets %s, not the gRPC port %d", svc.Name, port, sp.TargetPort.String(), grpcPort)
			}
		}
		return fmt.Errorf("Service %s has no port %s", svc.Name, port)
	}
	seen := 0
	for _, p := range r.pods() {
		for _, c := range p.template.Spec.Containers {
			for _, a := range c.Args {
				if v, ok := strings.CutPrefix(a, "--store="); ok {
					seen++
					for _, addr := range strings.Split(v, ",") {
						if err := reaches(addr); err != nil {
							t.Errorf("%s %s: --store %s: %v", p.kind, p.owner, addr, err)
						}
					}
				}
				if v, ok := strings.CutPrefix(a, "--grpc-advertise="); ok {
					want := fmt.Sprintf("$(POD_NAME).%s.$(POD_NAMESPACE).svc:%d", sts.Spec.ServiceName, grpcPort)
					if v != want {
						t.Errorf("%s: --grpc-advertise %s, want the stable DNS name %s", p.owner, v, want)
					}
				}
			}
		}
	}
	if want := len(r.pods()) - int(*sts.Spec.Replicas); seen != want {
		t.Errorf("%d containers name --store, want every one of the %d non-store pods", seen, want)
	}
}

// deployJSON reads the JSON config deploy/REL as a generic map, for tests
// that compare an overlay's copy of a config with the base's key by key.
func deployJSON(t *testing.T, rel string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", rel))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := jsonUnmarshalLoose(b, &m); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return m
}

// TestFiveKeepsBaseStatestoreConfig: overlays/five replaces statestore.json
// only for its peers list; every other key must stay the base's, or the
// five-replica federation would quietly run differently.
func TestFiveKeepsBaseStatestoreConfig(t *testing.T) {
	base, five := deployJSON(t, "base/statestore.json"), deployJSON(t, "overlays/five/statestore.json")
	delete(base, "peers")
	delete(five, "peers")
	if fmt.Sprint(base) != fmt.Sprint(five) {
		t.Errorf("overlays/five/statestore.json differs from base/statestore.json beyond peers:\nbase %v\nfive %v", base, five)
	}
}

// TestKerberosKeepsBaseConfigs: components/kerberos replaces router.json and
// gpg.json only to add their security sections; every other key must stay
// the base's, or turning Kerberos on would quietly change the federation.
func TestKerberosKeepsBaseConfigs(t *testing.T) {
	load := func(rel string, drop ...string) map[string]any {
		m := deployJSON(t, rel)
		for _, k := range drop {
			if _, ok := m[k]; !ok && strings.HasPrefix(rel, "components/") {
				t.Errorf("%s: no %q section", rel, k)
			}
			delete(m, k)
		}
		return m
	}
	for file, added := range map[string][]string{
		"router.json": {"kerberos", "spnego", "authz", "admin_acl"},
		"gpg.json":    {"kerberos"},
	} {
		base, krb := load("base/"+file, added...), load("components/kerberos/"+file, added...)
		if fmt.Sprint(base) != fmt.Sprint(krb) {
			t.Errorf("components/kerberos/%s differs from base/%s beyond %v:\nbase %v\nkerberos %v", file, file, added, base, krb)
		}
	}
}

// checkKeytabMounts: a keytab Secret (or a sharedSecrets one) is mounted
// read-only, is not readable by other users, and is still readable by the
// container's user. The kubelet
// writes Secret files owned by root, with the volume's defaultMode (0644
// when unset) and, when the pod has an fsGroup, group-owned by it (the
// process is a member). The drift test does not emulate ownership, so this
// is where a 0400 keytab unreadable to uid 65532 is caught.
func checkKeytabMounts(t *testing.T, r *rendered) {
	for _, p := range r.pods() {
		spec := p.template.Spec
		for _, v := range spec.Volumes {
			// Keytabs and the shared random secrets (the cookie signing
			// key) are private to the yarnfed user alike.
			if v.Secret == nil || (!keytabSecrets[v.Secret.SecretName] && sharedSecrets[v.Secret.SecretName] == nil) {
				continue
			}
			mode := int32(0o644)
			if v.Secret.DefaultMode != nil {
				mode = *v.Secret.DefaultMode
			}
			for _, it := range v.Secret.Items {
				t.Errorf("%s: keytab Secret %s: items (%s) are not expected; mount the whole Secret", p.name, v.Secret.SecretName, it.Key)
			}
			for _, c := range spec.Containers {
				for _, m := range c.VolumeMounts {
					if m.Name != v.Name {
						continue
					}
					if !m.ReadOnly {
						t.Errorf("%s: keytab volume %s is mounted writable", p.name, v.Name)
					}
					uid := int64(0)
					if spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil {
						uid = *spec.SecurityContext.RunAsUser
					}
					if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
						uid = *c.SecurityContext.RunAsUser
					}
					fsGroup := spec.SecurityContext != nil && spec.SecurityContext.FSGroup != nil
					readable := uid == 0 || mode&0o004 != 0 || (fsGroup && mode&0o040 != 0)
					if !readable {
						t.Errorf("%s: keytab Secret %s (mode %#o, owner root, fsGroup %v) is unreadable to uid %d", p.name, v.Secret.SecretName, mode, fsGroup, uid)
					}
					optional := v.Secret.Optional != nil && *v.Secret.Optional
					if !optional && mode&0o007 != 0 {
						t.Errorf("%s: keytab Secret %s: mode %#o lets any user of the container read the keys", p.name, v.Secret.SecretName, mode)
					}
				}
			}
		}
	}
}
