//go:build interop

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// subCluster turns a running MiniYARNCluster into a membership row.
func subCluster(id string, mc *miniCluster) router.SubClusterInfo {
	return router.SubClusterInfo{
		ID:                     router.SubClusterID(id),
		AMRMServiceAddress:     loopback(mc.info.Scheduler),
		ClientRMServiceAddress: loopback(mc.info.RM),
		RMAdminServiceAddress:  loopback(mc.info.Admin),
		RMWebServiceAddress:    loopback(mc.info.Web),
		State:                  router.StateRunning,
		LastStartTime:          time.Now(),
	}
}

// startRouter runs our Router in-process over an in-memory store holding
// the given sub-clusters.
func startRouter(t testing.TB, scs ...router.SubClusterInfo) *router.Router {
	t.Helper()
	return startRouterWith(t, routertest.NewStore(), scs...)
}

// startRouterWith is startRouter over a given store (e.g. holding policies).
func startRouterWith(t testing.TB, store *routertest.Store, scs ...router.SubClusterInfo) *router.Router {
	t.Helper()
	for _, sc := range scs {
		store.Put(sc)
	}
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.DefaultConfig()
	cfg.ClientListener, cfg.WebListener, cfg.Store = cln, wln, store
	return routertest.StartRouter(t, cfg)
}

// Federation: Hadoop's YarnClient, configured with nothing but the Router's
// address, runs against two real RMs (distinct cluster ids and epochs)
// behind our Router; the AMRMToken it gets through the Router works on the
// home RM's real scheduler port.
func TestJavaYarnClientThroughRouterToRealRMs(t *testing.T) {
	sc1 := needCluster(t)
	sc2 := newCluster(t, clusterOptions{clusterID: "e2e-sc2", epoch: 8, nms: 1})
	j := needJava(t)
	r := startRouter(t, subCluster("SC-1", sc1), subCluster("SC-2", sc2))
	conf := writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": r.ClientRMAddr().String()})

	ops := []string{"metrics", "nodes"}
	const apps = 6 // enough that a uniform policy very likely uses both homes
	for i := 0; i < apps; i++ {
		ops = append(ops, "submit:fed:default:unmanaged", "waittoken")
	}
	ops = append(ops, "list", "kill", "waitstate:KILLED", "report:application_1_9999")
	run := j.runDriver(t, "YarnClientDriver", append([]string{"--conf", conf}, ops...)...)

	var m struct {
		NumNodeManagers       int `json:"numNodeManagers"`
		NumActiveNodeManagers int `json:"numActiveNodeManagers"`
	}
	run.op(t, "metrics").decode(t, &m)
	want := sc1.info.NMs + sc2.info.NMs
	if m.NumNodeManagers != want || m.NumActiveNodeManagers != want {
		t.Errorf("federated metrics %+v, want %d NMs (sum of both RMs)", m, want)
	}
	var nodes struct {
		Nodes []struct{ ID string } `json:"nodes"`
	}
	run.op(t, "nodes").decode(t, &nodes)
	if len(nodes.Nodes) != want {
		t.Errorf("federated nodes: %d, want %d", len(nodes.Nodes), want)
	}

	type tokenReport struct {
		ApplicationID string `json:"applicationId"`
		State         string `json:"state"`
		AMRMToken     *struct {
			Identifier string `json:"identifier"`
			Password   string `json:"password"`
		} `json:"amrmToken"`
	}
	var reports []tokenReport
	for _, l := range run.lines {
		if l.Op == "waittoken" {
			var tr tokenReport
			l.decode(t, &tr)
			reports = append(reports, tr)
		}
	}
	if len(reports) != apps {
		t.Fatalf("got %d token reports, want %d", len(reports), apps)
	}

	var list struct {
		Applications []struct {
			ApplicationID string `json:"applicationId"`
		} `json:"applications"`
	}
	run.op(t, "list").decode(t, &list)
	listed := map[string]bool{}
	for _, a := range list.Applications {
		listed[a.ApplicationID] = true
	}
	for _, rep := range reports {
		if !listed[rep.ApplicationID] {
			t.Errorf("%s missing from the federated application list", rep.ApplicationID)
		}
	}
	var killed tokenReport
	run.op(t, "waitstate:KILLED").decode(t, &killed)
	if killed.ApplicationID != reports[apps-1].ApplicationID || killed.State != "KILLED" {
		t.Errorf("after kill through the router: %+v", killed)
	}
	if l := run.op(t, "report:application_1_9999"); l.OK || l.Exception != hadoopipc.ClassApplicationNotFound {
		t.Errorf("unknown app through the router: ok=%v %s %q", l.OK, l.Exception, l.Message)
	}

	// Each token is only valid at its home RM: find it by trying the homes,
	// and run one AM on each home seen.
	homes := map[string]bool{}
	for _, rep := range reports[:apps-1] {
		for name, mc := range map[string]*miniCluster{"SC-1": sc1, "SC-2": sc2} {
			if homes[name] {
				continue
			}
			am := j.runDriver(t, "AMRMDriver", "--scheduler", loopback(mc.info.Scheduler),
				"--token-id", rep.AMRMToken.Identifier, "--token-password", rep.AMRMToken.Password,
				"register", "ask:1:128:1", "await:1:30000", "finish")
			if l := am.op(t, "register"); !l.OK {
				continue // not this app's home
			}
			homes[name] = true
			for _, op := range []string{"await:1:30000", "finish"} {
				am.op(t, op).decode(t, &struct{}{})
			}
		}
	}
	t.Logf("AMs ran on homes %v", homes)
	if len(homes) == 0 {
		t.Error("no AMRMToken obtained through the router worked at either RM")
	}
	// The unmanaged apps no AM ran for stay ACCEPTED and hold the queue's AM
	// share (maximum-am-resource-percent) on their home: kill them through
	// the router, as a user would, or a distributed shell AM placed on the
	// same RM below may never be admitted (it was, when the uniform policy put
	// five of the six apps on one RM).
	rc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for _, rep := range reports[:apps-1] {
		call(t, rc, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: parseAppID(t, rep.ApplicationID)},
			&yarnpb.KillApplicationResponseProto{})
	}

	// The Router's REST documents must look like an RM's to REST clients:
	// same JSON field paths as the real RM for the same resource.
	t.Run("REST shapes match a real RM", func(t *testing.T) {
		app := reports[0].ApplicationID
		for _, path := range []string{"/ws/v1/cluster/metrics", "/ws/v1/cluster/nodes", "/ws/v1/cluster/apps/" + app, "/ws/v1/cluster/apps"} {
			// The reference is the union over the real RMs that answer (an
			// app lives on one home only; lists differ per RM).
			rk := map[string]bool{}
			for _, mc := range []*miniCluster{sc1, sc2} {
				if b, ok := tryREST(mc, path); ok {
					for k := range jsonKeys(t, b) {
						rk[k] = true
					}
				}
			}
			if len(rk) == 0 {
				t.Fatalf("no real RM answers %s", path)
			}
			fk := jsonKeys(t, getRESTAt(t, r.WebAddr().String(), path, "application/json"))
			for _, k := range setDiff(rk, fk) {
				if why, ok := knownRouterRESTGaps[k]; ok {
					t.Logf("KNOWN GAP router REST %s: %s missing (%s)", path, k, why)
					continue
				}
				restGap(t, fmt.Sprintf("router REST %s: a real RM sends %s, the router does not", path, k))
			}
			for _, k := range setDiff(fk, rk) {
				if why, ok := knownRouterRESTGaps["+"+k]; ok {
					t.Logf("KNOWN GAP router REST %s: sends %s (%s)", path, k, why)
					continue
				}
				t.Errorf("router REST %s: sends %s, which the real RM does not", path, k)
			}
		}
	})

	// The stock `yarn` commands (the classes the yarn script runs), pointed
	// at the Router by a yarn-site.xml and nothing else.
	t.Run("yarn CLIs", func(t *testing.T) {
		cliConf := writeYarnSite(t, map[string]string{
			"yarn.resourcemanager.address":                            r.ClientRMAddr().String(),
			"yarn.resourcemanager.connect.max-wait.ms":                "5000",
			"yarn.resourcemanager.connect.retry-interval.ms":          "200",
			"yarn.client.application-client-protocol.poll-timeout-ms": "30000",
		})
		dir := filepath.Dir(cliConf)
		const appCLI = "org.apache.hadoop.yarn.client.cli.ApplicationCLI"
		killedApp, liveApp := reports[apps-1].ApplicationID, reports[apps-2].ApplicationID
		for _, tc := range []struct {
			name  string
			class string
			args  []string
			want  []string
		}{
			{"node -list", "org.apache.hadoop.yarn.client.cli.NodeCLI", []string{"-list"},
				[]string{fmt.Sprintf("Total Nodes:%d", want)}},
			{"application -list", appCLI, []string{"application", "-list", "-appStates", "ALL"},
				append([]string{"Total number of applications"}, killedApp, liveApp)},
			{"application -status", appCLI, []string{"application", "-status", killedApp},
				[]string{"Application-Id : " + killedApp, "State : KILLED"}},
			{"queue -status", "org.apache.hadoop.yarn.client.cli.QueueCLI", []string{"-status", "default"},
				[]string{"Queue Name : default"}},
			{"application -kill", appCLI, []string{"application", "-kill", liveApp}, []string{liveApp}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out := j.runCLI(t, dir, tc.class, tc.args...)
				if out.exit != 0 {
					t.Fatalf("yarn %s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.name, out.exit, tail(out.stdout, 2000), tail(out.stderr, 2000))
				}
				all := out.stdout + out.stderr
				for _, w := range tc.want {
					if !strings.Contains(all, w) {
						t.Errorf("yarn %s: output lacks %q:\n%s", tc.name, w, tail(all, 2000))
					}
				}
			})
		}
	})

	// A second Router whose store holds a queue policy, stored the way `yarn
	// routeradmin -policy` stores it (WeightedPolicyInfo JSON): everything
	// submitted to "default" must land on SC-2.
	pstore := routertest.NewStore()
	pstore.SetPolicy(router.PolicyConfiguration{
		Queue: "default",
		Type:  "org.apache.hadoop.yarn.server.federation.policies.manager.WeightedLocalityPolicyManager",
		Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.0"},{"key":{"id":"SC-2"},"value":"1.0"}]},` +
			`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"0.0"},{"key":{"id":"SC-2"},"value":"1.0"}]},"headroomAlpha":"1.0"}`),
	})
	pr := startRouterWith(t, pstore, subCluster("SC-1", sc1), subCluster("SC-2", sc2))

	// Hadoop's distributed shell, submitted through the policy Router: a
	// managed AM launched by SC-2's NodeManager registers with SC-2's RM,
	// gets two containers that run a shell command, and finishes SUCCEEDED.
	t.Run("distributed shell", func(t *testing.T) {
		var dsJar string
		entries := strings.Split(j.classpath, string(os.PathListSeparator))
		for _, e := range entries {
			if strings.Contains(filepath.Base(e), "distributedshell") {
				dsJar = e
			}
		}
		if dsJar == "" {
			t.Fatal("no distributedshell jar on the classpath")
		}
		marker := fmt.Sprintf("yarnfed-ds-%d", time.Now().UnixNano())
		dsConf := writeYarnSite(t, map[string]string{
			"yarn.resourcemanager.address": pr.ClientRMAddr().String(),
			// The AM's classpath: its RM's yarn-site.xml (via the NM's
			// HADOOP_CONF_DIR), then the same jars as everything here.
			"yarn.application.classpath": "$HADOOP_CONF_DIR," + strings.Join(entries, ","),
		})
		// AM 256 MB: the capacity scheduler admits AMs up to 10% of a queue
		// (maximum-am-resource-percent), 409 MB on the one-NM sub-cluster.
		// The client's own timeout (2 min) ends before runCLI's, so a stuck
		// app shows its last state in the client's INFO log.
		out := j.runCLIWith(t, []string{"-Dyarnfed.e2e.log=INFO"}, filepath.Dir(dsConf), "org.apache.hadoop.yarn.applications.distributedshell.Client",
			"-jar", dsJar, "-appname", "yarnfed-ds", "-queue", "default", "-shell_command", "echo "+marker,
			"-num_containers", "2", "-container_memory", "128", "-master_memory", "256", "-timeout", "120000")
		if out.exit != 0 {
			t.Fatalf("distributed shell exit %d (0 means the app SUCCEEDED):\n%s", out.exit, tail(out.stderr, 6000))
		}
		// Each container's stdout lands in its NM's log dir, on SC-2.
		found := 0
		for _, mc := range []*miniCluster{sc2} {
			_ = filepath.WalkDir(mc.dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name() == "stdout" {
					if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
						found++
					}
				}
				return nil
			})
		}
		if found != 2 {
			t.Errorf("found the shell command's output in %d container stdout files on SC-2, want 2", found)
		}
	})

	// A queue policy stored the way `yarn routeradmin -policy` stores it
	// (WeightedPolicyInfo JSON) decides where Hadoop's submissions land.
	t.Run("queue policy places apps", func(t *testing.T) {
		pconf := writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": pr.ClientRMAddr().String()})
		const n = 4
		var ops []string
		for i := 0; i < n; i++ {
			ops = append(ops, "submit:placed:default:unmanaged")
		}
		prun := j.runDriver(t, "YarnClientDriver", append([]string{"--conf", pconf}, ops...)...)
		home, other := rmClient(t, sc2), rmClient(t, sc1)
		placed := 0
		for _, l := range prun.lines {
			var sub struct {
				ApplicationID string `json:"applicationId"`
			}
			l.decode(t, &sub)
			id := parseAppID(t, sub.ApplicationID)
			if rep := appReport(t, home, id); rep.GetName() != "placed" {
				t.Errorf("%s on SC-2: %v", sub.ApplicationID, rep)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := other.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, &yarnpb.GetApplicationReportResponseProto{})
			cancel()
			var re *hadoopipc.RemoteError
			if !errors.As(err, &re) || re.Class != hadoopipc.ClassApplicationNotFound {
				t.Errorf("%s also known to SC-1 (weight 0): %v", sub.ApplicationID, err)
			}
			placed++
		}
		if placed != n {
			t.Errorf("%d of %d submissions placed", placed, n)
		}
	})

	t.Run("federated REST metrics", func(t *testing.T) {
		var mr rmrest.ClusterMetricsResponse
		body := getRESTAt(t, r.WebAddr().String(), "/ws/v1/cluster/metrics", "application/json")
		if err := json.Unmarshal(body, &mr); err != nil {
			t.Fatal(err)
		}
		if int(mr.ClusterMetrics.TotalNodes) != want || mr.ClusterMetrics.TotalMB != int64(4096*want) {
			t.Errorf("router REST metrics %+v, want %d nodes and %d MB", mr.ClusterMetrics, want, 4096*want)
		}
	})
}

// tryREST GETs path as JSON from mc's RM, reporting whether it answered 200.
func tryREST(mc *miniCluster, path string) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback(mc.info.Web)+path, nil)
	if err != nil {
		return nil, false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, err == nil && resp.StatusCode == http.StatusOK
}

// knownRouterRESTGaps are REST fields the Router drops, found by this test
// and reported to the router owner; logged instead of failing. Remove an
// entry once fixed.
// Fixed so far (router, found here): resourceInformations in merged
// metrics and nodes; apps rendered from IPC reports instead of the home RM's
// REST document (amRPCAddress, resourceSecondsMap, timeouts, resourceInfo,
// an unset appNodeLabelExpression). Keys starting with "+" are fields the
// router sends and the RM does not.
var knownRouterRESTGaps = map[string]string{}

// restGap reports a REST field gap: a failure, or a log line under
// YARNFED_INTEROP_LENIENT_REST=1.
func restGap(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(lenientRESTEnv) != "" {
		t.Log(msg)
	} else {
		t.Error(msg)
	}
}

// parseAppID parses "application_<clusterTimestamp>_<id>".
func parseAppID(t testing.TB, s string) *yarnpb.ApplicationIdProto {
	t.Helper()
	var ts int64
	var id int32
	if _, err := fmt.Sscanf(s, "application_%d_%d", &ts, &id); err != nil {
		t.Fatalf("application id %q: %v", s, err)
	}
	return &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(ts), Id: proto.Int32(id)}
}
