package kubetest

import (
	"context"
	"os"
	"regexp"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Version must be what hack/kube builds, or tests look in the wrong place.
func TestVersionMatchesHackModule(t *testing.T) {
	b, err := os.ReadFile("../../hack/kube/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^require k8s\.io/kubernetes (\S+)(?: // indirect)?$`).FindSubmatch(b)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("hack/kube/go.mod requires kubernetes %q, kubetest.Version is %q", m, Version)
	}
}

func TestStart(t *testing.T) {
	c := Start(t, Options{Users: []User{{Name: "nobody"}}})
	admin, err := corev1client.NewForConfig(c.RESTConfig(c.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("admin list namespaces: %v", err)
	}
	// RBAC is on: a user with no bindings is refused.
	nobody, err := corev1client.NewForConfig(c.RESTConfig(c.Users["nobody"].Token))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nobody.Nodes().List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("an unbound user listing nodes got %v, want Forbidden: RBAC is not enforced", err)
	}
}
