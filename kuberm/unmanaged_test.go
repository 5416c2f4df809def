package kuberm

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// fakeClock is the RMs' clock in the liveness test: moved by hand, so no
// assertion depends on how long anything took.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// uamSubmission is what UnmanagedAMLauncher submits: unmanaged_am, an
// empty AM launch context, no AM resource request.
func uamSubmission(id yarnid.AppID, name string) *yarnpb.ApplicationSubmissionContextProto {
	return &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: yarnid.AppPB(id), ApplicationName: proto.String(name), Queue: proto.String("default"),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{}, UnmanagedAm: proto.Bool(true),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(0)},
	}
}

func clientAs(t *testing.T, rm *RM, user string) *hadoopipc.Client {
	t.Helper()
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client},
		Protocol: hadoopipc.ProtocolApplicationClient, User: user})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func attemptReport(t *testing.T, cl *hadoopipc.Client, at yarnid.AttemptID) *yarnpb.ApplicationAttemptReportProto {
	t.Helper()
	resp := &yarnpb.GetApplicationAttemptReportResponseProto{}
	if err := cl.Call(context.Background(), "getApplicationAttemptReport",
		&yarnpb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: yarnid.AttemptPB(at)}, resp); err != nil {
		t.Fatal(err)
	}
	return resp.ApplicationAttemptReport
}

// amPodWatch records every AM pod the API server ever holds in the
// namespace, from before the first submission.
type amPodWatch struct {
	mu   sync.Mutex
	seen map[string]string // pod name -> application
}

func watchAMPods(t *testing.T, e *env) *amPodWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := e.admin.Pods(testNS).Watch(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleAM})
	if err != nil {
		t.Fatal(err)
	}
	aw := &amPodWatch{seen: map[string]string{}}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				aw.mu.Lock()
				aw.seen[p.Name] = p.Labels[LabelApplication]
				aw.mu.Unlock()
			}
		}
	}()
	return aw
}

func (w *amPodWatch) of(app yarnid.AppID) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, a := range w.seen {
		if a == app.String() {
			out = append(out, name)
		}
	}
	return out
}

// TestUnmanagedAMAgainstRealAPIServer: unmanaged AMs as Hadoop's RM serves
// them, over a real kube-apiserver with the shipped RBAC and real IPC
// (DIGEST-MD5 with the token taken from the report): no AM pod, attempt
// LAUNCHED at once, the AMRMToken in the owner's report only and only
// while LAUNCHED; register, allocate (container pods owned by the
// application Secret), a kuberm restart (state kept, re-register), finish;
// liveness expiry (heartbeats keep it alive, silence fails it, across a
// restart too); kill deletes the container pods; the bound on live
// unmanaged applications.
func TestUnmanagedAMAgainstRealAPIServer(t *testing.T) {
	parent := t // what outlives one phase is started on the parent test
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	clock := &fakeClock{}
	clock.ms.Store(1_800_000_000_000)
	cfg := testConfig(e)
	cfg.LauncherImage = "registry.example/yarnfed:1"
	cfg.Now = clock.now
	expiry := 10 * time.Minute
	cfg.AMLivenessExpiry = config.Duration(expiry)
	rm, cl := startRM(t, cfg)
	e.node("n1", nil, "8", "32Gi")
	e.placeNode("n1", "z1", "10.0.0.1")
	amPods := watchAMPods(t, e)
	other := clientAs(t, rm, "mallory")

	app := newApp(t, cl)
	if err := submit(t, cl, uamSubmission(app, "uam")); err != nil {
		t.Fatal(err)
	}
	at := yarnid.AttemptID{App: app, Attempt: 1}

	// Accepted, attempt LAUNCHED at once; the owner's report holds the
	// token, another user's does not.
	rep := report(t, cl, app)
	wantState(t, rep, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
	if !rep.GetUnmanagedApplication() || yarnid.AttemptFromPB(rep.GetCurrentApplicationAttemptId()) != at {
		t.Errorf("report: unmanaged %v, attempt %v", rep.GetUnmanagedApplication(), rep.GetCurrentApplicationAttemptId())
	}
	tok := rep.GetAmRmToken()
	want := rm.AMRMToken(at)
	if tok == nil || !bytes.Equal(tok.GetIdentifier(), want.GetIdentifier()) || !bytes.Equal(tok.GetPassword(), want.GetPassword()) || tok.GetKind() != KindAMRMToken {
		t.Fatalf("the owner's report carries token %v, want the attempt's AMRMToken", tok)
	}
	if r := report(t, other, app); r.GetAmRmToken() != nil {
		t.Errorf("another user's report carries the AMRMToken")
	}
	for _, c := range []struct {
		cl    *hadoopipc.Client
		token bool
	}{{cl, true}, {other, false}} {
		apps := &yarnpb.GetApplicationsResponseProto{}
		if err := c.cl.Call(ctx, "getApplications", &yarnpb.GetApplicationsRequestProto{}, apps); err != nil {
			t.Fatal(err)
		}
		for _, a := range apps.GetApplications() {
			if yarnid.AppFromPB(a.ApplicationId) == app && (a.GetAmRmToken() != nil) != c.token {
				t.Errorf("getApplications: token present %v, want %v", a.GetAmRmToken() != nil, c.token)
			}
		}
	}
	ar := attemptReport(t, cl, at)
	if ar.GetYarnApplicationAttemptState() != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_LAUNCHED || ar.AmContainerId != nil {
		t.Errorf("attempt report: %v, AM container %v; want LAUNCHED and none", ar.GetYarnApplicationAttemptState(), ar.AmContainerId)
	}

	// The AM registers with the token from the report.
	am := &testAM{cl: amClient(t, rm, tok, "")}
	if err := am.cl.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
		Host: proto.String("submitter-host"), RpcPort: proto.Int32(4711), TrackingUrl: proto.String("http://submitter-host/")},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatalf("register with the report's token: %v", err)
	}
	rep = report(t, cl, app)
	wantState(t, rep, yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
	if rep.GetHost() != "submitter-host" || rep.GetRpcPort() != 4711 || rep.GetAmRmToken() != nil {
		t.Errorf("report after register: host %q port %d token %v (the token is given while LAUNCHED only)", rep.GetHost(), rep.GetRpcPort(), rep.GetAmRmToken())
	}
	if s := attemptReport(t, cl, at).GetYarnApplicationAttemptState(); s != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_RUNNING {
		t.Errorf("attempt %v after register, want RUNNING", s)
	}
	if err := am.cl.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{},
		&yarnpb.RegisterApplicationMasterResponseProto{}); remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
		t.Errorf("second register: %v, want InvalidApplicationMasterRequestException", err)
	}

	// Allocate: two containers, pods owned by the application Secret.
	am.allocate(t, anyAsk(1, 1024, 1, 2, true))
	pods := e.containerPods(t, app)
	if len(pods) != 2 {
		t.Fatalf("%d container pods, want 2", len(pods))
	}
	for _, p := range pods {
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Secret" || p.OwnerReferences[0].Name != rm.objectName(app) || p.OwnerReferences[0].UID == "" {
			t.Errorf("container pod %s owner references %v, want the application Secret", p.Name, p.OwnerReferences)
		}
		kl.bind(p.Name, "n1")
	}
	expireView(rm)
	if got := am.allocate(t); len(got.AllocatedContainers) != 2 || len(got.NmTokens) != 1 {
		t.Fatalf("allocate: %d containers, %d NM tokens; want 2 and 1", len(got.AllocatedContainers), len(got.NmTokens))
	}
	for _, p := range pods {
		kl.runContainer(p.Name)
	}

	// A restart keeps the application, its registration and its containers;
	// the AM re-registers (AMRMClient does on ApplicationMasterNotRegistered).
	rm.Close()
	rm, cl = startRM(t, cfg)
	rep = report(t, cl, app)
	wantState(t, rep, yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
	if rep.GetHost() != "submitter-host" || !rep.GetUnmanagedApplication() {
		t.Errorf("report after a restart: host %q unmanaged %v", rep.GetHost(), rep.GetUnmanagedApplication())
	}
	am = &testAM{cl: amClient(t, rm, tok, "")}
	if _, err := am.call(&yarnpb.AllocateRequestProto{}); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Fatalf("allocate after a restart: %v, want ApplicationMasterNotRegisteredException", err)
	}
	if err := am.register(); err != nil {
		t.Fatalf("re-register after a restart: %v", err)
	}
	am.allocate(t, anyAsk(1, 1024, 1, 0, true))
	if n := len(alive(e.containerPods(t, app))); n != 2 {
		t.Errorf("%d container pods after the restart, want the 2 running", n)
	}

	// Finish: FINISHED/SUCCEEDED, the attempt FINISHED, containers gone.
	fin := &yarnpb.FinishApplicationMasterResponseProto{}
	if err := am.cl.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, fin); err != nil || !fin.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", fin, err)
	}
	wantState(t, report(t, cl, app), yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED)
	if s := attemptReport(t, cl, at).GetYarnApplicationAttemptState(); s != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FINISHED {
		t.Errorf("attempt %v after finish, want FINISHED", s)
	}
	if err := rm.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	kl.finishDeletions()
	if n := len(e.containerPods(t, app)); n != 0 {
		t.Errorf("%d container pods left after finish", n)
	}
	if r := report(t, cl, app); r.GetAmRmToken() != nil {
		t.Error("a finished application's report carries the AMRMToken")
	}

	t.Run("liveness expiry", func(t *testing.T) {
		id := newApp(t, cl)
		if err := submit(t, cl, uamSubmission(id, "uam-silent")); err != nil {
			t.Fatal(err)
		}
		a1 := yarnid.AttemptID{App: id, Attempt: 1}
		am := &testAM{cl: amClient(t, rm, report(t, cl, id).GetAmRmToken(), "")}
		if err := am.register(); err != nil {
			t.Fatal(err)
		}
		am.allocate(t, anyAsk(1, 1024, 1, 1, true))
		pods := e.containerPods(t, id)
		if len(pods) != 1 {
			t.Fatalf("%d container pods, want 1", len(pods))
		}
		kl.bind(pods[0].Name, "n1")
		// Heartbeats keep it: two silences of most of the interval, an
		// allocate between them.
		step := expiry - time.Minute
		clock.advance(step)
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		am.allocate(t)
		clock.advance(step)
		if err := rm.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		wantState(t, report(t, cl, id), yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)

		// A restart keeps the attempt and its clock runs in the new process
		// (from its start, as an RM's recovery registers attempts anew).
		rm.Close()
		rm2, cl2 := startRM(parent, cfg)
		clock.advance(step)
		if err := rm2.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		wantState(t, report(t, cl2, id), yarnpb.YarnApplicationStateProto_RUNNING, yarnpb.FinalApplicationStatusProto_APP_UNDEFINED)
		clock.advance(2 * time.Minute) // silence beyond the interval
		if err := rm2.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		rep := report(t, cl2, id)
		wantState(t, rep, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED)
		if !strings.Contains(rep.GetDiagnostics(), "ApplicationMaster for attempt "+a1.String()+" timed out") {
			t.Errorf("diagnostics %q", rep.GetDiagnostics())
		}
		if s := attemptReport(t, cl2, a1).GetYarnApplicationAttemptState(); s != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_FAILED {
			t.Errorf("attempt %v after expiry, want FAILED", s)
		}
		kl.finishDeletions()
		if n := len(e.containerPods(t, id)); n != 0 {
			t.Errorf("%d container pods left after expiry", n)
		}
		// Its token no longer logs in; the application is never retried.
		am2 := &testAM{cl: amClient(t, rm2, rm2.AMRMToken(a1), "")}
		if err := am2.register(); !loginRefused(err) {
			t.Errorf("register after expiry: %v, want the login refused", err)
		}
		if n := len(attempts(t, cl2, id)); n != 1 {
			t.Errorf("%d attempts after expiry, want 1 (an unmanaged AM is never retried)", n)
		}

		// An AM that never registers expires too.
		idle := newApp(t, cl2)
		if err := submit(t, cl2, uamSubmission(idle, "uam-idle")); err != nil {
			t.Fatal(err)
		}
		clock.advance(expiry + time.Second)
		if err := rm2.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		wantState(t, report(t, cl2, idle), yarnpb.YarnApplicationStateProto_FAILED, yarnpb.FinalApplicationStatusProto_APP_FAILED)
		rm, cl = rm2, cl2
	})

	t.Run("kill deletes the container pods", func(t *testing.T) {
		id := newApp(t, cl)
		if err := submit(t, cl, uamSubmission(id, "uam-kill")); err != nil {
			t.Fatal(err)
		}
		am := &testAM{cl: amClient(t, rm, report(t, cl, id).GetAmRmToken(), "")}
		if err := am.register(); err != nil {
			t.Fatal(err)
		}
		am.allocate(t, anyAsk(1, 1024, 1, 2, true))
		pods := e.containerPods(t, id)
		if len(pods) != 2 {
			t.Fatalf("%d container pods, want 2", len(pods))
		}
		kl.bind(pods[0].Name, "n1")
		kl.runContainer(pods[0].Name)
		if err := cl.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: yarnid.AppPB(id)},
			&yarnpb.KillApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		kl.finishDeletions()
		if n := len(e.containerPods(t, id)); n != 0 {
			t.Errorf("%d container pods left after the kill", n)
		}
		wantState(t, report(t, cl, id), yarnpb.YarnApplicationStateProto_KILLED, yarnpb.FinalApplicationStatusProto_APP_KILLED)
		if s := attemptReport(t, cl, yarnid.AttemptID{App: id, Attempt: 1}).GetYarnApplicationAttemptState(); s != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_KILLED {
			t.Errorf("attempt %v after kill, want KILLED", s)
		}
	})

	t.Run("live unmanaged applications are bounded", func(t *testing.T) {
		// Every unmanaged application so far is over: a bound of one takes
		// one more, then refuses; a managed submission is not counted.
		rm.Close()
		bounded := cfg
		bounded.MaxUnmanagedApps = 1
		rm3, cl3 := startRM(parent, bounded)
		if err := submit(t, cl3, uamSubmission(newApp(t, cl3), "uam-1")); err != nil {
			t.Fatal(err)
		}
		err := submit(t, cl3, uamSubmission(newApp(t, cl3), "uam-2"))
		if remoteClass(err) != hadoopipc.ClassYarnException || !strings.Contains(err.Error(), "max_unmanaged_applications") {
			t.Errorf("an unmanaged submission beyond the bound: %v, want a YarnException naming the bound", err)
		}
		if err := submit(t, cl3, submissionFor(newApp(t, cl3), 1024, 1)); err != nil {
			t.Errorf("a managed submission at the bound: %v", err)
		}
		rm, cl = rm3, cl3
	})

	// No AM pod was ever created for an unmanaged application.
	apps := listApps(t, cl)
	for _, p := range amPodsOfUnmanaged(t, e, amPods) {
		t.Errorf("AM pod %s of an unmanaged application (applications %v)", p, apps)
	}
}

func attempts(t *testing.T, cl *hadoopipc.Client, id yarnid.AppID) []*yarnpb.ApplicationAttemptReportProto {
	t.Helper()
	resp := &yarnpb.GetApplicationAttemptsResponseProto{}
	if err := cl.Call(context.Background(), "getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: yarnid.AppPB(id)}, resp); err != nil {
		t.Fatal(err)
	}
	return resp.ApplicationAttempts
}

// amPodsOfUnmanaged is every AM pod the watch saw whose application's
// Secret is labelled unmanaged.
func amPodsOfUnmanaged(t *testing.T, e *env, w *amPodWatch) []string {
	t.Helper()
	list, err := e.admin.Secrets(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelUnmanaged})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 5 {
		t.Errorf("%d unmanaged application Secrets, want at least 5 (the label is what this check relies on)", len(list.Items))
	}
	var out []string
	for _, s := range list.Items {
		id, err := yarnid.ParseAppID(s.Labels[LabelApplication])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w.of(id)...)
	}
	return out
}
