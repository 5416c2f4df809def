package policies

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestParsePolicySaveString(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // FormatPolicySaveString of the result
		wantErr string
	}{
		{name: "documentation example", in: "root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0", want: "root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0"},
		{name: "java split drops trailing empty field", in: "root.a;SC-1:1;SC-1:1;0;;", want: "root.a;SC-1:1.0;SC-1:1.0;0.0"},
		{name: "within tolerance", in: "q;a:0.3333333,b:0.6666667;a:1;0.5", want: "q;a:0.3333333,b:0.6666667;a:1.0;0.5"},
		{name: "zero weight allowed", in: "q;a:1,b:0;a:1;1", want: "q;a:1.0,b:0.0;a:1.0;1.0"},
		{name: "three fields", in: "root.a;SC-1:1;1.0", wantErr: "want 4 ';'-separated fields"},
		{name: "empty queue", in: " ;SC-1:1;SC-1:1;1", wantErr: "queue: empty"},
		{name: "sum too small", in: "q;SC-1:0.5,SC-2:0.4;SC-1:1;1", wantErr: "routerPolicyWeights: weights sum to 0.9, must sum to 1"},
		{name: "amrm sum", in: "q;SC-1:1;SC-1:0.5;1", wantErr: "amrmPolicyWeights: weights sum to 0.5"},
		{name: "negative", in: "q;SC-1:1.5,SC-2:-0.5;SC-1:1;1", wantErr: "routerPolicyWeights[SC-2]: weight -0.5 must be a finite number >= 0"},
		{name: "NaN", in: "q;SC-1:NaN;SC-1:1;1", wantErr: "routerPolicyWeights[SC-1]: weight NaN"},
		{name: "no colon", in: "q;SC-1;SC-1:1;1", wantErr: `"SC-1" is not of the form SubClusterId:weight`},
		{name: "two colons", in: "q;SC-1:0.5:1;SC-1:1;1", wantErr: "is not of the form"},
		{name: "empty id", in: "q;:1;SC-1:1;1", wantErr: "empty sub-cluster id"},
		{name: "duplicate id", in: "q;a:0.5,a:0.5;a:1;1", wantErr: `duplicate sub-cluster id "a"`},
		{name: "bad number", in: "q;a:x;a:1;1", wantErr: `routerPolicyWeights[a]: "x" is not a number`},
		{name: "alpha too big", in: "q;a:1;a:1;2", wantErr: "headroomAlpha: 2 is not between 0 and 1"},
		{name: "alpha not a number", in: "q;a:1;a:1;high", wantErr: "headroomAlpha"},
		{name: "empty weights", in: "q; ;a:1;1", wantErr: "routerPolicyWeights: empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := ParsePolicySaveString(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("err does not wrap ErrInvalidConfig: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := FormatPolicySaveString(q); got != tt.want {
				t.Errorf("formatted = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHadoopListFormat(t *testing.T) {
	// `routeradmin -policy -l` prints weights in HashMap order.
	q, err := ParsePolicySaveString("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatWeightString(HadoopOrder(q.Info.RouterWeights)); got != "SC-2:0.3,SC-1:0.7" {
		t.Errorf("got %q", got)
	}
}

func TestBatchXMLFromDocs(t *testing.T) {
	f, err := os.Open("testdata/federation-weights.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := ParseBatchXML(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Queue != "root.a" || qs[1].Queue != "root.b" {
		t.Fatalf("queues = %+v", qs)
	}
	if got := FormatPolicySaveString(qs[0]); got != "root.a;SC-1:0.6,SC-2:0.4;SC-1:0.7,SC-2:0.3;1.0" {
		t.Errorf("root.a = %q", got)
	}
	if got := FormatPolicySaveString(qs[1]); got != "root.b;SC-1:0.6,SC-2:0.4;SC-1:0.8,SC-2:0.2;1.0" {
		t.Errorf("root.b = %q", got)
	}
	// The expected document is Hadoop's own example (testdata/
	// federation-weights.xml, copied from Federation.md): the same elements
	// in the same order (amrmPolicyWeights before routerPolicyWeights, as the
	// example has them; RouterCLI looks each up by tag name), each weight in
	// Float.toString form. Only the indentation between tags is ours, so the
	// comparison drops whitespace between tags. e2e TestBatchXMLReadByRouterCLI
	// feeds MarshalBatchXML's output to RouterCLI's own parser.
	out := MarshalBatchXML(qs)
	doc, err := os.ReadFile("testdata/federation-weights.xml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tagsOnly(out), tagsOnly(doc); got != want {
		t.Errorf("MarshalBatchXML differs from Hadoop's example:\n got: %s\nwant: %s", got, want)
	}
	if !bytes.HasPrefix(out, []byte("<federationWeights>\n  <weight>\n    <queue>\n      <name>root.a</name>\n")) || !bytes.HasSuffix(out, []byte("</federationWeights>\n")) {
		t.Errorf("layout: two-space indentation, one element per line, final newline:\n%s", out)
	}
	back, err := ParseBatchXML(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for i := range qs {
		if back[i].Queue != qs[i].Queue || !back[i].Info.Equal(&qs[i].Info) {
			t.Errorf("round trip [%d] = %+v, want %+v", i, back[i], qs[i])
		}
	}
	// Stored form: the config of a weighted manager with Hadoop JSON params.
	cfg := qs[0].Config(javaManagerPkg + "WeightedLocalityPolicyManager")
	if _, err := NewDefaultRegistry().NewManager(cfg, Env{}); err != nil {
		t.Errorf("stored config does not build: %v", err)
	}
}

func TestParseBatchXMLErrors(t *testing.T) {
	q := func(body string) string {
		return "<federationWeights><weight><queue>" + body + "</queue></weight></federationWeights>"
	}
	w := func(tag, items string) string { return "<" + tag + ">" + items + "</" + tag + ">" }
	sc := func(id, wt string) string {
		return "<subClusterIdInfo><id>" + id + "</id><weight>" + wt + "</weight></subClusterIdInfo>"
	}
	ok := w("amrmPolicyWeights", sc("SC-1", "1")) + w("routerPolicyWeights", sc("SC-1", "1"))
	tests := []struct{ name, in, wantErr string }{
		{"malformed", "<federationWeights><weight>", "malformed"},
		{"wrong root", "<weights/>", "malformed"},
		{"no queues", "<federationWeights/>", "no <queue> elements"},
		{"no name", q(ok + "<headroomAlpha>1</headroomAlpha>"), "batch xml: queue[0]: policies: invalid policy configuration: missing <name>"},
		{"no alpha", q("<name>a</name>" + ok), `queue "a": policies: invalid policy configuration: missing <headroomAlpha>`},
		{"no router weights", q("<name>a</name>" + w("amrmPolicyWeights", sc("SC-1", "1")) + "<headroomAlpha>1</headroomAlpha>"), "missing <routerPolicyWeights>"},
		{"sum", q("<name>a</name>" + w("amrmPolicyWeights", sc("SC-1", "0.5")) + w("routerPolicyWeights", sc("SC-1", "1")) + "<headroomAlpha>1</headroomAlpha>"), `queue "a": policies: invalid policy configuration: amrmPolicyWeights: weights sum to 0.5`},
		{"missing id", q("<name>a</name>" + w("amrmPolicyWeights", "<subClusterIdInfo><weight>1</weight></subClusterIdInfo>") + w("routerPolicyWeights", sc("SC-1", "1")) + "<headroomAlpha>1</headroomAlpha>"), "needs <id> and <weight>"},
		{"separator in id", q("<name>a</name>" + w("amrmPolicyWeights", sc("SC:1", "1")) + w("routerPolicyWeights", sc("SC-1", "1")) + "<headroomAlpha>1</headroomAlpha>"), "not allowed"},
		{"duplicate queue", "<federationWeights><queue><name>a</name>" + ok + "<headroomAlpha>1</headroomAlpha></queue><queue><name>a</name>" + ok + "<headroomAlpha>1</headroomAlpha></queue></federationWeights>", "queue defined twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBatchXML(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("err does not wrap ErrInvalidConfig: %v", err)
			}
		})
	}
}

func FuzzParsePolicySaveString(f *testing.F) {
	f.Add("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	f.Add("q;a:1;a:1;0;;")
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParsePolicySaveString(s)
		if err != nil {
			return
		}
		again, err := ParsePolicySaveString(FormatPolicySaveString(q))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", FormatPolicySaveString(q), err)
		}
		if again.Queue != q.Queue || !again.Info.Equal(&q.Info) {
			t.Fatalf("round trip %+v -> %+v", q, again)
		}
	})
}

func FuzzParseBatchXML(f *testing.F) {
	doc, _ := os.ReadFile("testdata/federation-weights.xml")
	f.Add(doc)
	f.Add([]byte("<federationWeights><queue><name>a</name><amrmPolicyWeights/><routerPolicyWeights/><headroomAlpha>1</headroomAlpha></queue></federationWeights>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, err := ParseBatchXML(bytes.NewReader(b))
		if err != nil {
			return
		}
		back, err := ParseBatchXML(bytes.NewReader(MarshalBatchXML(qs)))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(back) != len(qs) {
			t.Fatalf("round trip lost queues: %d -> %d", len(qs), len(back))
		}
		for i := range qs {
			if back[i].Queue != qs[i].Queue || !back[i].Info.Equal(&qs[i].Info) {
				t.Fatalf("round trip [%d] %+v -> %+v", i, qs[i], back[i])
			}
		}
	})
}

func TestQueuePolicyConfigAndListing(t *testing.T) {
	reg := NewDefaultRegistry()
	q, err := ParsePolicySaveString("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := reg.QueuePolicyConfig(q, "WeightedLocality", Env{})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := os.ReadFile("testdata/policy-manager-params.json")
	if cfg.Type != javaManagerPkg+"WeightedLocalityPolicyManager" || cfg.Queue != "root.a" || !bytes.Equal(cfg.Params, doc) {
		t.Errorf("config = %q %q %s", cfg.Queue, cfg.Type, cfg.Params)
	}
	qw, err := QueueWeightOf(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := QueueWeight{Queue: "root.a", RouterWeight: "SC-2:0.3,SC-1:0.7", AmrmWeight: "SC-2:0.4,SC-1:0.6",
		HeadRoomAlpha: "1.0", PolicyManagerClassName: cfg.Type}
	if qw != want {
		t.Errorf("listing = %+v, want %+v", qw, want)
	}
	if _, err := reg.QueuePolicyConfig(q, "UniformBroadcast", Env{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("unweighted manager: err = %v", err)
	}
	if _, err := reg.QueuePolicyConfig(q, "Bogus", Env{}); !errors.Is(err, ErrUnknownPolicyType) {
		t.Errorf("unknown manager: err = %v", err)
	}
	if _, err := QueueWeightOf(PolicyConfig{Queue: "x", Params: []byte("{")}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad stored params: err = %v", err)
	}
}

// tagsOnly drops the whitespace between an element's tags and the next, the
// part of an XML document that carries no data here.
func tagsOnly(b []byte) string {
	return strings.TrimSpace(regexp.MustCompile(`>\s+<`).ReplaceAllString(string(b), "><"))
}
