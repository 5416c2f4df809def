package kuberm

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// nodeWithIP creates a Ready node whose InternalIP is ip (NodeIds name it).
func (e *env) nodeWithIP(name, ip string) *corev1.Node {
	e.t.Helper()
	e.node(name, nil, "8", "32Gi")
	ctx := context.Background()
	n, err := e.admin.Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	n, err = e.admin.Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// standInContainerPod is a TEST STAND-IN for allocate (kalloc's work, not
// written yet): it creates a container pod the way KUBERM-CONTRACT.md says
// allocate will (name, labels, annotation, owner, launch Secret volume,
// launcher init container, main container "container") and binds it to
// node, as kube-scheduler would.
func standInContainerPod(t *testing.T, e *env, kl *fakeKubelet, rm *RM, cid yarnid.ContainerID, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	app, err := e.admin.Secrets(testNS).Get(ctx, rm.objectName(cid.Attempt.App), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restricted := &corev1.SecurityContext{
		RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), AllowPrivilegeEscalation: ptr(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: rm.containerPodName(cid), Namespace: testNS,
			Labels: map[string]string{LabelSubCluster: rm.cfg.SubClusterID, LabelApplication: cid.Attempt.App.String(),
				LabelAttempt: "1", LabelRole: RoleContainer, LabelContainerID: cid.String()},
			Annotations:     map[string]string{AnnotationContainerID: cid.String()},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: app.Name, UID: app.UID}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr(false), EnableServiceLinks: ptr(false),
			Volumes: []corev1.Volume{
				{Name: "launch", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: rm.launchSecretName(cid)}}},
				{Name: "yarnfed-bin", VolumeSource: emptyDir}, {Name: "work", VolumeSource: emptyDir},
			},
			InitContainers: []corev1.Container{{Name: "install-launcher", Image: "registry.example/yarnfed:1",
				Command: []string{"/yarnfed", "kuberm", "launch", "--install", "/var/run/yarnfed/bin"}, SecurityContext: restricted,
				VolumeMounts: []corev1.VolumeMount{{Name: "yarnfed-bin", MountPath: "/var/run/yarnfed/bin"}}}},
			Containers: []corev1.Container{{Name: ContainerName, Image: "registry.example/runtime:1",
				Command: []string{"/var/run/yarnfed/bin/yarnfed", "kuberm", "launch"}, WorkingDir: "/var/run/yarnfed/work",
				Resources: podResources(2048, 2, false), SecurityContext: restricted,
				VolumeMounts: []corev1.VolumeMount{{Name: "launch", MountPath: LaunchMountPath, ReadOnly: true},
					{Name: "yarnfed-bin", MountPath: "/var/run/yarnfed/bin"}, {Name: "work", MountPath: "/var/run/yarnfed/work"}}}},
		},
	}
	created, err := e.admin.Pods(testNS).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("stand-in container pod %s: %v", p.Name, err)
	}
	if node != "" {
		kl.bind(created.Name, node)
	}
	return created
}

// containerRunning and containerExit are what a kubelet writes for a
// container pod's main container.
func containerRunning(kl *fakeKubelet, pod, ip string) {
	kl.t.Helper()
	kl.runAs(pod, ContainerName, ip)
}

func containerExit(kl *fakeKubelet, pod string, code int32, reason string) {
	kl.t.Helper()
	kl.exitAs(pod, ContainerName, code, reason)
}

// nmClient is an AM's connection to the NM face: Hadoop IPC with the NM
// token (DIGEST-MD5), or SIMPLE as user when tok is nil.
func nmClient(t *testing.T, rm *RM, tok *commonpb.TokenProto, user string) *hadoopipc.Client {
	t.Helper()
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().NM},
		Protocol: ProtocolContainerManagement, Token: tok, User: user, FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func startCall(cl *hadoopipc.Client, reqs ...*yarnpb.StartContainerRequestProto) (*yarnpb.StartContainersResponseProto, error) {
	resp := &yarnpb.StartContainersResponseProto{}
	err := cl.Call(context.Background(), methodStart, &yarnpb.StartContainersRequestProto{StartContainerRequest: reqs}, resp)
	return resp, err
}

func statusCall(t *testing.T, cl *hadoopipc.Client, ids ...yarnid.ContainerID) *yarnpb.GetContainerStatusesResponseProto {
	t.Helper()
	req := &yarnpb.GetContainerStatusesRequestProto{}
	for _, id := range ids {
		req.ContainerId = append(req.ContainerId, yarnid.ContainerPB(id))
	}
	resp := &yarnpb.GetContainerStatusesResponseProto{}
	if err := cl.Call(context.Background(), methodStatuses, req, resp); err != nil {
		t.Fatalf("getContainerStatuses: %v", err)
	}
	return resp
}

func stopCall(t *testing.T, cl *hadoopipc.Client, ids ...yarnid.ContainerID) *yarnpb.StopContainersResponseProto {
	t.Helper()
	req := &yarnpb.StopContainersRequestProto{}
	for _, id := range ids {
		req.ContainerId = append(req.ContainerId, yarnid.ContainerPB(id))
	}
	resp := &yarnpb.StopContainersResponseProto{}
	if err := cl.Call(context.Background(), methodStop, req, resp); err != nil {
		t.Fatalf("stopContainers: %v", err)
	}
	return resp
}

// failure is the one failed request for cid, or nil.
func failure(t *testing.T, failed []*yarnpb.ContainerExceptionMapProto, cid yarnid.ContainerID) *yarnpb.SerializedExceptionProto {
	t.Helper()
	for _, f := range failed {
		if yarnid.ContainerFromPB(f.ContainerId) == cid {
			return f.Exception
		}
	}
	return nil
}

func wantFailure(t *testing.T, failed []*yarnpb.ContainerExceptionMapProto, cid yarnid.ContainerID, class, text string) {
	t.Helper()
	f := failure(t, failed, cid)
	if f == nil || f.GetClassName() != class || !strings.Contains(f.GetMessage(), text) {
		t.Errorf("%s: failure %v, want %s containing %q", cid, f, class, text)
	}
}

func wantCall(t *testing.T, err error, class, text string) {
	t.Helper()
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != class || !strings.Contains(re.Message, text) {
		t.Errorf("call answered %v, want %s containing %q", err, class, text)
	}
}

func ids(l []*yarnpb.ContainerIdProto) []yarnid.ContainerID {
	out := make([]yarnid.ContainerID, len(l))
	for i, p := range l {
		out[i] = yarnid.ContainerFromPB(p)
	}
	return out
}

// TestNMFace drives the NM face over real Hadoop IPC (DIGEST-MD5 with NM
// tokens kuberm issued) against a real kube-apiserver: starts create the
// launch Secret the waiting pod mounts, every authorization rule refuses
// what it must with the NodeManager's class, stop deletes the pod and
// statuses follow its phases.
func TestNMFace(t *testing.T) {
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	cfg := testConfig(e)
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	now := time.Now()
	cfg.Now = func() time.Time { return now }
	rm, cl := startRM(t, cfg)
	nodeA, nodeB := rm.nodeID(e.nodeWithIP("node-a", "10.0.0.1")), rm.nodeID(e.nodeWithIP("node-b", "10.0.0.2"))
	if nodeA.GetHost() != "10.0.0.1" || nodeA.GetPort() == 0 || nodeA.GetPort() != rm.nmPort {
		t.Fatalf("NodeId %v: want the InternalIP and the NM face's port %d", nodeA, rm.nmPort)
	}

	appA, appB := newApp(t, cl), newApp(t, cl)
	for _, id := range []yarnid.AppID{appA, appB} {
		if err := submit(t, cl, submissionFor(id, 1024, 1)); err != nil {
			t.Fatal(err)
		}
	}
	atA, atB := yarnid.AttemptID{App: appA, Attempt: 1}, yarnid.AttemptID{App: appB, Attempt: 1}
	cA := func(seq int64) yarnid.ContainerID { return yarnid.NewContainerID(atA, rm.epoch, seq) }
	cB2 := yarnid.NewContainerID(atB, rm.epoch, 2)
	for seq, node := range map[int64]string{2: "node-a", 3: "node-a", 4: "node-a", 5: "node-a", 6: "node-a", 7: "node-a", 8: "node-a"} {
		standInContainerPod(t, e, kl, rm, cA(seq), node)
	}
	standInContainerPod(t, e, kl, rm, cB2, "node-a")

	grant := func(cid yarnid.ContainerID, node *yarnpb.NodeIdProto, expiry time.Time) *commonpb.TokenProto {
		return rm.containerToken(containerGrant{ID: cid, Node: node, User: testUser,
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(2)},
			Created:  now.UnixMilli(), Expiry: expiry.UnixMilli(), AllocationID: -1})
	}
	valid := now.Add(10 * time.Minute)
	clc := &yarnpb.ContainerLaunchContextProto{
		Command:     []string{"{{JAVA_HOME}}/bin/java", "org.example.Task", "1><LOG_DIR>/stdout"},
		Environment: []*yarnpb.StringStringMapProto{{Key: proto.String("CLASSPATH"), Value: proto.String("{{PWD}}<CPS>./*")}},
		LocalResources: []*yarnpb.StringLocalResourceMapProto{{Key: proto.String("job.jar"), Value: &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{Scheme: proto.String("hdfs"), Host: proto.String("nn"), Port: proto.Int32(8020), File: proto.String("/jobs/job.jar")},
			Size:     proto.Int64(1234), Timestamp: proto.Int64(5678),
			Type: yarnpb.LocalResourceTypeProto_FILE.Enum(), Visibility: yarnpb.LocalResourceVisibilityProto_APPLICATION.Enum()}}},
		Tokens: []byte("HDTS token storage bytes"),
	}
	start := func(cid yarnid.ContainerID, tok *commonpb.TokenProto) *yarnpb.StartContainerRequestProto {
		return &yarnpb.StartContainerRequestProto{ContainerLaunchContext: clc, ContainerToken: tok}
	}
	noSecret := func(t *testing.T, cid yarnid.ContainerID) {
		t.Helper()
		if _, err := e.admin.Secrets(testNS).Get(ctx, rm.launchSecretName(cid), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a launch Secret exists after a refused start (%v)", cid, err)
		}
	}
	amA := nmClient(t, rm, rm.nmToken(atA, nodeA, testUser), "")

	t.Run("start creates the launch Secret the pod waits for", func(t *testing.T) {
		resp, err := startCall(amA, start(cA(2), grant(cA(2), nodeA, valid)))
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(resp.SucceededRequests); len(got) != 1 || got[0] != cA(2) || len(resp.FailedRequests) != 0 || len(resp.ServicesMetaData) != 0 {
			t.Fatalf("answer %v, want %s started, no failure, no services metadata", resp, cA(2))
		}
		pod, err := e.admin.Pods(testNS).Get(ctx, rm.containerPodName(cA(2)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := e.admin.Secrets(testNS).Get(ctx, rm.launchSecretName(cA(2)), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("launch Secret: %v", err)
		}
		if s.Type != corev1.SecretType(LaunchSecretType) || s.Immutable == nil || !*s.Immutable || !maps.Equal(s.Labels, pod.Labels) {
			t.Errorf("secret type %q immutable %v labels %v, want %q, immutable, the pod's labels %v", s.Type, s.Immutable, s.Labels, LaunchSecretType, pod.Labels)
		}
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Pod" || s.OwnerReferences[0].Name != pod.Name || s.OwnerReferences[0].UID != pod.UID {
			t.Errorf("owner references %v, want the pod %s/%s", s.OwnerReferences, pod.Name, pod.UID)
		}
		if string(s.Data[DataLaunchContext]) != string(mustMarshal(clc)) || len(s.Data) != 1 {
			t.Errorf("launch Secret data is not the deterministic encoding of the launch context (keys %v)", maps.Keys(s.Data))
		}
		got := &yarnpb.ContainerLaunchContextProto{}
		if err := proto.Unmarshal(s.Data[DataLaunchContext], got); err != nil || !proto.Equal(got, clc) {
			t.Errorf("launch context read back %v (%v), want %v", got, err, clc)
		}
	})

	t.Run("a second start is refused as a relaunch", func(t *testing.T) {
		before, _ := e.admin.Secrets(testNS).Get(ctx, rm.launchSecretName(cA(2)), metav1.GetOptions{})
		resp, err := startCall(amA, start(cA(2), grant(cA(2), nodeA, valid)))
		if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, resp.FailedRequests, cA(2), hadoopipc.ClassYarnException, "Attempt to relaunch the same container with id "+cA(2).String())
		if after, _ := e.admin.Secrets(testNS).Get(ctx, rm.launchSecretName(cA(2)), metav1.GetOptions{}); after.ResourceVersion != before.ResourceVersion {
			t.Error("a second start changed the launch Secret")
		}
	})

	t.Run("one call starts some containers and refuses others", func(t *testing.T) {
		resp, err := startCall(amA, start(cA(3), grant(cA(3), nodeA, valid)), start(cA(4), grant(cA(4), nodeA, now.Add(-time.Second))))
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(resp.SucceededRequests); len(got) != 1 || got[0] != cA(3) {
			t.Errorf("started %v, want %s", got, cA(3))
		}
		wantFailure(t, resp.FailedRequests, cA(4), hadoopipc.ClassYarnException, "Unauthorized request to start container.\nThis token is expired.")
		noSecret(t, cA(4))
	})

	t.Run("a container of another application is refused", func(t *testing.T) {
		resp, err := startCall(amA, start(cB2, grant(cB2, nodeA, valid)))
		if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, resp.FailedRequests, cB2, hadoopipc.ClassYarnException,
			"Unauthorized request to start container.\nNMToken for application attempt : "+atA.String()+" was used for starting container with container token issued for application attempt : "+atB.String())
		noSecret(t, cB2)
	})

	t.Run("forged container tokens and tokens for another node fail the call", func(t *testing.T) {
		forged := grant(cA(5), nodeA, valid)
		forged.Password[0] ^= 1
		_, err := startCall(amA, start(cA(5), forged))
		wantCall(t, err, hadoopipc.ClassInvalidToken, "Invalid container token used for starting container on : 10.0.0.1:")
		_, err = startCall(amA, start(cA(5), grant(cA(5), nodeB, valid)))
		wantCall(t, err, hadoopipc.ClassInvalidToken, "identifier is not valid for current Node manager")
		empty := &yarnpb.StartContainerRequestProto{ContainerLaunchContext: clc}
		_, err = startCall(amA, empty)
		wantCall(t, err, hadoopipc.ClassYarnException, msgInvalidCTToken)
		noSecret(t, cA(5))
	})

	t.Run("an NM token for the wrong node does not reach the container", func(t *testing.T) {
		// Token and container token agree on node-b; the pod is on node-a.
		amB := nmClient(t, rm, rm.nmToken(atA, nodeB, testUser), "")
		resp, err := startCall(amB, start(cA(5), grant(cA(5), nodeB, valid)))
		if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, resp.FailedRequests, cA(5), hadoopipc.ClassYarnException, "is not handled by this NodeManager (it runs on node 10.0.0.1:")
		noSecret(t, cA(5))
		if st := statusCall(t, amB, cA(2)); failure(t, st.FailedRequests, cA(2)) == nil {
			t.Error("a status through the NM token of another node was answered")
		}
	})

	t.Run("launch contexts are bounded and checked", func(t *testing.T) {
		big := proto.Clone(clc).(*yarnpb.ContainerLaunchContextProto)
		big.Environment = append(big.Environment, &yarnpb.StringStringMapProto{Key: proto.String("BIG"), Value: proto.String(strings.Repeat("x", maxLaunchContextBytes))})
		aux := proto.Clone(clc).(*yarnpb.ContainerLaunchContextProto)
		aux.ServiceData = []*yarnpb.StringBytesMapProto{{Key: proto.String("mapreduce_shuffle"), Value: []byte{1}}}
		noURL := proto.Clone(clc).(*yarnpb.ContainerLaunchContextProto)
		noURL.LocalResources[0].Value.Resource = nil
		for _, c := range []struct {
			clc         *yarnpb.ContainerLaunchContextProto
			class, text string
		}{
			{big, hadoopipc.ClassYarnException, "exceeds kuberm's limit"},
			{aux, classInvalidAuxService, "The auxService:mapreduce_shuffle does not exist"},
			{noURL, hadoopipc.ClassYarnException, "Null resource URL for local resource job.jar"},
			{nil, hadoopipc.ClassYarnException, "no container launch context"},
		} {
			resp, err := startCall(amA, &yarnpb.StartContainerRequestProto{ContainerLaunchContext: c.clc, ContainerToken: grant(cA(6), nodeA, valid)})
			if err != nil {
				t.Fatal(err)
			}
			wantFailure(t, resp.FailedRequests, cA(6), c.class, c.text)
		}
		noSecret(t, cA(6))
	})

	t.Run("a container without a pod is not handled", func(t *testing.T) {
		resp, err := startCall(amA, start(cA(9), grant(cA(9), nodeA, valid)))
		if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, resp.FailedRequests, cA(9), hadoopipc.ClassYarnException, "is not handled by this NodeManager")
		// A pod of the container's name that is not a container pod (its
		// labels say otherwise) is not taken for it.
		standInContainerPod(t, e, kl, rm, cA(10), "node-a")
		p, err := e.admin.Pods(testNS).Get(ctx, rm.containerPodName(cA(10)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Labels[LabelRole] = RoleAM
		if _, err := e.admin.Pods(testNS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		resp, err = startCall(amA, start(cA(10), grant(cA(10), nodeA, valid)))
		if err != nil {
			t.Fatal(err)
		}
		wantFailure(t, resp.FailedRequests, cA(10), hadoopipc.ClassYarnException, "the pod of that name is not this container's")
		noSecret(t, cA(10))
	})

	t.Run("logins other than a live attempt's NM token for this port are refused", func(t *testing.T) {
		forged := rm.nmToken(atA, nodeA, testUser)
		forged.Password[0] ^= 1
		otherPort := &yarnpb.NodeIdProto{Host: proto.String("10.0.0.1"), Port: proto.Int32(rm.nmPort + 1)}
		noAttempt := yarnid.AttemptID{App: appA, Attempt: 2}
		for name, cl := range map[string]*hadoopipc.Client{
			"forged password":                nmClient(t, rm, forged, ""),
			"another port":                   nmClient(t, rm, rm.nmToken(atA, otherPort, testUser), ""),
			"an attempt that does not exist": nmClient(t, rm, rm.nmToken(noAttempt, nodeA, testUser), ""),
			"an AMRMToken":                   nmClient(t, rm, rm.AMRMToken(atA), ""),
			"SIMPLE":                         nmClient(t, rm, nil, "mallory"),
		} {
			if _, err := startCall(cl, start(cA(7), grant(cA(7), nodeA, valid))); !loginRefused(err) {
				t.Errorf("%s: %v, want the login refused (FATAL_UNAUTHORIZED)", name, err)
			}
		}
		noSecret(t, cA(7))
	})

	t.Run("statuses follow the pod", func(t *testing.T) {
		st := statusCall(t, amA, cA(2), cA(8), cB2, cA(9))
		byID := map[yarnid.ContainerID]*yarnpb.ContainerStatusProto{}
		for _, s := range st.Status {
			byID[yarnid.ContainerFromPB(s.ContainerId)] = s
		}
		if s := byID[cA(2)]; s.GetState() != yarnpb.ContainerStateProto_C_RUNNING || s.GetContainerSubState() != yarnpb.ContainerSubStateProto_CSS_SCHEDULED ||
			s.GetCapability().GetMemory() != 2048 || s.GetCapability().GetVirtualCores() != 2 {
			t.Errorf("started, pod pending: %v, want RUNNING/SCHEDULED with <2048 MB, 2 vcores>", s)
		}
		if s := byID[cA(8)]; s.GetState() != yarnpb.ContainerStateProto_C_NEW {
			t.Errorf("never started: %v, want NEW", s)
		}
		wantFailure(t, st.FailedRequests, cB2, hadoopipc.ClassYarnException, atA.String()+" attempted to get status for non-application container : "+cB2.String())
		wantFailure(t, st.FailedRequests, cA(9), hadoopipc.ClassYarnException, "is not handled by this NodeManager")

		containerRunning(kl, rm.containerPodName(cA(2)), "10.244.0.7")
		s := statusCall(t, amA, cA(2)).Status[0]
		attrs := map[string]string{}
		for _, kv := range s.ContainerAttributes {
			attrs[kv.GetKey()] = kv.GetValue()
		}
		if s.GetState() != yarnpb.ContainerStateProto_C_RUNNING || s.GetContainerSubState() != yarnpb.ContainerSubStateProto_CSS_RUNNING || attrs["IPS"] != "10.244.0.7" {
			t.Errorf("running: %v, want RUNNING/RUNNING with IPS 10.244.0.7", s)
		}
		containerExit(kl, rm.containerPodName(cA(2)), 3, "Error")
		s = statusCall(t, amA, cA(2)).Status[0]
		if s.GetState() != yarnpb.ContainerStateProto_C_COMPLETE || s.GetExitStatus() != 3 || !strings.Contains(s.GetDiagnostics(), "Exit code is 3") {
			t.Errorf("exited: %v, want COMPLETE with exit status 3", s)
		}
	})

	t.Run("stop deletes the pod of a running container", func(t *testing.T) {
		name := rm.containerPodName(cA(3))
		containerRunning(kl, name, "10.244.0.8")
		resp := stopCall(t, amA, cA(3), cB2, cA(2))
		if got := ids(resp.SucceededRequests); len(got) != 2 || got[0] != cA(3) || got[1] != cA(2) {
			t.Errorf("stopped %v, want %s and (already ended) %s", got, cA(3), cA(2))
		}
		wantFailure(t, resp.FailedRequests, cB2, hadoopipc.ClassYarnException, atA.String()+" attempted to stop non-application container : "+cB2.String())
		p, err := e.admin.Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || p.Annotations[AnnotationStoppedByAM] == "" {
			t.Fatalf("pod after stop: %v, want it being deleted and marked stopped by the AM", err)
		}
		// The API server deletes a pod that ended at once: it must still be there.
		if p2, err := e.admin.Pods(testNS).Get(ctx, rm.containerPodName(cA(2)), metav1.GetOptions{}); err != nil || p2.DeletionTimestamp != nil {
			t.Errorf("stopping an ended container deleted its pod (%v): its exit status is still to be reported", err)
		}
		if p3, err := e.admin.Pods(testNS).Get(ctx, rm.containerPodName(cB2), metav1.GetOptions{}); err != nil || p3.DeletionTimestamp != nil {
			t.Errorf("another application's container was stopped (%v)", err)
		}
		containerExit(kl, name, 143, "Error")
		s := statusCall(t, amA, cA(3)).Status[0]
		if s.GetState() != yarnpb.ContainerStateProto_C_COMPLETE || s.GetExitStatus() != exitKilledByAM || !strings.HasPrefix(s.GetDiagnostics(), msgKilledByAM) {
			t.Errorf("stopped container: %v, want COMPLETE with KILLED_BY_APPMASTER", s)
		}
		kl.finishDeletions()
		wantFailure(t, statusCall(t, amA, cA(3)).FailedRequests, cA(3), hadoopipc.ClassYarnException, "is not handled by this NodeManager")
	})

	t.Run("methods not served answer RpcNoSuchMethodException", func(t *testing.T) {
		err := amA.Call(ctx, "signalToContainer", &yarnpb.SignalContainerRequestProto{ContainerId: yarnid.ContainerPB(cA(2)),
			Command: yarnpb.SignalContainerCommandProto_GRACEFUL_SHUTDOWN.Enum()}, &yarnpb.SignalContainerResponseProto{})
		wantCall(t, err, hadoopipc.ClassNoSuchMethod, "signalToContainer")
	})

	t.Run("an ended attempt's NM token does nothing, even on an open connection", func(t *testing.T) {
		appC := newApp(t, cl)
		if err := submit(t, cl, submissionFor(appC, 1024, 1)); err != nil {
			t.Fatal(err)
		}
		atC := yarnid.AttemptID{App: appC, Attempt: 1}
		cC2 := yarnid.NewContainerID(atC, rm.epoch, 2)
		standInContainerPod(t, e, kl, rm, cC2, "node-a")
		tok := rm.nmToken(atC, nodeA, testUser)
		amC := nmClient(t, rm, tok, "")
		if st := statusCall(t, amC, cC2); len(st.Status) != 1 {
			t.Fatalf("status while live: %v", st)
		}
		if err := cl.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: yarnid.AppPB(appC)}, &yarnpb.KillApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		_, err := startCall(amC, &yarnpb.StartContainerRequestProto{ContainerLaunchContext: clc, ContainerToken: grant(cC2, nodeA, valid)})
		wantCall(t, err, hadoopipc.ClassInvalidToken, "is not the live attempt of "+appC.String())
		err = amC.Call(ctx, methodStatuses, &yarnpb.GetContainerStatusesRequestProto{ContainerId: []*yarnpb.ContainerIdProto{yarnid.ContainerPB(cC2)}}, &yarnpb.GetContainerStatusesResponseProto{})
		wantCall(t, err, hadoopipc.ClassInvalidToken, "is not the live attempt")
		if _, err := startCall(nmClient(t, rm, tok, ""), start(cC2, grant(cC2, nodeA, valid))); !loginRefused(err) {
			t.Errorf("a new login with the ended attempt's NM token: %v, want it refused", err)
		}
		noSecret(t, cC2)
	})

	t.Run("metrics count starts, stops and refusals", func(t *testing.T) {
		if got := counterValue(t, rm.metrics.nmStarted); got != 2 {
			t.Errorf("started %v, want 2", got)
		}
		if got := counterValue(t, rm.metrics.nmStopped); got != 1 {
			t.Errorf("stopped %v, want 1", got)
		}
		for _, c := range []struct{ method, reason string }{
			{methodStart, refusedStarted}, {methodStart, refusedExpired}, {methodStart, refusedOtherApp}, {methodStart, refusedBadToken},
			{methodStart, refusedOtherNode}, {methodStart, refusedTooLarge}, {methodStart, refusedAuxService}, {methodStart, refusedNotHandled},
			{methodStatuses, refusedOtherApp}, {methodStop, refusedOtherApp}, {methodStart, refusedNotLive},
			{methodLogin, refusedLoginPort}, {methodLogin, refusedLoginEnded}, {methodLogin, refusedLoginToken},
		} {
			if counterValue(t, rm.metrics.nmRefused.WithLabelValues(c.method, c.reason)) == 0 {
				t.Errorf("no refusal counted for %s/%s", c.method, c.reason)
			}
		}
		mfs, err := reg.Gather()
		exported := false
		for _, mf := range mfs {
			exported = exported || mf.GetName() == "yarnfed_kuberm_nm_refused_total"
		}
		if err != nil || !exported {
			t.Errorf("refusals not exported by the registry (%v)", err)
		}
	})
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestViewIgnoresContainerPods: a container pod carries its application
// and attempt labels (the contract) but is no AM attempt: a failed
// container must not fail the attempt (nor make Reconcile launch another).
func TestViewIgnoresContainerPods(t *testing.T) {
	r := unitRM(t)
	id := yarnid.AppID{ClusterTimestamp: 9, ID: 4}
	one := int32(1)
	am := amPodFor(r, id, 1, corev1.PodRunning, "n", nil)
	c := amPodFor(r, id, 1, corev1.PodFailed, "n", &one)
	c.Name, c.Labels[LabelRole] = "container-pod", RoleContainer
	v := r.view(id, record.App{MaxAttempts: 1}, []*corev1.Pod{am, c})
	if len(v.attempts) != 1 || v.state != yarnpb.YarnApplicationStateProto_RUNNING {
		t.Errorf("%d attempts, state %v (%s); want the AM pod's one attempt, RUNNING", len(v.attempts), v.state, v.diagnostics)
	}
}

// TestNMConfigValidate: nm_address must be host:port (0 binds any port);
// the advertised NM port is the NodeIds' and must be a real one.
func TestNMConfigValidate(t *testing.T) {
	for _, c := range []struct {
		bind, advertise string
		ok              bool
	}{
		{"0.0.0.0:8041", "", true}, {"127.0.0.1:0", "", true}, {"10.0.0.1:8041", "node:8041", true},
		{"", "", false}, {"8041", "", false}, {"127.0.0.1:70000", "", false},
		{"127.0.0.1:0", "node:0", false}, {"127.0.0.1:0", "node", false},
	} {
		cfg := DefaultConfig()
		cfg.SubClusterID, cfg.Image = "SC-1", "img"
		cfg.NMAddress, cfg.AdvertiseNMAddress = c.bind, c.advertise
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("nm_address %q advertise %q: %v, want ok=%v", c.bind, c.advertise, err, c.ok)
		}
	}
}

// TestNMContainerStatusOf: pod states as a NodeManager reports containers.
func TestNMContainerStatusOf(t *testing.T) {
	cid := yarnid.NewContainerID(yarnid.AttemptID{App: yarnid.AppID{ClusterTimestamp: 1, ID: 1}, Attempt: 1}, 0, 2)
	term := func(code int32, reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}
	}
	pod := func(phase corev1.PodPhase, cs []corev1.ContainerStatus, ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: ann},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName, Resources: podResources(3072, 3, true)}}},
			Status: corev1.PodStatus{Phase: phase, ContainerStatuses: cs}}
	}
	stopped := map[string]string{AnnotationStoppedByAM: "1"}
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		started bool
		state   yarnpb.ContainerStateProto
		exit    int32
	}{
		{"allocated, not started", pod(corev1.PodPending, nil, nil), false, yarnpb.ContainerStateProto_C_NEW, exitInvalid},
		{"started, pod pending", pod(corev1.PodPending, nil, nil), true, yarnpb.ContainerStateProto_C_RUNNING, exitInvalid},
		{"exited 0", pod(corev1.PodSucceeded, term(0, "Completed"), nil), true, yarnpb.ContainerStateProto_C_COMPLETE, 0},
		{"exited 2", pod(corev1.PodFailed, term(2, "Error"), nil), true, yarnpb.ContainerStateProto_C_COMPLETE, 2},
		{"OOM killed", pod(corev1.PodFailed, term(137, "OOMKilled"), nil), true, yarnpb.ContainerStateProto_C_COMPLETE, exitKilledPmem},
		{"stopped by the AM", pod(corev1.PodFailed, term(143, "Error"), stopped), true, yarnpb.ContainerStateProto_C_COMPLETE, exitKilledByAM},
		{"pod failed before the container ran", pod(corev1.PodFailed, nil, nil), false, yarnpb.ContainerStateProto_C_COMPLETE, exitAborted},
	} {
		st := containerStatusOf(c.pod, cid, c.started)
		if st.GetState() != c.state || st.GetExitStatus() != c.exit || st.GetCapability().GetMemory() != 3072 || st.GetCapability().GetVirtualCores() != 3 {
			t.Errorf("%s: %v, want %v exit %d <3072 MB, 3 vcores>", c.name, st, c.state, c.exit)
		}
	}
}
