package kubetest

import (
	"bytes"
	"context"
	"os"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
)

// GrantClusterRole creates the ClusterRole in file (a manifest operators
// apply, such as gpg/kube/rbac.yaml) and binds it to user cluster-wide, so a
// test's identity holds exactly the rights the shipped RBAC grants.
func (c *Cluster) GrantClusterRole(t testing.TB, file, user string) {
	t.Helper()
	rc, role := c.createClusterRole(t, file)
	if _, err := rc.ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// GrantClusterRoleInNamespace creates the ClusterRole in file and binds it
// to user in namespace ns only (a RoleBinding), as an operator grants a
// component its rights in its own namespace (kuberm/rbac-namespace.yaml).
func (c *Cluster) GrantClusterRoleInNamespace(t testing.TB, file, user, ns string) {
	t.Helper()
	rc, role := c.createClusterRole(t, file)
	if _, err := rc.RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createClusterRole creates the ClusterRole in file (already there is
// fine) and returns an admin RBAC client and the role's name.
func (c *Cluster) createClusterRole(t testing.TB, file string) (*rbacv1client.RbacV1Client, string) {
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
	return rc, role.Name
}
