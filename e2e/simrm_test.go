//go:build interop

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
)

// startSimRM runs our simulated RM shaped like the shared MiniYARNCluster
// (2 nodes of 4096 MB / 4 vcores, min 128 MB, max 8192 MB / 4 vcores).
func startSimRM(t testing.TB, nodes int) *simrm.RM {
	t.Helper()
	cfg := simrm.TestConfig()
	cfg.ClusterID = "e2e-sim"
	cfg.Epoch = 9
	cfg.Nodes = nodes
	cfg.NodeMemoryMB = 4096
	cfg.NodeVCores = 4
	cfg.MinAllocation = simrm.Resource{MemoryMB: 128, VCores: 1}
	cfg.MaxAllocation = simrm.Resource{MemoryMB: 8192, VCores: 4}
	cfg.MaxAllocationWait = 0 // as the launcher sets scheduling-wait-ms on the real RM
	rm, err := simrm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := rm.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		rm.Close()
	})
	return rm
}

// diffTarget is one RM the same Java drivers run against.
type diffTarget struct {
	name      string
	conf      string // yarn-site.xml for YarnClientDriver
	scheduler string
	web       string
}

// javaSession is what Hadoop's clients observed on one RM, keyed by op.
type javaSession struct {
	lines map[string][]driverLine
	appID string
}

// runSession drives one RM with Hadoop's YarnClient and AMRMClient through
// the lifecycle a federation relies on.
func runSession(t *testing.T, j *javaEnv, tg diffTarget) javaSession {
	t.Helper()
	s := javaSession{lines: map[string][]driverLine{}}
	run := j.runDriver(t, "YarnClientDriver", "--conf", tg.conf,
		"metrics", "nodes", "newapp",
		"submit:diff-kill:default:unmanaged", "kill",
		"submit:diff-am:default:unmanaged", "waittoken", "list", "queueacls",
		"report:application_1_9999", "kill:application_1_9999")
	for _, l := range run.lines {
		s.lines["client "+l.Op] = append(s.lines["client "+l.Op], l)
	}
	rep := run.op(t, "waittoken")
	var r struct {
		ApplicationID string `json:"applicationId"`
		AMRMToken     *struct {
			Identifier string `json:"identifier"`
			Password   string `json:"password"`
		} `json:"amrmToken"`
	}
	rep.decode(t, &r)
	if r.AMRMToken == nil {
		t.Fatalf("%s: the report of an unmanaged app carries no AMRMToken", tg.name)
	}
	s.appID = r.ApplicationID
	am := j.runDriver(t, "AMRMDriver", "--scheduler", tg.scheduler,
		"--token-id", r.AMRMToken.Identifier, "--token-password", r.AMRMToken.Password,
		"register", "ask:2:256:1", "await:2:20000", "finish:SUCCEEDED:diff")
	for _, l := range am.lines {
		s.lines["am "+l.Op] = append(s.lines["am "+l.Op], l)
	}
	bad := j.runDriver(t, "AMRMDriver", "--scheduler", tg.scheduler,
		"--token-id", r.AMRMToken.Identifier, "--token-password", base64.StdEncoding.EncodeToString([]byte("wrong")), "register")
	for _, l := range bad.lines {
		s.lines["am wrong-password "+l.Op] = append(s.lines["am wrong-password "+l.Op], l)
	}
	after := j.runDriver(t, "YarnClientDriver", "--conf", tg.conf, "report:"+s.appID)
	s.lines["client report-after-finish"] = append(s.lines["client report-after-finish"], after.lines...)
	return s
}

// Differential: Hadoop's own YarnClient and AMRMClient run the same session
// against the real RM and against simrm; every op must succeed or fail the
// same way, and the values an application or router acts on must agree.
// REST documents must carry the same JSON fields.
func TestJavaDriversRealRMvsSimRM(t *testing.T) {
	mc := needCluster(t)
	j := needJava(t)
	sim := startSimRM(t, mc.info.NMs)
	a := sim.Addrs()
	real := diffTarget{name: "real RM", conf: mc.info.Conf, scheduler: loopback(mc.info.Scheduler), web: loopback(mc.info.Web)}
	ours := diffTarget{name: "simrm", scheduler: a.Scheduler, web: a.Web,
		conf: writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": a.Client, "yarn.resourcemanager.scheduler.address": a.Scheduler})}

	rs := runSession(t, j, real)
	ss := runSession(t, j, ours)

	keys := make([]string, 0, len(rs.lines))
	for k := range rs.lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rl, sl := rs.lines[k], ss.lines[k]
		if len(rl) != len(sl) {
			t.Errorf("%s: real RM printed %d lines, simrm %d", k, len(rl), len(sl))
			continue
		}
		for i := range rl {
			r, s := rl[i], sl[i]
			if r.OK != s.OK || r.Exception != s.Exception {
				t.Errorf("%s: real RM ok=%v %s %q; simrm ok=%v %s %q", k, r.OK, r.Exception, r.Message, s.OK, s.Exception, s.Message)
				continue
			}
			if !r.OK {
				continue
			}
			for _, d := range compareResults(k, r.Result, s.Result) {
				if why, ok := knownSimRMGaps[k+" "+d.field]; ok {
					t.Logf("KNOWN GAP %s %s: real RM %v, simrm %v (%s)", k, d.field, d.real, d.sim, why)
					continue
				}
				t.Errorf("%s %s: real RM %v, simrm %v", k, d.field, d.real, d.sim)
			}
		}
	}

	for _, path := range []string{"/ws/v1/cluster/info", "/ws/v1/cluster/metrics", "/ws/v1/cluster/nodes",
		"/ws/v1/cluster/apps/" + "%s"} {
		rp, sp := path, path
		if strings.Contains(path, "%s") {
			rp, sp = fmt.Sprintf(path, rs.appID), fmt.Sprintf(path, ss.appID)
		}
		rk := jsonKeys(t, getRESTAt(t, real.web, rp, "application/json"))
		sk := jsonKeys(t, getRESTAt(t, ours.web, sp, "application/json"))
		missing, extra := setDiff(rk, sk), setDiff(sk, rk)
		if len(extra) > 0 {
			t.Errorf("REST %s: simrm sends fields the real RM does not: %v", path, extra)
		}
		if len(missing) > 0 {
			msg := fmt.Sprintf("REST %s: fields the real RM sends but simrm does not: %v", path, missing)
			if os.Getenv(lenientRESTEnv) != "" {
				t.Log(msg)
			} else {
				t.Error(msg)
			}
		}
	}
}

// knownSimRMGaps are differences found by this test and reported to the
// simrm owner, keyed by "op field"; they are logged instead of failing so the
// suite stays green while they are fixed. Remove an entry once fixed.
// Fixed so far (simrm ed7ec97): full queue paths (root.default) in reports
// and register responses; maximum allocation capped at the largest node.
var knownSimRMGaps = map[string]string{
	"sweep getDelegationToken":           "simrm does not issue RM delegation tokens (the real RM does, even without Kerberos)",
	"sweep updateApplicationTimeouts":    "application lifetimes not simulated (the real RM accepts a LIFETIME update)",
	"sweep signalToContainer":            "container signals not simulated (the real RM accepts and forwards to the NM)",
	"sweep checkForDecommissioningNodes": "admin method not registered by simrm (RpcNoSuchMethodException); the real RM answers the decommissioning node list",
	"sweep refreshClusterMaxPriority":    "admin method not registered by simrm (RpcNoSuchMethodException); the real RM accepts it",
	"sweep refreshNodesResources":        "admin method not registered by simrm (RpcNoSuchMethodException); the real RM accepts it",
	"sweep getFederationSubClusters":     "real RM: YarnException \"It is not allowed to call the RM's getFederationSubClusters\"; simrm: RpcNoSuchMethodException",
	"sweep refreshServiceAcls":           "real RM without hadoop.security.authorization: YarnException (IOException: Service Authorization not enabled); simrm: ok",
}

type resultDiff struct {
	field     string
	real, sim any
}

// compareResults checks the values that must agree between RMs; ids, times
// and host names legitimately differ.
func compareResults(op string, r, s json.RawMessage) []resultDiff {
	var rv, sv map[string]any
	if json.Unmarshal(r, &rv) != nil || json.Unmarshal(s, &sv) != nil {
		return []resultDiff{{field: "result", real: string(r), sim: string(s)}}
	}
	var fields []string
	switch {
	case op == "client metrics":
		fields = []string{"numNodeManagers", "numActiveNodeManagers", "numDecommissionedNodeManagers", "numLostNodeManagers", "numUnhealthyNodeManagers", "numRebootedNodeManagers"}
	case op == "client newapp":
		fields = []string{"maxMemoryMB", "maxVcores"} // ids depend on what earlier tests submitted
	case op == "client waittoken", op == "client report-after-finish":
		fields = []string{"name", "queue", "user", "state", "finalStatus", "unmanaged", "hasAMRMToken"}
	case op == "am register":
		fields = []string{"maxMemoryMB", "maxVcores", "queue", "previousContainers"}
	case op == "am finish:SUCCEEDED:diff":
		fields = []string{"status"}
	case op == "client nodes":
		rn, _ := rv["nodes"].([]any)
		sn, _ := sv["nodes"].([]any)
		if len(rn) != len(sn) {
			return []resultDiff{{field: "len(nodes)", real: len(rn), sim: len(sn)}}
		}
		var out []resultDiff
		for i := range rn {
			rm, _ := rn[i].(map[string]any)
			sm, _ := sn[i].(map[string]any)
			for _, f := range []string{"state", "memoryMB", "vcores"} {
				if !reflect.DeepEqual(rm[f], sm[f]) {
					out = append(out, resultDiff{field: fmt.Sprintf("nodes[%d].%s", i, f), real: rm[f], sim: sm[f]})
				}
			}
		}
		return out
	case op == "am await:2:20000":
		rc, _ := rv["containers"].([]any)
		sc, _ := sv["containers"].([]any)
		if len(rc) != len(sc) {
			return []resultDiff{{field: "len(containers)", real: len(rc), sim: len(sc)}}
		}
		return nil
	}
	var out []resultDiff
	for _, f := range fields {
		if !reflect.DeepEqual(rv[f], sv[f]) {
			out = append(out, resultDiff{field: f, real: rv[f], sim: sv[f]})
		}
	}
	return out
}

// jsonKeys lists every object key path in a JSON document (array elements
// merged), e.g. "clusterMetrics.totalMB".
func jsonKeys(t testing.TB, body []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, tail(string(body), 500))
	}
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				out[prefix+k] = true
				walk(prefix+k+".", e)
			}
		case []any:
			for _, e := range x {
				walk(prefix, e)
			}
		}
	}
	walk("", v)
	return out
}

// setDiff lists the keys of a missing from b, only the outermost of each
// missing subtree ("x.y" hides "x.y.z").
func setDiff(a, b map[string]bool) []string {
	var keys []string
	for k := range a {
		if !b[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // a parent sorts before its children
	var out []string
	for _, k := range keys {
		if n := len(out); n > 0 && strings.HasPrefix(k, out[n-1]+".") {
			continue
		}
		out = append(out, k)
	}
	return out
}

// Hadoop's client-side RM HA against simrm: Hadoop's failover proxy provider
// must take our StandbyException for what it is and move on to the next RM
// id, and application errors must still surface typed through it.
func TestJavaYarnClientFailsOverBetweenSimRMs(t *testing.T) {
	j := needJava(t)
	active := startSimRM(t, 2)
	scfg := simrm.TestConfig()
	reg := prometheus.NewRegistry()
	scfg.Registerer = reg
	standby, err := simrm.NewStandby(active, scfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := standby.Start(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		standby.Close()
	})
	conf := writeYarnSite(t, map[string]string{
		"yarn.resourcemanager.ha.enabled": "true",
		"yarn.resourcemanager.ha.rm-ids":  "rm1,rm2",
		// rm1, tried first, is the standby.
		"yarn.resourcemanager.address.rm1":           standby.Addrs().Client,
		"yarn.resourcemanager.address.rm2":           active.Addrs().Client,
		"yarn.resourcemanager.scheduler.address.rm1": standby.Addrs().Scheduler,
		"yarn.resourcemanager.scheduler.address.rm2": active.Addrs().Scheduler,
		"yarn.resourcemanager.admin.address.rm1":     standby.Addrs().Admin,
		"yarn.resourcemanager.admin.address.rm2":     active.Addrs().Admin,
		"yarn.resourcemanager.webapp.address.rm1":    standby.Addrs().Web,
		"yarn.resourcemanager.webapp.address.rm2":    active.Addrs().Web,
		"yarn.client.failover-sleep-base-ms":         "50",
		"yarn.client.failover-sleep-max-ms":          "200",
	})
	run := j.runDriver(t, "YarnClientDriver", "--conf", conf, "metrics", "newapp", "submit:ha:default:unmanaged", "waittoken",
		"report:application_1_9999")
	var m struct {
		NumNodeManagers int `json:"numNodeManagers"`
	}
	run.op(t, "metrics").decode(t, &m)
	if m.NumNodeManagers != 2 {
		t.Errorf("metrics through failover: %d NMs, want 2", m.NumNodeManagers)
	}
	run.op(t, "newapp").decode(t, &struct{}{})
	run.op(t, "waittoken").decode(t, &struct{}{})
	if l := run.op(t, "report:application_1_9999"); l.OK || l.Exception != hadoopipc.ClassApplicationNotFound {
		t.Errorf("unknown app through the failover proxy: ok=%v %s %q", l.OK, l.Exception, l.Message)
	}
	// Hadoop's provider starts with rm1: the standby must have been asked.
	if n := counterSum(t, reg, "yarnfed_simrm_calls_total"); n < 1 {
		t.Errorf("the standby (rm1) saw %v calls; Hadoop's client never tried it, so failover was not exercised", n)
	}
}

// counterSum adds up every series of a counter in reg.
func counterSum(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
