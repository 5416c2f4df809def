package test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkClusterScopedNames: every object without a namespace (cluster-scoped:
// ClusterRoles, ClusterRoleBindings and whatever is added later) is named
// <namespace>:<name>, so two federations in two namespaces never write the
// same object (TestTwoFederations applies two). The namespace transformer
// leaves exactly the cluster-scoped kinds without a namespace.
func checkClusterScopedNames(t *testing.T, r *rendered) {
	for _, u := range r.objects {
		if u.GetNamespace() != "" {
			continue
		}
		if !strings.HasPrefix(u.GetName(), r.namespace+":") {
			t.Errorf("%s %s is cluster-scoped but its name is not %s:<name>: a second federation would overwrite it (list its kind in transformers/instance)", u.GetKind(), u.GetName(), r.namespace)
		}
	}
}

// recommendedLabels are Kubernetes' recommended labels
// (kubernetes.io/docs/concepts/overview/working-with-objects/common-labels).
var recommendedLabels = []string{
	"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
	"app.kubernetes.io/component", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by",
}

// selectorLabels are the only labels a selector may use. Selectors of
// Deployments, StatefulSets and DaemonSets are immutable: a label added to
// one later (a version, the instance) makes `kubectl apply` of the upgrade
// fail, and a version in one would need a re-create at every release.
var selectorLabels = map[string]bool{"app.kubernetes.io/name": true, "yarnfed.io/subcluster": true}

// checkRecommendedLabels: every object and every pod carries the six
// recommended labels; instance is the namespace, version is the tag of the
// image the pods run; no selector uses anything but selectorLabels; the
// StatefulSet's volumeClaimTemplates carry no labels (immutable: an upgrade
// changing them is refused).
func checkRecommendedLabels(t *testing.T, r *rendered) {
	tag := ""
	for _, p := range r.pods() {
		for _, c := range p.template.Spec.Containers {
			i := strings.LastIndex(c.Image, ":")
			if i < 0 || strings.Contains(c.Image[i:], "/") {
				t.Errorf("%s %s: image %q has no tag", p.kind, p.owner, c.Image)
				continue
			}
			if tag != "" && c.Image[i+1:] != tag {
				t.Errorf("%s %s: image tag %s, other pods run %s", p.kind, p.owner, c.Image[i+1:], tag)
			}
			tag = c.Image[i+1:]
		}
	}
	want := func(what string, labels map[string]string) {
		for _, k := range recommendedLabels {
			if labels[k] == "" {
				t.Errorf("%s: no label %s", what, k)
			}
		}
		for k, v := range map[string]string{
			"app.kubernetes.io/instance":   r.namespace,
			"app.kubernetes.io/version":    tag,
			"app.kubernetes.io/part-of":    "yarnfed",
			"app.kubernetes.io/managed-by": "kustomize",
		} {
			if labels[k] != "" && labels[k] != v {
				t.Errorf("%s: %s=%s, want %s", what, k, labels[k], v)
			}
		}
		if n := labels["app.kubernetes.io/name"]; n != "" && !strings.HasPrefix(n, "yarnfed-") {
			t.Errorf("%s: app.kubernetes.io/name=%s, want yarnfed-<role>", what, n)
		}
	}
	for _, u := range r.objects {
		want(u.GetKind()+" "+u.GetName(), u.GetLabels())
	}
	for _, p := range r.pods() {
		want("pods of "+p.kind+" "+p.owner, p.template.Labels)
	}
	checkSelector := func(what string, sel map[string]string) {
		if len(sel) == 0 {
			t.Errorf("%s: empty selector", what)
		}
		for k := range sel {
			if !selectorLabels[k] {
				t.Errorf("%s: selector uses %s; selectors use only %v (immutable: an added label breaks upgrades)", what, k, sortedKeys(selectorLabels))
			}
		}
	}
	labelSelector := func(what string, ls *metav1.LabelSelector) {
		if ls == nil {
			t.Errorf("%s: no selector", what)
			return
		}
		for _, e := range ls.MatchExpressions {
			t.Errorf("%s: selector expression on %s; write matchLabels", what, e.Key)
		}
		checkSelector(what, ls.MatchLabels)
	}
	for _, s := range r.statefulSets {
		labelSelector("StatefulSet "+s.Name, s.Spec.Selector)
		for _, c := range s.Spec.VolumeClaimTemplates {
			if len(c.Labels) > 0 {
				t.Errorf("StatefulSet %s: volumeClaimTemplate %s has labels %v: the templates are immutable, a label changed later blocks the upgrade", s.Name, c.Name, c.Labels)
			}
		}
	}
	for _, d := range r.deployments {
		labelSelector("Deployment "+d.Name, d.Spec.Selector)
	}
	for _, d := range r.daemonSets {
		labelSelector("DaemonSet "+d.Name, d.Spec.Selector)
	}
	for _, p := range r.pdbs {
		labelSelector("PodDisruptionBudget "+p.Name, p.Spec.Selector)
	}
	for _, s := range r.services {
		checkSelector("Service "+s.Name, s.Spec.Selector)
	}
	for _, p := range r.pods() {
		if a := p.template.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				labelSelector(p.kind+" "+p.owner+" anti-affinity", term.LabelSelector)
			}
			for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				labelSelector(p.kind+" "+p.owner+" anti-affinity", w.PodAffinityTerm.LabelSelector)
			}
		}
	}
}

// apiCallers are the roles whose pods call the Kubernetes API, and why.
// Every other pod must not mount a service-account token: one stolen from a
// pod that never needed it is a credential for nothing but an attacker.
var apiCallers = map[string]string{
	// gpg.json's "kubernetes" entry with "kubeconfig": "" watches Nodes and
	// Pods with the pod's own ServiceAccount (in-cluster config).
	"gpg": "the capacity source's informers (in-cluster ServiceAccount)",
}

// checkServiceAccountTokens: pods of apiCallers run under their own
// ServiceAccount with its token mounted; every other pod sets
// automountServiceAccountToken: false. (The drift test runs the other roles
// with no Kubernetes credentials at all, and the GPG with its account's
// token only if the pod mounts it.)
func checkServiceAccountTokens(t *testing.T, r *rendered) {
	for _, p := range r.pods() {
		spec := p.template.Spec
		mounted := spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken
		if _, calls := apiCallers[role(p)]; calls {
			if !mounted {
				t.Errorf("%s %s (%s) calls the Kubernetes API but mounts no token", p.kind, p.owner, apiCallers[role(p)])
			}
			if spec.ServiceAccountName == "" || spec.ServiceAccountName == "default" {
				t.Errorf("%s %s calls the Kubernetes API as the namespace's default ServiceAccount; give it its own", p.kind, p.owner)
			}
			continue
		}
		if mounted {
			t.Errorf("%s %s (role %s) never calls the Kubernetes API but mounts a service-account token (automountServiceAccountToken: false)", p.kind, p.owner, role(p))
		}
	}
}

// checkStartupProbes: the state store's replicas get a startup probe on the
// liveness probe's endpoint that allows for a long replay (bbolt load,
// snapshot restore, log read before the HTTP port opens): without one the
// liveness probe restarts a replica still replaying, which then replays
// again.
func checkStartupProbes(t *testing.T, r *rendered) {
	const minStartup = 300 // seconds
	for _, s := range r.statefulSets {
		for _, c := range s.Spec.Template.Spec.Containers {
			sp, lp := c.StartupProbe, c.LivenessProbe
			if sp == nil {
				t.Errorf("StatefulSet %s: container %s has no startupProbe: a replica replaying a large log is killed by its liveness probe", s.Name, c.Name)
				continue
			}
			if lp == nil || sp.HTTPGet == nil || lp.HTTPGet == nil || sp.HTTPGet.Path != lp.HTTPGet.Path || sp.HTTPGet.Port != lp.HTTPGet.Port {
				t.Errorf("StatefulSet %s: the startupProbe must probe what the liveness probe does (startup %v, liveness %v)", s.Name, probeTarget(sp), probeTarget(lp))
			}
			failures := sp.FailureThreshold
			if failures == 0 {
				failures = 3 // the API server's default
			}
			if budget := probePeriod(sp) * failures; budget < minStartup {
				t.Errorf("StatefulSet %s: startupProbe allows %d s, want >= %d s for a replay", s.Name, budget, minStartup)
			}
		}
	}
}

func probePeriod(p *corev1.Probe) int32 {
	if p.PeriodSeconds == 0 {
		return 10 // the API server's default
	}
	return p.PeriodSeconds
}

func probeTarget(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return "none"
	}
	return p.HTTPGet.Path + " on " + p.HTTPGet.Port.String()
}

// checkCookieSecret: routers with SPNEGO on run as several replicas behind
// one Service, so the hadoop.auth cookie's signing key must be the same
// file on every replica: spnego.signature_secret_file must name a key of a
// shared Secret (sharedSecrets) mounted into the router pods, never a
// per-process random key (a client hopping replicas would negotiate again).
func checkCookieSecret(t *testing.T, r *rendered) {
	for _, d := range r.deployments {
		spec := d.Spec.Template.Spec
		for _, c := range spec.Containers {
			if len(c.Args) == 0 || c.Args[0] != "router" {
				continue
			}
			var cfg struct {
				SPNEGO struct {
					Keytab              string `json:"keytab"`
					SignatureSecretFile string `json:"signature_secret_file"`
				} `json:"spnego"`
			}
			for _, v := range spec.Volumes {
				if v.ConfigMap == nil {
					continue
				}
				if s, ok := r.configMap(t, v.ConfigMap.Name).Data["router.json"]; ok {
					if err := jsonUnmarshalLoose([]byte(s), &cfg); err != nil {
						t.Fatalf("router.json: %v", err)
					}
				}
			}
			if cfg.SPNEGO.Keytab == "" {
				continue // no SPNEGO, no cookie
			}
			file := cfg.SPNEGO.SignatureSecretFile
			if file == "" {
				t.Errorf("Deployment %s: SPNEGO on but no spnego.signature_secret_file: each replica signs cookies with its own random key", d.Name)
				continue
			}
			found := false
			for _, m := range c.VolumeMounts {
				key, ok := strings.CutPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/")
				if !ok {
					continue
				}
				for _, v := range spec.Volumes {
					if v.Name == m.Name && v.Secret != nil {
						for _, k := range sharedSecrets[v.Secret.SecretName] {
							found = found || k == key
						}
					}
				}
			}
			if !found {
				t.Errorf("Deployment %s: spnego.signature_secret_file %s is no key of a shared Secret mounted in the pod (%v)", d.Name, file, sortedKeys(sharedSecrets))
			}
		}
	}
}
