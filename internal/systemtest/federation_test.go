package systemtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// federation is a store, two simrm sub-clusters with their agents, and
// whatever routers a test starts.
type federation struct {
	h   *harness
	st  *storeCluster
	rms []*simRM
}

func startFederation(t *testing.T, replicas int) *federation {
	h := newHarness(t)
	f := &federation{h: h, st: h.startStore(replicas)}
	for i, id := range []string{"SC-1", "SC-2"} {
		// Distinct cluster timestamps: application ids must not collide
		// across sub-clusters.
		rm := h.startSimRM(id, 1_700_000_000_000+int64(i))
		h.startAgent(rm, f.st)
		f.rms = append(f.rms, rm)
	}
	return f
}

// holders asks every RM directly (not through a router) which apps it
// holds: app id -> sub-clusters holding it.
func (f *federation) holders(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, rm := range f.rms {
		if dead, _ := rm.p.Exited(); dead {
			continue
		}
		apps, err := dialYARN(t, rm.client).apps()
		if err != nil {
			t.Fatalf("getApplications directly from %s: %v", rm.id, err)
		}
		for id, n := range apps {
			for range n {
				out[id] = append(out[id], rm.id)
			}
		}
	}
	return out
}

// homes returns the store's application homes.
func (f *federation) homes(t *testing.T) map[string]string {
	t.Helper()
	homes, err := allHomes(ctxT(t, 15*time.Second), f.st.client(t))
	if err != nil {
		t.Fatalf("list application homes: %v", err)
	}
	return homes
}

// checkExactlyOnce asserts that every app in want is held by exactly one
// RM, the one its store home names, and that the router lists it once.
func (f *federation) checkExactlyOnce(t *testing.T, y *yarnClient, want []string) {
	t.Helper()
	held, homes := f.holders(t), f.homes(t)
	listed, err := y.apps()
	if err != nil {
		t.Fatalf("getApplications through the router: %v", err)
	}
	for _, id := range want {
		switch h := held[id]; {
		case len(h) != 1:
			t.Errorf("%s held by %v, want exactly one sub-cluster", id, h)
		case homes[id] != h[0]:
			t.Errorf("%s: store home %q, but held by %s", id, homes[id], h[0])
		}
		if listed[id] != 1 {
			t.Errorf("%s listed %d times by the router's getApplications", id, listed[id])
		}
	}
}

// submitUntilBoth submits through y until each sub-cluster is home to at
// least two apps (the default policy picks at random).
func (f *federation) submitUntilBoth(t *testing.T, y *yarnClient) map[string]*yarnpb.ApplicationIdProto {
	t.Helper()
	ids := submitUntil(t, y, f.st.client(t), 40, func(per map[string]int) bool { return per["SC-1"] >= 2 && per["SC-2"] >= 2 })
	apps := map[string]*yarnpb.ApplicationIdProto{}
	for _, id := range ids {
		apps[appID(id)] = id
	}
	return apps
}

// submitUntil submits through y, reading each app's home from the store
// through c, until enough holds for the count of homes per sub-cluster; it
// fails the test after most submissions.
func submitUntil(t *testing.T, y *yarnClient, c *client.Client, most int, enough func(per map[string]int) bool) []*yarnpb.ApplicationIdProto {
	t.Helper()
	per := map[string]int{}
	var ids []*yarnpb.ApplicationIdProto
	for !enough(per) {
		if len(ids) == most {
			t.Fatalf("%d submissions and still homes %v", most, per)
		}
		id := y.submitNew()
		home, err := c.GetApplicationHome(ctxT(t, 10*time.Second), appID(id), false)
		if err != nil {
			t.Fatalf("home of %s: %v", appID(id), err)
		}
		per[home.GetHomeSubClusterId()]++
		ids = append(ids, id)
	}
	return ids
}

// TestFederationSurvivesProcessRestarts: store, two simrm sub-clusters
// with agents, a router; a YARN client over Hadoop IPC. The router is
// SIGKILLed in the middle of a stream of submissions and restarted on the
// same ports, twice, and the state store leader is SIGKILLed and restarted
// in between: every app, including those whose submission failed and was
// retried, exists exactly once, on the sub-cluster the store says. Then
// one RM dies: list calls follow --partial-results, and once its agent
// marks it unhealthy new apps land on the survivor.
func TestFederationSurvivesProcessRestarts(t *testing.T) {
	f := startFederation(t, 3)
	h := f.h
	r := h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)

	apps := f.submitUntilBoth(t, y)
	for name, id := range apps {
		if rep, err := y.report(id); err != nil || appID(rep.GetApplicationId()) != name {
			t.Fatalf("report of %s: %v %v", name, rep.GetApplicationId(), err)
		}
	}

	// A stream of submissions from four clients while processes die under
	// it: the router twice, the state store leader once. This client does
	// not retry on its own, so submissions in flight at a kill fail, and
	// the test plays the retrying client afterwards.
	yb := dialYARN(t, r.clientrm, noRetry)
	s := startStream(t, yb, 4)
	s.waitAcked(t, 10, "before the first fault")

	r.p.Kill()
	t.Logf("router SIGKILLed after %d acknowledged submissions", s.nAcked.Load())
	h.restartRouter(r)
	s.waitAcked(t, 10, "through the restarted router")

	// The store leader: the router's store client moves to the new leader;
	// the replica then rejoins from its data dir.
	victim := f.st.leader(t)
	victim.p.Kill()
	t.Logf("state store leader %s SIGKILLed after %d acknowledged submissions", victim.id, s.nAcked.Load())
	s.waitAcked(t, 10, "with a store replica down")
	h.restart(victim.p)
	waitFor(t, 30*time.Second, "state store replicas agree on a leader after the restart", f.st.agreedLeader)

	r.p.Kill()
	h.restartRouter(r)
	s.waitAcked(t, 10, "through the router restarted again")
	attempts := s.stop()

	// The client retries every submission that failed, through the new
	// router process, with the same ApplicationId.
	var burst []string
	failed := 0
	for _, a := range attempts {
		burst = append(burst, appID(a.id))
		if a.acked {
			continue
		}
		failed++
		if err := y.submit(a.id); err != nil {
			t.Errorf("retried submission of %s: %v", appID(a.id), err)
		}
	}
	t.Logf("%d submissions under faults, %d failed and were retried", len(attempts), failed)
	// A client that retries a submission that had succeeded also gets
	// success, and no second copy.
	for _, id := range apps {
		if err := y.submit(id); err != nil {
			t.Errorf("resubmission of %s: %v", appID(id), err)
		}
		break
	}
	// Reports of apps submitted before the crashes come from the new
	// process (its home cache is empty: the homes are in the store).
	for name, id := range apps {
		if rep, err := y.report(id); err != nil || appID(rep.GetApplicationId()) != name {
			t.Errorf("report of %s after router restart: %v %v", name, rep.GetApplicationId(), err)
		}
	}
	all := append(burst, keys(apps)...)
	f.checkExactlyOnce(t, y, all)
	local := allHomesOn(t, f.st, victim)
	for _, id := range all {
		if _, ok := local[id]; !ok {
			t.Errorf("restarted store replica %s lacks the home of %s", victim.id, id)
		}
	}
	if t.Failed() {
		return
	}

	// One sub-cluster's RM dies. Its agent is frozen first (SIGSTOP), so
	// the store still says RUNNING: the routers find out by calling it.
	partial := h.startRouter("router-partial", f.st, "--partial-results")
	yp := dialYARN(t, partial.clientrm)
	homes := f.homes(t)
	sc1 := f.rms[0]
	signal(t, sc1.agent, syscall.SIGSTOP)
	sc1.p.Kill()
	// Without --partial-results (Hadoop's default) a list call fails and
	// names the dead sub-cluster, until the router's breaker for SC-1
	// opens (3 failures); a client that does not retry makes one call each.
	yn := dialYARN(t, r.clientrm, noRetry)
	if n, err := yn.nodeManagers(); err == nil || !strings.Contains(err.Error(), "SC-1") {
		t.Errorf("getClusterMetrics with SC-1 dead, partial results off: %d nodes, err %v; want an error naming SC-1", n, err)
	}
	if l, err := yn.apps(); err == nil || !strings.Contains(err.Error(), "SC-1") {
		t.Errorf("getApplications with SC-1 dead, partial results off: %d apps, err %v; want an error naming SC-1", len(l), err)
	}
	// With --partial-results the survivor answers.
	onSC2 := func(m map[string]string) []string {
		var out []string
		for id, home := range m {
			if home == "SC-2" {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}
	if n, err := yp.nodeManagers(); err != nil || n != simNodes {
		t.Errorf("getClusterMetrics with partial results: %d nodes, %v; want SC-2's %d", n, err, simNodes)
	}
	checkListed := func(y *yarnClient, who string) {
		t.Helper()
		listed, err := y.apps()
		if err != nil {
			t.Errorf("getApplications through %s: %v", who, err)
			return
		}
		want := onSC2(f.homes(t))
		for _, id := range want {
			if listed[id] != 1 {
				t.Errorf("%s lists SC-2's %s %d times", who, id, listed[id])
			}
		}
		if len(listed) != len(want) {
			t.Errorf("%s lists %d apps, SC-2 holds %d", who, len(listed), len(want))
		}
	}
	checkListed(yp, "router-partial")

	// The agent thaws: no RM answers, so it marks SC-1 unhealthy, and
	// both routers stop routing to it.
	signal(t, sc1.agent, syscall.SIGCONT)
	h.waitSubCluster(f.st, sc1, pb.SubClusterState_SC_UNHEALTHY)
	// What the operator sees.
	var scs []struct {
		ID    string `json:"subClusterId"`
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(ctl(t, "--store", f.st.addrs(), "-o", "json", "subcluster", "list")), &scs); err != nil {
		t.Fatalf("yarnfedctl subcluster list: %v", err)
	}
	if fmt.Sprint(scs) != "[{SC-1 SC_UNHEALTHY} {SC-2 SC_RUNNING}]" {
		t.Errorf("yarnfedctl subcluster list: %v, want SC-1 unhealthy and SC-2 running", scs)
	}
	waitFor(t, 10*time.Second, "router-1 lists without SC-1", func() (bool, string) {
		_, err := y.apps()
		return err == nil, fmt.Sprint(err)
	})
	checkListed(y, "router-1")
	if n, err := y.nodeManagers(); err != nil || n != simNodes {
		t.Errorf("getClusterMetrics through router-1 with SC-1 unhealthy: %d nodes, %v; want %d", n, err, simNodes)
	}
	fresh := f.submitAllTo(t, y, "SC-2", "with SC-1 unhealthy")
	var home []struct {
		App  string `json:"applicationId"`
		Home string `json:"homeSubCluster"`
	}
	if err := json.Unmarshal([]byte(ctl(t, "--store", f.st.addrs(), "-o", "json", "app", "home", fresh[0])), &home); err != nil {
		t.Fatalf("yarnfedctl app home: %v", err)
	}
	if len(home) != 1 || home[0].App != fresh[0] || home[0].Home != "SC-2" {
		t.Errorf("yarnfedctl app home %s: %v, want SC-2", fresh[0], home)
	}
	// Apps on the dead sub-cluster: a clear error that names it.
	for name, id := range apps {
		if homes[name] != "SC-1" {
			continue
		}
		_, err := y.report(id)
		if err == nil || !strings.Contains(err.Error(), "SC-1") {
			t.Errorf("report of %s (home SC-1, dead): %v; want an error naming SC-1", name, err)
		}
		break
	}

	// The operator brings SC-1 back: a new RM process on the same ports
	// (a new cluster timestamp, as a restarted RM without recovery has).
	// Its agent registers it again and both routers, whose breakers for
	// SC-1 opened, route to it again.
	sc1.p = h.spawn("simrm-SC-1-new", "simrm", "--cluster-id", "SC-1", "--cluster-timestamp", "1700000000100",
		"--client-address", sc1.client, "--scheduler-address", sc1.sched, "--admin-address", sc1.admin, "--webapp-address", sc1.web,
		"--nodes", fmt.Sprint(simNodes), "--sim-am-container-runtime", "1h")
	h.waitSubCluster(f.st, sc1, pb.SubClusterState_SC_RUNNING)
	for _, c := range []struct {
		y   *yarnClient
		who string
	}{{y, "router-1"}, {yp, "router-partial"}} {
		waitFor(t, 20*time.Second, c.who+" counts SC-1 again", func() (bool, string) {
			n, err := c.y.nodeManagers()
			return err == nil && n == 2*simNodes, fmt.Sprintf("%d nodes, %v", n, err)
		})
	}
	per := map[string]int{}
	var back []string
	for i := 0; per["SC-1"] == 0; i++ {
		if i == 30 {
			t.Fatalf("30 submissions after SC-1 came back, homes %v", per)
		}
		id := appID(y.submitNew())
		back = append(back, id)
		per[f.homes(t)[id]]++
	}
	f.checkExactlyOnce(t, y, back)
}

// TestTwoRoutersSideBySide: two router processes over one store are one
// federation: apps submitted through one are reported, listed, killed and
// resubmitted through the other without duplicates.
func TestTwoRoutersSideBySide(t *testing.T) {
	f := startFederation(t, 1)
	a := f.h.startRouter("router-a", f.st)
	b := f.h.startRouter("router-b", f.st)
	ya, yb := dialYARN(t, a.clientrm), dialYARN(t, b.clientrm)

	var ids []*yarnpb.ApplicationIdProto
	var names []string
	for range 6 {
		id := ya.submitNew()
		ids = append(ids, id)
		names = append(names, appID(id))
	}
	for _, id := range ids {
		rep, err := yb.report(id)
		if err != nil {
			t.Fatalf("report through router-b of %s submitted through router-a: %v", appID(id), err)
		}
		if appID(rep.GetApplicationId()) != appID(id) {
			t.Fatalf("report of %s names %s", appID(id), appID(rep.GetApplicationId()))
		}
	}
	// The client's retry of a submission lands on the other router, over
	// IPC and over REST.
	if err := yb.submit(ids[0]); err != nil {
		t.Fatalf("resubmission through router-b: %v", err)
	}
	// Over REST: a new application and its submission through router-a,
	// the client's retry of the same body through router-b.
	restApp := restNewApp(t, a.web)
	body := fmt.Sprintf(`{"application-id":%q,"application-name":"systemtest","queue":"default","am-container-spec":{}}`, restApp)
	for _, r := range []*routerProc{a, b} {
		code, msg := restPost(t, r.web, "/ws/v1/cluster/apps", body)
		if code != 202 {
			t.Fatalf("REST submission of %s through %s: %d %s, want 202 Accepted", restApp, r.name, code, msg)
		}
	}
	names = append(names, restApp)
	code, doc, err := httpGet("http://" + b.web + "/ws/v1/cluster/apps/" + names[3])
	if err != nil || code != 200 || !strings.Contains(doc, names[3]) {
		t.Fatalf("REST report through router-b of %s: %d %s %v", names[3], code, doc, err)
	}
	f.checkExactlyOnce(t, yb, names)
	f.checkExactlyOnce(t, ya, names)

	if err := yb.call("forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: ids[1]}, &yarnpb.KillApplicationResponseProto{}); err != nil {
		t.Fatalf("kill through router-b: %v", err)
	}
	waitFor(t, 10*time.Second, "router-a reports the kill", func() (bool, string) {
		rep, err := ya.report(ids[1])
		return err == nil && rep.GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_KILLED,
			fmt.Sprint(rep.GetYarnApplicationState(), err)
	})

	// An operator stops everything with SIGTERM (routers first, store
	// last): each role exits promptly and with status 0.
	order := []*proc{a.p, b.p}
	for _, rm := range f.rms {
		order = append(order, rm.agent, rm.p)
	}
	for _, nd := range f.st.nodes {
		order = append(order, nd.p)
	}
	for _, p := range order {
		if err := p.Terminate(15 * time.Second); err != nil {
			t.Errorf("%s on SIGTERM: %v", p.Name, err)
		}
	}
}

// allHomesOn waits until replica nd's local (stale) state has caught up
// with the cluster's and returns it.
func allHomesOn(t *testing.T, st *storeCluster, nd *storeNode) map[string]string {
	t.Helper()
	want, err := allHomes(ctxT(t, 15*time.Second), st.client(t))
	if err != nil {
		t.Fatalf("list homes: %v", err)
	}
	c := st.client(t, nd)
	var local map[string]string
	waitFor(t, 20*time.Second, nd.id+" caught up", func() (bool, string) {
		local, err = allHomes(ctxT(t, 10*time.Second), c, client.Stale())
		if err != nil {
			return false, err.Error()
		}
		return len(local) >= len(want), fmt.Sprintf("%d of %d homes", len(local), len(want))
	})
	return local
}

// stream submits apps from several clients until stopped, recording
// whether each submission was acknowledged.
type stream struct {
	mu       sync.Mutex
	attempts []attempt
	nAcked   atomic.Int64
	halt     atomic.Bool
	wg       sync.WaitGroup
}

type attempt struct {
	id    *yarnpb.ApplicationIdProto
	acked bool
}

func startStream(t *testing.T, y *yarnClient, workers int) *stream {
	s := &stream{}
	for range workers {
		s.wg.Go(func() {
			for !s.halt.Load() {
				id, err := y.newApp()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // router down: back off, as a client would
					continue
				}
				err = y.submit(id)
				s.mu.Lock()
				s.attempts = append(s.attempts, attempt{id, err == nil})
				s.mu.Unlock()
				if err == nil {
					s.nAcked.Add(1)
				}
			}
		})
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// waitAcked waits until n more submissions were acknowledged.
func (s *stream) waitAcked(t *testing.T, n int64, what string) {
	t.Helper()
	target := s.nAcked.Load() + n
	waitFor(t, 30*time.Second, fmt.Sprintf("%d acknowledged submissions %s", n, what), func() (bool, string) {
		return s.nAcked.Load() >= target, fmt.Sprint(s.nAcked.Load(), " acked")
	})
}

// stop ends the stream and returns every attempt.
func (s *stream) stop() []attempt {
	s.halt.Store(true)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attempt(nil), s.attempts...)
}

// restNewApp asks a router's REST API for a new application id.
func restNewApp(t *testing.T, web string) string {
	t.Helper()
	code, body := restPost(t, web, "/ws/v1/cluster/apps/new-application", "")
	var na struct {
		ID string `json:"application-id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &na) != nil || na.ID == "" {
		t.Fatalf("REST new-application: %d %s", code, body)
	}
	return na.ID
}

// restPost POSTs a JSON body and returns the status and response body.
func restPost(t *testing.T, web, path, body string) (int, string) {
	t.Helper()
	resp, err := httpClient.Post("http://"+web+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(msg)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestAgentRestartWhileRMDown: the RM and its agent both die (one host
// lost); an operator restarts the agent while the RM is still down. The
// sub-cluster must not stay RUNNING in the store: nothing else expires the
// row, and routers would keep routing to a dead RM. (This test found the
// bug fixed in 5438c4a: the agent wrote nothing until it had registered.)
func TestAgentRestartWhileRMDown(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(1)
	rm := h.startSimRM("SC-1", 1_700_000_000_000)
	h.startAgent(rm, st)
	rm.agent.Kill()
	rm.p.Kill()
	h.restart(rm.agent)
	h.waitSubCluster(st, rm, pb.SubClusterState_SC_UNHEALTHY)
}

// TestFederationSurvivesStoreOutage: every state store replica is
// SIGKILLed at once under a running federation. While the store is down
// the router keeps serving what it does not need the store for (lists,
// reports of apps it knows); a submission made during the outage waits
// for the store (a home must be recorded before the RM is called) and
// succeeds once the replicas restart from their data dirs. Nothing
// submitted before the outage is lost, nothing is duplicated.
func TestFederationSurvivesStoreOutage(t *testing.T) {
	f := startFederation(t, 3)
	h := f.h
	r := h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)
	var before []*yarnpb.ApplicationIdProto
	var names []string
	for range 4 {
		id := y.submitNew()
		if _, err := y.report(id); err != nil {
			t.Fatalf("report of %s: %v", appID(id), err)
		}
		before = append(before, id)
		names = append(names, appID(id))
	}

	for _, nd := range f.st.nodes {
		nd.p.Kill()
	}
	t.Log("every state store replica SIGKILLed")
	if _, err := y.apps(); err != nil {
		t.Errorf("getApplications with the store down: %v", err)
	}
	for _, id := range before {
		if _, err := y.report(id); err != nil {
			t.Errorf("report of %s (known to this router) with the store down: %v", appID(id), err)
		}
	}
	id, err := y.newApp()
	if err != nil {
		t.Fatalf("getNewApplication with the store down: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- y.submit(id) }()
	select {
	case err := <-done:
		// Accepting it now would mean an RM got an app whose home is not
		// recorded: a retry through another router could place it twice.
		holders := f.holders(t)[appID(id)]
		t.Fatalf("submission with the store down returned at once (err %v); held by %v", err, holders)
	case <-time.After(time.Second):
	}
	for _, nd := range f.st.nodes {
		h.restart(nd.p)
	}
	waitFor(t, 30*time.Second, "state store back after a full restart", f.st.agreedLeader)
	select {
	case err := <-done:
		if err != nil {
			t.Logf("submission during the outage failed (%v); the client retries", err)
			if err := y.submit(id); err != nil {
				t.Fatalf("retried submission: %v", err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("submission made during the outage did not return within 30s of the store's restart")
	}
	names = append(names, appID(id))
	names = append(names, appID(y.submitNew()))
	f.checkExactlyOnce(t, y, names)

	// The router's membership view follows the restarted store: a
	// sub-cluster that joins now becomes routable.
	sc3 := h.startSimRM("SC-3", 1_700_000_000_002)
	h.startAgent(sc3, f.st)
	waitFor(t, 20*time.Second, "the router routes to SC-3, which joined after the store restart", func() (bool, string) {
		n, err := y.nodeManagers()
		return err == nil && n == 3*simNodes, fmt.Sprintf("%d nodes, %v", n, err)
	})
}

// TestRouterMembershipWithFrozenStoreReplica: the store replica a router
// reads membership from (the first in its --store list) freezes (SIGSTOP:
// a paused VM, or a replica cut off from the others). Its connection stays
// open but it sees no new Raft entries. A sub-cluster that joins meanwhile
// must still become routable through that router within a bounded time.
// (This test found the stale-cache bug fixed in e772114: the client's
// cache trusted an open watch stream however silent.)
func TestRouterMembershipWithFrozenStoreReplica(t *testing.T) {
	// Mostly waiting out timeouts: overlap with the other waiting test.
	t.Parallel()
	f := startFederation(t, 3)
	h := f.h
	leader := f.st.leader(t)
	var frozen *storeNode
	for _, nd := range f.st.nodes {
		if nd != leader {
			frozen = nd
			break
		}
	}
	r := h.startRouter("router-1", f.st, "--store", f.st.addrsFirst(frozen))
	y := dialYARN(t, r.clientrm)
	waitFor(t, 10*time.Second, "router sees both sub-clusters", func() (bool, string) {
		n, err := y.nodeManagers()
		return err == nil && n == 2*simNodes, fmt.Sprint(n, err)
	})

	signal(t, frozen.p, syscall.SIGSTOP)
	t.Cleanup(func() { signal(t, frozen.p, syscall.SIGCONT) })
	t.Logf("store replica %s (follower, first in the router's --store) frozen", frozen.id)
	sc3 := h.startSimRM("SC-3", 1_700_000_000_002)
	sc3.agent = h.spawn("agent-SC-3", "subcluster-agent", "--subcluster-id", "SC-3",
		"--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", sc3.client, sc3.sched, sc3.admin, sc3.web),
		"--store", f.st.addrsFirst(leader), "--store-insecure", "--probe-interval", "200ms", "--probe-timeout", "1s", "--heartbeat-interval", "1s")
	h.waitSubCluster(f.st, sc3, pb.SubClusterState_SC_RUNNING)
	waitFor(t, 20*time.Second, "the router routes to SC-3 (joined while its store replica is frozen)", func() (bool, string) {
		n, err := y.nodeManagers()
		return err == nil && n == 3*simNodes, fmt.Sprintf("%d nodes, %v", n, err)
	})
}

// TestSubClusterRMFailover: SC-1 is an RM HA pair (two simrm processes,
// one started --standby) behind one agent. The active RM is SIGKILLed and
// the standby promoted: the agent registers the new active's addresses
// and routers route to SC-1 again, without a restart of anything.
func TestSubClusterRMFailover(t *testing.T) {
	h := newHarness(t)
	st := h.startStore(1)
	active := h.startSimRM("SC-1", 1_700_000_000_000)
	standby := h.startSimRM("SC-1", 1_700_000_000_000, "--standby")
	h.startAgent(active, st, standby)
	sc2 := h.startSimRM("SC-2", 1_700_000_000_001)
	h.startAgent(sc2, st)
	r := h.startRouter("router-1", st)
	y := dialYARN(t, r.clientrm)
	if n, err := y.nodeManagers(); err != nil || n != 2*simNodes {
		t.Fatalf("getClusterMetrics: %d nodes, %v", n, err)
	}

	active.p.Kill()
	resp, err := httpClient.Post("http://"+standby.web+"/simrm/v1/transition?to=active", "", nil)
	if err != nil {
		t.Fatalf("promote the standby: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("promote the standby: %s", resp.Status)
	}
	standby.agent = active.agent
	h.waitSubCluster(st, standby, pb.SubClusterState_SC_RUNNING)
	waitFor(t, 15*time.Second, "the router counts SC-1's new active RM", func() (bool, string) {
		n, err := y.nodeManagers()
		return err == nil && n == 2*simNodes, fmt.Sprintf("%d nodes, %v", n, err)
	})
	var names []string
	for _, id := range submitUntil(t, y, st.client(t), 30, func(per map[string]int) bool { return per["SC-1"] >= 2 }) {
		names = append(names, appID(id))
	}
	f := &federation{h: h, st: st, rms: []*simRM{standby, sc2}}
	f.checkExactlyOnce(t, y, names)
}

// TestStandbyRMServesClusterInfo: a standby RM serves /ws/v1/cluster/info
// (haState STANDBY), as Hadoop's RMWebAppFilter exempts that path from the
// standby redirect; HA tooling and our agent probe it on both RMs.
// (This test found the bug fixed in 14a06e5: the standby answered 503.)
func TestStandbyRMServesClusterInfo(t *testing.T) {
	h := newHarness(t)
	rm := h.startSimRM("SC-1", 1_700_000_000_000, "--standby")
	code, body, err := httpGet("http://" + rm.web + "/ws/v1/cluster/info")
	if err != nil || code != 200 || !strings.Contains(body, `"haState":"STANDBY"`) {
		t.Fatalf("GET /ws/v1/cluster/info on a standby: %d %s %v; want 200 with haState STANDBY", code, body, err)
	}
}

// TestStartOrderIndependent: an operator (or systemd) starts the router
// and the agents before the state store and the RMs exist. Nothing exits;
// once the store and the RMs come up, the federation becomes ready and
// serves, without restarting anything.
func TestStartOrderIndependent(t *testing.T) {
	h := newHarness(t)
	// Reserve every address up front, as a config file would.
	ports := freePorts(t, 3+4+2)
	st := &storeCluster{h: h, nodes: []*storeNode{{id: "ss1", grpc: ports[0], raft: ports[1], httpAddr: ports[2]}}}
	rm := &simRM{id: "SC-1", client: ports[3], sched: ports[4], admin: ports[5], web: ports[6]}
	r := &routerProc{name: "router-1", clientrm: ports[7], web: ports[8]}

	r.p = h.spawn(r.name, "router", "--store", st.addrs(), "--store-insecure", "--clientrm-address", r.clientrm, "--web-address", r.web, "--admin-address", "",
		"--membership-refresh", "200ms", "--failover-wait", "3s")
	rm.agent = h.spawn("agent-SC-1", "subcluster-agent", "--subcluster-id", rm.id, "--store", st.addrs(), "--store-insecure",
		"--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", rm.client, rm.sched, rm.admin, rm.web),
		"--probe-interval", "200ms", "--probe-timeout", "1s", "--heartbeat-interval", "1s")
	// Let both run without a store for a while (a scenario step, not an
	// assertion: nothing is checked against this time).
	time.Sleep(2 * time.Second)

	nd := st.nodes[0]
	nd.dir = dataDir(h, "ss1")
	nd.p = h.spawn("statestore-ss1", "statestore", "--node-id", nd.id, "--data-dir", nd.dir, "--bootstrap",
		"--grpc-address", nd.grpc, "--raft-address", nd.raft, "--http-address", nd.httpAddr, "--insecure")
	rm.p = h.spawn("simrm-SC-1", "simrm", "--cluster-id", rm.id, "--cluster-timestamp", "1700000000000",
		"--client-address", rm.client, "--scheduler-address", rm.sched, "--admin-address", rm.admin, "--webapp-address", rm.web,
		"--nodes", fmt.Sprint(simNodes))
	for _, p := range []*proc{r.p, rm.agent, nd.p, rm.p} {
		if p.BindFailed() {
			t.Fatalf("%s: a port picked for this test was taken meanwhile (freePorts draws below the ephemeral range: another test took it)", p.Name)
		}
	}
	waitFor(t, 40*time.Second, "the router ready once store and RM are up", func() (bool, string) {
		for _, p := range []*proc{r.p, rm.agent, nd.p, rm.p} {
			if dead, err := p.Exited(); dead {
				t.Fatalf("%s exited: %v", p.Name, err)
			}
		}
		return r.ready()
	})
	y := dialYARN(t, r.clientrm)
	id := y.submitNew()
	f := &federation{h: h, st: st, rms: []*simRM{rm}}
	f.checkExactlyOnce(t, y, []string{appID(id)})
}

// TestRouterHealthWhileStoreDown: a router started while the state store is
// unreachable answers /healthz at once (the process is up) and /readyz with
// 503, so liveness probes do not restart it in a loop.
// (This test found the bug fixed in ca36533: the first membership read gated serving.)
func TestRouterHealthWhileStoreDown(t *testing.T) {
	h := newHarness(t)
	ports := freePorts(t, 3)
	r := &routerProc{name: "router-1", clientrm: ports[1], web: ports[2]}
	r.p = h.spawn(r.name, "router", "--store", ports[0], "--store-insecure", "--clientrm-address", r.clientrm, "--web-address", r.web, "--admin-address", "")
	waitFor(t, 5*time.Second, "/healthz answers with the store down", func() (bool, string) {
		code, body, err := httpGet("http://" + r.web + "/healthz")
		return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
	})
	code, body, err := httpGet("http://" + r.web + "/readyz")
	if err != nil || code != 503 {
		t.Fatalf("/readyz with the store down: %d %s %v; want 503", code, body, err)
	}
}

// TestFederationWithFrozenStoreLeader: the state store leader freezes
// (SIGSTOP) under a stream of submissions and later thaws. Calls that were
// in flight to it time out and are retried on the new leader: every
// submission the client retries succeeds, exactly once.
func TestFederationWithFrozenStoreLeader(t *testing.T) {
	// Mostly waiting out timeouts: overlap with the other waiting test.
	t.Parallel()
	f := startFederation(t, 3)
	h := f.h
	r := h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)
	yb := dialYARN(t, r.clientrm, noRetry)
	s := startStream(t, yb, 4)
	s.waitAcked(t, 10, "before the freeze")
	leader := f.st.leader(t)
	signal(t, leader.p, syscall.SIGSTOP)
	t.Cleanup(func() { signal(t, leader.p, syscall.SIGCONT) })
	t.Logf("store leader %s frozen after %d acknowledged submissions", leader.id, s.nAcked.Load())
	s.waitAcked(t, 10, "with the store leader frozen")
	signal(t, leader.p, syscall.SIGCONT)
	s.waitAcked(t, 10, "after the thaw")
	attempts := s.stop()
	var names []string
	failed := 0
	for _, a := range attempts {
		names = append(names, appID(a.id))
		if !a.acked {
			failed++
			if err := y.submit(a.id); err != nil {
				t.Errorf("retried submission of %s: %v", appID(a.id), err)
			}
		}
	}
	t.Logf("%d submissions, %d failed and were retried", len(attempts), failed)
	f.checkExactlyOnce(t, y, names)
}

// TestPolicyChangesReachRunningRouters: the operator sets a queue's policy
// with yarnfedctl while two routers run; both routers apply it to new
// submissions within a bounded time, and again after the policy changes.
func TestPolicyChangesReachRunningRouters(t *testing.T) {
	f := startFederation(t, 1)
	a := f.h.startRouter("router-a", f.st)
	b := f.h.startRouter("router-b", f.st)
	ys := []*yarnClient{dialYARN(t, a.clientrm), dialYARN(t, b.clientrm)}
	c := f.st.client(t)
	homeOf := func(y *yarnClient) string {
		id, err := y.newApp()
		if err != nil {
			t.Fatalf("getNewApplication: %v", err)
		}
		if err := y.submitTo(id, "etl"); err != nil {
			t.Fatalf("submit to etl: %v", err)
		}
		h, err := c.GetApplicationHome(ctxT(t, 10*time.Second), appID(id), false)
		if err != nil {
			t.Fatalf("home of %s: %v", appID(id), err)
		}
		return h.GetHomeSubClusterId()
	}
	for _, target := range []string{"SC-2", "SC-1"} {
		ctl(t, "--store", f.st.addrs(), "policy", "save", "--manager", "PriorityBroadcast",
			"-s", fmt.Sprintf("etl;%s:1.0;%s:1.0;1.0", target, target))
		for i, y := range ys {
			// Routers cache built policies briefly: wait for the change,
			// then every submission must follow it.
			waitFor(t, 20*time.Second, fmt.Sprintf("router %d applies the etl policy (all to %s)", i, target), func() (bool, string) {
				got := homeOf(y)
				return got == target, "landed on " + got
			})
			for range 5 {
				if got := homeOf(y); got != target {
					t.Errorf("router %d: an etl app landed on %s after the policy said %s", i, got, target)
				}
			}
		}
	}
}

// TestFederationSurvivesStoreDataLoss: the (single-replica) state store
// loses its disk and is started again empty with the same command line.
// The federation heals without restarting anything else: agents register
// their sub-clusters again, routers answer reports of existing apps (a new
// router by asking the sub-clusters, recording the homes again), and new
// submissions work, each app exactly once.
func TestFederationSurvivesStoreDataLoss(t *testing.T) {
	f := startFederation(t, 1)
	h := f.h
	r := h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)
	apps := f.submitUntilBoth(t, y)

	nd := f.st.nodes[0]
	nd.p.Kill()
	if err := os.RemoveAll(nd.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(nd.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.restart(nd.p)
	waitFor(t, 30*time.Second, "the empty store ready", f.st.agreedLeader)
	for _, rm := range f.rms {
		h.waitSubCluster(f.st, rm, pb.SubClusterState_SC_RUNNING)
	}
	waitFor(t, 20*time.Second, "the router ready again", r.ready)
	// The running router still knows the homes (its cache); a router
	// started now knows nothing and must find each app on the RMs.
	r2 := h.startRouter("router-2", f.st)
	y2 := dialYARN(t, r2.clientrm)
	for name, id := range apps {
		for _, c := range []*yarnClient{y, y2} {
			if rep, err := c.report(id); err != nil || appID(rep.GetApplicationId()) != name {
				t.Errorf("report of %s after the store lost its data: %v %v", name, rep.GetApplicationId(), err)
			}
		}
	}
	names := keys(apps)
	for range 4 {
		names = append(names, appID(y.submitNew()))
	}
	f.checkExactlyOnce(t, y, names)
}

// TestDecommissionSubCluster: the operator decommissions SC-1 (stops its
// agent, then `yarnfedctl subcluster deregister SC-1 --state
// SC_DECOMMISSIONED`). Routers stop sending it new applications and leave
// it out of fan-out calls.
func TestDecommissionSubCluster(t *testing.T) {
	f, y, _, _ := decommissionSC1(t)
	f.submitAllTo(t, y, "SC-2", "after SC-1 was decommissioned")
}

// submitAllTo submits six applications through y, checks that every one's
// home is sc (when is what the test changed) and that each runs exactly
// once, and returns their ids.
func (f *federation) submitAllTo(t *testing.T, y *yarnClient, sc, when string) []string {
	t.Helper()
	var fresh []string
	for range 6 {
		fresh = append(fresh, appID(y.submitNew()))
	}
	after := f.homes(t)
	for _, id := range fresh {
		if after[id] != sc {
			t.Errorf("%s submitted %s went to %q", id, when, after[id])
		}
	}
	f.checkExactlyOnce(t, y, fresh)
	return fresh
}

// TestDecommissionedHomeStillAnswers: after SC-1 is deregistered, its RM
// still runs the applications that live there; per-application calls
// (report, kill) through the router must still reach it, as Hadoop's
// router does (FederationStateStoreFacade.getSubCluster does not filter by
// state), or the operator cannot even kill what is left there.
func TestDecommissionedHomeStillAnswers(t *testing.T) {
	_, y, apps, homes := decommissionSC1(t)
	for name, id := range apps {
		if homes[name] != "SC-1" {
			continue
		}
		if rep, err := y.report(id); err != nil || appID(rep.GetApplicationId()) != name {
			t.Errorf("report of %s, living on the decommissioned (still running) SC-1: %v %v", name, rep.GetApplicationId(), err)
		}
	}
}

// decommissionSC1 starts a federation with apps on both sub-clusters, then
// stops SC-1's agent and deregisters SC-1 (its RM keeps running), and
// waits until the router leaves it out of fan-out calls.
func decommissionSC1(t *testing.T) (*federation, *yarnClient, map[string]*yarnpb.ApplicationIdProto, map[string]string) {
	f := startFederation(t, 1)
	r := f.h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)
	apps := f.submitUntilBoth(t, y)
	homes := f.homes(t)
	if err := f.rms[0].agent.Terminate(15 * time.Second); err != nil {
		t.Fatalf("stop the SC-1 agent: %v", err)
	}
	ctl(t, "--store", f.st.addrs(), "subcluster", "deregister", "SC-1", "--state", "SC_DECOMMISSIONED")
	waitFor(t, 10*time.Second, "the router leaves SC-1 out", func() (bool, string) {
		n, err := y.nodeManagers()
		return err == nil && n == simNodes, fmt.Sprintf("%d nodes, %v", n, err)
	})
	return f, y, apps, homes
}
