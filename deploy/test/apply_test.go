package test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/yarnfed/yarnfed/internal/kubetest"
)

func jsonUnmarshalLoose(b []byte, v any) error { return json.Unmarshal(b, v) }

const fieldManager = "yarnfed-deploy-test"

// applier sends rendered objects to a real API server with server-side apply.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t testing.TB, cfg *rest.Config) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

// apply applies one object; dryRun asks the server to run every admission
// and validation step and persist nothing.
func (a *applier) apply(ctx context.Context, u *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	gvk := u.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	// Strict: an unknown or duplicate field is an error, not a warning.
	opts := metav1.PatchOptions{FieldManager: fieldManager, Force: ptr(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		ri = a.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return ri.Patch(ctx, u.GetName(), types.ApplyPatchType, body, opts)
}

func ptr[T any](v T) *T { return &v }

// TestServerSideDryRun renders every overlay and applies each object with
// server-side dry-run to a real kube-apiserver (internal/kubetest): the
// server's own schema validation, defaulting and admission accept every
// object. The namespace is created first, as an operator would.
func TestServerSideDryRun(t *testing.T) {
	cluster := kubetest.Start(t, kubetest.Options{})
	cfg := cluster.RESTConfig(cluster.AdminToken)
	warnings := &warningLog{}
	cfg.WarningHandler = warnings
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc := kubernetes.NewForConfigOrDie(cfg)
	a := newApplier(t, cfg)
	for _, o := range overlays {
		t.Run(o, func(t *testing.T) {
			r := render(t, o)
			// Labelled as deploy/README.md step 3 says: privileged is
			// enforced (the AMRMProxy), restricted is warned about.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.namespace, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "privileged",
				"pod-security.kubernetes.io/warn":    "restricted",
				"pod-security.kubernetes.io/audit":   "restricted",
			}}}
			if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
				t.Fatal(err)
			}
			warned := false
			for _, u := range r.objects {
				warnings.take()
				out, err := a.apply(ctx, u, true)
				if err != nil {
					t.Errorf("%s %s/%s rejected: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
					continue
				}
				if out.GetKind() != u.GetKind() || out.GetName() != u.GetName() {
					t.Errorf("%s %s: the server answered with %s %s", u.GetKind(), u.GetName(), out.GetKind(), out.GetName())
				}
				// The README promises: a restricted warning for the
				// AMRMProxy DaemonSet only.
				for _, w := range warnings.take() {
					amrmproxy := u.GetKind() == "DaemonSet" && u.GetLabels()["app.kubernetes.io/component"] == "amrmproxy"
					if !amrmproxy || !strings.Contains(w, "restricted") {
						t.Errorf("%s %s: warning %q", u.GetKind(), u.GetName(), w)
					}
					warned = warned || amrmproxy
				}
			}
			if !warned {
				t.Errorf("no Pod Security warning for the AMRMProxy DaemonSet in a namespace warning at restricted: the warnings are not reaching this test")
			}
			// Dry-run persisted nothing: the namespace holds no workload.
			if sts, err := kc.AppsV1().StatefulSets(r.namespace).List(ctx, metav1.ListOptions{}); err != nil || len(sts.Items) != 0 {
				t.Errorf("after a dry run: %d StatefulSets, %v", len(sts.Items), err)
			}
		})
	}
}

// warningLog collects the API server's warnings (Warning headers: Pod
// Security's warn mode among them).
type warningLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings since the last take.
func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

func createNamespace(ctx context.Context, t testing.TB, kc kubernetes.Interface, ns string) {
	t.Helper()
	_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !isAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// gpgIdentity applies the overlay's GPG ServiceAccount, ClusterRole and
// ClusterRoleBinding for real, checks with SubjectAccessReviews that the
// account may read nodes and pods and nothing more, and returns a token for
// it (TokenRequest): the identity the GPG pod would have.
func gpgIdentity(ctx context.Context, t *testing.T, cluster *kubetest.Cluster, r *rendered) string {
	t.Helper()
	cfg := cluster.RESTConfig(cluster.AdminToken)
	kc := kubernetes.NewForConfigOrDie(cfg)
	a := newApplier(t, cfg)
	createNamespace(ctx, t, kc, r.namespace)
	var sa string
	for _, u := range r.objects {
		switch u.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding":
			if _, err := a.apply(ctx, u, false); err != nil {
				t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "ServiceAccount" {
				sa = u.GetName()
			}
		}
	}
	if sa == "" {
		t.Fatal("no ServiceAccount in the manifests")
	}
	user := "system:serviceaccount:" + r.namespace + ":" + sa
	cases := []struct {
		verb, resource string
		allowed        bool
	}{
		{"get", "nodes", true}, {"list", "nodes", true}, {"watch", "nodes", true},
		{"get", "pods", true}, {"list", "pods", true}, {"watch", "pods", true},
		{"update", "nodes", false}, {"patch", "nodes", false}, {"delete", "pods", false},
		{"create", "pods", false}, {"get", "secrets", false}, {"list", "configmaps", false},
	}
	review := func(verb, resource string) *authzv1.SubjectAccessReview {
		sar, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + r.namespace, "system:authenticated"},
			ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Resource: resource},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar
	}
	// The RBAC authorizer learns new bindings through its informers: wait
	// until the binding is in effect before judging.
	for !review("list", "pods").Status.Allowed {
		select {
		case <-ctx.Done():
			t.Fatalf("%s never allowed to list pods", user)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, c := range cases {
		if sar := review(c.verb, c.resource); sar.Status.Allowed != c.allowed {
			t.Errorf("%s may %s %s: %v, want %v (%s)", user, c.verb, c.resource, sar.Status.Allowed, c.allowed, sar.Status.Reason)
		}
	}
	tr, err := kc.CoreV1().ServiceAccounts(r.namespace).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", user, err)
	}
	return tr.Status.Token
}
