package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/yarnfed/yarnfed/internal/kubetest"
)

// privilegedRoles are the roles whose pods need the Pod Security Standard
// "privileged" (deploy/README.md "Pod Security" says why, field by field).
// Every other pod must pass "restricted".
var privilegedRoles = map[string]bool{"amrmproxy": true}

// TestPodSecurityAdmission: the API server's own PodSecurity admission
// judges every pod the overlays make. Each pod template becomes a Pod,
// created with server-side dry-run in namespaces labelled
// pod-security.kubernetes.io/enforce=<level>: every pod but the AMRMProxy's
// is admitted under "restricted"; the AMRMProxy's is refused under
// "restricted" and "baseline" (so the README's claim that it needs
// "privileged" is true) and admitted under "privileged".
func TestPodSecurityAdmission(t *testing.T) {
	cluster := kubetest.Start(t, kubetest.Options{})
	kc := kubernetes.NewForConfigOrDie(cluster.RESTConfig(cluster.AdminToken))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	levels := []string{"restricted", "baseline", "privileged"}
	for _, level := range levels {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pss-" + level, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         level,
			"pod-security.kubernetes.io/enforce-version": "latest",
		}}}
		if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	admitted := func(p *pod, ns string) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: p.template.Labels, Annotations: p.template.Annotations},
			Spec:       *p.template.Spec.DeepCopy(),
		}
		// The StatefulSet controller adds a volume per claim template.
		for _, c := range p.claims {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + p.name}}})
		}
		_, err := kc.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// PodSecurity refuses with 403 Forbidden and names the violated checks;
	// any other error is the pod's own fault and fails the test at once.
	refusedBySecurity := func(err error) bool {
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity")
	}
	for _, o := range append(overlays, "koordinator-writeback") {
		t.Run(o, func(t *testing.T) {
			r := render(t, o)
			seen := map[string]bool{}
			for _, p := range r.pods() {
				if seen[p.owner] {
					continue // one pod per StatefulSet is enough
				}
				seen[p.owner] = true
				what := fmt.Sprintf("%s %s (role %s)", p.kind, p.owner, role(p))
				if !privilegedRoles[role(p)] {
					if err := admitted(p, "pss-restricted"); err != nil {
						t.Errorf("%s: refused in a restricted namespace: %v", what, err)
					}
					continue
				}
				for _, level := range []string{"restricted", "baseline"} {
					err := admitted(p, "pss-"+level)
					switch {
					case err == nil:
						t.Errorf("%s: admitted under %q; it is documented as needing privileged: drop it from privilegedRoles and the README", what, level)
					case !refusedBySecurity(err):
						t.Errorf("%s: under %q: %v, want a PodSecurity refusal", what, level, err)
					}
				}
				if err := admitted(p, "pss-privileged"); err != nil {
					t.Errorf("%s: refused in a privileged namespace: %v", what, err)
				}
			}
			for pr := range privilegedRoles {
				found := false
				for _, p := range r.pods() {
					found = found || role(p) == pr
				}
				if !found {
					t.Errorf("no %s pod in %s: this test checked nothing for it", pr, o)
				}
			}
		})
	}
}
