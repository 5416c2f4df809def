package kubebatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func reqs(cpu, mem string) corev1.ResourceRequirements {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.ResourceRequirements{Requests: rl}
}

// TestPodStandardRequests: the same effective-request rule as the batch
// pair, over cpu read as milli-cores (fractions of a core are normal
// there, unlike batch-cpu's integers) and memory in bytes.
func TestPodStandardRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		pod  corev1.PodSpec
		want Batch
	}{
		{"milli-cores", corev1.PodSpec{Containers: []corev1.Container{{Resources: reqs("500m", "1Gi")}, {Resources: reqs("1.5", "")}}},
			Batch{MilliCPU: 2000, Memory: 1 << 30}},
		{"init peak", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: reqs("4", "")}}, Containers: []corev1.Container{{Resources: reqs("1", "2Gi")}}},
			Batch{MilliCPU: 4000, Memory: 2 << 30}},
		{"sidecar adds", corev1.PodSpec{InitContainers: []corev1.Container{{Resources: reqs("250m", ""), RestartPolicy: &always}}, Containers: []corev1.Container{{Resources: reqs("1", "")}}},
			Batch{MilliCPU: 1250}},
		{"overhead adds", corev1.PodSpec{Overhead: reqs("100m", "64Mi").Requests, Containers: []corev1.Container{{Resources: reqs("1", "1Gi")}}},
			Batch{MilliCPU: 1100, Memory: 1<<30 + 64<<20}},
		{"batch resources are not cpu/memory", corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			BatchCPU: resource.MustParse("3000"), BatchMemory: resource.MustParse("1Gi")}}}}}, Batch{}},
		{"a fraction of a milli-core rounds up", corev1.PodSpec{Containers: []corev1.Container{{Resources: reqs("1500u", "")}}}, Batch{MilliCPU: 2}},
	}
	for _, tc := range tests {
		if got := PodStandardRequests(&corev1.Pod{Spec: tc.pod}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	p := &corev1.Pod{Spec: tests[4].pod}
	if got := PodBatchRequests(p); got != (Batch{MilliCPU: 3000, Memory: 1 << 30}) {
		t.Errorf("PodBatchRequests of a batch pod: %+v", got)
	}
}
