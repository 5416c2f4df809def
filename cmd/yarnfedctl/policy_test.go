package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

const (
	managerPkg       = "org.apache.hadoop.yarn.server.federation.policies.manager."
	hadoopDocsString = "root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0"
	policiesTestdata = "../../policies/testdata"
)

// Hadoop's WeightedPolicyInfo JSON for the two queues of Hadoop's
// federation-weights.xml example (router SC-1:0.6,SC-2:0.4; amrm
// SC-1:0.7,SC-2:0.3 and SC-1:0.8,SC-2:0.2; alpha 1.0), entries in Java
// HashMap order (SC-2 first), numbers as Float.toString strings.
const (
	batchRootA = `{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"0.4"},{"key":{"id":"SC-1"},"value":"0.6"}]},"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"0.3"},{"key":{"id":"SC-1"},"value":"0.7"}]},"headroomAlpha":"1.0"}`
	batchRootB = `{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"0.4"},{"key":{"id":"SC-1"},"value":"0.6"}]},"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"0.2"},{"key":{"id":"SC-1"},"value":"0.8"}]},"headroomAlpha":"1.0"}`
)

// singleEntryParams is Hadoop's WeightedPolicyInfo JSON for
// "q;SC-1:1.0;SC-1:1.0;0.5", derived by hand: Jersey's mapped notation
// (JSONConfiguration.DEFAULT in WeightedPolicyInfo.initContext) writes a
// list that has one element as a bare object, not a one-element array;
// members in field order; every value a string in Float.toString form. The
// same bytes are checked against Hadoop's toByteBuffer in e2e
// TestPolicyJSONMatchesHadoop/single.
const singleEntryParams = `{"routerPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},` +
	`"amrmPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},"headroomAlpha":"0.5"}`

func TestPolicySaveStoresHadoopBytes(t *testing.T) {
	h := newHarness(t)
	want := strings.TrimSpace(string(readFile(t, filepath.Join(policiesTestdata, "policy-manager-params.json"))))

	out := h.ok("policy", "save", "-s", hadoopDocsString)
	if out != "saved policy for queue root.a (WeightedLocality)\n" {
		t.Fatalf("stdout %q", out)
	}
	p := h.policy("root.a")
	if string(p.GetParams()) != want {
		t.Fatalf("stored params\n%s\nwant Hadoop's (Federation.md)\n%s", p.GetParams(), want)
	}
	if p.GetType() != managerPkg+"WeightedLocalityPolicyManager" {
		t.Fatalf("stored type %q", p.GetType())
	}

	cases := []struct {
		name, queue string
		args        []string
		env         string
		wantType    string
	}{
		{"positional string, --manager short name", "root.b", []string{"policy", "save", "root.b;SC-1:1.0;SC-1:1.0;0.5", "--manager", "PriorityBroadcast"}, "", "PriorityBroadcastPolicyManager"},
		{"--save, Java class name", "root.c", []string{"policy", "save", "--save", "root.c;SC-1:1.0;SC-1:1.0;0.5", "--manager", managerPkg + "WeightedHomePolicyManager"}, "", "WeightedHomePolicyManager"},
		{"manager from the environment", "root.d", []string{"policy", "save", "-s", "root.d;SC-1:1.0;SC-1:1.0;0.5"}, "WeightedHome", "WeightedHomePolicyManager"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.env[envPolicyManager] = tc.env
			defer delete(h.env, envPolicyManager)
			h.ok(tc.args...)
			p := h.policy(tc.queue)
			if p.GetType() != managerPkg+tc.wantType {
				t.Fatalf("type %q", p.GetType())
			}
			if string(p.GetParams()) != singleEntryParams {
				t.Fatalf("params %s\nwant %s", p.GetParams(), singleEntryParams)
			}
		})
	}
}

func TestPolicySaveWarnsAboutUnregisteredSubClusters(t *testing.T) {
	h := newHarness(t)
	h.addSubCluster("SC-1", 2, 0, "")
	r := h.run("policy", "save", "-s", hadoopDocsString)
	if r.code != exitOK || !strings.Contains(r.err, "sub-cluster SC-2 is not registered") || strings.Contains(r.err, "SC-1 is not") {
		t.Fatalf("exit %d, stderr %q", r.code, r.err)
	}
}

func TestPolicyBatchSaveHadoopXML(t *testing.T) {
	xmlPath := filepath.Join(policiesTestdata, "federation-weights.xml")
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"file", "", []string{"policy", "batch-save", "--format", "xml", "-f", xmlPath}},
		{"stdin, default format, long flag", string(readFile(t, xmlPath)), []string{"policy", "batch-save", "--input-file", "-"}},
		{"format is case-insensitive", "", []string{"policy", "batch-save", "--format", "XML", "-f", xmlPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.runIn(tc.stdin, tc.args...)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.err)
			}
			if r.out != "saved policy for queue root.a (WeightedLocality)\nsaved policy for queue root.b (WeightedLocality)\n" {
				t.Fatalf("stdout %q", r.out)
			}
			for q, want := range map[string]string{"root.a": batchRootA, "root.b": batchRootB} {
				p := h.policy(q)
				if string(p.GetParams()) != want || p.GetType() != managerPkg+"WeightedLocalityPolicyManager" {
					t.Fatalf("%s: %s %s\nwant %s", q, p.GetType(), p.GetParams(), want)
				}
			}
		})
	}
}

// seedPolicies stores a weighted policy (from -s), two from the batch file
// and a '*' default without params.
func seedPolicies(h *harness) {
	h.t.Helper()
	h.ok("policy", "batch-save", "--format", "xml", "-f", filepath.Join(policiesTestdata, "federation-weights.xml"))
	h.ok("policy", "save", "-s", "root.c;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;0.25", "--manager", "PriorityBroadcast")
	h.ok("policy", "set", "*", "--type", "HashBroadcast")
}

func TestPolicyList(t *testing.T) {
	h := newHarness(t)
	seedPolicies(h)
	// Expected cells, from seedPolicies: queues sorted ("*" before "root.");
	// MANAGER is the class name without package and "PolicyManager"; weights
	// as `routeradmin -policy -l` prints them, "id:Float.toString(w)" in Java
	// HashMap order, which puts SC-2 before SC-1 (Federation.md's example;
	// e2e TestPolicyJSONMatchesHadoop checks HadoopOrder against Hadoop's
	// HashMap); alpha in Float.toString form; no pins; the '*' default has no
	// params, so its weight and alpha cells are empty ("-").
	header := []string{"QUEUE", "MANAGER", "ROUTER WEIGHTS", "AMRM WEIGHTS", "HEADROOM ALPHA", "PINNED"}
	rootA := []string{"root.a", "WeightedLocality", "SC-2:0.4,SC-1:0.6", "SC-2:0.3,SC-1:0.7", "1.0", "-"}
	rootC := []string{"root.c", "PriorityBroadcast", "SC-2:0.3,SC-1:0.7", "SC-2:0.4,SC-1:0.6", "0.25", "-"}
	sameTable(t, "policy list", h.ok("policy", "list"), aligned(header,
		[]string{"*", "HashBroadcast", "-", "-", "-", "-"},
		rootA,
		[]string{"root.b", "WeightedLocality", "SC-2:0.4,SC-1:0.6", "SC-2:0.2,SC-1:0.8", "1.0", "-"},
		rootC,
	))
	// --queues: only the named queues that have a policy, still sorted.
	sameTable(t, "policy list --queues", h.ok("policy", "list", "--queues", "root.c,root.a,root.zz"), aligned(header, rootA, rootC))
	if out := h.ok("policy", "list", "--queue", "root.zz"); out != "QUEUE  MANAGER  ROUTER WEIGHTS  AMRM WEIGHTS  HEADROOM ALPHA  PINNED\n" {
		t.Fatalf("no match: %q", out)
	}

	var rows []policyRow
	if err := json.Unmarshal([]byte(h.ok("policy", "list", "--queue", "root.c", "-o", "json")), &rows); err != nil {
		t.Fatal(err)
	}
	want := policyRow{Queue: "root.c", PolicyManagerClassName: managerPkg + "PriorityBroadcastPolicyManager",
		RouterWeight: "SC-2:0.3,SC-1:0.7", AmrmWeight: "SC-2:0.4,SC-1:0.6", HeadRoomAlpha: "0.25"}
	if len(rows) != 1 || rows[0] != want {
		t.Fatalf("json rows %+v\nwant %+v", rows, want)
	}
	if out := h.ok("policy", "list", "--queue", "nothing", "-o", "json"); out != "[]\n" {
		t.Fatalf("empty json list %q", out)
	}
}

func TestPolicyGetSetDelete(t *testing.T) {
	h := newHarness(t)
	seedPolicies(h)

	if out := h.ok("policy", "get", "root.a"); out != batchRootA+"\n" {
		t.Fatalf("get: %q", out)
	}
	var doc struct {
		Queue, Type string
		Params      json.RawMessage
	}
	if err := json.Unmarshal([]byte(h.ok("policy", "get", "root.b", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Queue != "root.b" || doc.Type != managerPkg+"WeightedLocalityPolicyManager" || compact(t, doc.Params) != batchRootB {
		t.Fatalf("get -o json: %+v", doc)
	}

	// --effective falls back to '*' as routers do.
	r := h.run("policy", "get", "root.none", "--effective", "-o", "json")
	if r.code != exitOK || !strings.Contains(r.out, `"queue": "*"`) || !strings.Contains(r.err, `showing the "*" policy`) {
		t.Fatalf("effective: exit %d %q %q", r.code, r.out, r.err)
	}
	if r := h.run("policy", "get", "root.none"); r.code != exitError || !strings.Contains(r.err, "no policy stored") {
		t.Fatalf("get missing: exit %d %q", r.code, r.err)
	}

	// set re-encodes lenient JSON (whitespace, bare numbers, one entry as
	// an array) exactly as Hadoop writes it.
	params := filepath.Join(t.TempDir(), "weights.json")
	lenient := `{
	  "routerPolicyWeights": {"entry": [{"key": {"id": "SC-1"}, "value": 0.7}, {"key": {"id": "SC-2"}, "value": "0.3"}]},
	  "amrmPolicyWeights": {"entry": [{"key": {"id": "SC-1"}, "value": "0.6"}, {"key": {"id": "SC-2"}, "value": 0.4}]},
	  "headroomAlpha": 1
	}`
	if err := os.WriteFile(params, []byte(lenient), 0o644); err != nil {
		t.Fatal(err)
	}
	h.ok("policy", "set", "root.x", "--type", "WeightedLocality", "--params-file", params)
	want := strings.TrimSpace(string(readFile(t, filepath.Join(policiesTestdata, "policy-manager-params.json"))))
	if p := h.policy("root.x"); string(p.GetParams()) != want || p.GetType() != managerPkg+"WeightedLocalityPolicyManager" {
		t.Fatalf("set stored %s %s", p.GetType(), p.GetParams())
	}
	h.runIn(lenient, "policy", "set", "root.y", "--type", "WeightedHomePolicyManager", "--params-file", "-")
	if p := h.policy("root.y"); string(p.GetParams()) != want || p.GetType() != managerPkg+"WeightedHomePolicyManager" {
		t.Fatalf("set from stdin stored %s %s", p.GetType(), p.GetParams())
	}
	for _, typ := range []string{"UniformBroadcast", "Home", "RejectAll"} {
		h.ok("policy", "set", "root."+typ, "--type", typ)
		if p := h.policy("root." + typ); p.GetType() != managerPkg+typ+"PolicyManager" || len(p.GetParams()) != 0 {
			t.Fatalf("%s stored %s %q", typ, p.GetType(), p.GetParams())
		}
	}

	// Delete: named queues, then a typo is reported (exit 1) after the
	// others are deleted.
	if out := h.ok("policy", "delete", "--queue", "root.a", "root.a"); out != "deleted policy for queue root.a\n" {
		t.Fatalf("delete: %q", out)
	}
	r = h.run("policy", "delete", "root.b", "root.typo", "root.typo")
	if r.code != exitError || r.out != "deleted policy for queue root.b\n" || !strings.Contains(r.err, "no policy stored for queue(s) root.typo\n") {
		t.Fatalf("delete with a typo: exit %d %q %q", r.code, r.out, r.err)
	}
	if _, err := h.store().GetPolicy("root.b"); err == nil {
		t.Fatal("root.b still stored")
	}
	h.ok("policy", "delete", "--all", "--yes")
	if all, err := h.store().ListPolicies(); err != nil || len(all) != 0 {
		t.Fatalf("after --all: %v %v", all, err)
	}
}

// Every refused configuration names what is wrong, exits 1 and changes
// nothing in the store: not the log, not the stored policies.
func TestBadPolicyInputWritesNothing(t *testing.T) {
	h := newHarness(t)
	seedPolicies(h)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodXML := string(readFile(t, filepath.Join(policiesTestdata, "federation-weights.xml")))
	// root.b's second amrm weight 0.2 -> 0.3: the sum is 1.1.
	badSecondQueue := strings.Replace(goodXML, "<weight>0.2</weight>", "<weight>0.3</weight>", 1)
	before := h.ok("policy", "list", "-o", "json")
	applied := h.store().AppliedIndex()

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"router weights do not sum to 1", []string{"policy", "save", "-s", "root.a;SC-1:0.7,SC-2:0.2;SC-1:0.6,SC-2:0.4;1.0"}, "routerPolicyWeights: weights sum to"},
		{"negative weight", []string{"policy", "save", "-s", "root.a;SC-1:1.5,SC-2:-0.5;SC-1:0.6,SC-2:0.4;1.0"}, "routerPolicyWeights[SC-2]"},
		{"amrm weight not a number", []string{"policy", "save", "-s", "root.a;SC-1:1.0;SC-1:x;1.0"}, "amrmPolicyWeights[SC-1]"},
		{"headroomAlpha above 1", []string{"policy", "save", "-s", "root.a;SC-1:1.0;SC-1:1.0;1.5"}, "headroomAlpha"},
		{"three fields", []string{"policy", "save", "-s", "root.a;SC-1:1.0;SC-1:1.0"}, "want 4 ';'-separated fields"},
		{"unknown manager", []string{"policy", "save", "-s", hadoopDocsString, "--manager", "Fancy"}, `policy manager "Fancy"`},
		{"manager without weights (Hadoop's built-in default)", []string{"policy", "save", "-s", hadoopDocsString, "--manager", managerPkg + "UniformBroadcastPolicyManager"}, "does not support queue weights"},
		{"batch file: one bad queue refuses all", []string{"policy", "batch-save", "-f", file("bad.xml", badSecondQueue)}, `queue "root.b": policies: invalid policy configuration: amrmPolicyWeights: weights sum to`},
		{"batch file: malformed XML", []string{"policy", "batch-save", "-f", file("broken.xml", "<federationWeights><weight>")}, "batch xml: malformed"},
		{"batch file: missing", []string{"policy", "batch-save", "-f", filepath.Join(dir, "nope.xml")}, "no such file"},
		{"set: malformed JSON", []string{"policy", "set", "root.a", "--type", "WeightedLocality", "--params", `{"routerPolicyWeights":`}, "malformed JSON"},
		{"set: weighted manager without params", []string{"policy", "set", "root.a", "--type", "WeightedLocality"}, "policy params: empty"},
		{"set: all-zero router weights", []string{"policy", "set", "root.a", "--type", "PriorityBroadcast", "--params", `{"routerPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"0.0"}},"headroomAlpha":"1.0"}`}, "routerPolicyWeights: all zero"},
		{"set: negative amrm weight", []string{"policy", "set", "root.a", "--type", "WeightedLocality", "--params", `{"routerPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},"amrmPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"-1.0"}},"headroomAlpha":"1.0"}`}, "amrmPolicyWeights[SC-1]: weight -1.0 is negative"},
		{"set: unknown type", []string{"policy", "set", "root.a", "--type", "Nope"}, "unknown policy type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.run(tc.args...)
			if r.code != exitError {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", r.code, exitError, r.out, r.err)
			}
			if !strings.Contains(r.err, tc.want) {
				t.Fatalf("stderr %q does not name %q", r.err, tc.want)
			}
			if r.out != "" {
				t.Fatalf("stdout %q on failure", r.out)
			}
		})
	}
	if got := h.store().AppliedIndex(); got != applied {
		t.Fatalf("refused input reached the log: applied index %d -> %d", applied, got)
	}
	if after := h.ok("policy", "list", "-o", "json"); after != before {
		t.Fatalf("policies changed:\n%s\nwas\n%s", after, before)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	h := newHarness(t)
	applied := h.store().AppliedIndex()
	want := strings.TrimSpace(string(readFile(t, filepath.Join(policiesTestdata, "policy-manager-params.json"))))
	out := h.ok("policy", "save", "-s", hadoopDocsString, "--dry-run")
	if out != "root.a\t"+managerPkg+"WeightedLocalityPolicyManager\t"+want+"\n" {
		t.Fatalf("dry-run: %q", out)
	}
	h.ok("policy", "batch-save", "-f", filepath.Join(policiesTestdata, "federation-weights.xml"), "--dry-run")
	h.ok("policy", "set", "q", "--type", "HashBroadcast", "--dry-run")
	if got := h.store().AppliedIndex(); got != applied {
		t.Fatalf("dry run wrote: %d -> %d", applied, got)
	}
}

// export -> delete -> batch-save restores the same bytes.
func TestPolicyExportRoundTrip(t *testing.T) {
	h := newHarness(t)
	seedPolicies(h)
	r := h.run("policy", "export")
	if r.code != exitOK || !strings.Contains(r.err, "skipping queue *: HashBroadcast has no weights") {
		t.Fatalf("export: exit %d %q", r.code, r.err)
	}
	// The export is Hadoop's batch file (its layout is checked against
	// Federation.md's example in policies TestBatchXMLFromDocs and read by
	// RouterCLI in e2e TestBatchXMLReadByRouterCLI). Here: its content, by
	// hand from seedPolicies: every queue with weights, sorted, '*' skipped;
	// amrmPolicyWeights before routerPolicyWeights as in the example; entries
	// in Hadoop's HashMap order (SC-2 before SC-1); numbers in
	// Float.toString form.
	type entry struct {
		ID     string `xml:"id"`
		Weight string `xml:"weight"`
	}
	type queue struct {
		Name   string  `xml:"name"`
		AMRM   []entry `xml:"amrmPolicyWeights>subClusterIdInfo"`
		Router []entry `xml:"routerPolicyWeights>subClusterIdInfo"`
		Alpha  string  `xml:"headroomAlpha"`
	}
	var doc struct {
		XMLName xml.Name `xml:"federationWeights"`
		Queues  []queue  `xml:"weight>queue"`
	}
	if err := xml.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("export is not XML: %v\n%s", err, r.out)
	}
	sc := func(w2, w1 string) []entry { return []entry{{"SC-2", w2}, {"SC-1", w1}} }
	wantQueues := []queue{
		{Name: "root.a", AMRM: sc("0.3", "0.7"), Router: sc("0.4", "0.6"), Alpha: "1.0"},
		{Name: "root.b", AMRM: sc("0.2", "0.8"), Router: sc("0.4", "0.6"), Alpha: "1.0"},
		{Name: "root.c", AMRM: sc("0.4", "0.6"), Router: sc("0.3", "0.7"), Alpha: "0.25"},
	}
	if !reflect.DeepEqual(doc.Queues, wantQueues) {
		t.Fatalf("exported queues %+v\nwant %+v\n%s", doc.Queues, wantQueues, r.out)
	}
	if ai, ri := strings.Index(r.out, "<amrmPolicyWeights>"), strings.Index(r.out, "<routerPolicyWeights>"); ai < 0 || ai > ri {
		t.Fatalf("amrmPolicyWeights does not come first:\n%s", r.out)
	}
	before := map[string]string{}
	for _, q := range []string{"root.a", "root.b", "root.c"} {
		before[q] = string(h.policy(q).GetParams())
	}
	h.ok("policy", "delete", "--all", "--yes")
	h.runIn(r.out, "policy", "batch-save", "-f", "-")
	for q, want := range before {
		if got := string(h.policy(q).GetParams()); got != want {
			t.Fatalf("%s after round trip: %s\nwant %s", q, got, want)
		}
	}
	if out := h.ok("policy", "export", "--queues", "root.b"); strings.Count(out, "<queue>") != 1 || !strings.Contains(out, "<name>root.b</name>") {
		t.Fatalf("--queues: %s", out)
	}
}

// TestPolicyPin: pin and unpin set the marker the GPG honours; list shows
// it; saving new weights keeps it; pinning a queue without a policy fails.
func TestPolicyPin(t *testing.T) {
	h := newHarness(t)
	seedPolicies(h)
	if out := h.ok("policy", "pin", "root.b", "*"); out != "queue root.b: pinned\nqueue *: pinned\n" {
		t.Fatalf("pin: %q", out)
	}
	if !h.policy("root.b").GetPinned() || h.policy("root.a").GetPinned() {
		t.Fatal("pin marker not stored on exactly the named queues")
	}
	var rows []policyRow
	if err := json.Unmarshal([]byte(h.ok("policy", "list", "-o", "json")), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Pinned != (r.Queue == "root.b" || r.Queue == "*") {
			t.Fatalf("list row %+v", r)
		}
	}
	if out := h.ok("policy", "list", "--queue", "root.b"); !strings.Contains(out, "yes") {
		t.Fatalf("table does not show the pin: %q", out)
	}
	before := h.policy("root.b").GetParams()
	h.ok("policy", "save", "-s", "root.b;SC-1:1.0;SC-1:1.0;1.0")
	if p := h.policy("root.b"); !p.GetPinned() || string(p.GetParams()) == string(before) {
		t.Fatalf("save on a pinned queue: pinned=%v params %s", p.GetPinned(), p.GetParams())
	}
	if out := h.ok("policy", "pin", "root.b"); out != "queue root.b: already pinned\n" {
		t.Fatalf("re-pin: %q", out)
	}
	h.ok("policy", "unpin", "root.b")
	if h.policy("root.b").GetPinned() {
		t.Fatal("unpin left the marker")
	}
	if r := h.run("policy", "pin", "root.nope"); r.code != exitError || !strings.Contains(r.err, "no policy stored") {
		t.Fatalf("pin of a queue without policy: exit %d, %q", r.code, r.err)
	}
	if r := h.run("policy", "pin"); r.code != exitUsage {
		t.Fatalf("pin without a queue: exit %d", r.code)
	}
}

// TestGPGLease shows the lease holder, epoch and expiry as stored.
func TestGPGLease(t *testing.T) {
	h := newHarness(t)
	if r := h.run("gpg", "lease"); r.code != exitError || !strings.Contains(r.err, "no GPG ever acquired it") {
		t.Fatalf("no lease: exit %d %q", r.code, r.err)
	}
	h.propose(store.CmdAcquireLease, &pb.AcquireLeaseCommand{Request: &pb.AcquireLeaseRequest{Name: "gpg", Holder: "gpg-a", TtlMs: 15_000},
		NowMs: fixedNow.Add(-5 * time.Second).UnixMilli()})
	out := h.ok("gpg", "lease")
	for _, want := range []string{"Holder   gpg-a", "Epoch    1", "(in 10s)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("missing %q in\n%s", want, out)
		}
	}
	var got struct {
		Holder string `json:"holder"`
		Epoch  uint64 `json:"epoch"`
		Held   bool   `json:"held"`
	}
	if err := json.Unmarshal([]byte(h.ok("gpg", "lease", "-o", "json")), &got); err != nil || got.Holder != "gpg-a" || got.Epoch != 1 || !got.Held {
		t.Fatalf("json %+v %v", got, err)
	}
}
