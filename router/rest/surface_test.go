package rest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// retriesOf is yarnfed_router_retries_total{method} in reg (0 if absent).
func retriesOf(t *testing.T, reg *prometheus.Registry, method string) float64 {
	t.Helper()
	return routertest.CounterByMethod(t, reg, "yarnfed_router_retries_total", method)
}

// TestRESTNewReservationRelaysRMRefusal: an RM that refuses
// new-reservation with a 4xx (simrm: reservations are off, 400) has
// answered the client; the router relays that answer at once instead of
// counting it as a sub-cluster failure, retrying the others and answering
// 5xx.
func TestRESTNewReservationRelaysRMRefusal(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := routertest.NewSimFed(t, func(c *router.Config) { c.Registerer = reg })
	code, _, b := s.Call("POST", "/ws/v1/cluster/reservation/new-reservation", "", "", "")
	var re rmrest.RemoteExceptionResponse
	if code != http.StatusBadRequest || json.Unmarshal(b, &re) != nil || re.RemoteException.JavaClassName != rmrest.ClassBadRequest ||
		!strings.Contains(re.RemoteException.Message, "Reservation is not enabled") {
		t.Fatalf("new-reservation: %d %s, want the RM's 400", code, b)
	}
	if n := retriesOf(t, reg, "REST new-reservation"); n != 0 {
		t.Fatalf("%v retries after an RM's 4xx, want none", n)
	}
	// XML clients get the RM's XML.
	code, h, b := s.Call("POST", "/ws/v1/cluster/reservation/new-reservation", "application/xml", "", "")
	if code != http.StatusBadRequest || !strings.Contains(h.Get("Content-Type"), "xml") || !strings.Contains(string(b), "<RemoteException>") {
		t.Fatalf("new-reservation XML: %d %s", code, b)
	}
}

// TestRESTNewReservationRetriesUnavailableRM: an RM that does not serve the
// call (standby: 503) is a sub-cluster failure and the router asks
// another; an RM's 500 is its answer, relayed as it is.
func TestRESTNewReservationRetriesUnavailableRM(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := routertest.NewSimFed(t, func(c *router.Config) { c.Registerer = reg })
	s.Sims["SC-1"].TransitionToStandby()
	for range 4 { // the router picks at random: SC-1 is tried first about half the time
		if code, _, b := s.Call("POST", "/ws/v1/cluster/reservation/new-reservation", "", "", ""); code != http.StatusBadRequest {
			t.Fatalf("SC-1 standby: %d %s, want SC-2's 400", code, b)
		}
	}
	s.Sims["SC-1"].TransitionToActive()
	s.Sims["SC-1"].SetFaults(simrm.FaultConfig{ErrorRate: 1})
	s.Sims["SC-2"].SetFaults(simrm.FaultConfig{ErrorRate: 1})
	before := retriesOf(t, reg, "REST new-reservation")
	code, _, b := s.Call("POST", "/ws/v1/cluster/reservation/new-reservation", "", "", "")
	if code != http.StatusInternalServerError || !strings.Contains(string(b), "injected fault") {
		t.Fatalf("RM 500: %d %s, want the RM's own 500", code, b)
	}
	if n := retriesOf(t, reg, "REST new-reservation"); n != before {
		t.Fatalf("an RM's 500 was retried (%v -> %v)", before, n)
	}
}

// TestRESTSchedulerActivitiesAndConf: /scheduler/activities and
// /scheduler-conf answer as Hadoop's router does, never the router's own
// plain-text 404: activities need nodeId and groupBy (400 RemoteException)
// and go to the sub-cluster with that node (404 RemoteException for a node
// no sub-cluster has); scheduler-conf GET relays the RMs' refusal (simrm,
// like a file-configured CapacityScheduler, answers 400) and PUT needs the
// subClusterId Hadoop's router reads from the body.
func TestRESTSchedulerActivitiesAndConf(t *testing.T) {
	s := routertest.NewSimFed(t)
	nodes, err := rmrest.NewClient(s.Sims["SC-2"].Addrs().Web).GetNodes(routertest.Ctx(t), "")
	if err != nil || len(nodes) == 0 {
		t.Fatalf("SC-2 nodes: %v %v", nodes, err)
	}
	const act = "/ws/v1/cluster/scheduler/activities"
	remote := func(name string, code int, b []byte, wantCode int, wantClass string) {
		t.Helper()
		var re rmrest.RemoteExceptionResponse
		if code != wantCode || json.Unmarshal(b, &re) != nil || re.RemoteException.JavaClassName != wantClass {
			t.Fatalf("%s: %d %s, want %d %s", name, code, b, wantCode, wantClass)
		}
	}
	code, _, b := s.Call("GET", act, "", "", "")
	remote("activities without nodeId", code, b, 400, rmrest.ClassBadRequest)
	code, _, b = s.Call("GET", act+"?nodeId="+nodes[0].ID, "", "", "")
	remote("activities without groupBy", code, b, 400, rmrest.ClassBadRequest)
	code, _, b = s.Call("GET", act+"?groupBy=diagnostic&nodeId=nowhere:1", "", "", "")
	remote("activities of an unknown node", code, b, 404, rmrest.ClassNotFound)
	code, _, b = s.Call("GET", act+"?groupBy=diagnostic&nodeId="+nodes[0].ID, "", "", "")
	var ar rmrest.ActivitiesResponse
	if code != 200 || json.Unmarshal(b, &ar) != nil || ar.Activities.NodeID != nodes[0].ID || ar.Activities.Diagnostic == "" {
		t.Fatalf("activities relayed to the node's RM: %d %s", code, b)
	}

	const conf = "/ws/v1/cluster/scheduler-conf"
	if code, _, b := s.Call("GET", conf, "", "", ""); code != 400 || !strings.Contains(string(b), "MutableConfScheduler") {
		t.Fatalf("scheduler-conf GET: %d %s, want the RMs' 400", code, b)
	}
	code, _, b = s.Call("PUT", conf, "", "application/json", `{"update-queue":[]}`)
	remote("scheduler-conf PUT without subClusterId", code, b, 400, rmrest.ClassBadRequest)
	code, _, b = s.Call("PUT", conf, "application/xml", "application/json", `{"subClusterId":"SC-9"}`)
	if code != 404 || !strings.Contains(string(b), "<RemoteException>") {
		t.Fatalf("scheduler-conf PUT to an unknown sub-cluster: %d %s", code, b)
	}
	if code, _, b := s.Call("PUT", conf, "", "application/xml", `<sched-conf><subClusterId>SC-1</subClusterId></sched-conf>`); code != 400 || !strings.Contains(string(b), "MutableConfScheduler") {
		t.Fatalf("scheduler-conf PUT relayed to SC-1: %d %s, want its 400", code, b)
	}
}

// TestRESTAttemptContainersThroughRouter: the attempt-containers paths
// the router relays to the app's home now reach an RM that serves them.
func TestRESTAttemptContainersThroughRouter(t *testing.T) {
	s := routertest.NewSimFed(t)
	id := s.SubmitApp(false)
	app := yarnid.AppIDString(id)
	attempt := "appattempt_" + strings.TrimPrefix(app, "application_") + "_000001"
	base := "/ws/v1/cluster/apps/" + app + "/appattempts/" + attempt
	var list rmrest.ContainersResponse
	routertest.Poll(t, "AM container listed", func() bool {
		code, _, b := s.Call("GET", base+"/containers", "", "", "")
		return code == 200 && json.Unmarshal(b, &list) == nil && len(list.Containers.Container) > 0
	})
	am := list.Containers.Container[0].ContainerID
	code, _, b := s.Call("GET", base+"/containers/"+am, "", "", "")
	var one rmrest.ContainerResponse
	if code != 200 || json.Unmarshal(b, &one) != nil || one.Container.ContainerID != am {
		t.Fatalf("container via router: %d %s", code, b)
	}
	if code, _, b := s.Call("GET", base, "", "", ""); code != 200 || !strings.Contains(string(b), attempt) {
		t.Fatalf("attempt via router: %d %s", code, b)
	}
}
