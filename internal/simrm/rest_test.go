package simrm

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/webtest"
)

func httpGet(t *testing.T, url, accept string) (int, string) {
	t.Helper()
	return httpDo(t, http.MethodGet, url, accept, nil)
}

// httpDo sends one request (Accept set when accept is not empty) and
// returns the status and body.
func httpDo(t *testing.T, method, url, accept string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return webtest.Do(t, req)
}

func TestRESTClientEndpoints(t *testing.T) {
	// The app must stay RUNNING while the test looks at it.
	rm := startRM(t, func(c *Config) { c.SimAM.ContainerRuntime = config.Duration(time.Hour) })
	ctx := context.Background()
	cl := rmrest.NewClient(rm.Addrs().Web)

	info, err := cl.GetClusterInfo(ctx)
	if err != nil || info.ID != rm.Config().ClusterTimestamp || info.HAState != "ACTIVE" || info.State != "STARTED" {
		t.Fatalf("info %+v %v", info, err)
	}
	apps, err := cl.GetApps(ctx, rmrest.AppsQuery{})
	if err != nil || len(apps) != 0 {
		t.Fatalf("empty apps %v %v", apps, err)
	}
	na, err := cl.NewApplication(ctx)
	if err != nil || !strings.HasPrefix(na.ApplicationID, "application_") || na.MaximumResourceCapability.Memory != 8192 {
		t.Fatalf("new application %+v %v", na, err)
	}
	id, _ := ParseAppID(na.ApplicationID)
	if err := rm.core().Submit(SubmitRequest{ID: id, User: "carol", Type: "SPARK", Tags: []string{"a", "b"}, AMResource: Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	testpoll.Poll(t, "app RUNNING", func() bool {
		a, err := cl.GetApp(ctx, na.ApplicationID)
		return err == nil && a.State == "RUNNING"
	})
	a, _ := cl.GetApp(ctx, na.ApplicationID)
	if a.User != "carol" || a.ApplicationType != "SPARK" || a.ApplicationTags != "a,b" || a.TrackingUI != "ApplicationMaster" ||
		a.AMContainerLogs == "" || a.ClusterID != rm.Config().ClusterTimestamp || a.AllocatedMB < 1024 {
		t.Fatalf("app %+v", a)
	}
	cases := []struct {
		name string
		q    rmrest.AppsQuery
		n    int
	}{
		{"state match", rmrest.AppsQuery{States: []string{"RUNNING"}}, 1},
		{"state miss", rmrest.AppsQuery{States: []string{"FINISHED"}}, 0},
		{"user", rmrest.AppsQuery{User: "carol"}, 1},
		{"type", rmrest.AppsQuery{ApplicationTypes: []string{"spark"}}, 1},
		{"final status", rmrest.AppsQuery{FinalStatus: "SUCCEEDED"}, 0},
		{"tags", rmrest.AppsQuery{ApplicationTags: []string{"b"}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cl.GetApps(ctx, tc.q)
			if err != nil || len(got) != tc.n {
				t.Fatalf("got %d apps (%v), want %d", len(got), err, tc.n)
			}
		})
	}
	atts, err := cl.GetAppAttempts(ctx, na.ApplicationID)
	if err != nil || len(atts) != 1 || atts[0].ContainerID == "" || atts[0].AppAttemptState != "RUNNING" {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	m, err := cl.GetClusterMetrics(ctx)
	if err != nil || m.AppsSubmitted != 1 || m.AppsRunning != 1 || m.TotalNodes != 8 || m.TotalMB != 8*8192 || m.AllocatedMB < 1024 {
		t.Fatalf("metrics %+v %v", m, err)
	}
	nodes, err := cl.GetNodes(ctx, "")
	if err != nil || len(nodes) != 8 || nodes[0].State != "RUNNING" || nodes[0].Rack == "" {
		t.Fatalf("nodes %d %v", len(nodes), err)
	}
	if n, err := cl.GetNodes(ctx, "LOST"); err != nil || len(n) != 0 {
		t.Fatalf("LOST nodes %v %v", n, err)
	}
	if n, err := cl.GetNode(ctx, nodes[0].ID); err != nil || n.ID != nodes[0].ID {
		t.Fatalf("node %v %v", n, err)
	}
	s, err := cl.GetScheduler(ctx)
	if err != nil || s.Type != "capacityScheduler" || s.QueueName != "root" || len(s.Queues.Queue) != 1 ||
		s.Queues.Queue[0].Type != "capacitySchedulerLeafQueueInfo" || s.Queues.Queue[0].NumApplications != 1 {
		t.Fatalf("scheduler %+v %v", s, err)
	}
	st, err := cl.KillApp(ctx, na.ApplicationID)
	if err != nil || st != "KILLED" {
		t.Fatalf("kill %q %v", st, err)
	}
	if st, _ := cl.GetAppState(ctx, na.ApplicationID); st != "KILLED" {
		t.Fatalf("state after kill %q", st)
	}

	errCases := []struct {
		name   string
		call   func() error
		status int
		class  string
	}{
		{"unknown app", func() error { _, err := cl.GetApp(ctx, "application_1_0099"); return err }, 404, rmrest.ClassNotFound},
		{"bad app id", func() error { _, err := cl.GetApp(ctx, "app_x"); return err }, 400, rmrest.ClassBadRequest},
		{"bad state", func() error { _, err := cl.GetApps(ctx, rmrest.AppsQuery{States: []string{"DONE"}}); return err }, 400, rmrest.ClassBadRequest},
		{"unknown node", func() error { _, err := cl.GetNode(ctx, "nope:1"); return err }, 404, rmrest.ClassNotFound},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			var re *rmrest.Error
			if err := tc.call(); !errors.As(err, &re) || re.Status != tc.status || re.JavaClassName != tc.class {
				t.Fatalf("got %v, want %d %s", err, tc.status, tc.class)
			}
		})
	}
}

func TestRESTShapes(t *testing.T) {
	rm := startRM(t, nil)
	base := "http://" + rm.Addrs().Web + "/ws/v1/cluster"
	// JSON envelopes carry the root element name.
	for path, root := range map[string]string{"/info": "clusterInfo", "": "clusterInfo", "/metrics": "clusterMetrics",
		"/apps": "apps", "/nodes": "nodes", "/scheduler": "scheduler"} {
		code, body := httpGet(t, base+path, "")
		var m map[string]json.RawMessage
		if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m[root] == nil || len(m) != 1 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	// An empty app list is {"apps":{}}, as JAXB renders an empty list.
	if _, body := httpGet(t, base+"/apps", ""); strings.TrimSpace(body) != `{"apps":{}}` {
		t.Errorf("empty apps: %s", body)
	}
	// XML when asked, with Hadoop's root elements and xsi:type.
	code, body := httpGet(t, base+"/metrics", "application/xml")
	var cm rmrest.ClusterMetrics
	if code != 200 || xml.Unmarshal([]byte(body), &cm) != nil || cm.TotalNodes != 8 || !strings.Contains(body, "<clusterMetrics>") {
		t.Errorf("xml metrics: %d %s", code, body)
	}
	_, body = httpGet(t, base+"/scheduler", "application/xml")
	if !strings.Contains(body, `<schedulerInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="capacityScheduler">`) ||
		!strings.Contains(body, `<queue xsi:type="capacitySchedulerLeafQueueInfo">`) {
		t.Errorf("xml scheduler: %s", body)
	}
	code, body = httpGet(t, base+"/apps?limit=0", "application/xml")
	if code != 400 || !strings.Contains(body, "<RemoteException>") || !strings.Contains(body, "limit value must be greater then 0") {
		t.Errorf("xml error: %d %s", code, body)
	}
	// An application in XML round-trips through the rmrest types.
	id, _ := rm.core().NewApplication()
	if err := rm.core().Submit(SubmitRequest{ID: id, User: "u", Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	code, body = httpGet(t, base+"/apps/"+id.String(), "application/xml")
	var app rmrest.App
	if err := xml.Unmarshal([]byte(body), &app); code != 200 || err != nil || app.ID != id.String() || app.Queue != "root.default" ||
		len(app.ResourceSecondsMap) != 2 || app.Timeouts == nil || !strings.Contains(body, "<resourceSecondsMap><entry><key>memory-mb</key>") {
		t.Errorf("xml app: %d %v %s", code, err, body)
	}
	_, body = httpGet(t, base+"/apps/"+id.String(), "")
	if !strings.Contains(body, `"resourceSecondsMap":{"entry":{"key":"memory-mb","value":"0"},"entry":{"key":"vcores","value":"0"}}`) {
		t.Errorf("json map encoding: %s", body)
	}
	// A standby refuses with 503, except its cluster info, which tells probes
	// it is the standby (Hadoop's RMWebAppFilter exempts that path).
	rm.TransitionToStandby()
	if code, body := httpGet(t, base+"/metrics", ""); code != 503 || !strings.Contains(body, "StandbyException") {
		t.Errorf("standby metrics: %d %s", code, body)
	}
	if code, body := httpGet(t, base+"/info", ""); code != 200 || !strings.Contains(body, `"haState":"STANDBY"`) {
		t.Errorf("standby info: %d %s", code, body)
	}
}

func TestControlAPI(t *testing.T) {
	rm := startRM(t, nil)
	ctx := context.Background()
	base := "http://" + rm.Addrs().Web
	put := func(path, body string) (int, string) {
		return httpDo(t, http.MethodPut, base+path, "", strings.NewReader(body))
	}
	if code, body := put("/simrm/v1/faults", `{"stalled":true}`); code != 200 || !strings.Contains(body, `"stalled":true`) {
		t.Fatalf("stall: %d %s", code, body)
	}
	// The REST API is stalled, the control API is not.
	cl := rmrest.NewClient(rm.Addrs().Web)
	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := cl.GetClusterInfo(sctx); err == nil {
		t.Fatal("stalled REST answered")
	}
	cancel()
	if code, _ := put("/simrm/v1/faults", `{"latency":"-1s"}`); code != 400 {
		t.Fatalf("bad faults accepted: %d", code)
	}
	if code, _ := put("/simrm/v1/faults", `{}`); code != 200 {
		t.Fatal("unstall failed")
	}
	if _, err := cl.GetClusterInfo(ctx); err != nil {
		t.Fatalf("after unstall: %v", err)
	}
	epoch := rm.Epoch()
	resp, err := http.Post(base+"/simrm/v1/restart?keepState=true", "", nil)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("restart: %v %v", resp, err)
	}
	resp.Body.Close()
	testpoll.Poll(t, "restart", func() bool {
		_, err := cl.GetClusterInfo(ctx)
		return err == nil && rm.Epoch() == epoch+1
	})
	resp, err = http.Post(base+"/simrm/v1/transition?to=standby", "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent || !rm.Standby() {
		t.Fatalf("transition: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestPrometheusEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	rm := startRM(t, func(c *Config) { c.Registerer, c.Gatherer = reg, reg })
	id, _ := rm.core().NewApplication()
	if err := rm.core().Submit(SubmitRequest{ID: id, Unmanaged: true}); err != nil {
		t.Fatal(err)
	}
	code, body := httpGet(t, "http://"+rm.Addrs().Web+"/prom", "")
	for _, want := range []string{"yarnfed_simrm_apps_submitted_total 1", "yarnfed_simrm_apps_pending 1", "yarnfed_simrm_available_mb 65536"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/prom lacks %q (%d)", want, code)
		}
	}
}
