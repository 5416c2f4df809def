package rest_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/rest"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// leftOutOf is yarnfed_router_fanout_subclusters_left_out_total{method}.
func leftOutOf(t *testing.T, reg *prometheus.Registry, method string) float64 {
	t.Helper()
	return routertest.CounterByMethod(t, reg, "yarnfed_router_fanout_subclusters_left_out_total", method)
}

// hungWeb is an RM web address that accepts connections and never
// answers (a stuck RM web app); closed with the test.
func hungWeb(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// scRow is id's row in s's store.
func scRow(t *testing.T, s *routertest.SimFed, id router.SubClusterID) router.SubClusterInfo {
	rows, err := s.Store.GetSubClusters(routertest.Ctx(t), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s", id)
	return router.SubClusterInfo{}
}

// putAndWait writes row and waits until the router has read membership
// twice since (its 20 ms poll), so the next call routes by it.
func putAndWait(t *testing.T, s *routertest.SimFed, row router.SubClusterInfo) {
	n := s.Store.Ops("GetSubClusters")
	s.Store.Put(row)
	routertest.Poll(t, "the router reads the new row", func() bool { return s.Store.Ops("GetSubClusters") >= n+2 })
}

// TestRESTHungSubClusterAtFanOutDeadline: a sub-cluster whose RM web app
// hangs costs a REST fan-out its deadline (fanout.timeout), not the call
// timeout (a minute here, longer than the test's client waits). /nodes
// follows partial_results (Hadoop's yarn.router.interceptor.
// allow-partial-result.enable in FederationInterceptorREST.getNodes): off,
// the call fails with 503 naming the sub-cluster; on, the answer comes
// without it. /apps and /metrics are always answered with what came back,
// as Hadoop's getApps and getClusterMetricsInfo. A partial answer names what it left out in LeftOutHeader and
// counts it. Before the fan-out deadline such a call waited out
// call_timeout.
func TestRESTHungSubClusterAtFanOutDeadline(t *testing.T) {
	for _, partial := range []bool{true, false} {
		t.Run(map[bool]string{true: "partial results on", false: "partial results off"}[partial], func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s := routertest.NewSimFed(t, func(c *router.Config) {
				c.PartialResults = partial
				c.CallTimeout = router.Duration(time.Minute)
				c.FanOut.Timeout = router.Duration(300 * time.Millisecond)
				c.Registerer = reg
			})
			app := s.SubmitApp(true)
			// SC-2's web app hangs from now on (its IPC port still answers).
			row := scRow(t, s, "SC-2")
			row.RMWebServiceAddress = hungWeb(t)
			putAndWait(t, s, row)

			status, hdr, body := s.Call(http.MethodGet, "/ws/v1/cluster/nodes", "application/json", "", "")
			if !partial {
				if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "SC-2") {
					t.Fatalf("/nodes: status %d, body %.300s: want 503 naming SC-2", status, body)
				}
				if hdr.Get(rest.LeftOutHeader) != "" || leftOutOf(t, reg, "GET /ws/v1/cluster/nodes") != 0 {
					t.Fatalf("a failed call reported as partial: header %q", hdr.Get(rest.LeftOutHeader))
				}
			} else {
				var doc rmrest.NodesResponse
				if status != http.StatusOK || json.Unmarshal(body, &doc) != nil || len(doc.Nodes.Node) == 0 {
					t.Fatalf("/nodes: status %d, body %.300s: want SC-1's nodes", status, body)
				}
				if got := hdr.Get(rest.LeftOutHeader); got != "SC-2" {
					t.Fatalf("/nodes %s: %q, want SC-2", rest.LeftOutHeader, got)
				}
				if n := leftOutOf(t, reg, "GET /ws/v1/cluster/nodes"); n != 1 {
					t.Fatalf("/nodes left-out counter %v, want 1", n)
				}
			}

			status, hdr, body = s.Call(http.MethodGet, "/ws/v1/cluster/apps", "application/json", "", "")
			if status != http.StatusOK {
				t.Fatalf("/apps: status %d: %.300s", status, body)
			}
			if got := hdr.Get(rest.LeftOutHeader); got != "SC-2" {
				t.Fatalf("/apps %s: %q, want SC-2", rest.LeftOutHeader, got)
			}
			if n := leftOutOf(t, reg, "GET /ws/v1/cluster/apps"); n != 1 {
				t.Fatalf("/apps left-out counter %v, want 1", n)
			}
			var doc rmrest.AppsResponse
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			want := 0
			if s.Store.Homes()[yarnid.AppIDString(app)] == "SC-1" {
				want = 1
			}
			if len(doc.Apps.App) != want {
				t.Fatalf("%d apps in the partial answer, want SC-1's %d: %s", len(doc.Apps.App), want, body)
			}
			// /metrics as Hadoop's getClusterMetricsInfo: the sum of what
			// answered (SC-2 has no heartbeated capability to fall back on).
			status, hdr, body = s.Call(http.MethodGet, "/ws/v1/cluster/metrics", "application/json", "", "")
			if status != http.StatusOK || hdr.Get(rest.LeftOutHeader) != "SC-2" {
				t.Fatalf("/metrics: status %d, %s %q: %.300s", status, rest.LeftOutHeader, hdr.Get(rest.LeftOutHeader), body)
			}
			// A whole answer carries no header.
			row.RMWebServiceAddress = s.Sims["SC-2"].Addrs().Web
			putAndWait(t, s, row)
			if _, hdr, _ := s.Call(http.MethodGet, "/ws/v1/cluster/apps", "application/json", "", ""); hdr.Get(rest.LeftOutHeader) != "" {
				t.Fatalf("a whole answer names %q as left out", hdr.Get(rest.LeftOutHeader))
			}
		})
	}
}

// TestRESTNodesPassedThrough: /nodes is the RMs' node objects as they sent
// them, so a field rmrest.Node does not model (a newer RM's) reaches the
// client, next to another RM's nodes; XML is still rendered from the typed
// nodes. Before, the router decoded into rmrest.Node and re-encoded, and
// such a field was lost.
func TestRESTNodesPassedThrough(t *testing.T) {
	const node = `{"rack":"/r1","state":"RUNNING","id":"newer-host:45454","nodeHostName":"newer-host","nodeHTTPAddress":"newer-host:8042",` +
		`"lastHealthUpdate":1,"version":"3.5.0","healthReport":"","numContainers":0,"usedMemoryMB":0,"availMemoryMB":8192,` +
		`"nodeStatus":"NORMAL","futureField":{"list":[1,2,{"deep":"x"}]}}`
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/ws/v1/cluster/nodes" {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"nodes":{"node":[` + node + `]}}`))
	}))
	defer rm.Close()
	s := routertest.NewSimFed(t)
	row := scRow(t, s, "SC-1")
	row.RMWebServiceAddress = strings.TrimPrefix(rm.URL, "http://")
	putAndWait(t, s, row)

	status, hdr, body := s.Call(http.MethodGet, "/ws/v1/cluster/nodes", "application/json", "", "")
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d %s: %s", status, hdr.Get("Content-Type"), body)
	}
	if !strings.Contains(string(body), node) {
		t.Fatalf("SC-1's node not passed through as sent:\n%s", body)
	}
	var doc rmrest.NodesResponse
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(doc.Nodes.Node) < 2 || doc.Nodes.Node[0].ID != "newer-host:45454" {
		t.Fatalf("want SC-1's node then SC-2's: %+v", doc.Nodes.Node)
	}
	status, _, xbody := s.Call(http.MethodGet, "/ws/v1/cluster/nodes", "application/xml", "", "")
	if status != http.StatusOK || strings.Count(string(xbody), "<node>") != len(doc.Nodes.Node) ||
		!strings.Contains(string(xbody), "<id>newer-host:45454</id>") {
		t.Fatalf("XML %d: %s", status, xbody)
	}
	// One node by id comes from the same lists.
	status, _, one := s.Call(http.MethodGet, "/ws/v1/cluster/nodes/newer-host:45454", "application/json", "", "")
	if status != http.StatusOK || !strings.Contains(string(one), `"nodeHostName":"newer-host"`) {
		t.Fatalf("node: %d %s", status, one)
	}
}
