package policies

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func TestJavaFloatString(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want string
	}{
		{"zero", 0, "0.0"},
		{"negative zero", float32(math.Copysign(0, -1)), "-0.0"},
		{"one", 1, "1.0"},
		{"tenths", 0.7, "0.7"},
		{"third", 1.0 / 3, "0.33333334"},
		{"lower bound of plain form", 0.001, "0.001"},
		{"below plain form", 0.0001, "1.0E-4"},
		{"small mantissa", 1.5e-5, "1.5E-5"},
		{"large", 1e7, "1.0E7"},
		{"just below large", 9999999, "9999999.0"},
		{"negative", -0.25, "-0.25"},
		{"NaN", float32(math.NaN()), "NaN"},
		{"inf", float32(math.Inf(1)), "Infinity"},
		{"-inf", float32(math.Inf(-1)), "-Infinity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JavaFloatString(tt.in); got != tt.want {
				t.Errorf("JavaFloatString(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestJavaStringHash(t *testing.T) {
	// Values of java.lang.String.hashCode().
	tests := map[string]int32{
		"default": 1544803905, "SC-1": 2538484, "root.a": -925313451,
		"queue-with-a-long-name-0123456789": -1416117939, "é": 233, "😀x": 54959989, "": 0,
	}
	for s, want := range tests {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
		if got := javaStringHashNoAlloc(s); got != want {
			t.Errorf("javaStringHashNoAlloc(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestHadoopOrderMatchesDocumentation(t *testing.T) {
	// Federation.md shows Hadoop writing SC-2 before SC-1: HashMap order of
	// SubClusterIdInfo keys, not insertion or alphabetical order.
	got := HadoopOrder([]Weight{{"SC-1", 0.7}, {"SC-2", 0.3}})
	if got[0].ID != "SC-2" || got[1].ID != "SC-1" {
		t.Fatalf("order = %v, want SC-2, SC-1", got)
	}
	// Order must not depend on insertion order when buckets differ.
	got = HadoopOrder([]Weight{{"SC-2", 0.3}, {"SC-1", 0.7}})
	if got[0].ID != "SC-2" {
		t.Fatalf("order = %v, want SC-2 first", got)
	}
}

func TestPolicyParamsFromDocs(t *testing.T) {
	doc, err := os.ReadFile("testdata/policy-manager-params.json")
	if err != nil {
		t.Fatal(err)
	}
	info, err := ParseWeightedPolicyInfo(doc)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := info.RouterWeight("SC-1"); w != 0.7 {
		t.Errorf("router SC-1 = %v", w)
	}
	if w, _ := info.AMRMWeight("SC-2"); w != 0.4 {
		t.Errorf("amrm SC-2 = %v", w)
	}
	if info.HeadroomAlpha != 1 {
		t.Errorf("alpha = %v", info.HeadroomAlpha)
	}
	if got := info.MarshalHadoopJSON(); !bytes.Equal(got, doc) {
		t.Errorf("re-encoding differs:\n got %s\nwant %s", got, doc)
	}
	// The admin string of the same example must produce the same bytes
	// Hadoop's router stores.
	q, err := ParsePolicySaveString("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Info.MarshalHadoopJSON(); !bytes.Equal(got, doc) {
		t.Errorf("-s example encodes to\n %s\nwant %s", got, doc)
	}
}

func TestHadoopOrderResizedTable(t *testing.T) {
	// Thirteen keys pass HashMap's resize threshold (0.75 of 16 buckets), so
	// Hadoop iterates a 32-bucket table. Expected order: what Hadoop 3.4.3's
	// WeightedPolicyInfo map iterated for SC-1..SC-13 inserted in that
	// order, observed with e2e/PolicyOracle.java (the same comparison runs
	// in e2e TestPolicyJSONMatchesHadoop/thirteen); the first three alone
	// stay in 16 buckets.
	var ws []Weight
	for i := 1; i <= 13; i++ {
		ws = append(ws, Weight{SubClusterID(fmt.Sprintf("SC-%d", i)), 1.0 / 13})
	}
	ids := func(ws []Weight) string {
		var b []string
		for _, w := range ws {
			b = append(b, string(w.ID))
		}
		return strings.Join(b, ",")
	}
	if got, want := ids(HadoopOrder(ws)), "SC-10,SC-11,SC-12,SC-13,SC-6,SC-7,SC-4,SC-5,SC-2,SC-3,SC-1,SC-8,SC-9"; got != want {
		t.Errorf("13 keys: order %s, Hadoop's %s", got, want)
	}
	if got, want := ids(HadoopOrder(ws[:3])), "SC-2,SC-3,SC-1"; got != want {
		t.Errorf("3 keys: order %s, Hadoop's %s", got, want)
	}
}

// singleEntryParams is Hadoop's WeightedPolicyInfo JSON for router and AMRM
// weights {SC-1: 1.0} and headroomAlpha 0.5, derived by hand:
//   - WeightedPolicyInfo.initContext builds a Jersey JSONJAXBContext with
//     JSONConfiguration.DEFAULT, the "mapped" notation with no arrays
//     declared, so a list element that occurs once is written as a bare
//     object, not a one-element array: {"entry":{...}}, not {"entry":[{...}]};
//   - the class is @XmlAccessorType(FIELD): members appear in field order
//     routerPolicyWeights, amrmPolicyWeights, headroomAlpha; JAXB maps each
//     Map<SubClusterIdInfo, Float> to repeated entry{key,value}, the key
//     SubClusterIdInfo being {"id":...};
//   - mapped notation writes every simple value as a JSON string, via
//     Float.toString: 1.0f -> "1.0", 0.5f -> "0.5";
//   - toJSONString asks for formatted output, but the mapped writer ignores
//     it: no whitespace.
//
// e2e TestPolicyJSONMatchesHadoop/single checks these exact bytes against
// Hadoop 3.4.3's toByteBuffer (make test-interop).
const singleEntryParams = `{"routerPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},` +
	`"amrmPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},"headroomAlpha":"0.5"}`

func TestSingleEntryParamsAreBareObjects(t *testing.T) {
	info := &WeightedPolicyInfo{RouterWeights: []Weight{{"SC-1", 1}}, AMRMWeights: []Weight{{"SC-1", 1}}, HeadroomAlpha: 0.5}
	got := info.MarshalHadoopJSON()
	if string(got) != singleEntryParams {
		t.Errorf("single-entry params:\n got: %s\nwant: %s", got, singleEntryParams)
	}
	back, err := ParseWeightedPolicyInfo(got)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(info) {
		t.Errorf("round trip = %+v, want %+v", back, info)
	}
	// One map with a lone entry, the other with two: each map decides its
	// own form (the two-entry one is an array, SC-2 first as in
	// Federation.md's example, see TestHadoopOrderMatchesDocumentation).
	mixed := &WeightedPolicyInfo{RouterWeights: []Weight{{"SC-1", 1}}, AMRMWeights: []Weight{{"SC-1", 0.6}, {"SC-2", 0.4}}}
	want := `{"routerPolicyWeights":{"entry":{"key":{"id":"SC-1"},"value":"1.0"}},` +
		`"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-2"},"value":"0.4"},{"key":{"id":"SC-1"},"value":"0.6"}]},"headroomAlpha":"0.0"}`
	if got := mixed.MarshalHadoopJSON(); string(got) != want {
		t.Errorf("mixed params:\n got: %s\nwant: %s", got, want)
	}
}

func TestParseWeightedPolicyInfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; empty means success
		check   func(*testing.T, *WeightedPolicyInfo)
	}{
		{name: "bare numbers", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"a"},"value":0.5},{"key":{"id":"b"},"value":0.5}]},"headroomAlpha":0.25}`,
			check: func(t *testing.T, i *WeightedPolicyInfo) {
				if len(i.RouterWeights) != 2 || i.HeadroomAlpha != 0.25 || len(i.AMRMWeights) != 0 {
					t.Errorf("got %+v", i)
				}
			}},
		{name: "single entry object", in: `{"routerPolicyWeights":{"entry":{"key":{"id":""},"value":"1.0"}},"amrmPolicyWeights":{"entry":{"key":{"id":""},"value":"1.0"}},"headroomAlpha":"0.0"}`,
			check: func(t *testing.T, i *WeightedPolicyInfo) {
				if len(i.RouterWeights) != 1 || i.RouterWeights[0].ID != "" {
					t.Errorf("got %+v", i)
				}
			}},
		{name: "empty maps", in: `{"routerPolicyWeights":"","amrmPolicyWeights":null,"headroomAlpha":"1.0"}`},
		{name: "java suffix and spaces", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"a"},"value":" 1.0f "}]}}`},
		{name: "empty input", in: ``, wantErr: "empty"},
		{name: "not an object", in: `[1]`, wantErr: "expected a JSON object"},
		{name: "malformed", in: `{"routerPolicyWeights":`, wantErr: "malformed JSON"},
		{name: "negative", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"-0.5"}]}}`, wantErr: "routerPolicyWeights[SC-1]: weight -0.5 is negative"},
		{name: "NaN", in: `{"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"NaN"}]}}`, wantErr: "amrmPolicyWeights[SC-1]: weight is NaN"},
		{name: "infinite", in: `{"amrmPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"Infinity"}]}}`, wantErr: "infinite"},
		{name: "not a number", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"lots"}]}}`, wantErr: `routerPolicyWeights[SC-1]: "lots" is not a number`},
		{name: "missing key", in: `{"routerPolicyWeights":{"entry":[{"value":"1"}]}}`, wantErr: "routerPolicyWeights.entry[0]: missing key.id"},
		{name: "missing value", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"x"}}]}}`, wantErr: "routerPolicyWeights[x]: missing value"},
		{name: "duplicate id", in: `{"routerPolicyWeights":{"entry":[{"key":{"id":"x"},"value":"1"},{"key":{"id":"x"},"value":"1"}]}}`, wantErr: "duplicate sub-cluster id"},
		{name: "alpha out of range", in: `{"headroomAlpha":"1.5"}`, wantErr: "headroomAlpha: 1.5 is not between 0 and 1"},
		{name: "alpha garbage", in: `{"headroomAlpha":{}}`, wantErr: "headroomAlpha"},
		{name: "wrong map member", in: `{"routerPolicyWeights":{"entries":[]}}`, wantErr: `unexpected member "entries"`},
		{name: "entry scalar", in: `{"routerPolicyWeights":{"entry":5}}`, wantErr: "expected an array or an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := ParseWeightedPolicyInfo([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("err %v does not wrap ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, info)
			}
		})
	}
}

func TestParseCapability(t *testing.T) {
	c, err := ParseCapability([]byte(`{"clusterMetrics":{"appsPending":3,"availableMB":"8192","availableVirtualCores":4,"totalMB":16384,"activeNodes":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Capability{AvailableMB: 8192, AvailableVCores: 4, TotalMB: 16384, AppsPending: 3, ActiveNodes: 2}
	if c != want {
		t.Errorf("got %+v, want %+v", c, want)
	}
	for name, in := range map[string]string{
		"not json": `x`, "no metrics": `{}`, "fractional": `{"clusterMetrics":{"availableMB":1.5}}`,
	} {
		if _, err := ParseCapability([]byte(in)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func FuzzParseWeightedPolicyInfo(f *testing.F) {
	doc, _ := os.ReadFile("testdata/policy-manager-params.json")
	f.Add(doc)
	f.Add([]byte(`{"routerPolicyWeights":{"entry":{"key":{"id":""},"value":"1.0"}},"headroomAlpha":"0.0"}`))
	f.Add([]byte(`{"amrmPolicyWeights":{"entry":[{"key":{"id":"a"},"value":1e-5}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseWeightedPolicyInfo(b)
		if err != nil {
			return
		}
		// decode(encode(x)) == x, and encoding is a fixed point.
		enc := info.MarshalHadoopJSON()
		back, err := ParseWeightedPolicyInfo(enc)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		if !back.Equal(info) {
			t.Fatalf("round trip changed %+v to %+v", info, back)
		}
		if enc2 := back.MarshalHadoopJSON(); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %s vs %s", enc, enc2)
		}
	})
}

func FuzzParseCapability(f *testing.F) {
	f.Add([]byte(`{"clusterMetrics":{"availableMB":8192,"appsPending":"2"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseCapability(b) // must not panic
	})
}
