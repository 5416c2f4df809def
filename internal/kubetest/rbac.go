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
// apply, such as gpg/kube/rbac.yaml) and binds it to user, so a test's
// identity holds exactly the rights the shipped RBAC grants.
func (c *Cluster) GrantClusterRole(t testing.TB, file, user string) {
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
	ctx := context.Background()
	if _, err := rc.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := rc.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
