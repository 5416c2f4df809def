//go:build interop

package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// Issue 19's proof on the standalone federation (standalone_test.go): one
// application, one footprint. Every test ends with the shared leak check
// (needUAMFed's cleanup), scoped to the applications it started.

// TestStandaloneSpans checks the harness itself: a distributed-shell app
// through the router spans both sub-clusters via the NodeManager's own
// proxy, each container on the NM (and RM epoch) it claims, and nothing is
// left.
func TestStandaloneSpans(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	d := dsRun{name: "sa-span-ds", marker: uniqueMarker("sa-span-ds"), timed: true}
	// 10 s per container: the secondary's UAM takes seconds to launch on
	// a loaded machine, and asks the home can serve meanwhile may all go
	// there (seen at load 30 with 1 s containers).
	out, err := f.runDS(d, 6, 10)
	id := f.requireDSSucceeded(t, d.name, out, err)
	per := f.checkSpan(t, d, 6)
	atts, _ := attemptsAt(f.rms[0].web, id)
	if len(atts) == 1 {
		n := f.nmOf(atts[0].NodeID)
		t.Logf("AM ran on %v; containers per NM: %v", nmName(n), per)
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

// TestStandaloneNMRestart checks the NM fault helpers: an NM (and its
// containers) SIGKILLed and started again registers with its RM anew, and
// the federation sees all four nodes again.
func TestStandaloneNMRestart(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	n := f.rms[1].nms[1]
	killed := n.killNM(t)
	t.Logf("killed %s (%d container processes)", n.name, killed)
	n.startNM(t)
	waitUntilJVM(t, time.Minute, "the router to see all four NodeManagers", f.router, func() (bool, string) {
		m, err := clusterMetricsAt(f.routerWS)
		if err != nil {
			return false, err.Error()
		}
		return m.ActiveNodes == 4, fmt.Sprintf("%d of 4 nodes active", m.ActiveNodes)
	})
	t.Logf("%s back in %s", n.name, time.Since(start).Round(time.Millisecond))
}

func nmName(n *saNM) string {
	if n == nil {
		return "?"
	}
	return n.name
}

// requireDSSucceeded fails unless the client exited 0 and the home RM has
// the app FINISHED/SUCCEEDED; it returns the application id.
func (f *uamFed) requireDSSucceeded(t *testing.T, name string, out cliRun, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s: client exit %d in %s", name, out.exit, out.took.Round(time.Millisecond))
	app, ok, aerr := f.appNamed(name)
	if out.exit != 0 {
		t.Fatalf("%s: client exit %d (0 means SUCCEEDED); home has %+v:\nstderr:\n%s", name, out.exit, app, tail(out.stderr, 5000))
	}
	if aerr != nil || !ok {
		t.Fatalf("%s: the home %s does not list it: %v", name, f.rms[0].id, aerr)
	}
	if app.State != "FINISHED" || app.FinalStatus != "SUCCEEDED" {
		t.Errorf("%s: home RM has %s %s/%s: %s", name, app.ID, app.State, app.FinalStatus, app.Diagnostics)
	}
	return app.ID
}

// checkSpan checks that n containers finished, each on an NM of the RM its
// id's epoch names, on both sub-clusters; it returns the count per NM.
func (f *uamFed) checkSpan(t *testing.T, d dsRun, n int) map[string]int {
	t.Helper()
	ev := f.evidence(d)
	per := map[string]int{}
	perSC := map[string]int{}
	var finished []string
	for c, e := range ev {
		if !e.finished {
			continue
		}
		finished = append(finished, c)
		per[e.nm.name]++
		perSC[e.nm.sc.id]++
		m := containerEpochRE.FindStringSubmatch(c)
		if m == nil || m[1] != fmt.Sprintf("%02d", e.nm.sc.epoch) {
			t.Errorf("container %s ran on %s, whose RM's epoch is %d", c, e.nm.name, e.nm.sc.epoch)
		}
	}
	sort.Strings(finished)
	if len(finished) != n {
		t.Errorf("%d containers finished (%v), want %d", len(finished), finished, n)
	}
	if perSC[f.rms[0].id] == 0 || perSC[f.rms[1].id] == 0 {
		t.Errorf("containers per NM %v: the app did not span both sub-clusters", per)
	}
	return per
}

// waitSpanning waits until the app named d.name runs on its home with shell
// containers and SC-2 runs containers of it (its UAM holds them), then until
// want containers printed their start line with at least one on SC-2; it
// returns the application id. done is the client's channel: an early end
// fails the test.
func (f *uamFed) waitSpanning(t *testing.T, d dsRun, done <-chan dsResult, want int) string {
	t.Helper()
	var id string
	waitUntil(t, 3*time.Minute, d.name+" running on both sub-clusters", nil, func() (bool, string) {
		select {
		case r := <-done:
			t.Fatalf("%s ended early (exit %d, %v):\n%s", d.name, r.out.exit, r.err, tail(r.out.stderr, 4000))
		default:
		}
		app, ok, err := f.appNamed(d.name)
		if err != nil || !ok || app.State != "RUNNING" {
			return false, fmt.Sprintf("home: %q %v", app.State, err)
		}
		id = app.ID
		sc2, ok, err := appAt(f.rms[1].web, id)
		if err != nil || !ok || sc2.RunningContainers == 0 {
			return false, fmt.Sprintf("%s: %+v %v", f.rms[1].id, sc2.State, err)
		}
		started, onSC2 := 0, 0
		for _, e := range f.evidence(d) {
			if !e.started.IsZero() {
				started++
				if e.nm.sc == f.rms[1] {
					onSC2++
				}
			}
		}
		return started >= want && onSC2 > 0, fmt.Sprintf("%d of %d containers started, %d on %s", started, want, onSC2, f.rms[1].id)
	})
	return id
}

// waitDS waits for a background distributed-shell client.
func waitDS(t *testing.T, name string, done <-chan dsResult) dsResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(6 * time.Minute):
		t.Fatalf("%s: the client did not return within 6 min", name)
	}
	return dsResult{}
}

// liveOnSecondary describes what SC-2 still holds of app: a live UAM and
// live containers on its NMs ("" when nothing).
func (f *uamFed) liveOnSecondary(app string) (string, error) {
	sc := f.rms[1]
	var held []string
	a, ok, err := appAt(sc.web, app)
	if err != nil {
		return "", err
	}
	if ok && liveAppState(a.State) {
		held = append(held, fmt.Sprintf("%s lists %s %s (unmanaged %v, %d running containers)", sc.id, app, a.State, a.UnmanagedApplication, a.RunningContainers))
	}
	for _, n := range sc.nms {
		cs, err := nmContainers(n.web)
		if err != nil {
			return "", err
		}
		for c, st := range cs {
			if appOfContainer(c) == app && nmLiveState(st) {
				held = append(held, fmt.Sprintf("%s runs %s (%s)", n.name, c, st))
			}
		}
	}
	sort.Strings(held)
	return strings.Join(held, "; "), nil
}

// cliConf is a client conf dir naming only the router.
func (f *uamFed) cliConf(t *testing.T) string {
	t.Helper()
	dir, err := writeConfDir(t.TempDir(), "conf", map[string]map[string]string{"yarn-site.xml": {
		"yarn.resourcemanager.address":                   f.clientRM,
		"yarn.resourcemanager.connect.max-wait.ms":       "10000",
		"yarn.resourcemanager.connect.retry-interval.ms": "500",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// (a) `yarn application -kill` through the router kills the app everywhere:
// within 10 s of the command's return the secondary lists no live UAM for
// it and its NMs no container of it.
func TestUAMKillThroughRouter(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	d := dsRun{name: "sa-kill-ds", marker: uniqueMarker("sa-kill-ds"), timed: true}
	done := f.startDS(d, 6, 300)
	id := f.waitSpanning(t, d, done, 6)
	held, _ := f.liveOnSecondary(id)
	t.Logf("before the kill: %s", held)

	kill := f.j.runCLI(t, f.cliConf(t), "org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-kill", id)
	if kill.exit != 0 {
		t.Fatalf("yarn application -kill %s: exit %d\n%s", id, kill.exit, tail(kill.stdout+kill.stderr, 3000))
	}
	killed := time.Now()
	const bound = 10 * time.Second // issue 19's bound
	var last string
	for {
		h, err := f.liveOnSecondary(id)
		if err == nil && h == "" {
			t.Logf("%s held nothing of %s %s after the kill returned (%s after it was issued)",
				f.rms[1].id, id, time.Since(killed).Round(time.Millisecond), kill.took.Round(time.Millisecond))
			break
		}
		last = h
		if err != nil {
			last = err.Error()
		}
		if time.Since(killed) > bound {
			t.Errorf("%s after `yarn application -kill %s` through the router returned, the secondary still holds: %s", bound, id, last)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a, ok, _ := appAt(f.rms[0].web, id); !ok || a.State != "KILLED" {
		t.Errorf("home %s: %s is %q, want KILLED", f.rms[0].id, id, a.State)
	}
	if a, ok, _ := appAt(f.rms[1].web, id); ok {
		t.Logf("%s's record of %s: %s/%s %s", f.rms[1].id, id, a.State, a.FinalStatus, a.Diagnostics)
	}
	r := waitDS(t, d.name, done)
	if r.out.exit == 0 {
		t.Errorf("the distributed shell client of a killed app exited 0")
	}
	for c, e := range f.evidence(d) {
		if e.finished {
			t.Errorf("container %s on %s slept to its end after the kill", c, e.nm.name)
		}
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

var previousContainersRE = regexp.MustCompile(`received (\d+) previous attempts' running containers`)

// attemptTwo waits for the app's second attempt to run and returns it.
func (f *uamFed) attemptTwo(t *testing.T, app string) appAttempt {
	t.Helper()
	var att appAttempt
	waitUntil(t, 3*time.Minute, app+"'s attempt 2 running", nil, func() (bool, string) {
		atts, err := attemptsAt(f.rms[0].web, app)
		if err != nil {
			return false, err.Error()
		}
		for _, a := range atts {
			if a.ID == 2 && a.State == "RUNNING" {
				att = a
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", atts)
	})
	return att
}

// checkOtherNode fails unless attempt 2's AM runs on another NM than
// attempt 1's, whose proxy served it (its log names the attempt).
func (f *uamFed) checkOtherNode(t *testing.T, att1 appAttempt, nm1 *saNM, att2 appAttempt) *saNM {
	t.Helper()
	nm2 := f.nmOf(att2.NodeID)
	if nm2 == nil {
		t.Fatalf("attempt 2 runs on %s, none of the harness's NMs", att2.NodeID)
	}
	t.Logf("attempt 1 on %s, attempt 2 on %s", nm1.name, nm2.name)
	if nm2 == nm1 {
		t.Errorf("attempt 2 runs on the same NM as attempt 1 (%s): the scenario needs another node and proxy", nm1.name)
	}
	waitUntil(t, 30*time.Second, "attempt 2 through its own NM's proxy", nil, func() (bool, string) {
		return strings.Contains(nm2.proxy.tail(100000), att2.AppAttemptID), nm2.name + "'s proxy log does not name " + att2.AppAttemptID
	})
	return nm2
}

// (b) The AM process dies (max attempts 2, keep containers): attempt 2 on
// another node, through another proxy, re-attaches the secondary's UAM and
// gets attempt 1's live containers back in its register response (those of
// both sub-clusters); the app SUCCEEDS with exactly those containers.
func TestUAMReattachKeepContainers(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	const n = 6
	d := dsRun{name: "sa-keep-ds", marker: uniqueMarker("sa-keep-ds"), timed: true}
	done := f.startDS(d, n, 60, "-keep_containers_across_application_attempts")
	id := f.waitSpanning(t, d, done, n)
	att1, nm1 := f.killAM(t, id)
	att2 := f.attemptTwo(t, id)
	nm2 := f.checkOtherNode(t, att1, nm1, att2)

	r := waitDS(t, d.name, done)
	f.requireDSSucceeded(t, d.name, r.out, r.err)
	f.checkSpan(t, d, n)
	for c, e := range f.evidence(d) {
		if !e.ended.IsZero() {
			t.Errorf("container %s on %s was stopped (keep-containers: attempt 2 should have taken it over)", c, e.nm.name)
		}
		if e.started.After(time.UnixMilli(att2.StartTime)) {
			t.Errorf("container %s on %s started after attempt 2 did: attempt 1's were not all handed back", c, e.nm.name)
		}
	}
	amlog := nm2.amLog(id, att2.ContainerID, "AppMaster.stderr")
	if m := previousContainersRE.FindStringSubmatch(amlog); m == nil {
		t.Errorf("attempt 2's AM did not log its previous containers (%s)", tail(amlog, 1500))
	} else if got, _ := strconv.Atoi(m[1]); got != n {
		t.Errorf("attempt 2 received %d of attempt 1's %d running containers at register (the secondary's must be among them)", got, n)
	} else {
		t.Logf("attempt 2 received all %d running containers of attempt 1 at register", got)
	}
	if atts, err := attemptsAt(f.rms[1].web, id); err == nil && len(atts) != 1 {
		t.Errorf("%s has %d attempts of the UAM, want 1 (re-attached, not relaunched): %+v", f.rms[1].id, len(atts), atts)
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

// (c) The same without keep-containers: attempt 1's containers on the
// secondary are stopped (its UAM ends) before any container of attempt 2
// starts there; attempt 2 spans and the app SUCCEEDS.
func TestUAMNewAttemptWithoutKeepContainers(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	const n = 6
	d := dsRun{name: "sa-nokeep-ds", marker: uniqueMarker("sa-nokeep-ds"), timed: true}
	done := f.startDS(d, n, 45)
	id := f.waitSpanning(t, d, done, n)
	att1, nm1 := f.killAM(t, id)
	killed := time.Now()
	att2 := f.attemptTwo(t, id)
	f.checkOtherNode(t, att1, nm1, att2)

	r := waitDS(t, d.name, done)
	f.requireDSSucceeded(t, d.name, r.out, r.err)
	var old, fresh []string
	var lastOldEnd, firstNewStart time.Time
	finished := 0
	for c, e := range f.evidence(d) {
		if e.finished {
			finished++
		}
		if e.nm.sc != f.rms[1] {
			continue
		}
		if e.started.Before(killed) {
			old = append(old, c)
			switch {
			case e.finished:
				t.Errorf("attempt 1's container %s on %s ran to its end: nobody stopped it", c, e.nm.name)
			case e.ended.IsZero():
				t.Errorf("attempt 1's container %s on %s has no end line (still running or killed without SIGTERM)", c, e.nm.name)
			case e.ended.After(lastOldEnd):
				lastOldEnd = e.ended
			}
		} else {
			fresh = append(fresh, c)
			if firstNewStart.IsZero() || e.started.Before(firstNewStart) {
				firstNewStart = e.started
			}
		}
	}
	sort.Strings(old)
	sort.Strings(fresh)
	since := func(ts time.Time) string {
		if ts.IsZero() {
			return "never"
		}
		return ts.Sub(killed).Round(time.Millisecond).String() + " after the AM kill"
	}
	t.Logf("%s: attempt 1's containers %v (last stopped: %s), attempt 2's %v (first started: %s)",
		f.rms[1].id, old, since(lastOldEnd), fresh, since(firstNewStart))
	if len(fresh) == 0 {
		t.Errorf("attempt 2 did not span: no container of it ran on %s", f.rms[1].id)
	} else if !lastOldEnd.IsZero() && !lastOldEnd.Before(firstNewStart) {
		t.Errorf("attempt 2's first container on %s started before attempt 1's last one there stopped", f.rms[1].id)
	}
	if finished != n {
		t.Errorf("%d containers ran to their end, want %d (attempt 2's)", finished, n)
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

// (d) A secondary RM dies while the app's UAM is registered there, the app
// finishes without it (the proxy counts SC-2 lost after 10 s), and the RM
// comes back afterwards with the UAM recovered (ACCEPTED, nobody's): the
// GPG's UAM reaper ends it within one round (no 15-minute AM-liveness
// wait). Bound: two reaper rounds (one may be in flight when the UAM shows
// up) plus 10 s for the agent to report the RM back.
func TestGPGReapsReturningUAM(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	sc2 := f.rms[1]
	t.Cleanup(func() {
		if !sc2.proc.alive() {
			sc2.restartRM(t)
		}
	})
	d := dsRun{name: "sa-reap-ds", marker: uniqueMarker("sa-reap-ds"), timed: true}
	done := f.startDS(d, 4, 20)
	id := f.waitSpanning(t, d, done, 4)
	sc2.killRM()
	t.Logf("killed %s's RM (its NMs keep running) with %s's UAM registered there", sc2.id, id)

	r := waitDS(t, d.name, done)
	f.requireDSSucceeded(t, d.name, r.out, r.err)
	sc2.restartRM(t)
	back := time.Now()
	waitUntil(t, time.Minute, sc2.id+" to list "+id+" again (recovered)", nil, func() (bool, string) {
		a, ok, err := appAt(sc2.web, id)
		if err != nil || !ok {
			return false, fmt.Sprintf("%v %v", ok, err)
		}
		t.Logf("%s recovered %s: %s (unmanaged %v)", sc2.id, id, a.State, a.UnmanagedApplication)
		return true, ""
	})
	bound := 2*gpgReaperRound + 10*time.Second
	var last string
	for {
		a, ok, err := appAt(sc2.web, id)
		if err == nil && ok && !liveAppState(a.State) {
			t.Logf("%s's UAM of %s ended %s/%s %s after its RM was back", sc2.id, id, a.State, a.FinalStatus, time.Since(back).Round(time.Millisecond))
			break
		}
		last = fmt.Sprintf("%s %v %v", a.State, ok, err)
		if time.Since(back) > bound {
			t.Errorf("%s after %s's RM came back, its UAM of the finished %s is still %s (GPG reaper round %s)", bound, sc2.id, id, last, gpgReaperRound)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

// (e) MapReduce through the proxies survives an AM failure: pi's MR AM is
// killed once tasks run on SC-2 (through its UAM); attempt 2 (another NM, another proxy)
// recovers the job, which SUCCEEDS.
func TestMapReduceAMFailureThroughProxies(t *testing.T) {
	f := needUAMFed(t)
	start := time.Now()
	// The scenario needs tasks on SC-2 before the AM dies. Both RMs see
	// pi's rack-level asks (every NodeManager is in /default-rack), so
	// now and then the home RM's containers reach the AM first and the
	// whole job runs at home: that run proves nothing either way, so pi
	// is submitted again (at most three times); a job that fails, or a
	// third run at home, fails the test.
	var id string
	var done chan dsResult
	for try := 1; ; try++ {
		since := time.Now().Add(-time.Second)
		done = make(chan dsResult, 1)
		go func(done chan<- dsResult) {
			// 1e8 samples per map: tasks that outlast the short wait for
			// SC-2 coverage below even on a quiet machine, so the AM is killed
			// while it runs some (1000 samples: the job ended between two
			// polls; 3e6: a quiet CI run finished the whole job before SC-2's
			// tasks were seen running; 3e7: the maps ended during the coverage
			// wait and the kill met an AM already finishing).
			out, err := runPiClient(f.j, f.dir, f.clientRM, fmt.Sprintf("sa-pi-%d", time.Now().UnixNano()), 4, 100000000, map[string]string{
				"mapreduce.am.max-attempts": "2",
			})
			done <- dsResult{out, err}
		}(done)
		var early *dsResult
		id = ""
		waitUntil(t, 3*time.Minute, "pi's MR AM running tasks on "+f.rms[1].id, nil, func() (bool, string) {
			select {
			case r := <-done:
				early = &r
				return true, ""
			default:
			}
			apps, err := appsAt(f.rms[0].web)
			if err != nil {
				return false, err.Error()
			}
			for _, a := range apps {
				if a.Name == "QuasiMonteCarlo" && a.StartedTime >= since.UnixMilli() {
					id = a.ID
					if a.State != "RUNNING" {
						return false, fmt.Sprintf("%s %s", a.ID, a.State)
					}
					// Tasks running on SC-2: its UAM is registered and holds
					// containers, so attempt 2 has something to re-attach (an AM
					// killed before its first SC-2 allocation leaves no UAM, and
					// attempt 2 simply launches one: seen passing on code that
					// cannot re-attach).
					sc2, _, _ := appAt(f.rms[1].web, id)
					return sc2.RunningContainers >= 1,
						fmt.Sprintf("%s %s, %d containers at home, %d on %s", a.ID, a.State, a.RunningContainers, sc2.RunningContainers, f.rms[1].id)
				}
			}
			return false, "not submitted yet"
		})
		if early == nil {
			break
		}
		if early.err != nil || early.out.exit != 0 || try == 3 {
			t.Fatalf("pi ended early, try %d of 3 (exit %d, %v):\n%s", try, early.out.exit, early.err, tail(early.out.stderr, 4000))
		}
		t.Logf("pi %s (try %d) succeeded before any task ran on %s (the home RM's containers reached the AM first); submitting it again", id, try, f.rms[1].id)
	}
	// NM tokens (amrmproxy/DESIGN.md, "NM tokens of secondaries"): SC-2's
	// RM sends the UAM's attempt a node's token once, and attempt 2's AM
	// (MapReduce reads tokens from allocate answers only) gets a container
	// on a node whose token attempt 1's UAM already had only when attempt
	// 1 used that node. So the AM is killed, preferably, once the job runs
	// on every SC-2 NodeManager (then any SC-2 container of attempt 2 needs
	// a token from the proxy); the scheduler may pack SC-2's maps onto one
	// node, so the AM is killed anyway after 3 s or as soon as an SC-2 task
	// ends (the job must still be running), and the run says which it was.
	covered := waitSC2Coverage(t, f, id, 3*time.Second)
	before := proxyNMTokenCounters(f)
	att1, nm1 := f.killAM(t, id)
	att2 := f.attemptTwo(t, id)
	nm2 := f.checkOtherNode(t, att1, nm1, att2)
	var r dsResult
	select {
	case r = <-done:
	case <-time.After(6 * time.Minute):
		t.Fatalf("pi did not end within 6 min")
	}
	after := proxyNMTokenCounters(f)
	d := after[nm2.name].sub(before[nm2.name])
	t.Logf("attempt 2's proxy (%s): %v SC-2 containers, %v NM tokens given by the proxy, %v missing; every SC-2 NM ran attempt 1's tasks: %v",
		nm2.name, d.containers, d.given, d.missing, covered)
	if d.missing != 0 {
		t.Errorf("attempt 2 got %v SC-2 containers on nodes whose NM token the proxy did not know", d.missing)
	}
	if covered && d.containers > 0 && d.given == 0 {
		t.Errorf("attempt 2 got %v SC-2 containers on nodes SC-2 sent attempt 1's UAM tokens for, and the proxy gave it none", d.containers)
	}
	if r.err != nil || r.out.exit != 0 {
		t.Fatalf("pi: exit %d %v:\n%s", r.out.exit, r.err, tail(r.out.stderr, 5000))
	}
	if !strings.Contains(r.out.stdout, "Estimated value of Pi is") {
		t.Errorf("pi printed no estimate:\n%s", tail(r.out.stdout, 2000))
	}
	if a, ok, _ := appAt(f.rms[0].web, id); !ok || a.State != "FINISHED" || a.FinalStatus != "SUCCEEDED" {
		t.Errorf("home: %s %s/%s %s", id, a.State, a.FinalStatus, a.Diagnostics)
	}
	if a, ok, _ := appAt(f.rms[1].web, id); ok {
		t.Logf("%s: %s %s/%s unmanaged %v", f.rms[1].id, id, a.State, a.FinalStatus, a.UnmanagedApplication)
	}
	t.Logf("scenario took %s", time.Since(start).Round(time.Millisecond))
}

// waitSC2Coverage waits up to max for SC-2 to run containers on each of its
// NodeManagers (the RM's node report; only the test's job runs there) and
// says whether it did. It gives up early once app runs fewer containers on
// SC-2 than it did (a task ended: the job moves on and must not finish
// before its AM is killed).
func waitSC2Coverage(t *testing.T, f *uamFed, app string, max time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(max)
	peak := int32(0)
	for {
		if a, ok, _ := appAt(f.rms[1].web, app); ok {
			if a.RunningContainers < peak {
				return false
			}
			peak = a.RunningContainers
		}
		b, ok := tryRESTAt(f.rms[1].web, "/ws/v1/cluster/nodes")
		var nr rmrest.NodesResponse
		if ok && json.Unmarshal(b, &nr) == nil && len(nr.Nodes.Node) == len(f.rms[1].nms) {
			all := true
			for _, n := range nr.Nodes.Node {
				all = all && n.NumContainers > 0
			}
			if all {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// nmTokenCounters are one proxy's SC-2 counters (amrmproxy metrics).
type nmTokenCounters struct{ containers, given, missing float64 }

func (a nmTokenCounters) sub(b nmTokenCounters) nmTokenCounters {
	return nmTokenCounters{a.containers - b.containers, a.given - b.given, a.missing - b.missing}
}

// proxyNMTokenCounters reads every proxy's SC-2 counters (absent: 0).
func proxyNMTokenCounters(f *uamFed) map[string]nmTokenCounters {
	out := map[string]nmTokenCounters{}
	for _, n := range f.allNMs() {
		b, _ := tryRESTAt(n.proxyWeb, "/prom")
		v := func(name string) float64 { return max(0, promValue(string(b), name+`{subcluster="SC-2"}`)) }
		out[n.name] = nmTokenCounters{v("yarnfed_amrmproxy_containers_allocated_total"), v("yarnfed_amrmproxy_nm_tokens_given_total"),
			v("yarnfed_amrmproxy_nm_tokens_missing_total")}
	}
	return out
}
