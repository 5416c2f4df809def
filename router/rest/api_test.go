package rest_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestRESTSubmitLifecycle(t *testing.T) {
	f := routertest.NewFed(t, 2, routertest.Prefer("SC-2"))
	code, b := f.Do("POST", "/ws/v1/cluster/apps/new-application", "", "", "")
	if code != 200 {
		t.Fatalf("new-application: %d %s", code, b)
	}
	var na rmrest.NewApplication
	if err := json.Unmarshal(b, &na); err != nil || !strings.HasPrefix(na.ApplicationID, "application_") {
		t.Fatalf("new-application body %s: %v", b, err)
	}
	body := `{"application-id":"` + na.ApplicationID + `","application-name":"rest-app","queue":"default",
	  "am-container-spec":{"commands":{"command":"sleep 1"},
	    "local-resources":{"entry":[{"key":"AppMaster.jar","value":{"resource":"hdfs://nn:9000/x/AppMaster.jar","type":"FILE","visibility":"APPLICATION","size":4,"timestamp":5}}]},
	    "environment":{"entry":[{"key":"A","value":"1"}]}},
	  "resource":{"memory":1024,"vCores":1},"application-type":"YARN","application-tags":{"tag":["t1","t2"]}}`
	if code, b, h := f.DoH("POST", "/ws/v1/cluster/apps", "", "application/json", body); code != http.StatusAccepted ||
		!strings.HasSuffix(h.Get("Location"), "/ws/v1/cluster/apps/"+na.ApplicationID) {
		t.Fatalf("submit: %d %s %v", code, b, h)
	}
	if h := f.Store.Homes()[na.ApplicationID]; h != "SC-2" {
		t.Fatalf("home %q, want SC-2", h)
	}
	code, b = f.Do("GET", "/ws/v1/cluster/apps/"+na.ApplicationID, "", "", "")
	var ar rmrest.AppResponse
	if code != 200 || json.Unmarshal(b, &ar) != nil || ar.App.Name != "rest-app" || ar.App.ApplicationTags != "t1,t2" {
		t.Fatalf("get app: %d %s", code, b)
	}
	code, b = f.Do("GET", "/ws/v1/cluster/apps/"+na.ApplicationID+"/state", "application/xml", "", "")
	if code != 200 || !strings.Contains(string(b), "<appstate><state>ACCEPTED</state></appstate>") {
		t.Fatalf("state xml: %d %s", code, b)
	}
	code, b = f.Do("PUT", "/ws/v1/cluster/apps/"+na.ApplicationID+"/state", "", "application/xml", `<appstate><state>KILLED</state></appstate>`)
	if code != 200 || !strings.Contains(string(b), `"KILLED"`) {
		t.Fatalf("kill: %d %s", code, b)
	}
	if f.RMs["SC-2"].Calls("forceKillApplication") != 1 {
		t.Fatal("kill did not reach the home RM")
	}
}

func TestRESTListsAndErrors(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	f.RMs["SC-1"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n1"), Port: proto.Int32(8041)},
		NodeState: yarnpb.NodeStateProto_NS_RUNNING.Enum(), Capability: &yarnpb.ResourceProto{Memory: proto.Int64(8192), VirtualCores: proto.Int32(8)},
		Used: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}}}
	f.RMs["SC-2"].Nodes = []*yarnpb.NodeReportProto{{NodeId: &yarnpb.NodeIdProto{Host: proto.String("n2"), Port: proto.Int32(8041)},
		NodeState: yarnpb.NodeStateProto_NS_RUNNING.Enum()}}
	for range 4 {
		if err := f.Submit(f.Client, f.NewApp(f.Client)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, accept string
		code               int
		check              func(t *testing.T, b []byte)
	}{
		{"apps json", "/ws/v1/cluster/apps", "", 200, func(t *testing.T, b []byte) {
			var r rmrest.AppsResponse
			if err := json.Unmarshal(b, &r); err != nil || len(r.Apps.App) != 4 {
				t.Fatalf("%s %v", b, err)
			}
		}},
		{"apps xml with limit", "/ws/v1/cluster/apps?limit=2", "application/xml", 200, func(t *testing.T, b []byte) {
			var r rmrest.Apps
			if err := xml.Unmarshal(b, &r); err != nil || len(r.App) != 2 {
				t.Fatalf("%s %v", b, err)
			}
		}},
		{"apps bad state", "/ws/v1/cluster/apps?states=BOGUS", "", 400, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), "BadRequestException") {
				t.Fatalf("%s", b)
			}
		}},
		{"nodes", "/ws/v1/cluster/nodes", "", 200, func(t *testing.T, b []byte) {
			var r rmrest.NodesResponse
			if err := json.Unmarshal(b, &r); err != nil || len(r.Nodes.Node) != 2 {
				t.Fatalf("%s %v", b, err)
			}
		}},
		{"one node", "/ws/v1/cluster/nodes/n1:8041", "", 200, func(t *testing.T, b []byte) {
			var r rmrest.NodeResponse
			if err := json.Unmarshal(b, &r); err != nil || r.Node.AvailMemoryMB != 7168 {
				t.Fatalf("%s %v", b, err)
			}
		}},
		{"unknown node", "/ws/v1/cluster/nodes/nope:1", "", 404, nil},
		{"unknown app", "/ws/v1/cluster/apps/application_5_0005", "", 404, func(t *testing.T, b []byte) {
			var r rmrest.RemoteExceptionResponse
			if err := json.Unmarshal(b, &r); err != nil || r.RemoteException.JavaClassName != rmrest.ClassNotFound {
				t.Fatalf("%s %v", b, err)
			}
		}},
		{"bad app id", "/ws/v1/cluster/apps/job_1_1", "", 400, nil},
		{"info", "/ws/v1/cluster/info", "", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"haState":"ACTIVE"`) {
				t.Fatalf("%s", b)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, b := f.Do("GET", tc.path, tc.accept, "", "")
			if code != tc.code {
				t.Fatalf("%s: %d %s, want %d", tc.path, code, b, tc.code)
			}
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

func TestRESTMetricsSumsCapabilities(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	for i, id := range []router.SubClusterID{"SC-1", "SC-2"} {
		f.Store.Put(router.SubClusterInfo{ID: id, ClientRMServiceAddress: "x:1", State: router.StateRunning,
			Capability: `{"clusterMetrics":{"appsSubmitted":` + string(rune('1'+i)) + `,"availableMB":1000,"totalNodes":2,"totalUsedResourcesAcrossPartition":{"memory":5,"vCores":1,"resourceInformations":{"resourceInformation":[{"name":"memory-mb","value":5},{"name":"vcores","value":1}]}}}}`})
	}
	routertest.Poll(t, "capabilities visible", func() bool {
		code, b := f.Do("GET", "/ws/v1/cluster/metrics", "", "", "")
		var m rmrest.ClusterMetricsResponse
		return code == 200 && json.Unmarshal(b, &m) == nil && m.ClusterMetrics.AppsSubmitted == 3 &&
			m.ClusterMetrics.AvailableMB == 2000 && m.ClusterMetrics.TotalNodes == 4 &&
			m.ClusterMetrics.TotalUsedResourcesAcrossPartition.Memory == 10 &&
			m.ClusterMetrics.TotalUsedResourcesAcrossPartition.ResourceInformations.ResourceInformation[0].Value == 10
	})
}

func TestHealthAndReady(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	routertest.Poll(t, "ready", func() bool { c, _ := f.Do("GET", "/readyz", "", "", ""); return c == 200 })
	f.Store.SetState("SC-1", router.StateLost)
	routertest.Poll(t, "not ready without a routable sub-cluster", func() bool { c, _ := f.Do("GET", "/readyz", "", "", ""); return c == 503 })
	if c, _ := f.Do("GET", "/healthz", "", "", ""); c != 200 {
		t.Fatal("healthz")
	}
}

// TestRESTOptions: Hadoop's HTTP client sends OPTIONS before each request
// and fails on anything but 200 (yarn top showed uptime 0 through the
// router). An RM's Jersey answers 200 with the path's methods in Allow.
func TestRESTOptions(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	tests := []struct {
		path      string
		code      int
		allow     []string
		forbidden []string
	}{
		{"/ws/v1/cluster/info", 200, []string{"GET", "HEAD", "OPTIONS"}, []string{"POST", "PUT"}},
		{"/ws/v1/cluster/apps", 200, []string{"GET", "POST", "OPTIONS"}, []string{"PUT"}},
		{"/ws/v1/cluster/apps/application_1_0001/state", 200, []string{"GET", "PUT", "OPTIONS"}, []string{"POST"}},
		{"/ws/v1/cluster/apps/application_1_0001/priority", 200, []string{"GET", "PUT", "OPTIONS"}, []string{"POST", "DELETE"}},
		{"/ws/v1/cluster/reservation/submit", 200, []string{"POST", "OPTIONS"}, []string{"GET", "PUT"}},
		{"/ws/v1/cluster/delegation-token", 200, []string{"POST", "DELETE", "OPTIONS"}, []string{"GET", "PUT"}},
		{"/ws/v1/cluster/no-such-thing", 404, nil, nil},
	}
	for _, tc := range tests {
		code, _, h := f.DoH("OPTIONS", tc.path, "", "", "")
		if code != tc.code {
			t.Fatalf("OPTIONS %s: %d, want %d", tc.path, code, tc.code)
		}
		allow := strings.Split(h.Get("Allow"), ",")
		for _, m := range tc.allow {
			if !slices.Contains(allow, m) {
				t.Errorf("OPTIONS %s: Allow %q lacks %s", tc.path, h.Get("Allow"), m)
			}
		}
		for _, m := range tc.forbidden {
			if slices.Contains(allow, m) {
				t.Errorf("OPTIONS %s: Allow %q has %s", tc.path, h.Get("Allow"), m)
			}
		}
	}
}

// fakeRMWeb serves an RM's REST documents verbatim (what a real RM sent,
// empty fields included) and registers it as sc's web address.
func fakeRMWeb(f *routertest.Fed, sc router.SubClusterID, docs map[string]string) {
	f.T.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for suffix, doc := range docs {
			if strings.HasSuffix(req.URL.Path, suffix) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, doc)
				return
			}
		}
		http.NotFound(w, req)
	}))
	f.T.Cleanup(srv.Close)
	f.Store.Put(router.SubClusterInfo{ID: sc, ClientRMServiceAddress: "fake-" + string(sc) + ":8032", State: router.StateRunning,
		RMWebServiceAddress: strings.TrimPrefix(srv.URL, "http://")})
}

// TestRESTKeepsRMFields: fields found missing when stock Hadoop ran
// through the router: an empty amNodeLabelExpression and the attempts'
// nodesBlacklistedBySystem (the RM's documents re-rendered), the
// new-application's resourceInformations, and the Location header of a
// kill in progress (202).
func TestRESTKeepsRMFields(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		t.Fatal(err)
	}
	app := yarnid.AppIDString(id)
	fakeRMWeb(f, "SC-1", map[string]string{
		"/apps/" + app: `{"app":{"id":"` + app + `","name":"x","amNodeLabelExpression":"","resourceSecondsMap":{}}}`,
		"/appattempts": `{"appAttempts":{"appAttempt":[{"id":1,"appAttemptId":"appattempt_x","blacklistedNodes":"","nodesBlacklistedBySystem":"n9"}]}}`,
	})
	routertest.Poll(t, "app document from the RM's REST API", func() bool {
		code, b := f.Do("GET", "/ws/v1/cluster/apps/"+app, "", "", "")
		return code == 200 && strings.Contains(string(b), `"name":"x"`)
	})
	if code, b := f.Do("GET", "/ws/v1/cluster/apps/"+app, "", "", ""); code != 200 || !strings.Contains(string(b), `"amNodeLabelExpression":""`) {
		t.Errorf("app: %d %s: want the RM's empty amNodeLabelExpression", code, b)
	}
	if code, b := f.Do("GET", "/ws/v1/cluster/apps/"+app+"/appattempts", "", "", ""); code != 200 || !strings.Contains(string(b), `"nodesBlacklistedBySystem":"n9"`) {
		t.Errorf("attempts: %d %s: want nodesBlacklistedBySystem", code, b)
	}
	if code, b := f.Do("POST", "/ws/v1/cluster/apps/new-application", "", "", ""); code != 200 ||
		!strings.Contains(string(b), `"maximum-resource-capability":{"memory":`) || !strings.Contains(string(b), `"resourceInformations":{"resourceInformation":[`) {
		t.Errorf("new-application: %d %s: want resourceInformations", code, b)
	}
	f.RMs["SC-1"].SetKillInProgress(true)
	code, b, h := f.DoH("PUT", "/ws/v1/cluster/apps/"+app+"/state?user.name=alice", "", "application/json", `{"state":"KILLED"}`)
	if code != http.StatusAccepted || !strings.HasSuffix(h.Get("Location"), "/ws/v1/cluster/apps/"+app+"/state") {
		t.Errorf("kill in progress: %d %s Location=%q, want 202 with the state URL", code, b, h.Get("Location"))
	}
}
