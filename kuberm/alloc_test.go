package kuberm

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// ---- the fake kubelet's side of container pods ----

// placeNode gives a test Node the hostname and zone labels and the
// InternalIP a kubelet would report.
func (e *env) placeNode(name, zone, ip string) {
	e.t.Helper()
	ctx := context.Background()
	n, err := e.admin.Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[labelHostname] = name + "-host"
	n.Labels[corev1.LabelTopologyZone] = zone
	if n, err = e.admin.Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	if _, err := e.admin.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// runContainer moves a container pod to Running, its launcher installed.
func (k *fakeKubelet) runContainer(pod string) { k.t.Helper(); k.runAs(pod, ContainerName, "") }

// exitContainer ends a container pod's main container with code.
func (k *fakeKubelet) exitContainer(pod string, code int32, reason string) {
	k.t.Helper()
	k.exitAs(pod, ContainerName, code, reason)
}

// evict is the kubelet's node-pressure eviction of a pod.
func (k *fakeKubelet) evict(pod string) {
	k.t.Helper()
	k.status(pod, func(s *corev1.PodStatus) {
		s.Phase, s.Reason, s.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonTerminationByKubelet, Message: "node pressure", LastTransitionTime: metav1.Now()})
		now := metav1.Now()
		s.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName, Image: "x",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", StartedAt: now, FinishedAt: now}}}}
	})
}

// ---- the AM side ----

func anyAsk(prio int32, memMB int64, vcores int32, n int32, relax bool) *yarnpb.ResourceRequestProto {
	return nameAsk(prio, memMB, vcores, "*", n, relax)
}

func nameAsk(prio int32, memMB int64, vcores int32, name string, n int32, relax bool) *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(prio)}, ResourceName: proto.String(name),
		Capability:    &yarnpb.ResourceProto{Memory: proto.Int64(memMB), VirtualCores: proto.Int32(vcores)},
		NumContainers: proto.Int32(n), RelaxLocality: proto.Bool(relax)}
}

// testAM is an AM over real IPC that tracks its responseId as
// AMRMClientImpl does.
type testAM struct {
	cl  *hadoopipc.Client
	rid int32
}

func (am *testAM) call(req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	req.ResponseId = proto.Int32(am.rid)
	resp := &yarnpb.AllocateResponseProto{}
	if err := am.cl.Call(context.Background(), "allocate", req, resp); err != nil {
		return nil, err
	}
	if want := nextResponseID(am.rid); resp.GetResponseId() != want {
		return nil, fmt.Errorf("allocate answered responseId %d, want %d", resp.GetResponseId(), want)
	}
	am.rid = resp.GetResponseId()
	return resp, nil
}

func (am *testAM) allocate(t *testing.T, asks ...*yarnpb.ResourceRequestProto) *yarnpb.AllocateResponseProto {
	t.Helper()
	resp, err := am.call(&yarnpb.AllocateRequestProto{Ask: asks, Progress: proto.Float32(0.5)})
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	return resp
}

func (am *testAM) register() error {
	am.rid = 0
	return am.cl.Call(context.Background(), "registerApplicationMaster",
		&yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("am-host"), RpcPort: proto.Int32(1)}, &yarnpb.RegisterApplicationMasterResponseProto{})
}

// containerPods lists an application's container pods in id order.
func (e *env) containerPods(t *testing.T, app yarnid.AppID) []corev1.Pod {
	t.Helper()
	pods, err := e.admin.Pods(testNS).List(context.Background(), metav1.ListOptions{
		LabelSelector: LabelApplication + "=" + app.String() + "," + LabelRole + "=" + RoleContainer})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items
}

// alive are the pods not being deleted.
func alive(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func unbound(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range alive(pods) {
		if p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

func completedByID(resp *yarnpb.AllocateResponseProto) map[string]*yarnpb.ContainerStatusProto {
	out := map[string]*yarnpb.ContainerStatusProto{}
	for _, s := range resp.CompletedContainerStatuses {
		out[yarnid.ContainerFromPB(s.ContainerId).String()] = s
	}
	return out
}

// expireView makes the next allocate read the nodes again (the cluster
// view is shared for clusterViewTTL).
func expireView(rm *RM) {
	rm.alloc.mu.Lock()
	rm.alloc.view = nil
	rm.alloc.mu.Unlock()
}

// TestAllocateAgainstRealAPIServer drives our Go AM client over real IPC
// (DIGEST-MD5 with the AMRMToken) against kuberm over a real
// kube-apiserver, the fakeKubelet binding and ending container pods:
// register, asks -> pods with the contract's spec, fake binding ->
// containers with valid tokens and one NM token per node, release, exit,
// eviction, deletion and node loss reported once each, the responseId
// rules, a kuberm restart mid-application and the AM's resync, then the
// end of the application deleting what runs.
func TestAllocateAgainstRealAPIServer(t *testing.T) {
	parent := t // what outlives one phase is started on the parent test
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	cfg := testConfig(e)
	cfg.LauncherImage = "registry.example/yarnfed:1"
	cfg.Env = map[string]string{"JAVA_HOME": "/opt/jdk"}
	rm, cl := startRM(t, cfg)
	e.node("n1", nil, "8", "32Gi")
	e.node("n2", nil, "8", "32Gi")
	e.placeNode("n1", "z1", "10.0.0.1")
	e.placeNode("n2", "z2", "10.0.0.2")

	app, am := runningAM(t, kl, rm, cl, "n1")
	at := yarnid.AttemptID{App: app, Attempt: 1}

	if _, err := am.call(&yarnpb.AllocateRequestProto{}); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Fatalf("allocate before register: %v, want ApplicationMasterNotRegisteredException", err)
	}
	if err := am.register(); err != nil {
		t.Fatal(err)
	}

	// Asks: priority 1, 1000 MB (normalized to 1024) x2, one of them
	// preferring 10.0.0.1 (a NodeId host) and rack /z1; priority 2, 2048 MB
	// x1 strictly on n2.
	first := am.allocate(t, anyAsk(1, 1000, 1, 2, true), nameAsk(1, 1000, 1, "10.0.0.1", 1, true), nameAsk(1, 1000, 1, "/z1", 1, true),
		anyAsk(2, 2048, 1, 1, false), nameAsk(2, 2048, 1, "n2", 1, false))
	if len(first.AllocatedContainers) != 0 || first.GetNumClusterNodes() != 2 {
		t.Errorf("first answer: %d allocated, %d nodes", len(first.AllocatedContainers), first.GetNumClusterNodes())
	}
	pods := e.containerPods(t, app)
	if len(pods) != 3 {
		t.Fatalf("%d container pods after asking for 3", len(pods))
	}
	seqs := map[int64]bool{}
	for _, p := range pods {
		cid, err := yarnid.ParseContainerID(p.Labels[LabelContainerID])
		if err != nil || cid.Attempt != at || cid.Epoch() != 7 || cid.Sequence() <= 1 || seqs[cid.Sequence()] {
			t.Fatalf("container id %q (%v): want attempt %s, epoch 7, a fresh sequence above the AM's", p.Labels[LabelContainerID], err, at)
		}
		seqs[cid.Sequence()] = true
	}

	t.Run("container pods follow the contract", func(t *testing.T) {
		p := pods[0] // priority 1: created first
		cid, _ := yarnid.ParseContainerID(p.Labels[LabelContainerID])
		if p.Name != rm.containerPodName(cid) || p.Annotations[AnnotationContainerID] != cid.String() {
			t.Errorf("name %s annotation %q for %s", p.Name, p.Annotations[AnnotationContainerID], cid)
		}
		wantLabels := map[string]string{LabelSubCluster: "SC-kube", LabelApplication: app.String(), LabelAttempt: "1",
			LabelRole: RoleContainer, LabelContainerID: cid.String()}
		if !reflect.DeepEqual(p.Labels, wantLabels) {
			t.Errorf("labels %v, want %v", p.Labels, wantLabels)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Secret" || p.OwnerReferences[0].Name != rm.objectName(app) || p.OwnerReferences[0].UID == "" {
			t.Errorf("owner references %v", p.OwnerReferences)
		}
		want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		c := p.Spec.Containers[0]
		if c.Name != ContainerName || c.Image != cfg.Image || !reflect.DeepEqual(c.Command, []string{"/var/run/yarnfed/bin/yarnfed", "kuberm", "launch"}) ||
			c.WorkingDir != WorkDir || !equalResources(c.Resources.Requests, want) || !equalResources(c.Resources.Limits, want) {
			t.Errorf("main container %+v", c)
		}
		ic := p.Spec.InitContainers
		if len(ic) != 1 || ic[0].Name != InstallContainerName || ic[0].Image != cfg.LauncherImage ||
			!reflect.DeepEqual(ic[0].Command, []string{"/yarnfed", "kuberm", "launch", "--install", BinDir}) {
			t.Errorf("init containers %+v", ic)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range p.Spec.Volumes {
			vols[v.Name] = v
		}
		if s := vols["launch"].Secret; s == nil || s.SecretName != rm.launchSecretName(cid) {
			t.Errorf("launch volume %+v, want Secret %s", vols["launch"], rm.launchSecretName(cid))
		}
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m
		}
		if m := mounts[LaunchMountPath]; m.Name != "launch" || !m.ReadOnly {
			t.Errorf("launch mount %+v", m)
		}
		if mounts[BinDir].Name != "yarnfed-bin" || mounts[WorkDir].Name != "work" || mounts[cfg.LogDir].Name != "logs" || mounts["/tmp"].Name != "tmp" {
			t.Errorf("mounts %v", c.VolumeMounts)
		}
		env := map[string]corev1.EnvVar{}
		for _, ev := range c.Env {
			env[ev.Name] = ev
		}
		if env["CONTAINER_ID"].Value != cid.String() || env["JAVA_HOME"].Value != "/opt/jdk" || env["USER"].Value != testUser ||
			env["LOG_DIRS"].Value != cfg.LogDir+"/"+app.String()+"/"+cid.String() || env["HOME"].Value != WorkDir ||
			env["LOCAL_DIRS"].Value != WorkDir+"/local" || env["NM_HOST"].ValueFrom == nil || env["NM_HOST"].ValueFrom.FieldRef.FieldPath != "status.hostIP" {
			t.Errorf("environment %v", c.Env)
		}
		if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("automount %v restart %v", p.Spec.AutomountServiceAccountToken, p.Spec.RestartPolicy)
		}
		// Relaxed locality: preferred affinity to n1 (asked by its IP) and
		// zone z1.
		na := p.Spec.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil || len(na.PreferredDuringSchedulingIgnoredDuringExecution) != 2 ||
			!reflect.DeepEqual(na.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Values, []string{"n1-host"}) ||
			!reflect.DeepEqual(na.PreferredDuringSchedulingIgnoredDuringExecution[1].Preference.MatchExpressions[0].Values, []string{"z1"}) {
			t.Errorf("priority 1 affinity %+v", na)
		}
		// Strict locality: required on n2.
		na = pods[2].Spec.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
			!reflect.DeepEqual(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values, []string{"n2-host"}) {
			t.Errorf("priority 2 affinity %+v", na)
		}
		if res := pods[2].Spec.Containers[0].Resources.Requests; res.Memory().Value() != 2<<30 {
			t.Errorf("priority 2 pod requests %v", res)
		}
	})

	t.Run("responseId rules", func(t *testing.T) {
		// A resend of the last id gets the last answer, unchanged.
		again := &yarnpb.AllocateResponseProto{}
		if err := am.cl.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(am.rid - 1),
			Ask: []*yarnpb.ResourceRequestProto{anyAsk(1, 1000, 1, 50, true)}}, again); err != nil || !proto.Equal(again, first) {
			t.Fatalf("resent allocate: %v, %v; want the last answer", again, err)
		}
		if n := len(e.containerPods(t, app)); n != 3 {
			t.Errorf("a resent allocate's asks were applied: %d pods", n)
		}
		err := am.cl.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(am.rid + 5)}, &yarnpb.AllocateResponseProto{})
		if remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
			t.Errorf("a wrong responseId: %v, want InvalidApplicationMasterRequestException", err)
		}
		// Bad asks and releases change nothing.
		if _, err := am.call(&yarnpb.AllocateRequestProto{Ask: []*yarnpb.ResourceRequestProto{anyAsk(3, 100_000, 1, 1, true)}}); remoteClass(err) != hadoopipc.ClassInvalidResourceRequest {
			t.Errorf("an ask above the maximum allocation: %v", err)
		}
		if _, err := am.call(&yarnpb.AllocateRequestProto{Ask: []*yarnpb.ResourceRequestProto{anyAsk(3, 1024, 1, -1, true)}}); remoteClass(err) != hadoopipc.ClassInvalidResourceRequest {
			t.Errorf("a negative num_containers: %v", err)
		}
		other := yarnid.NewContainerID(yarnid.AttemptID{App: yarnid.AppID{ClusterTimestamp: 1, ID: 1}, Attempt: 1}, 7, 2)
		if _, err := am.call(&yarnpb.AllocateRequestProto{Release: []*yarnpb.ContainerIdProto{yarnid.ContainerPB(other)}}); remoteClass(err) != hadoopipc.ClassInvalidContainerRelease {
			t.Errorf("releasing another application's container: %v", err)
		}
	})

	t.Run("fewer asks delete the surplus unbound pods", func(t *testing.T) {
		am.allocate(t, anyAsk(1, 1000, 1, 1, true))
		left := alive(e.containerPods(t, app))
		if len(left) != 2 || left[0].Name != pods[0].Name || left[1].Name != pods[2].Name {
			t.Fatalf("pods after asking 1 at priority 1: %v, want the newest priority-1 pod deleted", names(left))
		}
	})

	var onN1, onN2 yarnid.ContainerID
	t.Run("bound pods become containers with tokens, one NM token per node", func(t *testing.T) {
		kl.bind(pods[0].Name, "n1")
		kl.bind(pods[2].Name, "n2")
		resp := am.allocate(t)
		if len(resp.AllocatedContainers) != 2 || len(resp.NmTokens) != 2 {
			t.Fatalf("%d containers, %d NM tokens; want 2 and 2", len(resp.AllocatedContainers), len(resp.NmTokens))
		}
		for _, c := range resp.AllocatedContainers {
			cid := yarnid.ContainerFromPB(c.Id)
			host := map[string]string{pods[0].Name: "10.0.0.1", pods[2].Name: "10.0.0.2"}[rm.containerPodName(cid)]
			if c.NodeId.GetHost() != host || c.NodeId.GetPort() != rm.nmPort || c.GetExecutionType() != yarnpb.ExecutionTypeProto_GUARANTEED {
				t.Errorf("%s: node %v execution %v, want host %s", cid, c.NodeId, c.GetExecutionType(), host)
			}
			tid, err := rm.checkContainerToken(c.ContainerToken)
			if err != nil || yarnid.ContainerFromPB(tid.ContainerId) != cid || tid.GetNmHostAddr() != nodeIDString(c.NodeId) ||
				tid.GetAppSubmitter() != testUser || tid.GetExpiryTimeStamp() <= tid.GetCreationTime() {
				t.Errorf("%s: container token %v, %v", cid, tid, err)
			}
			if host == "10.0.0.1" {
				onN1 = cid
				if c.Resource.GetMemory() != 1024 || c.Priority.GetPriority() != 1 {
					t.Errorf("%s: resource %v priority %v", cid, c.Resource, c.Priority)
				}
			} else {
				onN2 = cid
				if c.Resource.GetMemory() != 2048 || c.Priority.GetPriority() != 2 {
					t.Errorf("%s: resource %v priority %v", cid, c.Resource, c.Priority)
				}
			}
		}
		for _, nt := range resp.NmTokens {
			tid, pw, err := rm.checkNMToken(nt.Token.GetIdentifier())
			if err != nil || string(pw) != string(nt.Token.GetPassword()) || yarnid.AttemptFromPB(tid.AppAttemptId) != at ||
				nodeIDString(tid.NodeId) != nodeIDString(nt.NodeId) {
				t.Errorf("NM token for %v: %v, %v", nt.NodeId, tid, err)
			}
		}
		// Allocated containers consumed the asks: nothing new is created.
		if again := am.allocate(t); len(again.AllocatedContainers) != 0 || len(alive(e.containerPods(t, app))) != 2 {
			t.Errorf("a second heartbeat handed out %d containers; %d pods", len(again.AllocatedContainers), len(alive(e.containerPods(t, app))))
		}
		// A third container on n1: no second NM token for n1.
		am.allocate(t, anyAsk(1, 1000, 1, 1, true))
		p := unbound(e.containerPods(t, app))
		if len(p) != 1 {
			t.Fatalf("%d unbound pods after asking one more", len(p))
		}
		kl.bind(p[0].Name, "n1")
		resp = am.allocate(t)
		if len(resp.AllocatedContainers) != 1 || len(resp.NmTokens) != 0 {
			t.Errorf("third container: %d containers, %d NM tokens; want 1 and none", len(resp.AllocatedContainers), len(resp.NmTokens))
		}
	})

	t.Run("release, exit, eviction, deletion and node loss are reported once", func(t *testing.T) {
		third := e.containerPods(t, app)[2]
		thirdID, _ := yarnid.ParseContainerID(third.Labels[LabelContainerID])
		resp, err := am.call(&yarnpb.AllocateRequestProto{Release: []*yarnpb.ContainerIdProto{yarnid.ContainerPB(thirdID)}})
		if err != nil {
			t.Fatal(err)
		}
		if s := completedByID(resp)[thirdID.String()]; s == nil || s.GetExitStatus() != exitAborted || s.GetDiagnostics() != diagReleased {
			t.Errorf("release: completed %v", resp.CompletedContainerStatuses)
		}
		if p := e.containerPods(t, app); len(alive(p)) != 2 {
			t.Errorf("the released pod is not deleted: %v", names(alive(p)))
		}

		kl.runContainer(rm.containerPodName(onN2))
		if resp := am.allocate(t); len(resp.CompletedContainerStatuses) != 0 {
			t.Errorf("a running container reported completed: %v", resp.CompletedContainerStatuses)
		}
		kl.exitContainer(rm.containerPodName(onN2), 3, "Error")
		resp = am.allocate(t)
		if s := completedByID(resp)[onN2.String()]; len(resp.CompletedContainerStatuses) != 1 || s == nil || s.GetExitStatus() != 3 || s.GetState() != yarnpb.ContainerStateProto_C_COMPLETE {
			t.Errorf("exit 3: completed %v", resp.CompletedContainerStatuses)
		}
		if resp := am.allocate(t); len(resp.CompletedContainerStatuses) != 0 {
			t.Errorf("a completion reported twice: %v", resp.CompletedContainerStatuses)
		}

		kl.runContainer(rm.containerPodName(onN1))
		kl.evict(rm.containerPodName(onN1))
		resp = am.allocate(t)
		if s := completedByID(resp)[onN1.String()]; s == nil || s.GetExitStatus() != exitPreempted || !strings.Contains(s.GetDiagnostics(), diagPreempted) {
			t.Errorf("eviction: completed %v", resp.CompletedContainerStatuses)
		}

		// Three more: one deleted by someone else, one stopped by its AM
		// through the NM face, one whose node goes.
		am.allocate(t, anyAsk(1, 1000, 1, 3, true))
		p := unbound(e.containerPods(t, app))
		if len(p) != 3 {
			t.Fatalf("%d unbound pods after asking three more", len(p))
		}
		kl.bind(p[0].Name, "n1")
		kl.bind(p[1].Name, "n2")
		kl.bind(p[2].Name, "n1")
		if resp := am.allocate(t); len(resp.AllocatedContainers) != 3 {
			t.Fatalf("%d containers handed out, want 3", len(resp.AllocatedContainers))
		}
		deleted, _ := yarnid.ParseContainerID(p[0].Labels[LabelContainerID])
		lost, _ := yarnid.ParseContainerID(p[1].Labels[LabelContainerID])
		zero := int64(0)
		if err := e.admin.Pods(testNS).Delete(ctx, p[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		resp = am.allocate(t)
		if s := completedByID(resp)[deleted.String()]; s == nil || s.GetExitStatus() != exitAborted ||
			!strings.Contains(s.GetDiagnostics(), diagDeleted) || !strings.Contains(s.GetDiagnostics(), p[0].Name+" is gone") {
			t.Errorf("a pod deleted by someone else: completed %v", resp.CompletedContainerStatuses)
		}
		stopped, _ := yarnid.ParseContainerID(p[2].Labels[LabelContainerID])
		if err := rm.stopContainerPod(ctx, &p[2]); err != nil {
			t.Fatal(err)
		}
		resp = am.allocate(t)
		if s := completedByID(resp)[stopped.String()]; len(resp.CompletedContainerStatuses) != 1 || s == nil || s.GetExitStatus() != exitKilledByAM {
			t.Errorf("a container stopped by its AM: completed %v", resp.CompletedContainerStatuses)
		}
		if err := e.admin.Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		expireView(rm)
		resp = am.allocate(t)
		if s := completedByID(resp)[lost.String()]; len(resp.CompletedContainerStatuses) != 1 || s == nil || s.GetExitStatus() != exitAborted || !strings.Contains(s.GetDiagnostics(), diagLost) {
			t.Errorf("a container on a node that is gone: completed %v", resp.CompletedContainerStatuses)
		}
		if resp := am.allocate(t); len(resp.CompletedContainerStatuses) != 0 {
			t.Errorf("completions reported twice: %v", resp.CompletedContainerStatuses)
		}
	})

	t.Run("container reports", func(t *testing.T) {
		cs := &yarnpb.GetContainersResponseProto{}
		if err := cl.Call(ctx, "getContainers", &yarnpb.GetContainersRequestProto{ApplicationAttemptId: yarnid.AttemptPB(at)}, cs); err != nil {
			t.Fatal(err)
		}
		if len(cs.Containers) < 2 {
			t.Errorf("getContainers: %d containers, want the AM's and the handed-out ones", len(cs.Containers))
		}
		cr := &yarnpb.GetContainerReportResponseProto{}
		if err := cl.Call(ctx, "getContainerReport", &yarnpb.GetContainerReportRequestProto{ContainerId: yarnid.ContainerPB(onN2)}, cr); err != nil {
			t.Fatal(err)
		}
		if r := cr.ContainerReport; r.GetContainerExitStatus() != 3 || r.GetContainerState() != yarnpb.ContainerStateProto_C_COMPLETE || r.GetResource().GetMemory() != 2048 {
			t.Errorf("report of %s: %v", onN2, r)
		}
	})

	t.Run("a restarted kuberm makes the AM resync", func(t *testing.T) {
		// Before the crash: one pod bound but never handed out, one
		// pending, and the highest id so far.
		am.allocate(t, anyAsk(1, 1000, 1, 2, true))
		p := unbound(e.containerPods(t, app))
		if len(p) != 2 {
			t.Fatalf("%d unbound pods", len(p))
		}
		kl.bind(p[0].Name, "n1")
		var highest int64
		for _, q := range e.containerPods(t, app) {
			cid, _ := yarnid.ParseContainerID(q.Labels[LabelContainerID])
			highest = max(highest, cid.Sequence())
		}
		// The pod of the highest id goes while kuberm is down: its id must
		// still not come back.
		zero := int64(0)
		if err := e.admin.Pods(testNS).Delete(ctx, p[1].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		rm.Close()
		rm2, cl2 := startRM(parent, cfg)
		am2 := &testAM{cl: amClient(parent, rm2, rm2.AMRMToken(at), ""), rid: am.rid}
		if _, err := am2.call(&yarnpb.AllocateRequestProto{}); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
			t.Fatalf("allocate after the restart: %v, want ApplicationMasterNotRegisteredException", err)
		}
		if err := am2.register(); err != nil {
			t.Fatalf("register again after the restart: %v", err)
		}
		if err := am2.register(); remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
			t.Errorf("a second register after the resync: %v", err)
		}
		// AMRMClientImpl re-sends its outstanding asks: the bound pod of
		// before is adopted and handed out, one pod is created for the
		// other, nothing is reported again.
		resp := am2.allocate(t, anyAsk(1, 1000, 1, 2, true))
		if len(resp.AllocatedContainers) != 1 || rm2.containerPodName(yarnid.ContainerFromPB(resp.AllocatedContainers[0].Id)) != p[0].Name {
			t.Errorf("after the resync: allocated %v, want %s", resp.AllocatedContainers, p[0].Name)
		}
		if len(resp.NmTokens) != 1 {
			t.Errorf("after the resync: %d NM tokens, want n1's again (a fresh attempt state)", len(resp.NmTokens))
		}
		if len(resp.CompletedContainerStatuses) != 0 {
			t.Errorf("completions reported again after the restart: %v", resp.CompletedContainerStatuses)
		}
		u := unbound(e.containerPods(t, app))
		if len(u) != 1 {
			t.Fatalf("unbound pods after the resync %v, want one new", names(u))
		}
		// New ids continue above every id used before, the deleted pod's too.
		if cid, _ := yarnid.ParseContainerID(u[0].Labels[LabelContainerID]); cid.Sequence() <= highest {
			t.Errorf("container %s after the restart reuses a sequence at or below %d", cid, highest)
		}
		am, rm, cl = am2, rm2, cl2
	})

	t.Run("finishing the application deletes its running containers", func(t *testing.T) {
		running := alive(e.containerPods(t, app))
		if len(running) == 0 {
			t.Fatal("no container pod left to delete")
		}
		if err := am.cl.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
			FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, &yarnpb.FinishApplicationMasterResponseProto{}); err != nil {
			t.Fatal(err)
		}
		for _, q := range e.containerPods(t, app) {
			if q.DeletionTimestamp == nil && !terminated(&q) {
				t.Errorf("container pod %s still running after the application finished", q.Name)
			}
		}
		if _, err := am.call(&yarnpb.AllocateRequestProto{}); remoteClass(err) != hadoopipc.ClassApplicationAttemptNotFound && !loginRefused(err) {
			t.Errorf("allocate after finish: %v", err)
		}
	})

	t.Run("an application over keeps no container pod and no launch Secret", func(t *testing.T) {
		// The AM exits after unregistering; the reconcile loop retires the
		// application: ended container pods go too (their launch Secrets
		// with them), and so does the AM's launch Secret: they hold the
		// application's credentials.
		amPod := rm.amPodName(app, 1)
		kl.exit(amPod, 0, "Completed")
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		for _, q := range e.containerPods(t, app) {
			if q.DeletionTimestamp == nil {
				t.Errorf("container pod %s (phase %s) kept after the application ended", q.Name, q.Status.Phase)
			}
		}
		ls := rm.launchSecretName(rm.amContainerID(yarnid.AttemptID{App: app, Attempt: 1}))
		if _, err := e.admin.Secrets(testNS).Get(ctx, ls, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the AM's launch Secret %s after the application ended: %v, want gone", ls, err)
		}
		p, err := e.admin.Pods(testNS).Get(ctx, amPod, metav1.GetOptions{})
		if err != nil || p.Annotations[AnnotationRetired] == "" {
			t.Fatalf("AM pod %v (%v): want it kept and marked retired", p.GetAnnotations(), err)
		}
		wantState(t, report(t, cl, app), yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED)
	})

	t.Run("an AM that exits without unregistering fails its attempt; its containers go", func(t *testing.T) {
		id := newApp(t, cl)
		if err := submit(t, cl, submissionFor(id, 1024, 1)); err != nil {
			t.Fatal(err)
		}
		kl.bind(rm.amPodName(id, 1), "n1")
		kl.run(rm.amPodName(id, 1))
		a := &testAM{cl: amClient(t, rm, rm.AMRMToken(yarnid.AttemptID{App: id, Attempt: 1}), "")}
		if err := a.register(); err != nil {
			t.Fatal(err)
		}
		a.allocate(t, anyAsk(1, 1024, 1, 1, true))
		cp := e.containerPods(t, id)
		if len(cp) != 1 {
			t.Fatalf("%d container pods", len(cp))
		}
		kl.bind(cp[0].Name, "n1")
		a.allocate(t)
		kl.exit(rm.amPodName(id, 1), 0, "Completed")
		rep := report(t, cl, id)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		if !strings.Contains(rep.GetDiagnostics(), "before the AM unregistered") {
			t.Errorf("diagnostics %q", rep.GetDiagnostics())
		}
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if q := e.containerPods(t, id); len(alive(q)) != 0 {
			t.Errorf("the failed attempt's containers still run: %v", names(alive(q)))
		}
		if _, err := e.admin.Pods(testNS).Get(ctx, rm.amPodName(id, 2), metav1.GetOptions{}); err != nil {
			t.Errorf("no second attempt: %v", err)
		}
	})
}

func names(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
