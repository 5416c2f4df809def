package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/internal/kubetest"
)

// operatorOverlay writes the kustomization an operator writes for one
// federation (deploy/README.md step 2): their namespace, one of our overlays
// as a resource, transformers/instance, and extra (further kustomization
// fields, such as images), and renders it.
func operatorOverlay(t *testing.T, namespace, overlay, extra string) *rendered {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(repoRoot(t), "deploy", p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s
resources:
  - %s
transformers:
  - %s
%s`, namespace, rel("overlays/"+overlay), rel("transformers/instance"), extra)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
	r := renderDir(t, dir, namespace)
	if r.namespace != namespace {
		t.Fatalf("%s: rendered into namespace %q", namespace, r.namespace)
	}
	return r
}

// TestTwoFederations: two federations in one cluster (namespaces fed-a and
// fed-b, each an operator's overlay of ours) share no cluster-scoped object,
// and each binding names its own namespace's ServiceAccount. Then both are
// applied for real to a kube-apiserver, one after the other as two operators
// would: fed-a's GPG may still list pods after fed-b is applied, and after
// fed-b is deleted again. With fixed cluster-scoped names, applying fed-b
// rebinds the one ClusterRoleBinding to fed-b's ServiceAccount and fed-a's
// GPG silently loses its Kubernetes figures.
func TestTwoFederations(t *testing.T) {
	// koordinator-writeback: the overlay with the most cluster-scoped objects.
	a, b := operatorOverlay(t, "fed-a", "koordinator-writeback", ""), operatorOverlay(t, "fed-b", "koordinator-writeback", "")
	clusterScoped := func(r *rendered) map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, u := range r.objects {
			if u.GetNamespace() == "" {
				out[u.GetKind()+"/"+u.GetName()] = u
			}
		}
		return out
	}
	ca, cb := clusterScoped(a), clusterScoped(b)
	if len(ca) == 0 {
		t.Fatal("fed-a has no cluster-scoped objects; this test would check nothing")
	}
	for k := range ca {
		if cb[k] != nil {
			t.Errorf("%s is in both federations: the second apply overwrites the first's", k)
		}
	}
	for _, r := range []*rendered{a, b} {
		if len(r.roleBindings) == 0 {
			t.Fatalf("%s: no ClusterRoleBinding", r.namespace)
		}
		for _, rb := range r.roleBindings {
			for _, s := range rb.Subjects {
				if s.Kind != "ServiceAccount" || s.Namespace != r.namespace || s.Name != "yarnfed-gpg" {
					t.Errorf("%s: ClusterRoleBinding %s binds %s %s/%s, want its own ServiceAccount %s/yarnfed-gpg", r.namespace, rb.Name, s.Kind, s.Namespace, s.Name, r.namespace)
				}
			}
		}
	}
	if t.Failed() {
		return
	}

	cluster := kubetest.Start(t, kubetest.Options{})
	cfg := cluster.RESTConfig(cluster.AdminToken)
	kc := kubernetes.NewForConfigOrDie(cfg)
	ap := newApplier(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyRBAC := func(r *rendered) {
		createNamespace(ctx, t, kc, r.namespace)
		for _, u := range r.objects {
			switch u.GetKind() {
			case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
				if _, err := ap.apply(ctx, u, false); err != nil {
					t.Fatalf("%s: apply %s %s: %v", r.namespace, u.GetKind(), u.GetName(), err)
				}
			}
		}
	}
	mayListPods := func(ns string) bool {
		sar, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":yarnfed-gpg",
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: "list", Resource: "pods"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	// The RBAC authorizer sees bindings through informers: poll until the
	// state just written is in effect, then judge the other federation.
	waitAllowed := func(ns string, want bool) {
		for mayListPods(ns) != want {
			select {
			case <-ctx.Done():
				t.Fatalf("%s's GPG: may list pods never became %v", ns, want)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	applyRBAC(a)
	waitAllowed("fed-a", true)
	applyRBAC(b)
	waitAllowed("fed-b", true)
	if !mayListPods("fed-a") {
		t.Fatal("after fed-b was applied, fed-a's GPG may no longer list pods: the federations share a binding")
	}
	// `kubectl delete -k` of fed-b deletes its cluster-scoped objects by
	// name; fed-a's must not be among them.
	for _, u := range cb {
		m, err := ap.mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		if err := ap.dyn.Resource(m.Resource).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	waitAllowed("fed-b", false)
	if !mayListPods("fed-a") {
		t.Fatal("deleting fed-b's cluster-scoped objects took fed-a's GPG's access")
	}
}

// TestREADMEOverlay renders the operator's kustomization deploy/README.md
// shows in step 2, as written there (only "../deploy/" pointed at this
// checkout, and another namespace than yarnfed): its objects are named and labelled as the render checks
// demand, so the walk-through's instructions (namespace, transformers,
// image, version label) are the ones that work.
func TestREADMEOverlay(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "```yaml\n# my-federation/kustomization.yaml\napiVersion:"
	i := strings.Index(string(b), marker)
	if i < 0 {
		t.Fatal("deploy/README.md: no ```yaml block starting with # my-federation/kustomization.yaml and apiVersion")
	}
	block := string(b[i+len("```yaml\n"):])
	block = block[:strings.Index(block, "```")]
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(repoRoot(t), "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(block, "../deploy/") {
		t.Fatalf("the README's overlay names no ../deploy/ path:\n%s", block)
	}
	block = strings.ReplaceAll(block, "../deploy/", rel+"/")
	// Another namespace than the inner overlay's (yarnfed), as a second
	// federation's operator would write: names and labels must follow it.
	if strings.Count(block, "\nnamespace: yarnfed\n") != 1 {
		t.Fatalf("the README's overlay does not set namespace: yarnfed:\n%s", block)
	}
	block = strings.Replace(block, "\nnamespace: yarnfed\n", "\nnamespace: fed-readme\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	r := renderDir(t, dir, "README")
	checkClusterScopedNames(t, r)
	checkRecommendedLabels(t, r)
	checkGPGRBAC(t, r)
	checkServiceAccountTokens(t, r)
	for _, d := range r.deployments {
		if v := d.Spec.Template.Labels["app.kubernetes.io/version"]; v == "latest" {
			t.Errorf("Deployment %s: the README's version label did not reach the pods (still %q)", d.Name, v)
		}
	}
}
