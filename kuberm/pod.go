package kuberm

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
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

// amPod builds the pod of one AM attempt: a container pod (the launcher,
// the launch Secret volume, the NodeManager's environment, host paths) of
// the AM's size, whose launch Secret kuberm itself creates from the
// submission (ensureAMLaunch), as an RM's AMLauncher calls startContainers.
// The launcher then localizes the AM's resources and hands it its
// credentials, the AMRMToken among them.
func (r *RM) amPod(secret *corev1.Secret, rec *record.App, at yarnid.AttemptID) *corev1.Pod {
	cid := r.amContainerID(at)
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: secret.Name, UID: secret.UID}
	pod := r.containerPod(cid, rec, containerRequest{MemoryMB: rec.MemoryMB, VCores: rec.VCores}, owner, locality{})
	pod.Name = r.amPodName(at.App, at.Attempt)
	// Deleting the application's Secret (retention) deletes its pods.
	pod.Labels[LabelRole] = RoleAM
	delete(pod.Labels, LabelContainerID) // the NM face starts no AM container
	pod.Annotations = map[string]string{AnnotationDigest: rec.Digest, AnnotationContainerID: cid.String()}
	c := &pod.Spec.Containers[0]
	c.Name = amContainerName
	// What an RM adds for AM containers only (ApplicationConstants).
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "APP_SUBMIT_TIME_ENV", Value: strconv.FormatInt(rec.SubmitTime, 10)},
		corev1.EnvVar{Name: "MAX_APP_ATTEMPTS", Value: strconv.Itoa(int(rec.MaxAttempts))})
	return pod
}

// ensureAMLaunch creates the launch Secret of an AM pod if it is missing
// (after the pod, whose UID owns it; a crash in between leaves the pod in
// ContainerCreating until the reconcile loop calls this again).
func (r *RM) ensureAMLaunch(ctx context.Context, pod *corev1.Pod, sc *yarnpb.ApplicationSubmissionContextProto, at yarnid.AttemptID) error {
	cid := r.amContainerID(at)
	name := r.launchSecretName(cid)
	if _, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return kubeErr("get AM launch secret", err)
	}
	clc, err := r.amLaunchContext(sc, at)
	if err != nil {
		return err
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(clc)
	if err != nil {
		return fmt.Errorf("%w: AM launch context: %w", ErrBadRecord, err)
	}
	labels := maps.Clone(pod.Labels)
	_, err = r.kube.Secrets(r.cfg.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: r.cfg.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}},
		},
		Type:      corev1.SecretType(LaunchSecretType),
		Immutable: ptr(true),
		Data:      map[string][]byte{DataLaunchContext: raw},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return kubeErr("create AM launch secret", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
