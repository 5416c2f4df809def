package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	authzv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"

	"github.com/yarnfed/yarnfed/internal/testpoll"
)

// GrantClusterRole creates the ClusterRole in file (a manifest operators
// apply, such as gpg/kube/rbac.yaml) and binds it to user cluster-wide, so a
// test's identity holds exactly the rights the shipped RBAC grants.
func (c *Cluster) GrantClusterRole(t testing.TB, file, user string) {
	t.Helper()
	rc, role := c.createClusterRole(t, file)
	if _, err := rc.ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGranted(t, role, user, "")
}

// GrantClusterRoleInNamespace creates the ClusterRole in file and binds it
// to user in namespace ns only (a RoleBinding), as an operator grants a
// component its rights in its own namespace (kuberm/rbac-namespace.yaml).
func (c *Cluster) GrantClusterRoleInNamespace(t testing.TB, file, user, ns string) {
	t.Helper()
	rc, role := c.createClusterRole(t, file)
	if _, err := rc.RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitGranted(t, role, user, ns)
}

// waitGranted waits until the API server's authorizer lets user do what
// each resource rule of role grants in ns ("" for cluster-wide): it reads
// bindings from an informer cache, so a request made right after the
// binding was created may still be forbidden (kuberm's tests failed so
// under load: "secrets is forbidden" on the first list).
func (c *Cluster) waitGranted(t testing.TB, role *rbacv1.ClusterRole, user, ns string) {
	t.Helper()
	ac, err := authzv1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range role.Rules {
		if len(rule.Verbs) == 0 || len(rule.Resources) == 0 {
			continue // a non-resource URL rule
		}
		attrs := &authzv1.ResourceAttributes{Namespace: ns, Verb: rule.Verbs[0], Resource: rule.Resources[0]}
		if len(rule.APIGroups) > 0 {
			attrs.Group = rule.APIGroups[0]
		}
		testpoll.Within(t, time.Minute, fmt.Sprintf("%s may %s %s", user, attrs.Verb, attrs.Resource), func() bool {
			r, err := ac.SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
				Spec: authzv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs},
			}, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed
		})
	}
}

// createClusterRole creates the ClusterRole in file (already there is
// fine) and returns an admin RBAC client and the role.
func (c *Cluster) createClusterRole(t testing.TB, file string) (*rbacv1client.RbacV1Client, *rbacv1.ClusterRole) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(&role); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	rc, err := rbacv1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.ClusterRoles().Create(context.Background(), &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return rc, &role
}
