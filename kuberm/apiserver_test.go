package kuberm

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopcreds"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/kubebatch"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// TestAgainstRealAPIServer drives kuberm through Hadoop IPC (our Go YARN
// client) over a real kube-apiserver, with a fakeKubelet binding pods and
// writing their status. The phases run in order on one API server.
func TestAgainstRealAPIServer(t *testing.T) {
	parent := t // what outlives one phase is started on the parent test
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	cfg := testConfig(e)
	rm, cl := startRM(t, cfg)
	e.node("plain-1", nil, "8", "32Gi")

	getPod := func(t *testing.T, name string) *corev1.Pod {
		t.Helper()
		p, err := e.admin.Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("AM pod %s: %v", name, err)
		}
		return p
	}
	submitNew := func(t *testing.T, memMB int64, vcores int32) yarnid.AppID {
		t.Helper()
		id := newApp(t, cl)
		if err := submit(t, cl, submissionFor(id, memMB, vcores)); err != nil {
			t.Fatalf("submit %s: %v", id, err)
		}
		return id
	}
	reconcile := func(t *testing.T) {
		t.Helper()
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}

	var plainApp yarnid.AppID
	t.Run("without Koordinator the AM pod requests cpu and memory", func(t *testing.T) {
		plainApp = submitNew(t, 1536, 1)
		if plainApp.ClusterTimestamp != cfg.ClusterTimestamp || plainApp.ID != 1 {
			t.Fatalf("first id %s, want cluster timestamp %d sequence 1", plainApp, cfg.ClusterTimestamp)
		}
		p := getPod(t, rm.amPodName(plainApp, 1))
		res := p.Spec.Containers[0].Resources
		// 1536 MB rounds up to the 1024 MB minimum allocation's multiple.
		want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
		if !equalResources(res.Requests, want) || !equalResources(res.Limits, want) {
			t.Fatalf("requests %v limits %v, want %v", res.Requests, res.Limits, want)
		}
		if _, ok := p.Labels[LabelKoordQoS]; ok {
			t.Error("a cpu/memory pod is labelled batch")
		}
		wantLabels := map[string]string{LabelSubCluster: "SC-kube", LabelApplication: plainApp.String(), LabelAttempt: "1", LabelRole: RoleAM}
		if !reflect.DeepEqual(p.Labels, wantLabels) {
			t.Errorf("labels %v, want %v", p.Labels, wantLabels)
		}
		cid := fmt.Sprintf("container_e07_%d_0001_01_000001", cfg.ClusterTimestamp)
		if p.Annotations[AnnotationContainerID] != cid {
			t.Errorf("container id annotation %q, want %q", p.Annotations[AnnotationContainerID], cid)
		}
		// The AM goes the containers' way: the launcher runs it from the
		// launch Secret kuberm created (the application's command and
		// environment are there, with the AMRMToken in its credentials).
		if got := p.Spec.Containers[0].Command; !reflect.DeepEqual(got, []string{LauncherPath, "kuberm", "launch"}) {
			t.Errorf("command %q, want the launcher", got)
		}
		env := map[string]corev1.EnvVar{}
		for _, ev := range p.Spec.Containers[0].Env {
			env[ev.Name] = ev
		}
		if env["CONTAINER_ID"].Value != cid || env["USER"].Value != testUser || env["MAX_APP_ATTEMPTS"].Value != "2" ||
			env["NM_HOST"].ValueFrom == nil || env["NM_HOST"].ValueFrom.FieldRef.FieldPath != "status.hostIP" {
			t.Errorf("environment %v", p.Spec.Containers[0].Env)
		}
		ls, err := e.admin.Secrets(testNS).Get(ctx, rm.launchSecretName(rm.amContainerID(yarnid.AttemptID{App: plainApp, Attempt: 1})), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the AM's launch Secret: %v", err)
		}
		var clc yarnpb.ContainerLaunchContextProto
		if err := proto.Unmarshal(ls.Data[DataLaunchContext], &clc); err != nil {
			t.Fatal(err)
		}
		creds, err := hadoopcreds.Decode(clc.GetTokens())
		if err != nil || len(creds.Tokens) != 1 || creds.Tokens[0].Token.GetKind() != KindAMRMToken {
			t.Errorf("AM credentials %+v (%v), want its AMRMToken", creds, err)
		}
		if len(clc.GetCommand()) == 0 || !strings.Contains(strings.Join(clc.GetCommand(), " "), "org.example.AM") ||
			len(ls.OwnerReferences) != 1 || ls.OwnerReferences[0].UID != p.UID || ls.Immutable == nil || !*ls.Immutable {
			t.Errorf("launch Secret: command %q, owners %v, immutable %v", clc.GetCommand(), ls.OwnerReferences, ls.Immutable)
		}
		// A crash between the pod and its Secret: the reconcile loop
		// creates the Secret the waiting pod needs.
		if err := e.admin.Secrets(testNS).Delete(ctx, ls.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.admin.Secrets(testNS).Get(ctx, ls.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the reconcile loop did not recreate the AM's launch Secret: %v", err)
		}
		if sc := p.Spec.Containers[0].SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
			t.Errorf("security context %v, want the configured non-root user", sc)
		}
		if p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
			t.Errorf("restart policy %v, automount %v", p.Spec.RestartPolicy, p.Spec.AutomountServiceAccountToken)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Secret" || p.OwnerReferences[0].Name != rm.objectName(plainApp) {
			t.Errorf("owner references %v", p.OwnerReferences)
		}
		s, err := e.admin.Secrets(testNS).Get(ctx, rm.objectName(plainApp), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Annotations[AnnotationDigest] != p.Annotations[AnnotationDigest] || s.Annotations[AnnotationDigest] != digest(s.Data[DataSubmission]) {
			t.Error("the pod's submission digest is not the stored submission's")
		}
		// Submitting the same id again changes nothing (an RM's answer to a
		// router retry).
		if err := submit(t, cl, submissionFor(plainApp, 4096, 2)); err != nil {
			t.Fatalf("resubmit: %v", err)
		}
		if again := getPod(t, rm.amPodName(plainApp, 1)); again.ResourceVersion != p.ResourceVersion {
			t.Error("a resubmission changed the AM pod")
		}
	})

	e.node("koord-1", &kubebatch.Batch{MilliCPU: 16000, Memory: 64 << 30}, "32", "128Gi")

	var app yarnid.AppID
	t.Run("with Koordinator the AM pod requests batch resources", func(t *testing.T) {
		app = submitNew(t, 2048, 2)
		p := getPod(t, rm.amPodName(app, 1))
		res := p.Spec.Containers[0].Resources
		want := corev1.ResourceList{kubebatch.BatchCPU: resource.MustParse("2000"), kubebatch.BatchMemory: resource.MustParse("2Gi")}
		if !equalResources(res.Requests, want) || !equalResources(res.Limits, want) {
			t.Fatalf("requests %v limits %v, want %v", res.Requests, res.Limits, want)
		}
		if p.Labels[LabelKoordQoS] != "BE" {
			t.Errorf("batch pod without %s=BE: %v", LabelKoordQoS, p.Labels)
		}
	})

	t.Run("the report follows the AM pod's phase", func(t *testing.T) {
		rep := report(t, cl, app)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		if !strings.Contains(rep.GetDiagnostics(), "waiting for kube-scheduler") || rep.GetUser() != testUser || rep.GetName() != "distshell" ||
			rep.GetQueue() != "root.default" || !reflect.DeepEqual(rep.GetApplicationTags(), []string{"team-a"}) {
			t.Errorf("pending report %v", rep)
		}
		kl.bind(rm.amPodName(app, 1), "koord-1")
		rep = report(t, cl, app)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		if rep.GetHost() != "koord-1" {
			t.Errorf("host %q after binding", rep.GetHost())
		}
		kl.run(rm.amPodName(app, 1))
		wantState(t, report(t, cl, app), yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		// The AM unregisters, then its pod exits.
		am := amClient(t, rm, rm.AMRMToken(yarnid.AttemptID{App: app, Attempt: 1}), "")
		if err := am.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h")}, &yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
			t.Fatal(err)
		}
		if err := am.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
			FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, &yarnpb.FinishApplicationMasterResponseProto{}); err != nil {
			t.Fatal(err)
		}
		kl.exit(rm.amPodName(app, 1), 0, "Completed")
		rep = report(t, cl, app)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED)
		if rep.GetFinishTime() == 0 || rep.GetLaunchTime() == 0 {
			t.Errorf("finished report without launch/finish time: %v", rep)
		}
		// Reconcile records the final state in the Secret: it then
		// outlives the pod.
		reconcile(t)
		zero := int64(0)
		if err := e.admin.Pods(testNS).Delete(ctx, rm.amPodName(app, 1), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		wantState(t, report(t, cl, app), yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED)
	})

	var failing yarnid.AppID
	t.Run("a failed attempt is retried, the last failure fails the application", func(t *testing.T) {
		failing = submitNew(t, 1024, 1)
		kl.bind(rm.amPodName(failing, 1), "koord-1")
		kl.exit(rm.amPodName(failing, 1), 1, "Error")
		rep := report(t, cl, failing)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		if !strings.Contains(rep.GetDiagnostics(), "attempt 1 failed") || !strings.Contains(rep.GetDiagnostics(), "exitCode: 1") {
			t.Errorf("diagnostics %q", rep.GetDiagnostics())
		}
		reconcile(t)
		second := getPod(t, rm.amPodName(failing, 2))
		if second.Labels[LabelAttempt] != "2" {
			t.Fatalf("second attempt's labels %v", second.Labels)
		}
		reconcile(t) // idempotent: no third pod
		kl.bind(rm.amPodName(failing, 2), "koord-1")
		kl.exit(rm.amPodName(failing, 2), 137, "OOMKilled")
		rep = report(t, cl, failing)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED)
		if !strings.Contains(rep.GetDiagnostics(), "exitCode: 137") || !strings.Contains(rep.GetDiagnostics(), "OOMKilled") {
			t.Errorf("diagnostics %q", rep.GetDiagnostics())
		}
		atts := &yarnpb.GetApplicationAttemptsResponseProto{}
		if err := cl.Call(ctx, "getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: yarnid.AppPB(failing)}, atts); err != nil {
			t.Fatal(err)
		}
		if n := len(atts.ApplicationAttempts); n != 2 || atts.ApplicationAttempts[1].GetYarnApplicationAttemptState() != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
			t.Errorf("attempts %v", atts.ApplicationAttempts)
		}
		pods, err := e.admin.Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelApplication + "=" + failing.String()})
		if err != nil || len(pods.Items) != 2 {
			t.Fatalf("%d pods (%v), want exactly 2 attempts", len(pods.Items), err)
		}
		cr := &yarnpb.GetContainerReportResponseProto{}
		cid := yarnid.NewContainerID(yarnid.AttemptID{App: failing, Attempt: 2}, 7, 1)
		if err := cl.Call(ctx, "getContainerReport", &yarnpb.GetContainerReportRequestProto{ContainerId: yarnid.ContainerPB(cid)}, cr); err != nil {
			t.Fatal(err)
		}
		if cr.ContainerReport.GetContainerExitStatus() != 137 || cr.ContainerReport.GetContainerState() != yarnpb.ContainerStateProto_C_COMPLETE {
			t.Errorf("container report %v", cr.ContainerReport)
		}
	})

	var running yarnid.AppID
	t.Run("nodes report the batch capacity YARN may use", func(t *testing.T) {
		running = submitNew(t, 4096, 2)
		kl.bind(rm.amPodName(running, 1), "koord-1")
		kl.run(rm.amPodName(running, 1))
		// Another tenant's batch pod on the same node.
		other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "spark-exec", Namespace: "other"},
			Spec: corev1.PodSpec{NodeName: "koord-1", Containers: []corev1.Container{{Name: "c", Image: "x",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{kubebatch.BatchCPU: resource.MustParse("4000"), kubebatch.BatchMemory: resource.MustParse("8Gi")},
					Limits:   corev1.ResourceList{kubebatch.BatchCPU: resource.MustParse("4000"), kubebatch.BatchMemory: resource.MustParse("8Gi")},
				}}}}}
		if _, err := e.admin.Pods("other").Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		resp := &yarnpb.GetClusterNodesResponseProto{}
		if err := cl.Call(ctx, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, resp); err != nil {
			t.Fatal(err)
		}
		got := map[string][4]int64{}
		for _, n := range resp.NodeReports {
			got[n.GetNodeId().GetHost()] = [4]int64{n.GetCapability().GetMemory(), int64(n.GetCapability().GetVirtualCores()),
				n.GetUsed().GetMemory(), int64(n.GetUsed().GetVirtualCores())}
		}
		// koord-1: origin 16 cores / 64 GiB minus the other tenant's
		// 4 cores / 8 GiB; our running AM (4 GiB, 2 cores) is usage, not
		// subtracted from the capacity. plain-1: its allocatable.
		want := map[string][4]int64{"koord-1": {56 << 10, 12, 4096, 2}, "plain-1": {32 << 10, 8, 0, 0}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("node capacity/used %v, want %v", got, want)
		}
		m, err := rm.ClusterMetrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.TotalMB != 88<<10 || m.AllocatedMB != 4096 || m.AvailableMB != 84<<10 || m.ActiveNodes != 2 || m.AppsRunning != 1 {
			t.Errorf("cluster metrics %+v", m)
		}
		cm := &yarnpb.GetClusterMetricsResponseProto{}
		if err := cl.Call(ctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, cm); err != nil || cm.ClusterMetrics.GetNumNodeManagers() != 2 {
			t.Errorf("getClusterMetrics %v, %v", cm, err)
		}
		qi := &yarnpb.GetQueueInfoResponseProto{}
		if err := cl.Call(ctx, "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("default")}, qi); err != nil {
			t.Fatal(err)
		}
		if qi.QueueInfo.GetQueueName() != "default" || qi.QueueInfo.GetQueueStatistics().GetNumAppsRunning() != 1 {
			t.Errorf("queue info %v", qi.QueueInfo)
		}
	})

	t.Run("kill deletes every pod of the application", func(t *testing.T) {
		err := cl.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: yarnid.AppPB(running),
			Diagnostics: proto.String("user asked")}, &yarnpb.KillApplicationResponseProto{})
		if err != nil {
			t.Fatal(err)
		}
		rep := report(t, cl, running)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_KILLED, yarnpb.FinalApplicationStatusProto_APP_KILLED)
		if want := "Application " + running.String() + " was killed by user alice with diagnostic message: user asked"; rep.GetDiagnostics() != want {
			t.Errorf("diagnostics %q, want %q", rep.GetDiagnostics(), want)
		}
		pods, err := e.admin.Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelApplication + "=" + running.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				t.Errorf("pod %s not being deleted after the kill", p.Name)
			}
		}
		kl.finishDeletions()
		pods, err = e.admin.Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelApplication + "=" + running.String()})
		if err != nil || len(pods.Items) != 0 {
			t.Fatalf("pods left after the kill: %d (%v)", len(pods.Items), err)
		}
		wantState(t, report(t, cl, running), yarnpb.YarnApplicationStateProto_KILLED, yarnpb.FinalApplicationStatusProto_APP_KILLED)
		// A pending (unbound) AM pod goes at once.
		pending := submitNew(t, 1024, 1)
		if err := cl.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: yarnid.AppPB(pending)}, &yarnpb.KillApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		pods, err = e.admin.Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelApplication + "=" + pending.String()})
		if err != nil || len(pods.Items) != 0 {
			t.Fatalf("unbound pod left after the kill: %d (%v)", len(pods.Items), err)
		}
		// Reconcile does not resurrect a killed application.
		reconcile(t)
		pods, _ = e.admin.Pods(testNS).List(ctx, metav1.ListOptions{LabelSelector: LabelApplication + "=" + pending.String()})
		if len(pods.Items) != 0 {
			t.Fatal("reconcile created a pod for a killed application")
		}
	})

	t.Run("a restarted kuberm lists the same applications in the same states", func(t *testing.T) {
		before := listApps(t, cl)
		if len(before) != 5 {
			t.Fatalf("%d applications before the restart, want 5: %v", len(before), before)
		}
		rm.Close()
		rm2, cl2 := startRM(parent, cfg) // a new process object over the same API server
		rm = rm2
		if after := listApps(t, cl2); !reflect.DeepEqual(after, before) {
			t.Fatalf("after the restart:\n%v\nbefore:\n%v", after, before)
		}
		// The same cluster timestamp continues after the ids already used.
		if id := newApp(t, cl2); id.ID != int32(len(before))+1 {
			t.Errorf("first id after the restart %s, want sequence %d", id, len(before)+1)
		}
		cl = cl2
	})

	t.Run("bad input gets Hadoop exception classes", func(t *testing.T) {
		id := newApp(t, cl)
		cases := []struct {
			name, method string
			req          proto.Message
			resp         proto.Message
			class        string
		}{
			{"submit without an id", "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{}},
				&yarnpb.SubmitApplicationResponseProto{}, hadoopipc.ClassApplicationIDNotProvided},
			{"AM larger than the maximum allocation", "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: submissionFor(id, 100_000, 1)},
				&yarnpb.SubmitApplicationResponseProto{}, hadoopipc.ClassInvalidResourceRequest},
			{"negative AM size", "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: submissionFor(id, -1, 1)},
				&yarnpb.SubmitApplicationResponseProto{}, hadoopipc.ClassInvalidResourceRequest},
			{"unknown queue", "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: withQueue(submissionFor(id, 1024, 1), "nope")},
				&yarnpb.SubmitApplicationResponseProto{}, hadoopipc.ClassYarnException},
			{"unknown application", "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: yarnid.AppPB(yarnid.AppID{ClusterTimestamp: 5, ID: 5})},
				&yarnpb.GetApplicationReportResponseProto{}, hadoopipc.ClassApplicationNotFound},
			{"report without an id", "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{},
				&yarnpb.GetApplicationReportResponseProto{}, hadoopipc.ClassApplicationIDNotProvided},
			{"kill of an unknown application", "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: yarnid.AppPB(yarnid.AppID{ClusterTimestamp: 5, ID: 5})},
				&yarnpb.KillApplicationResponseProto{}, hadoopipc.ClassApplicationNotFound},
			{"unknown attempt", "getApplicationAttemptReport", &yarnpb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: yarnid.AttemptPB(yarnid.AttemptID{App: app, Attempt: 9})},
				&yarnpb.GetApplicationAttemptReportResponseProto{}, hadoopipc.ClassApplicationAttemptNotFound},
			{"a method kuberm does not serve", "moveApplicationAcrossQueues", &yarnpb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: yarnid.AppPB(app), TargetQueue: proto.String("x")},
				&yarnpb.MoveApplicationAcrossQueuesResponseProto{}, hadoopipc.ClassNoSuchMethod},
		}
		for _, tc := range cases {
			err := cl.Call(ctx, tc.method, tc.req, tc.resp)
			if got := remoteClass(err); got != tc.class {
				t.Errorf("%s: %v (class %q), want %s", tc.name, err, got, tc.class)
			}
		}
		// None of the refused submissions left an object behind.
		if _, err := e.admin.Secrets(testNS).Get(ctx, rm.objectName(id), metav1.GetOptions{}); err == nil {
			t.Error("a refused submission stored its application")
		}
	})

	t.Run("an AM pod the API server refuses fails the application", func(t *testing.T) {
		// A priority class that does not exist: admission refuses the pod.
		c2 := cfg
		c2.SubClusterID, c2.PriorityClassName = "SC-refused", "no-such-class"
		_, cl2 := startRM(t, c2)
		id := newApp(t, cl2)
		if err := submit(t, cl2, submissionFor(id, 1024, 1)); err != nil {
			t.Fatalf("submit: %v (the submission itself is accepted, as on an RM)", err)
		}
		rep := report(t, cl2, id)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED)
		if !strings.Contains(rep.GetDiagnostics(), "refused by the Kubernetes API server") || !strings.Contains(rep.GetDiagnostics(), "no-such-class") {
			t.Errorf("diagnostics %q", rep.GetDiagnostics())
		}
	})

	t.Run("membership: registers and heartbeats its capacity", func(t *testing.T) {
		st := &fakeStore{}
		c2 := cfg
		c2.Store = st
		r3, _ := startRM(t, c2)
		if !r3.Heartbeat(ctx, false) {
			t.Fatal("not registered")
		}
		row := st.rows["SC-kube"]
		if row.ClientRMServiceAddress != r3.Addrs().Client || row.AMRMServiceAddress != r3.Addrs().Scheduler || row.RMWebServiceAddress != r3.Addrs().Web {
			t.Errorf("registered addresses %+v, want %+v", row, r3.Addrs())
		}
		// As the GPG and the routers read it (the RM REST envelope).
		if m, err := policies.ParseCapability([]byte(row.Capability)); err != nil || m.TotalMB != 88<<10 || m.ActiveNodes != 2 {
			t.Errorf("capability %s (%v)", row.Capability, err)
		}
		if !r3.Heartbeat(ctx, true) || st.heartbeats != 1 || !st.lastState {
			t.Errorf("heartbeat: %d heartbeats, running %v", st.heartbeats, st.lastState)
		}
		// A store that lost the row gets a registration again.
		delete(st.rows, "SC-kube")
		if r3.Heartbeat(ctx, true) {
			t.Error("a heartbeat of a lost row reported registered")
		}
		if !r3.Heartbeat(ctx, false) || st.rows["SC-kube"].ClientRMServiceAddress == "" {
			t.Error("no re-registration after the store lost the row")
		}
	})
}

func withQueue(sc *yarnpb.ApplicationSubmissionContextProto, q string) *yarnpb.ApplicationSubmissionContextProto {
	sc.Queue = proto.String(q)
	return sc
}

// listApps is getApplications as comparable strings.
func listApps(t *testing.T, cl *hadoopipc.Client) []string {
	t.Helper()
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := cl.Call(context.Background(), "getApplications", &yarnpb.GetApplicationsRequestProto{}, resp); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range resp.Applications {
		out = append(out, fmt.Sprintf("%s %v %v %q", yarnid.AppFromPB(a.ApplicationId), a.GetYarnApplicationState(), a.GetFinalApplicationStatus(), a.GetDiagnostics()))
	}
	return out
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
