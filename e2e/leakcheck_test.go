//go:build interop

package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// The leak check every AMRMProxy e2e test ends with (issue 19): an
// application's footprint must be gone everywhere once it is final. Per
// sub-cluster it reads the RM's application list and, where the NodeManagers'
// web apps are on (the standalone harness), each NM's container list:
//   - no unmanaged application (a UAM) still NEW..RUNNING;
//   - no application final on the RM that still holds running containers;
//   - no container live on a NodeManager whose application is final on (or
//     unknown to) that NodeManager's RM.
// It polls for a bounded time (cleanup after a kill or finish is
// asynchronous in YARN) and fails with every leftover it saw last.

// leakTarget is one sub-cluster as the leak check sees it.
type leakTarget struct {
	name   string      // sub-cluster id, for messages
	rmWeb  string      // the RM's REST address (host:port)
	nmWebs []string    // NodeManagers' REST addresses; empty when their web apps are off
	alive  func() bool // false: the RM is down on purpose (a killed sub-cluster); skipped
}

// leakCheckTimeout bounds how long the leak check waits for leftovers to go.
const leakCheckTimeout = 60 * time.Second

var containerAppRE = regexp.MustCompile(`^container_(?:e\d+_)?(\d+)_(\d+)_\d+_\d+$`)

// appOfContainer maps container_e07_1700_0003_01_000002 to application_1700_0003.
func appOfContainer(c string) string {
	m := containerAppRE.FindStringSubmatch(c)
	if m == nil {
		return ""
	}
	return "application_" + m[1] + "_" + m[2]
}

func liveAppState(s string) bool {
	switch s {
	case "FINISHED", "FAILED", "KILLED":
		return false
	}
	return true
}

// nmLiveState is true for NodeManager container states (its internal state
// machine, as /ws/v1/node/containers shows it) in which the container still
// holds or is about to hold its process and resources.
func nmLiveState(s string) bool {
	switch s {
	case "DONE", "EXITED_WITH_SUCCESS", "EXITED_WITH_FAILURE", "CONTAINER_CLEANEDUP_AFTER_KILL",
		"CONTAINER_RESOURCES_CLEANINGUP", "LOCALIZATION_FAILED", "COMPLETE":
		return false
	}
	return true
}

type nmContainersResponse struct {
	Containers struct {
		Container []struct {
			ID     string `json:"id"`
			State  string `json:"state"`
			NodeID string `json:"nodeId"`
		} `json:"container"`
	} `json:"containers"`
}

// nmContainers lists a NodeManager's containers (id -> state).
func nmContainers(nmWeb string) (map[string]string, error) {
	b, ok := tryRESTAt(nmWeb, "/ws/v1/node/containers")
	if !ok {
		return nil, fmt.Errorf("GET containers from NM %s: %s", nmWeb, tail(string(b), 300))
	}
	var r nmContainersResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("NM %s containers: %w", nmWeb, err)
	}
	out := map[string]string{}
	for _, c := range r.Containers.Container {
		out[c.ID] = c.State
	}
	return out, nil
}

func appsAt(rmWeb string) ([]rmrest.App, error) {
	b, ok := tryRESTAt(rmWeb, "/ws/v1/cluster/apps")
	if !ok {
		return nil, fmt.Errorf("GET apps from %s: %s", rmWeb, tail(string(b), 300))
	}
	var r rmrest.AppsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return r.Apps.App, nil
}

// clusterMetricsAt reads /ws/v1/cluster/metrics from an RM's (or the
// router's) REST address.
func clusterMetricsAt(web string) (rmrest.ClusterMetrics, error) {
	b, ok := tryRESTAt(web, "/ws/v1/cluster/metrics")
	if !ok {
		return rmrest.ClusterMetrics{}, fmt.Errorf("GET cluster metrics from %s: %s", web, tail(string(b), 300))
	}
	var r rmrest.ClusterMetricsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return rmrest.ClusterMetrics{}, err
	}
	return r.ClusterMetrics, nil
}

// appWhere returns the first of apps (listed with err) that match reports;
// found is false when none does.
func appWhere(apps []rmrest.App, err error, match func(rmrest.App) bool) (app rmrest.App, found bool, _ error) {
	if err != nil {
		return rmrest.App{}, false, err
	}
	for _, a := range apps {
		if match(a) {
			return a, true, nil
		}
	}
	return rmrest.App{}, false, nil
}

// leftovers lists what one sub-cluster still holds of applications started
// at or after sinceMs (0: all).
func (lt leakTarget) leftovers(sinceMs int64) ([]string, error) {
	apps, err := appsAt(lt.rmWeb)
	if err != nil {
		return nil, err
	}
	var out []string
	known := map[string]rmrest.App{}
	for _, a := range apps {
		known[a.ID] = a
		if a.StartedTime < sinceMs && a.StartedTime != 0 {
			continue
		}
		if a.UnmanagedApplication && liveAppState(a.State) {
			out = append(out, fmt.Sprintf("%s: unmanaged %s %q is %s with %d running containers", lt.name, a.ID, a.Name, a.State, a.RunningContainers))
		}
		if !liveAppState(a.State) && a.RunningContainers > 0 {
			out = append(out, fmt.Sprintf("%s: %s %q is %s but the RM counts %d running containers", lt.name, a.ID, a.Name, a.State, a.RunningContainers))
		}
	}
	for _, nm := range lt.nmWebs {
		cs, err := nmContainers(nm)
		if err != nil {
			return nil, err
		}
		for c, state := range cs {
			if !nmLiveState(state) {
				continue
			}
			app := appOfContainer(c)
			a, ok := known[app]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s: NM %s runs %s (%s) of %s, which its RM does not know", lt.name, nm, c, state, app))
			case a.StartedTime != 0 && a.StartedTime < sinceMs:
			case !liveAppState(a.State):
				out = append(out, fmt.Sprintf("%s: NM %s runs %s (%s) of %s, which is %s", lt.name, nm, c, state, app, a.State))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkNoLeaks waits (up to timeout) until no target holds a leftover of an
// application started at or after since (zero: every application), and
// fails the test with the list otherwise. Targets whose alive() is false
// are skipped. It logs how long the footprint took to go.
func checkNoLeaks(t testing.TB, targets []leakTarget, since time.Time, timeout time.Duration) {
	t.Helper()
	var sinceMs int64
	if !since.IsZero() {
		// RM clocks are this host's; a second of slack for rounding.
		sinceMs = since.Add(-time.Second).UnixMilli()
	}
	start := time.Now()
	var last []string
	var lastErr error
	for {
		last, lastErr = nil, nil
		for _, lt := range targets {
			if lt.alive != nil && !lt.alive() {
				continue
			}
			l, err := lt.leftovers(sinceMs)
			if err != nil {
				lastErr = err
				break
			}
			last = append(last, l...)
		}
		if lastErr == nil && len(last) == 0 {
			t.Logf("leak check: nothing left on %s (after %s)", targetNames(targets), time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > timeout {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if lastErr != nil {
		t.Errorf("leak check: could not read every sub-cluster within %v: %v (leftovers so far: %v)", timeout, lastErr, last)
		return
	}
	t.Errorf("leak check: after %v, left behind:\n  %s", timeout, strings.Join(last, "\n  "))
}

func targetNames(ts []leakTarget) string {
	var n []string
	for _, t := range ts {
		if t.alive == nil || t.alive() {
			n = append(n, t.name)
		}
	}
	return strings.Join(n, ", ")
}

// leakTargets are the MiniYARNCluster sub-clusters of a span federation
// (NM web apps are off there, so only the RMs are read); a killed cluster
// is skipped.
func (f *spanFed) leakTargets() []leakTarget {
	var out []leakTarget
	for i, mc := range f.clusters {
		if mc == nil {
			continue
		}
		out = append(out, leakTarget{name: f.ids[i], rmWeb: loopback(mc.info.Web), alive: mc.alive})
	}
	return out
}

// alive reports whether the cluster's JVM still runs (kill ends it).
func (mc *miniCluster) alive() bool {
	select {
	case err := <-mc.done:
		mc.done <- err
		return false
	default:
		return true
	}
}
