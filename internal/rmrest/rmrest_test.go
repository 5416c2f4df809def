package rmrest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseAppsQuery(t *testing.T) {
	cases := []struct {
		name    string
		query   string
		want    AppsQuery
		wantErr string
	}{
		{name: "empty", query: "", want: AppsQuery{}},
		{name: "states mixed case and deprecated state", query: "states=running,Accepted&state=killed",
			want: AppsQuery{States: []string{"RUNNING", "ACCEPTED", "KILLED"}}},
		{name: "lists trimmed and deduplicated", query: "applicationTypes=MAPREDUCE,%20spark,,MAPREDUCE&applicationTags=a,b",
			want: AppsQuery{ApplicationTypes: []string{"MAPREDUCE", "spark"}, ApplicationTags: []string{"a", "b"}}},
		{name: "scalars", query: "user=u&queue=q&name=n&limit=5&finalStatus=succeeded&startedTimeBegin=1&startedTimeEnd=2",
			want: AppsQuery{User: "u", Queue: "q", Name: "n", Limit: 5, FinalStatus: "SUCCEEDED", StartedTimeBegin: 1, StartedTimeEnd: 2}},
		{name: "bad state", query: "states=DONE", wantErr: "Invalid application-state DONE"},
		{name: "zero limit", query: "limit=0", wantErr: "limit value must be greater then 0"},
		{name: "junk limit", query: "limit=x", wantErr: "limit value"},
		{name: "negative time", query: "finishedTimeBegin=-1", wantErr: "finishedTimeBegin must be greater than 0"},
		{name: "inverted range", query: "startedTimeBegin=5&startedTimeEnd=4", wantErr: "startedTimeEnd must be greater"},
		{name: "bad final status", query: "finalStatus=meh", wantErr: "Invalid final-status"},
		{name: "too many values", query: "applicationTags=" + strings.Repeat("a,", maxQueryValues+1), wantErr: "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseAppsQuery(v)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzParseAppsQuery: no panic, bounded output, and a parsed query survives
// an encode/parse round trip unchanged.
func FuzzParseAppsQuery(f *testing.F) {
	for _, s := range []string{"", "states=running,accepted", "limit=3&user=u", "applicationTags=a,,b&deSelects=resourceRequests",
		"startedTimeBegin=1&startedTimeEnd=9&finalStatus=FAILED", "state=new&states=KILLED&name=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := ParseAppsQuery(v)
		if err != nil {
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("error not wrapping ErrBadQuery: %v", err)
			}
			return
		}
		if len(q.ApplicationTags) > maxQueryValues || len(q.ApplicationTypes) > maxQueryValues {
			t.Fatal("unbounded list")
		}
		back, err := ParseAppsQuery(q.Values())
		if err != nil {
			t.Fatalf("re-parse of %v: %v", q.Values(), err)
		}
		if !reflect.DeepEqual(back, q) {
			t.Fatalf("round trip: %+v != %+v", back, q)
		}
	})
}

// Hadoop's documented examples decode into these types.
func TestDecodeHadoopDocuments(t *testing.T) {
	const metrics = `{"clusterMetrics":{"appsSubmitted":0,"appsCompleted":0,"appsPending":0,"appsRunning":0,"appsFailed":0,"appsKilled":0,
"reservedMB":0,"availableMB":17408,"allocatedMB":0,"reservedVirtualCores":0,"availableVirtualCores":7,"allocatedVirtualCores":1,
"containersAllocated":0,"containersReserved":0,"containersPending":0,"totalMB":17408,"totalVirtualCores":8,"totalNodes":1,
"lostNodes":0,"unhealthyNodes":0,"decommissionedNodes":0,"rebootedNodes":0,"activeNodes":1}}`
	var m ClusterMetricsResponse
	if err := json.Unmarshal([]byte(metrics), &m); err != nil || m.ClusterMetrics.AvailableMB != 17408 || m.ClusterMetrics.ActiveNodes != 1 {
		t.Fatalf("metrics: %+v %v", m, err)
	}
	const apps = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<apps><app><id>application_1326815542473_0001</id><user>user1</user><name>word count</name><applicationType>MAPREDUCE</applicationType>
<queue>default</queue><state>FINISHED</state><finalStatus>SUCCEEDED</finalStatus><progress>100.0</progress><clusterId>1326815542473</clusterId>
<unmanagedApplication>false</unmanagedApplication></app></apps>`
	var a Apps
	if err := xml.Unmarshal([]byte(apps), &a); err != nil || len(a.App) != 1 || a.App[0].Progress != 100 || a.App[0].ClusterID != 1326815542473 {
		t.Fatalf("apps xml: %+v %v", a, err)
	}
	var empty AppsResponse
	if err := json.Unmarshal([]byte(`{"apps":{}}`), &empty); err != nil || empty.Apps.App != nil {
		t.Fatalf("empty apps: %v", err)
	}
	const na = `{"application-id":"application_1404198295326_0003","maximum-resource-capability":{"memory":8192,"vCores":32}}`
	var n NewApplication
	if err := json.Unmarshal([]byte(na), &n); err != nil || n.MaximumResourceCapability.VCores != 32 {
		t.Fatalf("new application: %+v %v", n, err)
	}
}

func TestClientErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("user.name") != "u" {
			t.Errorf("user.name not sent: %s", r.URL)
		}
		switch r.URL.Path {
		case "/ws/v1/cluster/apps/application_1_0001":
			w.WriteHeader(404)
			w.Write([]byte(`{"RemoteException":{"exception":"NotFoundException","message":"app with id: application_1_0001 not found","javaClassName":"org.apache.hadoop.yarn.webapp.NotFoundException"}}`))
		case "/ws/v1/cluster/info":
			w.WriteHeader(502)
			w.Write([]byte("bad gateway"))
		default:
			w.Write([]byte(`{"apps":{"app":[{"id":"application_1_0002","state":"RUNNING"}]}}`))
		}
	}))
	defer srv.Close()
	cl := NewClient(srv.URL)
	cl.User = "u"
	ctx := context.Background()
	_, err := cl.GetApp(ctx, "application_1_0001")
	var re *Error
	if !errors.As(err, &re) || re.Status != 404 || re.JavaClassName != ClassNotFound {
		t.Fatalf("404: %v", err)
	}
	if _, err := cl.GetClusterInfo(ctx); !errors.Is(err, ErrHTTP) {
		t.Fatalf("502: %v", err)
	}
	apps, err := cl.GetApps(ctx, AppsQuery{States: []string{"RUNNING"}})
	if err != nil || len(apps) != 1 || apps[0].ID != "application_1_0002" {
		t.Fatalf("apps %v %v", apps, err)
	}
}

func TestLongMap(t *testing.T) {
	const hadoop = `{"resourceSecondsMap":{"entry":{"key":"memory-mb","value":"12"},"entry":{"key":"vcores","value":"3"}}}`
	var v struct {
		M LongMap `json:"resourceSecondsMap"`
	}
	if err := json.Unmarshal([]byte(hadoop), &v); err != nil {
		t.Fatal(err)
	}
	if mb, ok := v.M.Get("memory-mb"); !ok || mb != 12 || len(v.M) != 2 {
		t.Fatalf("decoded %+v", v.M)
	}
	out, err := json.Marshal(v)
	if err != nil || string(out) != hadoop {
		t.Fatalf("encoded %s %v", out, err)
	}
	cases := []struct {
		name, in string
		n        int
		wantErr  bool
	}{
		{"empty", `{}`, 0, false},
		{"null", `null`, 0, false},
		{"array form", `{"entry":[{"key":"a","value":"1"},{"key":"b","value":"2"}]}`, 2, false},
		{"other members ignored", `{"x":1,"entry":{"key":"a","value":"1"}}`, 1, false},
		{"not an object", `[1]`, 0, true},
		{"bad entry", `{"entry":5}`, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m LongMap
			err := json.Unmarshal([]byte(tc.in), &m)
			if (err != nil) != tc.wantErr || (!tc.wantErr && len(m) != tc.n) {
				t.Fatalf("got %v %v", m, err)
			}
		})
	}
}

// FuzzLongMap: decoding never panics, stays bounded, and what decodes
// re-encodes to an equal map.
func FuzzLongMap(f *testing.F) {
	f.Add([]byte(`{"entry":{"key":"memory-mb","value":"0"},"entry":{"key":"vcores","value":"0"}}`))
	f.Add([]byte(`{"entry":[{"key":"a","value":"1"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m LongMap
		if err := m.UnmarshalJSON(b); err != nil {
			return
		}
		if len(m) > maxMapEntries {
			t.Fatal("unbounded map")
		}
		enc, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back LongMap
		if err := back.UnmarshalJSON(enc); err != nil || len(back) != len(m) {
			t.Fatalf("round trip %s: %v", enc, err)
		}
		for i := range m {
			// encoding/json replaces invalid UTF-8; only valid strings survive as they are.
			if utf8.ValidString(m[i].Key) && utf8.ValidString(m[i].Value) && back[i] != m[i] {
				t.Fatalf("round trip entry %d: %+v != %+v", i, back[i], m[i])
			}
		}
	})
}

// FuzzLongMapFastPath: whatever the fast reader of the RMs' usual form
// accepts, the general decoder reads the same.
func FuzzLongMapFastPath(f *testing.F) {
	f.Add([]byte(`{"entry":{"key":"memory-mb","value":"0"},"entry":{"key":"vcores","value":"0"}}`))
	f.Add([]byte(` { "entry" : { "key" : "a" , "value" : "1" } } `))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"entry":{"key":"a\u0041","value":"1"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := fastLongMap(b)
		if !ok {
			return
		}
		var slow LongMap
		if !json.Valid(b) {
			t.Fatalf("fast path accepted invalid JSON %q", b)
		}
		if err := slow.decodeGeneral(b); err != nil {
			t.Fatalf("fast path accepted %q, the decoder refuses it: %v", b, err)
		}
		if len(fast) != len(slow) || (len(fast) > 0 && !reflect.DeepEqual(fast, slow)) {
			t.Fatalf("%q: fast %+v, decoder %+v", b, fast, slow)
		}
	})
}

// TestAppKeepsEmptyLabelExpressions: the router re-renders the RM's app
// documents; an empty amNodeLabelExpression the RM sent must stay, a
// missing one stay missing (it once dropped the empty ones).
func TestAppKeepsEmptyLabelExpressions(t *testing.T) {
	in := `{"app":{"id":"application_1_0001","amNodeLabelExpression":"","resourceSecondsMap":{}}}`
	var r AppResponse
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"amNodeLabelExpression":""`) {
		t.Errorf("JSON lost the empty amNodeLabelExpression: %s", out)
	}
	if strings.Contains(string(out), `appNodeLabelExpression`) {
		t.Errorf("JSON invented an appNodeLabelExpression: %s", out)
	}
	x, err := xml.Marshal(Apps{App: []App{r.App}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `<app><id>application_1_0001</id>`) || !strings.Contains(string(x), `<amNodeLabelExpression></amNodeLabelExpression>`) ||
		strings.Contains(string(x), "appNodeLabelExpression") {
		t.Errorf("XML: %s", x)
	}
	if x, _ := xml.Marshal(r.App); !strings.HasPrefix(string(x), "<app><id>") {
		t.Errorf("root XML: %s", x)
	}
	// A set expression survives either way.
	var r2 AppResponse
	_ = json.Unmarshal([]byte(`{"app":{"id":"a","appNodeLabelExpression":"gpu"}}`), &r2)
	if out, _ := json.Marshal(r2.App); !strings.Contains(string(out), `"appNodeLabelExpression":"gpu"`) || strings.Contains(string(out), "amNodeLabel") {
		t.Errorf("%s", out)
	}
}

// FuzzAppJSON: App's own JSON codec (it keeps empty label expressions)
// never panics on an RM's document, and what it renders decodes to the
// same App.
func FuzzAppJSON(f *testing.F) {
	f.Add(`{"id":"application_1_0001","amNodeLabelExpression":"","resourceSecondsMap":{}}`)
	f.Add(`{"appNodeLabelExpression":"gpu","timeouts":{"timeout":[{"type":"LIFETIME"}]}}`)
	f.Add(`{"amNodeLabelExpression":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		var a App
		if json.Unmarshal([]byte(s), &a) != nil {
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal %+v: %v", a, err)
		}
		var back App
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		if back.AMNodeLabelExpression != a.AMNodeLabelExpression || back.HasAMNodeLabelExpression != (a.HasAMNodeLabelExpression || a.AMNodeLabelExpression != "") ||
			back.AppNodeLabelExpression != a.AppNodeLabelExpression {
			t.Fatalf("round trip changed the label expressions: %+v -> %s -> %+v", a, b, back)
		}
		if _, err := xml.Marshal(a); err != nil && !strings.Contains(err.Error(), "xml:") {
			t.Fatalf("xml: %v", err)
		}
	})
}

// BenchmarkLongMap: an application's resourceSecondsMap through the
// general decoder (a json.Decoder walking tokens) and the fast path.
func BenchmarkLongMap(b *testing.B) {
	in := []byte(`{"entry":{"key":"memory-mb","value":"10240"},"entry":{"key":"vcores","value":"10"}}`)
	b.Run("general", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m LongMap
			if err := m.decodeGeneral(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m LongMap
			if err := m.UnmarshalJSON(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}
