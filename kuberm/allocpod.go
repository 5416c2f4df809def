package kuberm

import (
	"encoding/json"
	"path"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// The pod of one allocated YARN container (the contract in container.go
// and DESIGN.md "allocate"): the launcher copied in by an init container,
// the launch Secret mounted (it does not exist until startContainers, so
// the kubelet holds the pod in ContainerCreating), the NodeManager's
// environment, the container's size as requests = limits, and the ask's
// locality as node affinity.

const (
	yarnfedDir = "/var/run/yarnfed"
	// BinDir is where the init container installs the launcher.
	BinDir = yarnfedDir + "/bin"
	// WorkDir is a container's working directory (an emptyDir).
	WorkDir = yarnfedDir + "/work"
	// LauncherPath is the main container's command.
	LauncherPath = BinDir + "/yarnfed"
	// ContainerName is the main container of a container pod;
	// InstallContainerName its init container.
	ContainerName        = "container"
	InstallContainerName = "install-launcher"
	// AnnotationRequest on a container pod is the JSON containerRequest
	// it was created for (its ask key and size).
	AnnotationRequest = "yarnfed.io/request"
	// AnnotationContainerState on a container pod records what the AM was
	// told: absent = nothing yet, "allocated" = handed out in an allocate
	// answer, "completed" = its completion reported. Written before the
	// answer that carries it, so a restarted kuberm neither hands a pod out
	// twice nor reports a completion twice.
	AnnotationContainerState = "yarnfed.io/container-state"
	stateAllocated           = "allocated"
	stateCompleted           = "completed"
	// Kubernetes' well-known node labels used for locality.
	labelHostname = "kubernetes.io/hostname"
)

// reservedEnv are the variables kuberm sets in a container pod; Config.Env
// may not override them.
var reservedEnv = map[string]bool{
	"CONTAINER_ID": true, "NM_HOST": true, "NM_PORT": true, "NM_HTTP_PORT": true, "LOCAL_DIRS": true,
	"LOG_DIRS": true, "USER": true, "LOGNAME": true, "HOME": true, "HADOOP_USER_NAME": true, "PWD": true,
}

// containerRequest is what a container pod was asked for: the ask's key
// (as the AM sent it) and the normalized size the pod requests.
type containerRequest struct {
	Priority     int32 `json:"priority"`
	AllocationID int64 `json:"allocationRequestId"`
	AskMemoryMB  int64 `json:"askMemoryMB"`
	AskVCores    int32 `json:"askVCores"`
	MemoryMB     int64 `json:"memoryMB"`
	VCores       int32 `json:"vcores"`
}

func (c containerRequest) key() askKey {
	return askKey{Priority: c.Priority, AllocationID: c.AllocationID, MemoryMB: c.AskMemoryMB, VCores: c.AskVCores}
}

func requestOf(p *corev1.Pod) (containerRequest, bool) {
	var c containerRequest
	s := p.Annotations[AnnotationRequest]
	if s == "" || len(s) > 1024 || json.Unmarshal([]byte(s), &c) != nil || c.MemoryMB < 0 || c.VCores < 0 {
		return containerRequest{}, false
	}
	return c, true
}

// locality is where the pods of one ask may or should go.
type locality struct {
	hostnames []string // kubernetes.io/hostname values
	zones     []string // topology.kubernetes.io/zone values
	noZone    bool     // "/default-rack": nodes without a zone label
	strict    bool     // the ANY ask has relax_locality=false
	avoid     []string // blacklisted hostnames
	avoidZone []string // blacklisted racks' zones
}

func (l locality) affinity() *corev1.Affinity {
	var named []corev1.NodeSelectorTerm // one term per kind: terms are ORed
	if len(l.hostnames) > 0 {
		named = append(named, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: l.hostnames}}})
	}
	if len(l.zones) > 0 {
		named = append(named, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: l.zones}}})
	}
	if l.noZone {
		named = append(named, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpDoesNotExist}}})
	}
	var avoid []corev1.NodeSelectorRequirement
	if len(l.avoid) > 0 {
		avoid = append(avoid, corev1.NodeSelectorRequirement{Key: labelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: l.avoid})
	}
	if len(l.avoidZone) > 0 {
		avoid = append(avoid, corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: l.avoidZone})
	}
	na := &corev1.NodeAffinity{}
	var required []corev1.NodeSelectorTerm
	if l.strict && len(named) > 0 {
		required = named
	} else {
		for i, t := range named {
			weight := int32(100) // node-local first, then rack-local
			if i > 0 || len(l.hostnames) == 0 {
				weight = 50
			}
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
				corev1.PreferredSchedulingTerm{Weight: weight, Preference: t})
		}
	}
	if len(avoid) > 0 {
		if len(required) == 0 {
			required = []corev1.NodeSelectorTerm{{}}
		}
		for i := range required {
			required[i].MatchExpressions = append(required[i].MatchExpressions, avoid...)
		}
	}
	if len(required) > 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: required}
	}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil && len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: na}
}

// containerLogDir is LOG_DIRS of a container.
func (r *RM) containerLogDir(cid yarnid.ContainerID) string {
	return strings.TrimRight(r.cfg.LogDir, "/") + "/" + cid.Attempt.App.String() + "/" + cid.String()
}

// restrictedContext is what Pod Security "restricted" asks of a container.
func (r *RM) restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(r.cfg.RunAsUser),
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// dnsPolicy keeps the cluster's DNS for pods in the node's network (the
// default, ClusterFirst, gives them the node's resolver instead).
func (r *RM) dnsPolicy() corev1.DNSPolicy {
	if r.cfg.HostNetwork {
		return corev1.DNSClusterFirstWithHostNet
	}
	return "" // the API server's default, ClusterFirst
}

// containerPod builds the pod of one container. owner is the application
// Secret's owner reference (the AM pod carries it).
func (r *RM) containerPod(cid yarnid.ContainerID, rec *record.App, req containerRequest, owner metav1.OwnerReference, loc locality) *corev1.Pod {
	logDir := r.containerLogDir(cid)
	env := []corev1.EnvVar{
		{Name: "CONTAINER_ID", Value: cid.String()},
		// The NodeId's host is the node's InternalIP, which status.hostIP is.
		{Name: "NM_HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
		{Name: "NM_PORT", Value: strconv.Itoa(int(r.nmPort))},
		{Name: "NM_HTTP_PORT", Value: strconv.Itoa(nmHTTPPort)},
		{Name: "LOCAL_DIRS", Value: WorkDir + "/local"},
		{Name: "LOG_DIRS", Value: logDir},
		{Name: "USER", Value: rec.User},
		{Name: "LOGNAME", Value: rec.User},
		{Name: "HOME", Value: WorkDir},
		{Name: "HADOOP_USER_NAME", Value: rec.User},
	}
	keys := make([]string, 0, len(r.cfg.Env))
	for k := range r.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: r.cfg.Env[k]})
	}
	labels := map[string]string{
		LabelSubCluster:  r.cfg.SubClusterID,
		LabelApplication: cid.Attempt.App.String(),
		LabelAttempt:     strconv.Itoa(int(cid.Attempt.Attempt)),
		LabelRole:        RoleContainer,
		LabelContainerID: cid.String(),
	}
	if rec.Batch {
		labels[LabelKoordQoS] = "BE"
	}
	reqJSON, _ := json.Marshal(req)
	res := podResources(req.MemoryMB, req.VCores, rec.Batch)
	launcherImage := r.cfg.LauncherImage
	if launcherImage == "" {
		launcherImage = r.cfg.Image
	}
	volumes := []corev1.Volume{
		{Name: "launch", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: r.launchSecretName(cid)}}},
		{Name: "yarnfed-bin", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		// A NodeManager's containers have the host's /tmp (JVMs write
		// hsperfdata there, frameworks their scratch files); a FROM-scratch
		// image has none, and the runtime's mount points under /tmp are root's.
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "launch", MountPath: LaunchMountPath, ReadOnly: true},
		{Name: "yarnfed-bin", MountPath: BinDir, ReadOnly: true},
		{Name: "work", MountPath: WorkDir},
		{Name: "logs", MountPath: path.Clean(r.cfg.LogDir)},
		{Name: "tmp", MountPath: "/tmp"},
	}
	for i, h := range r.cfg.HostPaths {
		name := "host-" + strconv.Itoa(i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: h.Path}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: h.MountPath, ReadOnly: true})
	}
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.containerPodName(cid), Namespace: r.cfg.Namespace, Labels: labels,
			Annotations:     map[string]string{AnnotationContainerID: cid.String(), AnnotationRequest: string(reqJSON)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			ServiceAccountName:            r.cfg.ServiceAccountName,
			PriorityClassName:             r.cfg.PriorityClassName,
			EnableServiceLinks:            &no,
			HostNetwork:                   r.cfg.HostNetwork,
			DNSPolicy:                     r.dnsPolicy(),
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Affinity:                      loc.affinity(),
			Volumes:                       volumes,
			InitContainers: []corev1.Container{{
				Name: InstallContainerName, Image: launcherImage,
				Command: []string{"/yarnfed", "kuberm", "launch", "--install", BinDir},
				// Requests = the container's: a pod's effective request is
				// the larger of its init and main containers', so this adds
				// nothing, and the pod keeps one QoS class.
				Resources:       res,
				VolumeMounts:    []corev1.VolumeMount{{Name: "yarnfed-bin", MountPath: BinDir}},
				SecurityContext: r.restrictedContext(),
			}},
			Containers: []corev1.Container{{
				Name: ContainerName, Image: r.cfg.Image,
				Command:         []string{LauncherPath, "kuberm", "launch"},
				WorkingDir:      WorkDir,
				Env:             env,
				Resources:       res,
				VolumeMounts:    mounts,
				SecurityContext: r.restrictedContext(),
			}},
		},
	}
}
