package router_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/logtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// Spanning applications (uam.go) over simrm sub-clusters: the home runs
// the app's AM, each secondary an unmanaged AM (UAM) under the same
// ApplicationId, launched here as an AMRMProxy would (submit unmanaged,
// take the AMRMToken, register, allocate) and recorded in the registry.

// spanFed is a router over simrm sub-clusters SC-1..SC-n; SC-1 is every
// app's home.
type spanFed struct {
	*routertest.Fed
	sims map[router.SubClusterID]*simrm.RM
	reg  *prometheus.Registry
	logs *logtest.Buffer
	rmc  map[router.SubClusterID]*hadoopipc.Client // alice's clients of each RM
}

func newSpanFed(t *testing.T, n int, mod func(*router.Config)) *spanFed {
	t.Helper()
	s := &spanFed{Fed: &routertest.Fed{T: t, Store: routertest.NewStore()}, sims: map[router.SubClusterID]*simrm.RM{},
		reg: prometheus.NewRegistry(), logs: &logtest.Buffer{}, rmc: map[router.SubClusterID]*hadoopipc.Client{}}
	for i := 1; i <= n; i++ {
		id := router.SubClusterID(fmt.Sprintf("SC-%d", i))
		rm := routertest.StartSim(t, string(id), 1_700_000_000_000+int64(i))
		a := rm.Addrs()
		s.sims[id] = rm
		s.Store.Put(router.SubClusterInfo{ID: id, ClientRMServiceAddress: a.Client, AMRMServiceAddress: a.Scheduler,
			RMAdminServiceAddress: a.Admin, RMWebServiceAddress: a.Web, State: router.StateRunning})
	}
	cfg := router.DefaultConfig()
	cfg.WebAddress, cfg.Store, cfg.Registerer = "", s.Store, s.reg
	cfg.Logger = slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.MembershipRefresh = router.Duration(20 * time.Millisecond)
	routertest.Prefer("SC-1")(&cfg)
	if mod != nil {
		mod(&cfg)
	}
	s.Router = routertest.StartRouter(t, cfg)
	s.Client = s.dialAs("alice")
	return s
}

func (s *spanFed) dialAs(user string) *hadoopipc.Client {
	return ipcTo(s.T, s.Router.ClientRMAddr().String(), hadoopipc.ProtocolApplicationClient, user, nil)
}

func ipcTo(t testing.TB, addr, protocol, user string, tok *commonpb.TokenProto) *hadoopipc.Client {
	t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: protocol, User: user, Token: tok, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// spanningApp submits an app through the router (home SC-1, as alice),
// waits for it to run, and launches its UAM holding containers[i]
// containers on each secondary, recording each in the registry.
func (s *spanFed) spanningApp(containers map[router.SubClusterID]int) *yarnpb.ApplicationIdProto {
	t := s.T
	t.Helper()
	id := s.NewApp(s.Client)
	if err := s.Submit(s.Client, id); err != nil {
		t.Fatal(err)
	}
	routertest.Poll(t, "home app RUNNING", func() bool {
		return s.stateAt("SC-1", id) == yarnpb.YarnApplicationStateProto_RUNNING
	})
	for sc, n := range containers {
		s.launchUAM(sc, id, n)
		s.Store.PutUAM(router.UAMRow{App: yarnid.AppIDString(id), SubCluster: sc, Home: "SC-1", Attempt: yarnid.AppIDString(id) + "_1",
			Proxy: "nm-test:8049", User: "alice", Queue: "default", Registered: true})
	}
	return id
}

// launchUAM is what an AMRMProxy does on a secondary: submit the app id
// as unmanaged, log in with the AMRMToken, register and get n containers.
func (s *spanFed) launchUAM(sc router.SubClusterID, id *yarnpb.ApplicationIdProto, n int) {
	t := s.T
	t.Helper()
	a := s.sims[sc].Addrs()
	cl := ipcTo(t, a.Client, hadoopipc.ProtocolApplicationClient, "alice", nil)
	sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("UnmanagedAM"), Queue: proto.String("default"), UnmanagedAm: proto.Bool(true),
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{}, Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
	}}
	if err := cl.Call(routertest.Ctx(t), "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		t.Fatalf("submit UAM on %s: %v", sc, err)
	}
	var tok *commonpb.TokenProto
	routertest.Poll(t, "UAM token", func() bool {
		rep := &yarnpb.GetApplicationReportResponseProto{}
		if err := cl.Call(routertest.Ctx(t), "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, rep); err != nil {
			t.Fatal(err)
		}
		tok = rep.GetApplicationReport().GetAmRmToken()
		return tok != nil
	})
	am := ipcTo(t, a.Scheduler, hadoopipc.ProtocolApplicationMaster, "", tok)
	if err := am.Call(routertest.Ctx(t), "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("nm-test"), RpcPort: proto.Int32(1)},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatalf("register UAM on %s: %v", sc, err)
	}
	ask := &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(n))}
	next, got := int32(0), 0
	req := &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*yarnpb.ResourceRequestProto{ask}}
	routertest.Poll(t, "UAM containers", func() bool {
		resp := &yarnpb.AllocateResponseProto{}
		if err := am.Call(routertest.Ctx(t), "allocate", req, resp); err != nil {
			t.Fatal(err)
		}
		next = resp.GetResponseId()
		got += len(resp.GetAllocatedContainers())
		req = &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(next)}
		return got >= n
	})
}

// reportAt is sc's own report of app (asked directly, as alice).
func (s *spanFed) reportAt(sc router.SubClusterID, id *yarnpb.ApplicationIdProto) *yarnpb.ApplicationReportProto {
	s.T.Helper()
	c := s.rmc[sc]
	if c == nil {
		c = ipcTo(s.T, s.sims[sc].Addrs().Client, hadoopipc.ProtocolApplicationClient, "alice", nil)
		s.rmc[sc] = c
	}
	rep := &yarnpb.GetApplicationReportResponseProto{}
	if err := c.Call(routertest.Ctx(s.T), "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, rep); err != nil {
		s.T.Fatalf("report at %s: %v", sc, err)
	}
	return rep.GetApplicationReport()
}

func (s *spanFed) stateAt(sc router.SubClusterID, id *yarnpb.ApplicationIdProto) yarnpb.YarnApplicationStateProto {
	return s.reportAt(sc, id).GetYarnApplicationState()
}

// metric is the value of one series of the router's registry (0: absent).
func (s *spanFed) metric(name string, labels map[string]string) float64 {
	mfs, err := s.reg.Gather()
	if err != nil {
		s.T.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

const killed = yarnpb.YarnApplicationStateProto_KILLED

// TestKillSpanningAppIPC: `yarn application -kill` through the router
// kills the app at home and its UAM on every secondary the registry lists,
// deletes the rows, counts and audits the fan-out.
func TestKillSpanningAppIPC(t *testing.T) {
	s := newSpanFed(t, 3, nil)
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 3, "SC-3": 2})
	start := time.Now()
	if err := s.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
	for _, sc := range []router.SubClusterID{"SC-1", "SC-2", "SC-3"} {
		routertest.Poll(t, string(sc)+" KILLED", func() bool { return s.stateAt(sc, id) == killed })
	}
	t.Logf("kill call to the last UAM KILLED: %v", time.Since(start))
	if rows := s.Store.UAMs(); len(rows) != 0 {
		t.Fatalf("rows left after the kill: %+v", rows)
	}
	for _, sc := range []string{"SC-2", "SC-3"} {
		if v := s.metric("yarnfed_router_uam_kills_total", map[string]string{"subcluster": sc, "outcome": "killed"}); v != 1 {
			t.Errorf("uam kills on %s = %v", sc, v)
		}
	}
	if v := s.metric("yarnfed_router_kill_fanout_seconds", nil); v != 1 {
		t.Errorf("fan-out observations %v", v)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "operation=killUnmanagedAMs") || !strings.Contains(logs, "killed=SC-2,SC-3") || !strings.Contains(logs, "user=alice") {
		t.Errorf("no fan-out audit line:\n%s", logs)
	}
}

// TestKillSpanningAppREST: PUT /apps/{id}/state {"state":"KILLED"} does
// the same.
func TestKillSpanningAppREST(t *testing.T) {
	s := newSpanFed(t, 2, nil)
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 2})
	code, b := s.Do("PUT", "/ws/v1/cluster/apps/"+yarnid.AppIDString(id)+"/state?user.name=alice", "", "application/json", `{"state":"KILLED"}`)
	if code != 200 && code != 202 {
		t.Fatalf("REST kill: %d %s", code, b)
	}
	routertest.Poll(t, "UAM KILLED", func() bool { return s.stateAt("SC-2", id) == killed })
	if s.stateAt("SC-1", id) != killed || len(s.Store.UAMs()) != 0 {
		t.Fatalf("home %v, rows %+v", s.stateAt("SC-1", id), s.Store.UAMs())
	}
}

// TestKillRefusedByACLKillsNothing: a caller the application ACLs refuse
// kills nothing, at home or on a secondary, through IPC or REST.
func TestKillRefusedByACLKillsNothing(t *testing.T) {
	s := newSpanFed(t, 2, func(c *router.Config) { c.Authz.ACLEnable = true })
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 2})
	bob := s.dialAs("bob")
	err := bob.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
	if err == nil || !strings.Contains(err.Error(), "MODIFY_APP") {
		t.Fatalf("bob's kill: %v", err)
	}
	code, b := s.Do("PUT", "/ws/v1/cluster/apps/"+yarnid.AppIDString(id)+"/state?user.name=bob", "", "application/json", `{"state":"KILLED"}`)
	if code != 403 {
		t.Fatalf("bob's REST kill: %d %s", code, b)
	}
	for _, sc := range []router.SubClusterID{"SC-1", "SC-2"} {
		if st := s.stateAt(sc, id); st != yarnpb.YarnApplicationStateProto_RUNNING {
			t.Errorf("%s: %v after a refused kill", sc, st)
		}
	}
	if len(s.Store.UAMs()) != 1 || s.Store.Ops("GetUAMs") != 0 {
		t.Errorf("rows %+v, registry reads %d", s.Store.UAMs(), s.Store.Ops("GetUAMs"))
	}
}

// TestKillHomeRefusalKillsNoUAM: when the home RM itself refuses the kill
// (its ACLs, reached as the caller), no secondary is asked, whatever its
// own ACLs.
func TestKillHomeRefusalKillsNoUAM(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-1"))
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	f.RMs["SC-2"].AddApp(&yarnpb.ApplicationReportProto{ApplicationId: id, Name: proto.String("UnmanagedAM"), UnmanagedApplication: proto.Bool(true),
		YarnApplicationState: yarnpb.YarnApplicationStateProto_RUNNING.Enum()})
	f.Store.PutUAM(router.UAMRow{App: yarnid.AppIDString(id), SubCluster: "SC-2", Home: "SC-1"})
	f.RMs["SC-1"].Intercept = func(method string) (error, bool) {
		if method == "forceKillApplication" {
			return &hadoopipc.RemoteError{Class: hadoopipc.ClassAccessControl, Message: "User bob cannot perform operation MODIFY_APP"}, false
		}
		return nil, false
	}
	if err := f.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err == nil {
		t.Fatal("the home's refusal did not reach the client")
	}
	if n := f.RMs["SC-2"].Calls("forceKillApplication"); n != 0 || len(f.Store.UAMs()) != 1 {
		t.Fatalf("secondary kills %d, rows %+v", n, f.Store.UAMs())
	}
}

// TestKillSecondaryFailureKeepsRow: a secondary that does not take the
// kill keeps its row (for the GPG and the proxy) and is counted; the
// others are killed and their rows deleted; the client gets the home's
// answer.
func TestKillSecondaryFailureKeepsRow(t *testing.T) {
	s := newSpanFed(t, 2, nil)
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 1})
	// A UAM on a sub-cluster that has since left the federation.
	s.Store.PutUAM(router.UAMRow{App: yarnid.AppIDString(id), SubCluster: "SC-9", Home: "SC-1"})
	if err := s.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
	routertest.Poll(t, "UAM KILLED", func() bool { return s.stateAt("SC-2", id) == killed })
	rows := s.Store.UAMs()
	if len(rows) != 1 || rows[0].SubCluster != "SC-9" {
		t.Fatalf("rows %+v, want SC-9's only", rows)
	}
	if v := s.metric("yarnfed_router_uam_kills_total", map[string]string{"subcluster": "SC-9", "outcome": "failed"}); v != 1 {
		t.Errorf("failed kills on SC-9 = %v", v)
	}
	if !strings.Contains(s.logs.String(), "failed=SC-9") {
		t.Errorf("audit line lacks the failed secondary:\n%s", s.logs.String())
	}
}

// TestSpanningAppVisible: the router's report (IPC and REST, one app and
// lists) counts the UAMs' containers in the app, REST and the web UI list
// the sub-clusters it spans with each one's containers, and cluster
// metrics count one application.
func TestSpanningAppVisible(t *testing.T) {
	s := newSpanFed(t, 2, nil)
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 3})
	app := yarnid.AppIDString(id)
	homeN := s.reportAt("SC-1", id).GetAppResource_Usage().GetNumUsedContainers()
	uamN := s.reportAt("SC-2", id).GetAppResource_Usage().GetNumUsedContainers()
	if uamN != 3 || homeN < 1 {
		t.Fatalf("containers at home %d, UAM %d", homeN, uamN)
	}

	rep, err := s.Report(s.Client, id)
	if err != nil || rep.GetAppResource_Usage().GetNumUsedContainers() != homeN+uamN || rep.GetUnmanagedApplication() {
		t.Fatalf("IPC report: %d containers (want %d), %v", rep.GetAppResource_Usage().GetNumUsedContainers(), homeN+uamN, err)
	}
	list := &yarnpb.GetApplicationsResponseProto{}
	if err := s.Client.Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, list); err != nil || len(list.GetApplications()) != 1 ||
		list.GetApplications()[0].GetAppResource_Usage().GetNumUsedContainers() != homeN+uamN {
		t.Fatalf("IPC list: %v %v", list.GetApplications(), err)
	}

	checkSpan := func(where string, a rmrest.App) {
		t.Helper()
		if a.RunningContainers != homeN+uamN || a.SubClusters == nil || len(a.SubClusters.SubCluster) != 2 {
			t.Fatalf("%s: %d containers, span %+v", where, a.RunningContainers, a.SubClusters)
		}
		h, u := a.SubClusters.SubCluster[0], a.SubClusters.SubCluster[1]
		if h.SubClusterID != "SC-1" || !h.Home || h.RunningContainers != homeN || u.SubClusterID != "SC-2" || u.Home || u.RunningContainers != uamN || u.State != "RUNNING" {
			t.Fatalf("%s: span %+v", where, a.SubClusters.SubCluster)
		}
	}
	code, b := s.Do("GET", "/ws/v1/cluster/apps/"+app, "", "", "")
	var one rmrest.AppResponse
	if code != 200 || json.Unmarshal(b, &one) != nil {
		t.Fatalf("GET app: %d %s", code, b)
	}
	checkSpan("GET app", one.App)
	code, b = s.Do("GET", "/ws/v1/cluster/apps/"+app, "application/xml", "", "")
	var onex rmrest.App
	if code != 200 || xml.Unmarshal(b, &onex) != nil || !strings.Contains(string(b), "<subClusters><subCluster><subClusterId>SC-1</subClusterId>") {
		t.Fatalf("GET app XML: %d %s", code, b)
	}
	checkSpan("GET app XML", onex)
	code, b = s.Do("GET", "/ws/v1/cluster/apps", "", "", "")
	var all rmrest.AppsResponse
	if code != 200 || json.Unmarshal(b, &all) != nil || len(all.Apps.App) != 1 {
		t.Fatalf("GET apps: %d %s", code, b)
	}
	checkSpan("GET apps", all.Apps.App[0])

	// The RMs count two running applications; the federation has one.
	code, b = s.Do("GET", "/ws/v1/cluster/metrics", "", "", "")
	var m rmrest.ClusterMetricsResponse
	if code != 200 || json.Unmarshal(b, &m) != nil {
		t.Fatalf("metrics: %d %s", code, b)
	}
	if cm := m.ClusterMetrics; cm.AppsRunning != 1 || cm.AppsSubmitted != 1 || cm.AppsPending != 0 || cm.AppsCompleted != 0 || cm.AppsKilled != 0 {
		t.Fatalf("metrics: running %d submitted %d pending %d completed %d killed %d", cm.AppsRunning, cm.AppsSubmitted, cm.AppsPending, cm.AppsCompleted, cm.AppsKilled)
	}

	// The web UI's application page and list show the span.
	code, b = s.Do("GET", "/cluster/app/"+app, "", "", "")
	page := string(b)
	if code != 200 || !strings.Contains(page, `id="app-span"`) || !strings.Contains(page, `data-sc="SC-2"`) ||
		!strings.Contains(page, `<td class="span-containers">3</td>`) {
		t.Fatalf("app page: %d\n%s", code, page)
	}
	code, b = s.Do("GET", "/cluster/apps", "", "", "")
	if code != 200 || !strings.Contains(string(b), `class="spans"`) || !strings.Contains(string(b), `SC-2</a> (3)`) {
		t.Fatalf("apps page: %d\n%s", code, b)
	}

	// After the kill every count agrees: one application, killed.
	if err := s.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	routertest.Poll(t, "one killed application in the metrics", func() bool {
		code, b := s.Do("GET", "/ws/v1/cluster/metrics", "", "", "")
		var m rmrest.ClusterMetricsResponse
		if code != 200 || json.Unmarshal(b, &m) != nil {
			return false
		}
		cm := m.ClusterMetrics
		return slices.Equal([]int32{cm.AppsSubmitted, cm.AppsKilled, cm.AppsRunning, cm.AppsPending, cm.AppsCompleted}, []int32{1, 1, 0, 0, 0})
	})
}

// TestKillFanOutTiming measures, over simrm sub-clusters in this process,
// the time from the kill call to the last secondary UAM KILLED, for an
// app spanning a home and three secondaries. Logged, not asserted
// (router/DESIGN.md has the numbers and the command).
func TestKillFanOutTiming(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	s := newSpanFed(t, 4, nil)
	const rounds = 10
	var took []time.Duration
	for range rounds {
		id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 1, "SC-3": 1, "SC-4": 1})
		for _, sc := range []router.SubClusterID{"SC-2", "SC-3", "SC-4"} {
			s.stateAt(sc, id) // connect before the clock starts
		}
		start := time.Now()
		if err := s.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
			t.Fatal(err)
		}
		for _, sc := range []router.SubClusterID{"SC-2", "SC-3", "SC-4"} {
			for s.stateAt(sc, id) != killed {
				if time.Since(start) > 10*time.Second {
					t.Fatalf("%s not KILLED", sc)
				}
			}
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("kill call to the last of 3 secondary UAMs KILLED, %d rounds: min %v, median %v, max %v", rounds, took[0], took[rounds/2], took[rounds-1])
}

// TestKillUAMUnknownToSecondaryIsGone: a secondary that no longer knows
// the app (its RM expired the UAM, or restarted without recovery) counts
// as killed: its row is deleted rather than left for the reaper.
func TestKillUAMUnknownToSecondaryIsGone(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-1"))
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	f.Store.PutUAM(router.UAMRow{App: yarnid.AppIDString(id), SubCluster: "SC-2", Home: "SC-1"})
	if err := f.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if n := f.RMs["SC-2"].Calls("forceKillApplication"); n != 1 || len(f.Store.UAMs()) != 0 {
		t.Fatalf("secondary kills %d, rows %+v", n, f.Store.UAMs())
	}
}

// TestKillWithRegistryDownStillKillsHome: a registry that cannot be read
// does not fail the kill the home took; it is logged and counted, and the
// UAMs are left to the GPG.
func TestKillWithRegistryDownStillKillsHome(t *testing.T) {
	s := newSpanFed(t, 2, nil)
	id := s.spanningApp(map[router.SubClusterID]int{"SC-2": 1})
	s.Store.SetFail(func(op string) error {
		if op == "GetUAMs" {
			return fmt.Errorf("fake: store unreachable")
		}
		return nil
	})
	if err := s.Client.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatalf("kill: %v", err)
	}
	routertest.Poll(t, "home KILLED", func() bool { return s.stateAt("SC-1", id) == killed })
	if v := s.metric("yarnfed_router_uam_registry_errors_total", map[string]string{"op": "GetUAMs"}); v < 1 {
		t.Errorf("registry errors %v", v)
	}
	if st := s.stateAt("SC-2", id); st != yarnpb.YarnApplicationStateProto_RUNNING || len(s.Store.UAMs()) != 1 {
		t.Errorf("UAM %v, rows %+v: nothing known to kill", st, s.Store.UAMs())
	}
	if !strings.Contains(s.logs.String(), "reading the UAM registry failed") {
		t.Error("registry failure not logged")
	}
}
