package kuberm

import (
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// podResources is a YARN container size as the pod's requests and limits
// (equal: extended resources cannot be over-committed, and Koordinator's
// webhook would copy one into the other anyway). With Koordinator, batch
// resources in its units (milli-cores, bytes); without, cpu and memory.
func podResources(memoryMB int64, vcores int32, batch bool) corev1.ResourceRequirements {
	cpuName, memName := corev1.ResourceCPU, corev1.ResourceMemory
	cpu := resource.NewMilliQuantity(int64(vcores)*1000, resource.DecimalSI)
	if batch {
		cpuName, memName = kubebatch.BatchCPU, kubebatch.BatchMemory
		cpu = resource.NewQuantity(int64(vcores)*1000, resource.DecimalSI) // batch-cpu counts milli-cores as integers
	}
	rl := corev1.ResourceList{cpuName: *cpu, memName: *resource.NewQuantity(memoryMB<<20, resource.BinarySI)}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

var braceVar = regexp.MustCompile(`\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}`)

// expandCommand does what a NodeManager does to a launch command before
// its shell runs it: <LOG_DIR> is the container's log directory, <CPS> the
// class path separator, {{VAR}} (Hadoop's cross-platform form) $VAR.
func expandCommand(s, logDir string) string {
	s = strings.ReplaceAll(s, "<LOG_DIR>", logDir)
	s = strings.ReplaceAll(s, "<CPS>", ":")
	return braceVar.ReplaceAllString(s, "$${$1}")
}

// expandEnv is the same for environment values, in Kubernetes' own
// reference form $(VAR), which the kubelet expands from earlier variables.
func expandEnv(s, logDir string) string {
	s = strings.ReplaceAll(s, "<LOG_DIR>", logDir)
	s = strings.ReplaceAll(s, "<CPS>", ":")
	return braceVar.ReplaceAllString(s, "$$($1)")
}

// amPod builds the pod of one AM attempt from the stored submission.
func (r *RM) amPod(secret *corev1.Secret, rec *appRecord, sc *yarnpb.ApplicationSubmissionContextProto, at yarnid.AttemptID) *corev1.Pod {
	cid := r.amContainerID(at)
	logDir := strings.TrimRight(r.cfg.LogDir, "/") + "/" + at.App.String() + "/" + cid.String()
	clc := sc.GetAmContainerSpec()

	// The environment a NodeManager gives every container
	// (ApplicationConstants.Environment), then the application's own,
	// which may refer to these.
	env := []corev1.EnvVar{
		{Name: "CONTAINER_ID", Value: cid.String()},
		{Name: "NM_HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "NM_PORT", Value: "0"},
		{Name: "NM_HTTP_PORT", Value: "0"},
		{Name: "LOCAL_DIRS", Value: "/tmp"},
		{Name: "LOG_DIRS", Value: logDir},
		{Name: "USER", Value: rec.User},
		{Name: "LOGNAME", Value: rec.User},
		{Name: "HADOOP_USER_NAME", Value: rec.User},
		{Name: "APP_SUBMIT_TIME_ENV", Value: strconv.FormatInt(rec.SubmitTime, 10)},
		{Name: "MAX_APP_ATTEMPTS", Value: strconv.Itoa(int(rec.MaxAttempts))},
	}
	seen := map[string]int{}
	for i, e := range env {
		seen[e.Name] = i
	}
	for _, kv := range clc.GetEnvironment() { // in the client's order
		ev := corev1.EnvVar{Name: kv.GetKey(), Value: expandEnv(kv.GetValue(), logDir)}
		if i, ok := seen[ev.Name]; ok {
			env[i] = ev
			continue
		}
		seen[ev.Name] = len(env)
		env = append(env, ev)
	}
	cmd := expandCommand(strings.Join(clc.GetCommand(), " "), logDir)
	script := "mkdir -p '" + logDir + "' && " + cmd
	if cmd == "" {
		script = "echo 'kuberm: the AM launch context has no command' >&2; exit 1"
	}

	labels := map[string]string{
		LabelSubCluster:  r.cfg.SubClusterID,
		LabelApplication: at.App.String(),
		LabelAttempt:     strconv.Itoa(int(at.Attempt)),
		LabelRole:        RoleAM,
	}
	if rec.Batch {
		labels[LabelKoordQoS] = "BE"
	}
	no := false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      r.amPodName(at.App, at.Attempt),
			Namespace: r.cfg.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				AnnotationDigest:      rec.Digest,
				AnnotationContainerID: cid.String(),
			},
			// Deleting the application's Secret (retention) deletes its pods.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Secret", Name: secret.Name, UID: secret.UID,
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			ServiceAccountName:            r.cfg.ServiceAccountName,
			PriorityClassName:             r.cfg.PriorityClassName,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Containers: []corev1.Container{{
				Name:      amContainerName,
				Image:     r.cfg.Image,
				Command:   []string{"/bin/sh", "-c", script},
				Env:       env,
				Resources: podResources(rec.MemoryMB, rec.VCores, rec.Batch),
				// What Pod Security's "restricted" level asks for: a namespace
				// that enforces it admits these pods.
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot:             ptr(true),
					RunAsUser:                ptr(r.cfg.RunAsUser),
					AllowPrivilegeEscalation: ptr(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
		},
	}
	return pod
}

func ptr[T any](v T) *T { return &v }
