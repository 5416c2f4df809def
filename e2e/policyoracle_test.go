//go:build interop

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yarnfed/yarnfed/policies"
)

// The policy formats yarnfed writes, checked against Hadoop's own classes
// (PolicyOracle.java): WeightedPolicyInfo.toByteBuffer / fromByteBuffer for
// the JSON the store holds, HashMap iteration for the order Hadoop writes and
// lists weights in, and RouterCLI's `-policy -bs --format xml` parser for
// the file `yarnfedctl policy export` writes. These replace golden files our
// own code had produced.

// oracleCase is one WeightedPolicyInfo, as Go values and as the driver's
// weight strings.
type oracleCase struct {
	name          string
	router, amrm  []policies.Weight
	headroomAlpha float32
}

func weightSpec(ws []policies.Weight) string {
	if len(ws) == 0 {
		return "-"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		// Go's shortest float32 form parses back to the same float32 in
		// Java's Float.parseFloat, so both sides hold the same value.
		parts[i] = fmt.Sprintf("%s:%s", w.ID, fmt.Sprint(w.Value))
	}
	return strings.Join(parts, ",")
}

// javaEntries is how the driver prints a map: "id:Float.toString(w)" in
// iteration order.
func javaEntries(ws []policies.Weight) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w.ID) + ":" + policies.JavaFloatString(w.Value)
	}
	return out
}

func oracleCases() []oracleCase {
	w := func(pairs ...any) []policies.Weight {
		var ws []policies.Weight
		for i := 0; i < len(pairs); i += 2 {
			ws = append(ws, policies.Weight{ID: policies.SubClusterID(pairs[i].(string)), Value: float32(pairs[i+1].(float64))})
		}
		return ws
	}
	// Thirteen sub-clusters: more than 0.75 of HashMap's 16 default buckets,
	// so Hadoop's map has resized to 32 and the order follows the new table.
	var many []policies.Weight
	for i := 1; i <= 13; i++ {
		many = append(many, policies.Weight{ID: policies.SubClusterID(fmt.Sprintf("SC-%d", i)), Value: 1.0 / 13})
	}
	return []oracleCase{
		// The "lone map entry" rule: Jersey's mapped notation writes a
		// one-element list as a bare object, not a one-element array.
		{name: "single", router: w("SC-1", 1.0), amrm: w("SC-1", 1.0), headroomAlpha: 0.5},
		{name: "docs", router: w("SC-1", 0.7, "SC-2", 0.3), amrm: w("SC-1", 0.6, "SC-2", 0.4), headroomAlpha: 1},
		{name: "insertion order irrelevant", router: w("SC-2", 0.3, "SC-1", 0.7), amrm: w("SC-2", 0.4, "SC-1", 0.6), headroomAlpha: 1},
		{name: "single and pair", router: w("east", 1.0), amrm: w("east", 0.25, "west", 0.75), headroomAlpha: 0},
		{name: "float forms", router: w("a", 1.0/3, "b", 2.0/3, "c", 0.0), amrm: w("a", 0.0001, "b", 1e7), headroomAlpha: 0.001},
		{name: "thirteen", router: many, amrm: many[:3], headroomAlpha: 0.75},
		// JSON string escaping: Jersey escapes '"' and '\\', leaves '/', '<',
		// '&' and non-ASCII as they are.
		{name: "escaping", router: w("a/b", 0.5, `c"d`, 0.25, `x\y`, 0.25), amrm: w("<&>", 1.0), headroomAlpha: 1},
		{name: "names", router: w("subcluster-east-1", 0.5, "SC_2", 0.5, "x", 0.0, "été", 0.0), amrm: w("x", 1.0), headroomAlpha: 0.25},
	}
}

func TestPolicyJSONMatchesHadoop(t *testing.T) {
	j := needJava(t)
	cases := oracleCases()
	var args []string
	ours := map[string][]byte{}
	for _, c := range cases {
		info := &policies.WeightedPolicyInfo{RouterWeights: c.router, AMRMWeights: c.amrm, HeadroomAlpha: c.headroomAlpha}
		ours[c.name] = info.MarshalHadoopJSON()
		args = append(args,
			strings.Join([]string{"encode", c.name, weightSpec(c.router), weightSpec(c.amrm), fmt.Sprint(c.headroomAlpha)}, "\t"),
			strings.Join([]string{"decode", c.name, string(ours[c.name])}, "\t"))
	}
	run := j.runDriver(t, "PolicyOracle", args...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var enc struct {
				JSON   string   `json:"json"`
				Router []string `json:"router"`
				AMRM   []string `json:"amrm"`
			}
			run.op(t, "encode:"+c.name).decode(t, &enc)
			// Hadoop's bytes are deterministic for non-empty maps (HashMap
			// order is a function of the keys and the table size), so ours
			// must be the same bytes.
			if string(ours[c.name]) != enc.JSON {
				t.Errorf("WeightedPolicyInfo JSON differs from Hadoop's toByteBuffer:\n ours:   %s\n hadoop: %s", ours[c.name], enc.JSON)
			}
			// The order HadoopOrder predicts is Hadoop's iteration order
			// (what `routeradmin -policy -l` and yarnfedctl print).
			if got := javaEntries(policies.HadoopOrder(c.router)); !slices.Equal(got, enc.Router) {
				t.Errorf("router order: HadoopOrder %v, Hadoop's HashMap %v", got, enc.Router)
			}
			if got := javaEntries(policies.HadoopOrder(c.amrm)); !slices.Equal(got, enc.AMRM) {
				t.Errorf("amrm order: HadoopOrder %v, Hadoop's HashMap %v", got, enc.AMRM)
			}
			// Hadoop reads our bytes back to the same values.
			var dec struct {
				Router        []string `json:"router"`
				AMRM          []string `json:"amrm"`
				HeadroomAlpha string   `json:"headroomAlpha"`
			}
			run.op(t, "decode:"+c.name).decode(t, &dec)
			if !slices.Equal(dec.Router, enc.Router) || !slices.Equal(dec.AMRM, enc.AMRM) || dec.HeadroomAlpha != policies.JavaFloatString(c.headroomAlpha) {
				t.Errorf("Hadoop read our %s as router %v amrm %v alpha %s", ours[c.name], dec.Router, dec.AMRM, dec.HeadroomAlpha)
			}
			// And we read Hadoop's bytes back to the same values.
			back, err := policies.ParseWeightedPolicyInfo([]byte(enc.JSON))
			if err != nil {
				t.Fatalf("parsing Hadoop's %s: %v", enc.JSON, err)
			}
			want := &policies.WeightedPolicyInfo{RouterWeights: c.router, AMRMWeights: c.amrm, HeadroomAlpha: c.headroomAlpha}
			if !back.Equal(want) {
				t.Errorf("we read Hadoop's %s as %+v, want %+v", enc.JSON, back, want)
			}
		})
	}
}

// TestPolicyJSONEmptyMapsWithHadoop covers the one place our bytes differ
// from Hadoop's on purpose: Hadoop writes an empty weight map as null, we
// omit the member. Hadoop must read our form as empty maps, and we must
// read Hadoop's null.
func TestPolicyJSONEmptyMapsWithHadoop(t *testing.T) {
	j := needJava(t)
	info := &policies.WeightedPolicyInfo{HeadroomAlpha: 0.5}
	ours := info.MarshalHadoopJSON()
	run := j.runDriver(t, "PolicyOracle",
		"encode\tempty\t-\t-\t0.5",
		"decode\tempty\t"+string(ours))
	var enc struct {
		JSON string `json:"json"`
	}
	run.op(t, "encode:empty").decode(t, &enc)
	t.Logf("Hadoop writes %s; we write %s", enc.JSON, ours)
	var dec struct {
		Router        []string `json:"router"`
		AMRM          []string `json:"amrm"`
		HeadroomAlpha string   `json:"headroomAlpha"`
	}
	run.op(t, "decode:empty").decode(t, &dec)
	if len(dec.Router) != 0 || len(dec.AMRM) != 0 || dec.HeadroomAlpha != "0.5" {
		t.Errorf("Hadoop read our %s as %+v", ours, dec)
	}
	back, err := policies.ParseWeightedPolicyInfo([]byte(enc.JSON))
	if err != nil {
		t.Fatalf("parsing Hadoop's %s: %v", enc.JSON, err)
	}
	if !back.Equal(info) {
		t.Errorf("we read Hadoop's %s as %+v", enc.JSON, back)
	}
}

// TestBatchXMLReadByRouterCLI feeds MarshalBatchXML's output (what
// `yarnfedctl policy export` writes) to the parser `yarn routeradmin -policy
// -bs --format xml` runs, and checks Hadoop reads every queue, weight list
// and alpha we meant, in our order (RouterCLI joins the entries in document
// order).
func TestBatchXMLReadByRouterCLI(t *testing.T) {
	j := needJava(t)
	var qs []policies.QueuePolicy
	for _, c := range oracleCases() {
		if len(c.router) == 0 || len(c.amrm) == 0 {
			continue
		}
		qs = append(qs, policies.QueuePolicy{Queue: "root." + strings.ReplaceAll(c.name, " ", "_"),
			Info: policies.WeightedPolicyInfo{RouterWeights: policies.HadoopOrder(c.router), AMRMWeights: policies.HadoopOrder(c.amrm), HeadroomAlpha: c.headroomAlpha}})
	}
	path := filepath.Join(t.TempDir(), "weights.xml")
	if err := os.WriteFile(path, policies.MarshalBatchXML(qs), 0o644); err != nil {
		t.Fatal(err)
	}
	run := j.runDriver(t, "PolicyOracle", "xml\texport\t"+path)
	var got struct {
		Queues []struct {
			Queue         string `json:"queue"`
			RouterWeight  string `json:"routerWeight"`
			AMRMWeight    string `json:"amrmWeight"`
			HeadroomAlpha string `json:"headroomAlpha"`
		} `json:"queues"`
	}
	run.op(t, "xml:export").decode(t, &got)
	if len(got.Queues) != len(qs) {
		t.Fatalf("RouterCLI read %d queues, we wrote %d", len(got.Queues), len(qs))
	}
	for i, q := range qs {
		g := got.Queues[i]
		if g.Queue != q.Queue || g.RouterWeight != policies.FormatWeightString(q.Info.RouterWeights) ||
			g.AMRMWeight != policies.FormatWeightString(q.Info.AMRMWeights) || g.HeadroomAlpha != policies.JavaFloatString(q.Info.HeadroomAlpha) {
			t.Errorf("queue %d: RouterCLI read %+v from our %+v", i, g, q)
		}
	}
}
