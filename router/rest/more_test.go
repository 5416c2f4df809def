package rest_test

import (
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// TestRESTPerAppRelayedToHome: priority, queue and timeouts of an app are
// its home RM's answers, JSON and XML; bad bodies are refused by the
// router with the RM's 400 shape and never reach the RM.
func TestRESTPerAppRelayedToHome(t *testing.T) {
	s := routertest.NewSimFed(t)
	id := s.SubmitApp(false)
	app := yarnid.AppIDString(id)
	base := "/ws/v1/cluster/apps/" + app
	tests := []struct {
		name, method, path, accept, ctype, body string
		code                                    int
		want                                    string
	}{
		{"priority json", "GET", base + "/priority", "", "", "", 200, `{"priority":0}`},
		{"priority put", "PUT", base + "/priority", "", "application/json", `{"priority":7}`, 200, `{"priority":7}`},
		{"priority xml", "GET", base + "/priority", "application/xml", "", "", 200, "<applicationpriority><priority>7</priority></applicationpriority>"},
		{"priority put capped by the RM", "PUT", base + "/priority", "", "application/xml", `<applicationpriority><priority>99</priority></applicationpriority>`, 200, `{"priority":10}`},
		{"priority bad body", "PUT", base + "/priority", "", "application/json", `{"priority":"high"}`, 400, "BadRequestException"},
		{"priority no field", "PUT", base + "/priority", "", "application/json", `{}`, 400, "priority is required"},
		{"queue", "GET", base + "/queue", "", "", "", 200, `{"queue":"root.default"}`},
		{"queue move to unknown queue: the RM's own 400", "PUT", base + "/queue", "", "application/json", `{"queue":"nope"}`, 400, "target queue"},
		{"queue empty", "PUT", base + "/queue", "", "application/json", `{"queue":""}`, 400, "queue is required"},
		{"timeouts", "GET", base + "/timeouts", "", "", "", 200, `"type":"LIFETIME"`},
		{"timeout bad type", "PUT", base + "/timeout", "", "application/json", `{"timeout":{"type":"SOON","expiryTime":"x"}}`, 400, "want LIFETIME"},
		{"unsupported media type", "PUT", base + "/priority", "", "text/plain", `7`, 415, "NotSupportedException"},
		{"unknown app", "GET", "/ws/v1/cluster/apps/application_1700000000000_9999/priority", "", "", "", 404, "NotFoundException"},
		{"bad app id", "GET", "/ws/v1/cluster/apps/bogus/priority", "", "", "", 400, "BadRequestException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, b := s.Call(tc.method, tc.path, tc.accept, tc.ctype, tc.body)
			if code != tc.code || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%s %s: %d %s, want %d with %q", tc.method, tc.path, code, b, tc.code, tc.want)
			}
		})
	}
	home := s.Store.Homes()[app]
	rep, err := s.Report(s.Client, id)
	if err != nil || rep.GetPriority().GetPriority() != 10 {
		t.Fatalf("priority at home %s after PUT: %v %v", home, rep.GetPriority(), err)
	}
}

// TestRESTFanOutMerges: scheduler, appstatistics and node labels from
// both sub-clusters.
func TestRESTFanOutMerges(t *testing.T) {
	s := routertest.NewSimFed(t)
	const n = 6
	for range n {
		s.SubmitApp(true) // unmanaged: stay ACCEPTED
	}
	t.Run("appstatistics", func(t *testing.T) {
		code, _, b := s.Call("GET", "/ws/v1/cluster/appstatistics?states=accepted,running", "", "", "")
		var r rmrest.AppStatInfoResponse
		if code != 200 || json.Unmarshal(b, &r) != nil || len(r.AppStatInfo.StatItem) != 2 {
			t.Fatalf("%d %s", code, b)
		}
		if it := r.AppStatInfo.StatItem[0]; it.State != "ACCEPTED" || it.Type != "*" || it.Count != n {
			t.Fatalf("statItem %+v, want %d ACCEPTED over both RMs", it, n)
		}
		code, _, b = s.Call("GET", "/ws/v1/cluster/appstatistics?applicationTypes=simtest&states=ACCEPTED", "application/xml", "", "")
		var x rmrest.AppStatInfo
		if code != 200 || xml.Unmarshal(b, &x) != nil || len(x.StatItem) != 1 || x.StatItem[0].Count != n || x.StatItem[0].Type != "simtest" {
			t.Fatalf("xml: %d %s", code, b)
		}
		// Refused by every RM: the RM's own 400.
		code, _, b = s.Call("GET", "/ws/v1/cluster/appstatistics?applicationTypes=a,b", "", "", "")
		if code != 400 || !strings.Contains(string(b), "at most one applicationType") {
			t.Fatalf("two types: %d %s", code, b)
		}
	})
	t.Run("scheduler json", func(t *testing.T) {
		code, _, b := s.Call("GET", "/ws/v1/cluster/scheduler", "", "", "")
		var r map[string]struct {
			SubCluster []struct {
				SubClusterID  string          `json:"subClusterId"`
				SchedulerInfo json.RawMessage `json:"schedulerInfo"`
			} `json:"subCluster"`
		}
		if code != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%d %s", code, b)
		}
		scs := r[router.FederationSchedulerRoot].SubCluster
		if len(scs) != 2 || scs[0].SubClusterID != "SC-1" || scs[1].SubClusterID != "SC-2" || !strings.Contains(string(scs[0].SchedulerInfo), `"capacityScheduler"`) {
			t.Fatalf("scheduler: %s", b)
		}
	})
	t.Run("scheduler xml", func(t *testing.T) {
		code, _, b := s.Call("GET", "/ws/v1/cluster/scheduler", "application/xml", "", "")
		var x struct {
			XMLName    xml.Name
			SubCluster []struct {
				SubClusterID  string `xml:"subClusterId"`
				SchedulerInfo struct {
					Type      string `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
					QueueName string `xml:"queueName"`
				} `xml:"schedulerInfo"`
			} `xml:"subCluster"`
		}
		if code != 200 || xml.Unmarshal(b, &x) != nil || x.XMLName.Local != router.FederationSchedulerRoot || len(x.SubCluster) != 2 ||
			x.SubCluster[1].SubClusterID != "SC-2" || x.SubCluster[0].SchedulerInfo.Type != "capacityScheduler" {
			t.Fatalf("%d %s\n%+v", code, b, x)
		}
	})
	t.Run("node labels", func(t *testing.T) {
		code, _, b := s.Call("GET", "/ws/v1/cluster/get-node-labels", "", "", "")
		if code != 200 || string(b) != `{}` {
			t.Fatalf("%d %s", code, b)
		}
	})
	t.Run("delegation token refused without Kerberos", func(t *testing.T) {
		for _, m := range []string{"POST", "DELETE"} {
			code, _, b := s.Call(m, "/ws/v1/cluster/delegation-token?user.name=alice", "", "application/json", `{"renewer":"bob"}`)
			if code != 403 || !strings.Contains(string(b), "Kerberos") {
				t.Fatalf("%s: %d %s", m, code, b)
			}
		}
	})
	t.Run("reservations off at the RMs", func(t *testing.T) {
		code, _, b := s.Call("GET", "/ws/v1/cluster/reservation/list?queue=default", "", "", "")
		if code != 400 || !strings.Contains(string(b), "Reservation is not enabled") {
			t.Fatalf("list: %d %s", code, b)
		}
		code, _, b = s.Call("POST", "/ws/v1/cluster/reservation/submit", "", "application/json", `{"queue":"default"}`)
		if code != 400 || !strings.Contains(string(b), "reservation-id is required") {
			t.Fatalf("submit without id: %d %s", code, b)
		}
	})
}

// TestProxyRelaysToAM: /proxy/{appid}/... reaches the AM's tracking URL
// through the home RM's web proxy; status, headers and body come back,
// redirects and absolute links name the router.
func TestProxyRelaysToAM(t *testing.T) {
	s := routertest.NewSimFed(t)
	var rmWeb string
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/move":
			http.Redirect(w, req, "http://"+req.Host+"/ws/v1/status", http.StatusFound)
		case "/ws/v1/status":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("X-Am", "yes")
			var out io.Writer = w
			if strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				defer zw.Close()
				out = zw
			}
			_, _ = io.WriteString(out, `<a href="http://`+rmWeb+`/proxy/APP/jobs">jobs</a> q=`+req.URL.RawQuery+" "+strings.Repeat("x", 100_000)+` <a href="http://`+rmWeb+`/proxy/APP/end">`)
		case "/post":
			b, _ := io.ReadAll(req.Body)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
		default:
			http.NotFound(w, req)
		}
	}))
	defer am.Close()
	id := s.SubmitApp(true)
	app := yarnid.AppIDString(id)
	home := s.Store.Homes()[app]
	rmWeb = s.Sims[home].Addrs().Web
	rep, err := s.Report(s.Client, id)
	if err != nil || rep.GetAmRmToken() == nil {
		t.Fatalf("report: %v %v", rep, err)
	}
	amc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{s.Sims[home].Addrs().Scheduler},
		Protocol: hadoopipc.ProtocolApplicationMaster, Token: rep.GetAmRmToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer amc.Close()
	if err := amc.Call(routertest.Ctx(t), "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
		Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(1), TrackingUrl: proto.String(am.URL)}, &yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatal(err)
	}

	// A browser asks for gzip: links must still be rewritten.
	preq, _ := http.NewRequestWithContext(routertest.Ctx(t), "GET", s.Web.URL+"/proxy/"+app+"/ws/v1/status?a=1", nil)
	preq.Header.Set("Accept-Encoding", "gzip")
	presp, err := http.DefaultTransport.RoundTrip(preq)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.Header.Get("Content-Encoding") != "" || !strings.Contains(string(gz), s.Web.URL+"/proxy/APP/jobs") {
		t.Fatalf("gzip-accepting client: links not rewritten (Content-Encoding %q): %.200q", presp.Header.Get("Content-Encoding"), gz)
	}
	code, h, b := s.Call("GET", "/proxy/"+app+"/ws/v1/status?a=1", "", "", "")
	if code != 200 || h.Get("X-Am") != "yes" || !strings.Contains(string(b), "q=a=1") {
		t.Fatalf("proxied page: %d %v %.200s", code, h, b)
	}
	if strings.Contains(string(b), rmWeb) || strings.Count(string(b), s.Web.URL+"/proxy/APP/") != 2 {
		t.Fatalf("links to the RM's proxy not rewritten to the router's: %.200s ... %s", b, b[len(b)-120:])
	}
	code, h, _ = s.Call("GET", "/proxy/"+app+"/move", "", "", "")
	if code != http.StatusFound || h.Get("Location") != s.Web.URL+"/proxy/"+app+"/ws/v1/status" {
		t.Fatalf("redirect: %d Location=%q", code, h.Get("Location"))
	}
	code, _, b = s.Call("POST", "/proxy/"+app+"/post", "", "text/plain", "hello")
	if code != http.StatusCreated || string(b) != "hello" {
		t.Fatalf("post: %d %s", code, b)
	}
	if code, _, b := s.Call("GET", "/proxy/application_1700000000000_9999/", "", "", ""); code != 404 {
		t.Fatalf("unknown app: %d %s", code, b)
	}
}

// reservationRMWeb is an RM web app that records the reservation calls it
// gets and lists the reservations submitted to it.
type reservationRMWeb struct {
	mu    sync.Mutex
	calls []string
	ids   []string
}

func reservationRM(f *routertest.Fed, sc router.SubClusterID) *reservationRMWeb {
	rw := &reservationRMWeb{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rw.mu.Lock()
		defer rw.mu.Unlock()
		rw.calls = append(rw.calls, req.Method+" "+req.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(req.URL.Path, "/reservation/submit"):
			var in struct {
				ID string `json:"reservation-id"`
			}
			_ = json.Unmarshal(body, &in)
			rw.ids = append(rw.ids, in.ID)
			w.WriteHeader(http.StatusAccepted)
		case strings.HasSuffix(req.URL.Path, "/reservation/list"):
			var items []string
			for _, id := range rw.ids {
				if q := req.URL.Query().Get("reservation-id"); q == "" || q == id {
					items = append(items, `{"reservation-id":"`+id+`","queue":"`+req.URL.Query().Get("queue")+`"}`)
				}
			}
			_, _ = io.WriteString(w, `{"reservations":[`+strings.Join(items, ",")+`]}`)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	}))
	f.T.Cleanup(srv.Close)
	f.Store.Put(router.SubClusterInfo{ID: sc, ClientRMServiceAddress: "fake-" + string(sc) + ":8032", State: router.StateRunning,
		RMWebServiceAddress: strings.TrimPrefix(srv.URL, "http://"), LastHeartbeat: time.Now()})
	return rw
}

func (rw *reservationRMWeb) got() []string {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return slices.Clone(rw.calls)
}

// TestRESTReservationsFollowTheirHome: the real policies place a new
// reservation by queue (this failed with "no reservation resolver
// configured": the placement asked for the home of the reservation being
// placed), the store records the home, and update, delete and list go
// there; a list without an id asks every RM and concatenates.
func TestRESTReservationsFollowTheirHome(t *testing.T) {
	f := routertest.NewFed(t, 2, nil)
	rms := map[router.SubClusterID]*reservationRMWeb{"SC-1": reservationRM(f, "SC-1"), "SC-2": reservationRM(f, "SC-2")}
	routertest.Poll(t, "web addresses visible", func() bool {
		code, _ := f.Do("GET", "/ws/v1/cluster/reservation/list?queue=q", "", "", "")
		return code == 200
	})
	homes := map[router.SubClusterID]int{}
	for i := range 6 {
		rid := "reservation_5_000" + string(rune('1'+i))
		code, b := f.Do("POST", "/ws/v1/cluster/reservation/submit", "", "application/json",
			`{"queue":"q","reservation-id":"`+rid+`","reservation-definition":{"arrival":1}}`)
		if code != http.StatusAccepted {
			t.Fatalf("submit %s: %d %s", rid, code, b)
		}
		home, err := f.Store.GetReservationHome(routertest.Ctx(t), rid)
		if err != nil {
			t.Fatal(err)
		}
		homes[home]++
		for _, op := range []string{"update", "delete"} {
			if code, b := f.Do("POST", "/ws/v1/cluster/reservation/"+op, "", "application/xml",
				`<reservation-`+op+`-context><reservation-id>`+rid+`</reservation-id></reservation-`+op+`-context>`); code != 200 {
				t.Fatalf("%s %s: %d %s", op, rid, code, b)
			}
		}
		code, b = f.Do("GET", "/ws/v1/cluster/reservation/list?queue=q&reservation-id="+rid, "", "", "")
		if code != 200 || !strings.Contains(string(b), rid) {
			t.Fatalf("list %s: %d %s", rid, code, b)
		}
		for sc, rw := range rms {
			calls := strings.Join(rw.got(), ";")
			if (sc == home) != strings.Contains(calls, "/reservation/delete") {
				t.Fatalf("%s (home %s): %s got %s", rid, home, sc, calls)
			}
		}
		for _, rw := range rms {
			rw.mu.Lock()
			rw.calls = nil
			rw.mu.Unlock()
		}
	}
	code, b := f.Do("GET", "/ws/v1/cluster/reservation/list?queue=q", "", "", "")
	var all struct {
		Reservations []struct {
			ID string `json:"reservation-id"`
		} `json:"reservations"`
	}
	if code != 200 || json.Unmarshal(b, &all) != nil || len(all.Reservations) != 6 {
		t.Fatalf("list of all: %d %s", code, b)
	}
	t.Logf("homes: %v", homes)
	for _, bad := range []string{`{"queue":"q"}`, `{"queue":"q","reservation-id":"res_1"}`, `{"reservation-id":"reservation_1_0001"}`, `{`} {
		if code, b := f.Do("POST", "/ws/v1/cluster/reservation/submit", "", "application/json", bad); code != 400 || !strings.Contains(string(b), "BadRequestException") {
			t.Errorf("submit %s: %d %s, want 400", bad, code, b)
		}
	}
}

// TestRESTRelayHomeDown: a home RM that hangs or is gone makes relayed
// calls answer 503 (retriable, the RM is expected back) within the call
// timeout, never 500, and never another RM's answer.
func TestRESTRelayHomeDown(t *testing.T) {
	s := routertest.NewSimFed(t, func(c *router.Config) { c.CallTimeout = router.Duration(500 * time.Millisecond) })
	id := s.SubmitApp(false)
	app := yarnid.AppIDString(id)
	home := s.Store.Homes()[app]
	path := "/ws/v1/cluster/apps/" + app + "/priority"
	if code, _, b := s.Call("GET", path, "", "", ""); code != 200 {
		t.Fatalf("before: %d %s", code, b)
	}
	s.Sims[home].SetFaults(simrm.FaultConfig{Stalled: true})
	code, _, b := s.Call("GET", path, "", "", "")
	s.Sims[home].SetFaults(simrm.FaultConfig{})
	if code != http.StatusServiceUnavailable {
		t.Fatalf("hung home: %d %s, want 503", code, b)
	}
	if err := s.Sims[home].Crash(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, "/proxy/" + app + "/"} {
		if code, _, b := s.Call("GET", p, "", "", ""); code != http.StatusServiceUnavailable {
			t.Fatalf("GET %s with the home down: %d %s, want 503", p, code, b)
		}
	}
}
