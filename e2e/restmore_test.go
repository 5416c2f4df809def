//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// httpDo sends one request and returns status, headers and body (redirects
// are not followed: they are part of what is compared).
func httpDo(t testing.TB, method, url, accept, ctype, body string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// sameKeys compares the JSON field paths of the router's answer with a
// real RM's (what the existing parity checks do), both ways.
func sameKeys(t *testing.T, what string, rm, ours map[string]bool) {
	t.Helper()
	for _, k := range setDiff(rm, ours) {
		restGap(t, fmt.Sprintf("%s: a real RM sends %s, the router does not", what, k))
	}
	for _, k := range setDiff(ours, rm) {
		t.Errorf("%s: the router sends %s, which the real RM does not", what, k)
	}
}

// stripKeys keeps the paths under prefix, without it.
func stripKeys(keys map[string]bool, prefix string) map[string]bool {
	out := map[string]bool{}
	for k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = true
		}
	}
	return out
}

// xmlPaths lists the element paths of an XML document ("a.b.c"), as
// jsonKeys does for JSON.
func xmlPaths(t testing.TB, body []byte) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	d := xml.NewDecoder(strings.NewReader(string(body)))
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, tail(string(body), 500))
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			out[strings.Join(stack, ".")] = true
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

// TestRESTMoreThroughRouterAgainstRealRMs checks every REST endpoint the
// router gained in issue 13 against real Hadoop 3.4 RMs: field paths of
// the JSON, XML where the router builds its own, status codes of errors,
// writes reaching the home RM, reservations placed and found by their
// home, and /proxy/{appid}/ reaching an AM's tracking URL through the home
// RM's web proxy.
func TestRESTMoreThroughRouterAgainstRealRMs(t *testing.T) {
	sc1 := needCluster(t)
	// SC-2 runs a reservation system with a reservable queue "res".
	sc2 := newCluster(t, clusterOptions{clusterID: "e2e-rest2", epoch: 9, nms: 1, set: []string{
		"yarn.resourcemanager.reservation-system.enable=true",
		"yarn.scheduler.capacity.root.queues=default,res",
		"yarn.scheduler.capacity.root.default.capacity=50",
		"yarn.scheduler.capacity.root.res.capacity=50",
		"yarn.scheduler.capacity.root.res.reservable=true",
	}})
	rms := map[string]*miniCluster{"SC-1": sc1, "SC-2": sc2}
	r := startRouter(t, subCluster("SC-1", sc1), subCluster("SC-2", sc2))
	rweb := "http://" + r.WebAddr().String()

	rc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: e2eUser, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	// An AM with a web UI, registered as an unmanaged AM with its tracking URL.
	var homeWeb string
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<html><a href="http://%s/proxy/APP/next">next</a> query=%s</html>`, homeWeb, req.URL.RawQuery)
		case "/move":
			http.Redirect(w, req, "/page?moved=1", http.StatusFound)
		default:
			http.NotFound(w, req)
		}
	}))
	defer am.Close()

	id := submitUnmanaged(t, rc, "rest-more")
	app := appString(id)
	var home *miniCluster
	var homeName string
	for name, mc := range rms {
		if _, ok := tryREST(mc, "/ws/v1/cluster/apps/"+app); ok {
			home, homeName = mc, name
		}
	}
	if home == nil {
		t.Fatalf("%s is on neither RM", app)
	}
	homeWeb = loopback(home.info.Web)
	tok := waitAMRMToken(t, rc, id)
	amc := amClient(t, home, tok)
	call(t, amc, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{
		Host: proto.String("127.0.0.1"), RpcPort: proto.Int32(1), TrackingUrl: proto.String(am.URL + "/")},
		&yarnpb.RegisterApplicationMasterResponseProto{})
	t.Logf("%s runs on %s (%s)", app, homeName, homeWeb)
	defer call(t, rc, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
	rmURL := "http://" + homeWeb

	var attempt string
	{
		var atts struct {
			AppAttempts struct {
				AppAttempt []struct {
					AppAttemptID string `json:"appAttemptId"`
				} `json:"appAttempt"`
			} `json:"appAttempts"`
		}
		if err := json.Unmarshal(getRESTAt(t, homeWeb, "/ws/v1/cluster/apps/"+app+"/appattempts", "application/json"), &atts); err != nil ||
			len(atts.AppAttempts.AppAttempt) == 0 {
			t.Fatalf("attempts of %s: %v", app, err)
		}
		attempt = atts.AppAttempts.AppAttempt[0].AppAttemptID
	}

	t.Run("per-app GETs match the home RM", func(t *testing.T) {
		base := "/ws/v1/cluster/apps/" + app
		for _, p := range []string{"/priority", "/queue", "/timeouts", "/timeouts/LIFETIME",
			"/appattempts/" + attempt, "/appattempts/" + attempt + "/containers"} {
			rcode, _, rb := httpDo(t, "GET", rmURL+base+p, "application/json", "", "")
			ocode, _, ob := httpDo(t, "GET", rweb+base+p, "application/json", "", "")
			if rcode != ocode {
				t.Errorf("GET %s: real RM %d, router %d (%s)", p, rcode, ocode, tail(string(ob), 300))
				continue
			}
			if rcode == 200 {
				sameKeys(t, "GET "+p, jsonKeys(t, rb), jsonKeys(t, ob))
			}
		}
		for _, p := range []string{"/priority", "/queue"} {
			_, _, rb := httpDo(t, "GET", rmURL+base+p, "application/xml", "", "")
			_, _, ob := httpDo(t, "GET", rweb+base+p, "application/xml", "", "")
			if string(rb) != string(ob) {
				t.Errorf("GET %s as XML: real RM %s, router %s", p, rb, ob)
			}
		}
	})

	t.Run("per-app PUTs reach the home RM", func(t *testing.T) {
		base := "/ws/v1/cluster/apps/" + app
		code, _, b := httpDo(t, "PUT", rweb+base+"/priority?user.name="+e2eUser, "application/json", "application/json", `{"priority":3}`)
		if code != 200 {
			t.Fatalf("PUT priority: %d %s", code, b)
		}
		// The RM caps priorities at yarn.cluster.max-application-priority
		// (0 by default): the router's answer is the RM's effective value.
		var put, pr struct{ Priority int }
		if err := json.Unmarshal(b, &put); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(getRESTAt(t, homeWeb, base+"/priority", "application/json"), &pr); err != nil || pr != put {
			t.Errorf("priority at the home RM after PUT through the router: %+v %v, the router answered %+v", pr, err, put)
		}
		// A move to a queue that does not exist: the RM's own refusal.
		rcode, _, rb := httpDo(t, "PUT", rmURL+base+"/queue?user.name="+e2eUser, "application/json", "application/json", `{"queue":"no-such-queue"}`)
		ocode, _, ob := httpDo(t, "PUT", rweb+base+"/queue?user.name="+e2eUser, "application/json", "application/json", `{"queue":"no-such-queue"}`)
		if rcode != ocode || rcode < 400 {
			t.Errorf("PUT queue to a missing queue: real RM %d %s, router %d %s", rcode, tail(string(rb), 300), ocode, tail(string(ob), 300))
		}
		exp := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000-0700")
		body := `{"timeout":{"type":"LIFETIME","expiryTime":"` + exp + `"}}`
		ocode, _, ob = httpDo(t, "PUT", rweb+base+"/timeout?user.name="+e2eUser, "application/json", "application/json", body)
		if ocode != 200 {
			t.Fatalf("PUT timeout through the router: %d %s", ocode, ob)
		}
		_, _, rb = httpDo(t, "GET", rmURL+base+"/timeouts/LIFETIME", "application/json", "", "")
		sameKeys(t, "PUT timeout", jsonKeys(t, rb), jsonKeys(t, ob))
		if !strings.Contains(string(rb), exp[:16]) {
			t.Errorf("lifetime at the home RM after PUT through the router: %s, want expiry %s", rb, exp)
		}
		// Malformed input: refused by the router in the RM's shape.
		for _, bad := range []string{`{"priority":"high"}`, `{`, `{}`} {
			code, _, b := httpDo(t, "PUT", rweb+base+"/priority", "application/json", "application/json", bad)
			var re struct {
				RemoteException struct{ JavaClassName string } `json:"RemoteException"`
			}
			if code != 400 || json.Unmarshal(b, &re) != nil || !strings.HasSuffix(re.RemoteException.JavaClassName, "BadRequestException") {
				t.Errorf("PUT priority %s: %d %s, want 400 BadRequestException", bad, code, b)
			}
		}
	})

	t.Run("fan-out documents", func(t *testing.T) {
		// schedulerKeys: the keys of every RM's /scheduler document (in
		// the given media type, read by keys) and those of the router's
		// per-sub-cluster entries, each without its root.
		schedulerKeys := func(keys func(testing.TB, []byte) map[string]bool, media string) (atRMs, atRouter map[string]bool) {
			atRMs = map[string]bool{}
			for _, mc := range rms {
				for k := range stripKeys(keys(t, getREST(t, mc, "/ws/v1/cluster/scheduler", media)), "scheduler.") {
					atRMs[k] = true
				}
			}
			atRouter = stripKeys(keys(t, getRESTAt(t, r.WebAddr().String(), "/ws/v1/cluster/scheduler", media)), router.FederationSchedulerRoot+".subCluster.")
			delete(atRouter, "subClusterId")
			return atRMs, atRouter
		}
		for _, p := range []string{"/ws/v1/cluster/appstatistics", "/ws/v1/cluster/appstatistics?states=RUNNING&applicationTypes=YARNFED-E2E",
			"/ws/v1/cluster/get-node-labels"} {
			rk := map[string]bool{}
			for _, mc := range rms {
				b, ok := tryREST(mc, p)
				if !ok {
					t.Fatalf("real RM does not answer %s", p)
				}
				for k := range jsonKeys(t, b) {
					rk[k] = true
				}
				t.Logf("real RM %s: %s", p, tail(string(b), 400))
			}
			sameKeys(t, "GET "+p, rk, jsonKeys(t, getRESTAt(t, r.WebAddr().String(), p, "application/json")))
		}
		// XML: the same element paths as the RMs'.
		for _, p := range []string{"/ws/v1/cluster/appstatistics", "/ws/v1/cluster/get-node-labels"} {
			rk := map[string]bool{}
			for _, mc := range rms {
				for k := range xmlPaths(t, getREST(t, mc, p, "application/xml")) {
					rk[k] = true
				}
			}
			sameKeys(t, "GET "+p+" (XML)", rk, xmlPaths(t, getRESTAt(t, r.WebAddr().String(), p, "application/xml")))
		}
		rx, ox := schedulerKeys(xmlPaths, "application/xml")
		sameKeys(t, "GET /scheduler (XML, per sub-cluster)", rx, ox)
		// The app counted once, at its home.
		var st struct {
			AppStatInfo struct {
				StatItem []struct {
					State string
					Type  string
					Count int
				} `json:"statItem"`
			} `json:"appStatInfo"`
		}
		if err := json.Unmarshal(getRESTAt(t, r.WebAddr().String(), "/ws/v1/cluster/appstatistics?states=RUNNING&applicationTypes=YARNFED-E2E", "application/json"), &st); err != nil ||
			len(st.AppStatInfo.StatItem) != 1 || st.AppStatInfo.StatItem[0].Count < 1 {
			t.Errorf("appstatistics through the router: %+v %v", st, err)
		}
		// Scheduler: Hadoop's Router shape, one RM document per sub-cluster.
		rk, ok := schedulerKeys(jsonKeys, "application/json")
		sameKeys(t, "GET /scheduler (per sub-cluster)", rk, ok)
		var x struct {
			XMLName    xml.Name
			SubCluster []struct {
				ID            string `xml:"subClusterId"`
				SchedulerInfo struct {
					Type string `xml:"http://www.w3.org/2001/XMLSchema-instance type,attr"`
				} `xml:"schedulerInfo"`
			} `xml:"subCluster"`
		}
		xb := getRESTAt(t, r.WebAddr().String(), "/ws/v1/cluster/scheduler", "application/xml")
		if err := xml.Unmarshal(xb, &x); err != nil || len(x.SubCluster) != 2 || x.SubCluster[0].ID != "SC-1" || x.SubCluster[0].SchedulerInfo.Type != "capacityScheduler" {
			t.Errorf("scheduler XML through the router: %+v %v\n%s", x, err, tail(string(xb), 600))
		}
	})

	t.Run("delegation tokens as an RM without Kerberos", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/ws/v1/cluster/delegation-token", `{"renewer":"yarn"}`},
			{"POST", "/ws/v1/cluster/delegation-token/expiration", ``},
			{"DELETE", "/ws/v1/cluster/delegation-token", ``},
		} {
			rcode, _, rb := httpDo(t, c.method, rmURL+c.path+"?user.name="+e2eUser, "application/json", "application/json", c.body)
			ocode, _, ob := httpDo(t, c.method, rweb+c.path+"?user.name="+e2eUser, "application/json", "application/json", c.body)
			if rcode != ocode {
				t.Errorf("%s %s: real RM %d %s, router %d %s", c.method, c.path, rcode, tail(string(rb), 300), ocode, tail(string(ob), 300))
			}
		}
	})

	t.Run("proxy to the AM through the home RM's web proxy", func(t *testing.T) {
		for _, p := range []string{"/proxy/" + app + "/page?x=1", "/proxy/" + app + "/move", "/proxy/" + app + "/missing"} {
			rcode, rh, rb := httpDo(t, "GET", rmURL+p, "", "", "")
			ocode, oh, ob := httpDo(t, "GET", rweb+p, "", "", "")
			want := strings.ReplaceAll(string(rb), rmURL+"/proxy/", rweb+"/proxy/")
			if rcode != ocode || string(ob) != want {
				t.Errorf("GET %s: real RM %d %q; router %d %q", p, rcode, tail(string(rb), 300), ocode, tail(string(ob), 300))
			}
			if wantLoc := strings.ReplaceAll(rh.Get("Location"), rmURL+"/proxy/", rweb+"/proxy/"); oh.Get("Location") != wantLoc {
				t.Errorf("GET %s: Location %q, want %q (the RM's %q)", p, oh.Get("Location"), wantLoc, rh.Get("Location"))
			}
			t.Logf("GET %s: %d Location=%q %s", p, ocode, oh.Get("Location"), tail(string(ob), 160))
		}
		if code, _, b := httpDo(t, "GET", rweb+"/proxy/"+app+"/page", "", "", ""); code != 200 || !strings.Contains(string(b), "href=\""+rweb+"/proxy/APP/next") {
			t.Errorf("proxied page: %d %s", code, b)
		}
	})

	t.Run("reservations by their home", func(t *testing.T) {
		// Only SC-2 runs a reservation system: a router over it alone.
		rr := startRouter(t, subCluster("SC-R", sc2))
		rrweb := "http://" + rr.WebAddr().String()
		rm2 := "http://" + loopback(sc2.info.Web)
		newRes := func(base string) string {
			code, _, b := httpDo(t, "POST", base+"/ws/v1/cluster/reservation/new-reservation?user.name="+e2eUser, "application/json", "", "")
			var nr struct {
				ID string `json:"reservation-id"`
			}
			if code != 200 || json.Unmarshal(b, &nr) != nil || nr.ID == "" {
				t.Fatalf("new-reservation at %s: %d %s", base, code, b)
			}
			return nr.ID
		}
		_ = newRes(rm2)
		_, _, rb := httpDo(t, "POST", rm2+"/ws/v1/cluster/reservation/new-reservation?user.name="+e2eUser, "application/json", "", "")
		_, _, ob := httpDo(t, "POST", rrweb+"/ws/v1/cluster/reservation/new-reservation?user.name="+e2eUser, "application/json", "", "")
		sameKeys(t, "POST new-reservation", jsonKeys(t, rb), jsonKeys(t, ob))
		now := time.Now().UnixMilli()
		def := func(name string, n int) string {
			return fmt.Sprintf(`"reservation-definition":{"arrival":%d,"deadline":%d,"reservation-name":"%s","reservation-requests":{"reservation-request-interpreter":0,"reservation-request":[{"duration":60000,"num-containers":%d,"min-concurrency":1,"capability":{"memory":1024,"vCores":1}}]}}`,
				now+60_000, now+600_000, name, n)
		}
		// The RM's plan learns the queue's capacity from its plan follower
		// (a 1 s step) after the NodeManagers register: a reservation
		// submitted within a second or two of the cluster's start is
		// refused by the RM itself ("PlanningException: The request cannot
		// be satisfied"), routed or not. Wait for the plan, as a client must.
		var rid string
		for deadline := time.Now().Add(30 * time.Second); ; {
			rid = newRes(rrweb)
			code, _, b := httpDo(t, "POST", rrweb+"/ws/v1/cluster/reservation/submit?user.name="+e2eUser, "application/json", "application/json",
				`{"queue":"res","reservation-id":"`+rid+`",`+def("e2e-res", 1)+`}`)
			if code/100 == 2 {
				break
			}
			if !strings.Contains(string(b), "The request cannot be satisfied") || time.Now().After(deadline) {
				t.Fatalf("submit reservation through the router: %d %s", code, b)
			}
			time.Sleep(500 * time.Millisecond)
		}
		list := "/ws/v1/cluster/reservation/list?queue=res&include-resource-allocations=true&reservation-id=" + rid + "&user.name=" + e2eUser
		rcode, _, rb := httpDo(t, "GET", rm2+list, "application/json", "", "")
		ocode, _, ob := httpDo(t, "GET", rrweb+list, "application/json", "", "")
		if rcode != 200 || ocode != 200 || !strings.Contains(string(ob), rid) {
			t.Fatalf("list: real RM %d %s; router %d %s", rcode, tail(string(rb), 300), ocode, tail(string(ob), 300))
		}
		sameKeys(t, "GET reservation/list", jsonKeys(t, rb), jsonKeys(t, ob))
		all := "/ws/v1/cluster/reservation/list?queue=res&user.name=" + e2eUser
		_, _, rb = httpDo(t, "GET", rm2+all, "application/json", "", "")
		_, _, ob = httpDo(t, "GET", rrweb+all, "application/json", "", "")
		sameKeys(t, "GET reservation/list (no id, fanned out)", jsonKeys(t, rb), jsonKeys(t, ob))
		_, _, rx := httpDo(t, "GET", rm2+list, "application/xml", "", "")
		_, _, ox := httpDo(t, "GET", rrweb+list, "application/xml", "", "")
		if string(rx) != string(ox) {
			t.Errorf("reservation list XML: real RM %s, router %s", tail(string(rx), 300), tail(string(ox), 300))
		}
		code, _, b := httpDo(t, "POST", rrweb+"/ws/v1/cluster/reservation/update?user.name="+e2eUser, "application/json", "application/json",
			`{"reservation-id":"`+rid+`",`+def("e2e-res", 2)+`}`)
		if code/100 != 2 {
			t.Errorf("update reservation through the router: %d %s", code, b)
		}
		code, _, b = httpDo(t, "POST", rrweb+"/ws/v1/cluster/reservation/delete?user.name="+e2eUser, "application/json", "application/json",
			`{"reservation-id":"`+rid+`"}`)
		if code/100 != 2 {
			t.Errorf("delete reservation through the router: %d %s", code, b)
		}
		rcode, _, rb = httpDo(t, "GET", rm2+list, "application/json", "", "")
		ocode, _, ob = httpDo(t, "GET", rrweb+list, "application/json", "", "")
		if rcode != ocode {
			t.Errorf("list after delete: real RM %d %s; router %d %s", rcode, tail(string(rb), 200), ocode, tail(string(ob), 200))
		}
		t.Logf("after delete: %d %s", ocode, tail(string(ob), 200))
	})
}

// TestSimRMMoreRESTShapes keeps simrm's new endpoints honest: the same field
// paths as a real RM's for the same resources.
func TestSimRMMoreRESTShapes(t *testing.T) {
	mc := needCluster(t)
	sim := startSimRM(t, mc.info.NMs)
	c := rmClient(t, mc)
	rid := submitUnmanaged(t, c, "simrm-shapes")
	defer call(t, c, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: rid}, &yarnpb.KillApplicationResponseProto{})
	sc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{sim.Addrs().Client},
		Protocol: hadoopipc.ProtocolApplicationClient, User: e2eUser})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	sid := submitUnmanaged(t, sc, "simrm-shapes")
	paths := []string{"/ws/v1/cluster/appstatistics", "/ws/v1/cluster/get-node-labels",
		"/ws/v1/cluster/apps/%s/priority", "/ws/v1/cluster/apps/%s/queue", "/ws/v1/cluster/apps/%s/timeouts"}
	sort.Strings(paths)
	for _, p := range paths {
		rp, sp := p, p
		if strings.Contains(p, "%s") {
			rp, sp = fmt.Sprintf(p, appString(rid)), fmt.Sprintf(p, appString(sid))
		}
		rk := jsonKeys(t, getREST(t, mc, rp, "application/json"))
		sk := jsonKeys(t, getRESTAt(t, sim.Addrs().Web, sp, "application/json"))
		for _, k := range setDiff(rk, sk) {
			restGap(t, fmt.Sprintf("REST %s: the real RM sends %s, simrm does not", p, k))
		}
		for _, k := range setDiff(sk, rk) {
			t.Errorf("REST %s: simrm sends %s, the real RM does not", p, k)
		}
	}
	for _, m := range []string{"POST", "DELETE"} {
		rcode, _, _ := httpDo(t, m, "http://"+loopback(mc.info.Web)+"/ws/v1/cluster/delegation-token?user.name=x", "application/json", "application/json", `{"renewer":"yarn"}`)
		scode, _, _ := httpDo(t, m, "http://"+sim.Addrs().Web+"/ws/v1/cluster/delegation-token?user.name=x", "application/json", "application/json", `{"renewer":"yarn"}`)
		if rcode != scode {
			t.Errorf("%s delegation-token: real RM %d, simrm %d", m, rcode, scode)
		}
	}
}
