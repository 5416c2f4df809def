package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

const capSC1 = `{"clusterMetrics":{"availableMB":8192,"totalMB":16384,"availableVirtualCores":6,"totalVirtualCores":8,"appsPending":1,"appsRunning":3,"activeNodes":2}}`

// compact undoes the indentation -o json gives embedded documents.
func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func seedSubClusters(h *harness) {
	h.addSubCluster("SC-1", pb.SubClusterState_SC_RUNNING, 12*time.Second, capSC1)
	h.addSubCluster("SC-2", pb.SubClusterState_SC_LOST, 3*time.Hour+5*time.Minute, "")
	h.addSubCluster("SC-3", pb.SubClusterState_SC_NEW, 45*time.Minute, `{"clusterMetrics":{"totalMB":1024}}`)
	// The GPG published SC-1's Kubernetes batch capacity a minute ago.
	h.propose(store.CmdPublishCapacity, &pb.PublishCapacityCommand{Request: &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{
		{SubClusterId: "SC-1", MemoryMb: 6144, Vcores: 5, Nodes: 3, ObservedMs: fixedNow.Add(-90 * time.Second).UnixMilli()},
	}}, NowMs: fixedNow.Add(-time.Minute).UnixMilli()})
}

func TestSubClusterListAndGet(t *testing.T) {
	h := newHarness(t)
	seedSubClusters(h)
	// Expected cells, from seedSubClusters: sorted by id; HEARTBEAT is
	// fixedNow minus the seeded heartbeat, by formatAge (seconds under a
	// minute, m+s under an hour, h+m under a day: 12s, 3h5m, 45m0s);
	// addresses rmN:port as addSubCluster registers them; MEMORY MB and
	// VCORES are available/total and APPS P/R pending/running from the
	// capability's clusterMetrics (SC-3's has only totalMB, the rest count
	// as 0); SC-2 sent no capability, so those cells are empty ("-"), as is
	// PUBLISHED for all but SC-1, whose GPG publish was 6144 MB / 5 vcores.
	sameTable(t, "subcluster list", h.ok("subcluster", "list"), aligned(
		[]string{"SUBCLUSTER", "STATE", "HEARTBEAT", "CLIENT RM", "AMRM", "RM ADMIN", "RM WEB", "MEMORY MB", "VCORES", "APPS P/R", "PUBLISHED"},
		[]string{"SC-1", "SC_RUNNING", "12s", "rm1:8032", "rm1:8030", "rm1:8033", "rm1:8088", "8192/16384", "6/8", "1/3", "6144/5"},
		[]string{"SC-2", "SC_LOST", "3h5m", "rm2:8032", "rm2:8030", "rm2:8033", "rm2:8088", "-", "-", "-", "-"},
		[]string{"SC-3", "SC_NEW", "45m0s", "rm3:8032", "rm3:8030", "rm3:8033", "rm3:8088", "0/1024", "0/0", "0/0", "-"},
	))
	// One sub-cluster as label/value rows. Times are UTC RFC 3339: the last
	// heartbeat fixedNow-12s, the start fixedNow-24h (addSubCluster), the
	// publish fixedNow-1m (seedSubClusters), with their ages.
	sameTable(t, "subcluster get", h.ok("subcluster", "get", "SC-1"), aligned(
		[]string{"Sub-cluster", "SC-1"},
		[]string{"State", "SC_RUNNING"},
		[]string{"Last heartbeat", "2026-11-21T05:59:48Z (12s ago)"},
		[]string{"Last start", "2026-11-20T06:00:00Z"},
		[]string{"Client RM", "rm1:8032"},
		[]string{"AMRM", "rm1:8030"},
		[]string{"RM admin", "rm1:8033"},
		[]string{"RM web", "rm1:8088"},
		[]string{"Memory MB (available/total)", "8192/16384"},
		[]string{"VCores (available/total)", "6/8"},
		[]string{"Apps (pending/running)", "1/3"},
		[]string{"Active nodes", "2"},
		[]string{"Published capacity (MB/vcores)", "6144/5"},
		[]string{"Published nodes", "3"},
		[]string{"Published at", "2026-11-21T05:59:00Z (1m0s ago)"},
	))

	var views []scView
	if err := json.Unmarshal([]byte(h.ok("subcluster", "list", "--active", "-o", "json")), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].SubClusterID != "SC-1" || views[0].State != "SC_RUNNING" ||
		*views[0].LastHeartBeatAgeSec != 12 || views[0].Summary == nil || views[0].Summary.AvailableMB != 8192 ||
		views[0].ClientRMServiceAddress != "rm1:8032" || compact(t, views[0].Capability) != capSC1 {
		t.Fatalf("--active -o json: %+v", views)
	}
	if r := h.run("subcluster", "get", "SC-9"); r.code != exitError || !strings.Contains(r.err, "statestore: not found: sub-cluster SC-9") {
		t.Fatalf("get unknown: exit %d %q", r.code, r.err)
	}
}

func TestSubClusterDeregister(t *testing.T) {
	h := newHarness(t)
	seedSubClusters(h)
	state := func(id string) pb.SubClusterState {
		sc, err := h.store().GetSubCluster(id)
		if err != nil {
			t.Fatal(err)
		}
		return sc.GetState()
	}

	r := h.run("subcluster", "deregister", "SC-1")
	if r.code != exitOK || r.out != "sub-cluster SC-1: SC_RUNNING -> SC_LOST\n" || !strings.Contains(r.err, "last heartbeated 12s ago") {
		t.Fatalf("deregister: exit %d %q %q", r.code, r.out, r.err)
	}
	if s := state("SC-1"); s != pb.SubClusterState_SC_LOST {
		t.Fatalf("SC-1 is %v", s)
	}
	if out := h.ok("subcluster", "deregister", "SC-1"); out != "sub-cluster SC-1 is already SC_LOST\n" {
		t.Fatalf("again: %q", out)
	}
	h.ok("subcluster", "deregister", "SC-2", "--state", "decommissioned")
	if s := state("SC-2"); s != pb.SubClusterState_SC_DECOMMISSIONED {
		t.Fatalf("SC-2 is %v", s)
	}
	if r := h.run("subcluster", "deregister", "SC-9"); r.code != exitError || !strings.Contains(r.err, "not found") {
		t.Fatalf("unknown: exit %d %q", r.code, r.err)
	}

	// --expired: SC-3 (SC_NEW, 45 min) is past 30 min; a fresh one is not.
	h.addSubCluster("SC-4", pb.SubClusterState_SC_RUNNING, time.Minute, "")
	if out := h.ok("subcluster", "deregister", "--expired"); out != "sub-cluster SC-3: SC_NEW -> SC_LOST (last heartbeat 45m0s ago)\n" {
		t.Fatalf("--expired: %q", out)
	}
	if state("SC-3") != pb.SubClusterState_SC_LOST || state("SC-4") != pb.SubClusterState_SC_RUNNING {
		t.Fatal("--expired changed the wrong sub-clusters")
	}
	if out := h.ok("subcluster", "deregister", "--expired", "--expiry", "1h"); !strings.HasPrefix(out, "no usable sub-cluster") {
		t.Fatalf("nothing expired: %q", out)
	}
}

func TestAppCommands(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 5; i++ {
		home := "SC-1"
		if i%2 == 0 {
			home = "SC-2"
		}
		h.addApp(fmt.Sprintf("application_1763700000000_%04d", i), home, time.Duration(10-i)*time.Minute)
	}
	// Newest first; app i was created 10-i minutes before fixedNow (06:00),
	// odd ones homed on SC-1, even ones on SC-2.
	sameTable(t, "app list", h.ok("app", "list"), aligned(
		[]string{"APPLICATION", "HOME", "CREATED"},
		[]string{"application_1763700000000_0005", "SC-1", "2026-11-21T05:55:00Z"},
		[]string{"application_1763700000000_0004", "SC-2", "2026-11-21T05:54:00Z"},
		[]string{"application_1763700000000_0003", "SC-1", "2026-11-21T05:53:00Z"},
		[]string{"application_1763700000000_0002", "SC-2", "2026-11-21T05:52:00Z"},
		[]string{"application_1763700000000_0001", "SC-1", "2026-11-21T05:51:00Z"},
	))
	if out := h.ok("app", "list", "--subcluster", "SC-2"); strings.Count(out, "SC-2") != 2 || strings.Contains(out, "SC-1") {
		t.Fatalf("--subcluster: %q", out)
	}
	r := h.run("app", "list", "--limit", "2", "-o", "json")
	var views []appView
	if err := json.Unmarshal([]byte(r.out), &views); err != nil || r.code != exitOK {
		t.Fatalf("--limit: %v %d %q", err, r.code, r.err)
	}
	// Newest first: 0005 was created last.
	if len(views) != 2 || views[0].ApplicationID != "application_1763700000000_0005" || views[1].ApplicationID != "application_1763700000000_0004" {
		t.Fatalf("--limit 2: %+v", views)
	}
	if !strings.Contains(r.err, "--limit 0 lists all") {
		t.Fatalf("no truncation note: %q", r.err)
	}
	if out := h.ok("app", "home", "application_1763700000000_0002"); !strings.Contains(out, "application_1763700000000_0002  SC-2  2026-11-21T05:52:00Z") {
		t.Fatalf("home: %q", out)
	}

	if out := h.ok("app", "delete", "application_1763700000000_0002", "--yes"); out != "deleted the home of application_1763700000000_0002\n" {
		t.Fatalf("delete: %q", out)
	}
	if _, err := h.store().GetApplicationHome("application_1763700000000_0002", false); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("still stored: %v", err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"home of a deleted app", []string{"app", "home", "application_1763700000000_0002"}, "not found"},
		{"delete twice", []string{"app", "delete", "application_1763700000000_0002", "--yes"}, "not found"},
		{"malformed id", []string{"app", "home", "app_1_2"}, "is not an application id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := h.run(tc.args...); r.code != exitError || !strings.Contains(r.err, tc.want) {
				t.Fatalf("exit %d %q", r.code, r.err)
			}
		})
	}
}

func TestStoreStatus(t *testing.T) {
	h := newHarness(t)
	out := h.ok("store", "status")
	id := h.c.Nodes[0].ID
	for _, want := range []string{id + " (Leader)", "Leader", h.c.Nodes[0].Addr, "Applied index", "voter, leader"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}
	var st struct {
		LeaderID     string `json:"leaderId"`
		AppliedIndex uint64 `json:"appliedIndex"`
		Nodes        []struct {
			NodeID string `json:"nodeId"`
			Voter  bool   `json:"voter"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(h.ok("store", "status", "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.LeaderID != id || st.AppliedIndex == 0 || len(st.Nodes) != 1 || !st.Nodes[0].Voter {
		t.Fatalf("status json: %+v", st)
	}
}

// Command lines that cannot be understood exit 2 and touch nothing.
func TestUsageErrors(t *testing.T) {
	h := newHarness(t)
	h.addSubCluster("SC-1", pb.SubClusterState_SC_RUNNING, 0, "")
	applied := h.store().AppliedIndex()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "missing subcommand"},
		{"unknown command with a suggestion", []string{"polcy"}, `did you mean "policy"`},
		{"missing subcommand", []string{"policy"}, "missing subcommand"},
		{"unknown subcommand", []string{"subcluster", "nuke"}, `unknown command "nuke"`},
		{"unknown flag", []string{"policy", "list", "--bogus"}, "unknown flag: --bogus"},
		{"bad output", []string{"policy", "list", "-o", "yaml"}, `--output "yaml"`},
		{"bad store address", []string{"--store", "nohost", "policy", "list"}, `"nohost" is not host:port`},
		{"bad timeout", []string{"--timeout", "soon", "policy", "list"}, "invalid argument"},
		{"save without a string", []string{"policy", "save"}, "missing the policy string"},
		{"save with both forms", []string{"policy", "save", "-s", hadoopDocsString, hadoopDocsString}, "not both"},
		{"batch-save json", []string{"policy", "batch-save", "--format", "json", "-f", "x"}, "only xml"},
		{"batch-save without file", []string{"policy", "batch-save"}, "missing -f FILE"},
		{"list with --queue and --queues", []string{"policy", "list", "--queue", "a", "--queues", "b"}, "mutually exclusive"},
		{"get without queue", []string{"policy", "get"}, "want 1 argument(s) (QUEUE)"},
		{"set without type", []string{"policy", "set", "q"}, "missing --type"},
		{"set with both params", []string{"policy", "set", "q", "--type", "X", "--params", "{}", "--params-file", "f"}, "mutually exclusive"},
		{"delete nothing", []string{"policy", "delete"}, "name the queues"},
		{"delete --all without --yes", []string{"policy", "delete", "--all"}, "without --yes"},
		{"delete queues and --all", []string{"policy", "delete", "q", "--all", "--yes"}, "not both"},
		{"deregister to a live state", []string{"subcluster", "deregister", "SC-1", "--state", "SC_RUNNING"}, "final state"},
		{"deregister unknown state", []string{"subcluster", "deregister", "SC-1", "--state", "GONE"}, `unknown sub-cluster state "GONE"`},
		{"deregister nothing", []string{"subcluster", "deregister"}, "want one sub-cluster ID"},
		{"deregister id and --expired", []string{"subcluster", "deregister", "SC-1", "--expired"}, "not both"},
		{"app delete without --yes", []string{"app", "delete", "application_1_0001"}, "without --yes"},
		{"app list negative limit", []string{"app", "list", "--limit", "-1"}, "--limit -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run(tc.args...)
			if r.code != exitUsage || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "--help' for usage") {
				t.Fatalf("exit %d (want %d)\nstderr %q\nwant it to contain %q", r.code, exitUsage, r.err, tc.want)
			}
		})
	}
	if h.store().AppliedIndex() != applied {
		t.Fatal("a usage error wrote to the store")
	}
	if r := h.run("policy", "--help"); r.code != exitOK || !strings.Contains(r.out, "batch-save") {
		t.Fatalf("--help: exit %d %q", r.code, r.err)
	}
}

// With no replica listening, a command fails within --timeout with the
// store's typed error and a hint, exit 1.
func TestStoreUnavailable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--store", addr, "--store-insecure", "--timeout", "300ms", "policy", "list"},
		streams{in: strings.NewReader(""), out: &out, err: &errb}, func(string) string { return "" }, time.Now)
	if code != exitError || !strings.Contains(errb.String(), "check --store or $YARNFED_STORE") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestStoreFromEnvironment(t *testing.T) {
	h := newHarness(t)
	var out, errb strings.Builder
	env := map[string]string{envStore: h.c.Nodes[0].Addr, envStore + "_INSECURE": "1"}
	code := run(context.Background(), []string{"store", "status", "-o", "json"},
		streams{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return env[k] }, time.Now)
	if code != exitOK || !strings.Contains(out.String(), h.c.Nodes[0].ID) {
		t.Fatalf("exit %d, %q %q", code, out.String(), errb.String())
	}
}

// With several --store addresses, a dead first replica and a follower
// second, writes still land (forwarded to the leader) and reads see them.
func TestStoreListFailsOverAndFollowersForward(t *testing.T) {
	c := storetest.NewCluster(t, 3)
	l := c.Leader()
	dead, follower := (l+1)%3, (l+2)%3
	c.Stop(dead)
	h := &harness{t: t, c: c, env: map[string]string{}}
	addrs := c.Nodes[dead].Addr + "," + c.Nodes[follower].Addr
	for _, args := range [][]string{
		{"--store", addrs, "--store-insecure", "policy", "save", "-s", hadoopDocsString},
		{"--store", addrs, "--store-insecure", "policy", "get", "root.a"},
	} {
		var out, errb strings.Builder
		code := run(context.Background(), args, streams{in: strings.NewReader(""), out: &out, err: &errb},
			func(string) string { return "" }, time.Now)
		if code != exitOK {
			t.Fatalf("%q: exit %d %q", args, code, errb.String())
		}
	}
	if p := h.policy("root.a"); p.GetType() != managerPkg+"WeightedLocalityPolicyManager" {
		t.Fatalf("stored %v", p)
	}
}
