package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// Test types: a role struct embedding a component config (flattened keys),
// a nested section, a list, and wiring that files never set.
type testLimits struct {
	Timeout Duration `json:"timeout"`
	Max     int      `json:"max"`
}

type testComponent struct {
	Addr   string     `json:"addr"`
	Wait   Duration   `json:"wait"`
	Limits testLimits `json:"limits"`
	Peers  []string   `json:"peers"`
	On     bool       `json:"on"`
	Ratio  float64    `json:"ratio"`
	Hook   func()     `json:"-"`
}

type testRole struct {
	testComponent
	LogLevel string `json:"log_level"`
}

func (r *testRole) Validate() error {
	if r.Limits.Max < 0 {
		return os.ErrInvalid
	}
	return nil
}

func testDefaults() testRole {
	return testRole{
		testComponent: testComponent{Addr: "0.0.0.0:1", Wait: Duration(time.Second), Limits: testLimits{Timeout: Duration(2 * time.Second), Max: 10}, Peers: []string{"a"}, Ratio: 0.5},
		LogLevel:      "info",
	}
}

func newTestFlags() (*pflag.FlagSet, *testRole, *Loader[testRole], *string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg := testDefaults()
	l := NewLoader(fs, &cfg, testDefaults)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "")
	fs.Var(&cfg.Wait, "wait", "")
	fs.Var(&cfg.Limits.Timeout, "limits-timeout", "")
	fs.IntVar(&cfg.Limits.Max, "limits-max", cfg.Limits.Max, "")
	fs.StringSliceVar(&cfg.Peers, "peers", cfg.Peers, "")
	fs.BoolVar(&cfg.On, "on", cfg.On, "")
	fs.Float64Var(&cfg.Ratio, "ratio", cfg.Ratio, "")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "")
	outside := "x"
	fs.StringVar(&outside, "outside", outside, "")
	return fs, &cfg, l, &outside
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoaderPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // "" = no --config
		args []string
		want func(*testRole)
	}{
		{"defaults only", "", nil, func(*testRole) {}},
		{"flags only", "", []string{"--wait", "3s", "--limits-max", "4", "--peers", "p,q"}, func(r *testRole) {
			r.Wait, r.Limits.Max, r.Peers = Duration(3*time.Second), 4, []string{"p", "q"}
		}},
		{"file over defaults", `{"wait":"5s","limits":{"timeout":"9s"},"peers":["f"],"log_level":"debug"}`, nil, func(r *testRole) {
			r.Wait, r.Limits.Timeout, r.Peers, r.LogLevel = Duration(5*time.Second), Duration(9*time.Second), []string{"f"}, "debug"
		}},
		{"flags over file, file over defaults", `{"addr":"file:1","wait":"5s","limits":{"timeout":"9s","max":7},"on":true,"ratio":0.25}`,
			[]string{"--wait", "6s", "--limits-max", "8", "--on=false"}, func(r *testRole) {
				r.Addr, r.Wait, r.Limits.Timeout, r.Limits.Max, r.On, r.Ratio = "file:1", Duration(6*time.Second), Duration(9*time.Second), 8, false, 0.25
			}},
		{"a set list flag replaces the file's list", `{"peers":["f1","f2"]}`, []string{"--peers", "c"}, func(r *testRole) { r.Peers = []string{"c"} }},
		{"a flag set to its default still beats the file", `{"addr":"file:1"}`, []string{"--addr", "0.0.0.0:1"}, func(*testRole) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, cfg, l, _ := newTestFlags()
			args := tc.args
			if tc.file != "" {
				args = append([]string{"--config", writeFile(t, tc.file)}, args...)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			got, err := l.Load()
			if err != nil {
				t.Fatal(err)
			}
			want := testDefaults()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(*cfg, want) {
				t.Fatalf("bound struct %+v, want %+v", *cfg, want)
			}
		})
	}
}

// A file's list replaces the default list whole: encoding/json alone would
// decode the file's first entry into the default first entry, keeping the
// fields the file leaves out.
func TestLoaderFileListReplacesDefaultList(t *testing.T) {
	type entry struct {
		Name string `json:"name"`
		Max  int    `json:"max"`
	}
	type role struct {
		Entries []entry        `json:"entries"`
		Kept    []entry        `json:"kept"`
		Labels  map[string]int `json:"labels"`
	}
	defaults := func() role {
		return role{Entries: []entry{{"d", 100}}, Kept: []entry{{"k", 1}}, Labels: map[string]int{"a": 1}}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg := defaults()
	l := NewLoader(fs, &cfg, defaults)
	if err := fs.Parse([]string{"--config", writeFile(t, `{"Entries":[{"name":"f"}],"labels":{"b":2}}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Load()
	want := role{Entries: []entry{{"f", 0}}, Kept: []entry{{"k", 1}}, Labels: map[string]int{"b": 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Load = %+v, %v; want %+v", got, err, want)
	}
}

func TestLoaderFlagOutsideConfigKeepsItsValue(t *testing.T) {
	fs, _, l, outside := newTestFlags()
	if err := fs.Parse([]string{"--config", writeFile(t, `{"addr":"f:1"}`), "--outside", "y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(); err != nil || *outside != "y" {
		t.Fatalf("Load: %v; --outside = %q", err, *outside)
	}
}

func TestLoaderFileErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown top-level key", `{"adr":"x"}`, `"adr"`},
		{"unknown nested key", `{"limits":{"timeout":"1s","maxx":1}}`, `"maxx"`},
		{"bare number duration", `{"wait":10}`, `like "10s"`},
		{"bad duration", `{"wait":"soon"}`, `soon`},
		{"trailing data", `{"addr":"x"} {"addr":"y"}`, "trailing"},
		{"not an object", `[1]`, "cannot unmarshal"},
		{"wiring is not a key", `{"Hook":null}`, `"Hook"`},
		{"validate runs last", `{"limits":{"max":-1}}`, "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, _, l, _ := newTestFlags()
			if err := fs.Parse([]string{"--config", writeFile(t, tc.body)}); err != nil {
				t.Fatal(err)
			}
			_, err := l.Load()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %s", err, tc.want)
			}
		})
	}
	fs, _, l, _ := newTestFlags()
	_ = fs.Parse([]string{"--config", filepath.Join(t.TempDir(), "missing.json")})
	if _, err := l.Load(); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestLoaderKeys(t *testing.T) {
	fs, _, l, _ := newTestFlags()
	keys, unbound, err := l.Keys()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"addr": "addr", "wait": "wait", "limits-timeout": "limits.timeout", "limits-max": "limits.max",
		"peers": "peers", "on": "on", "ratio": "ratio", "log-level": "log_level"}
	if !reflect.DeepEqual(keys, want) || !reflect.DeepEqual(unbound, []string{"outside"}) {
		t.Fatalf("Keys = %v, unbound %v", keys, unbound)
	}
	l.DocumentKeys()
	if u := fs.Lookup("limits-timeout").Usage; !strings.HasSuffix(u, "[file: limits.timeout]") {
		t.Fatalf("usage %q", u)
	}
}

// A time.Duration field would read "10" from a file as 10ns while its
// flag takes "10s": the loader refuses the binding.
func TestLoaderRefusesTimeDurationField(t *testing.T) {
	type bad struct {
		Wait time.Duration `json:"wait"`
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cfg := bad{}
	l := NewLoader(fs, &cfg, func() bad { return bad{} })
	fs.DurationVar(&cfg.Wait, "wait", 0, "")
	if _, _, err := l.Keys(); err == nil || !strings.Contains(err.Error(), "config.Duration") {
		t.Fatalf("Keys: %v", err)
	}
	_ = fs.Parse([]string{"--wait", "1s"})
	if _, err := l.Load(); err == nil {
		t.Fatal("Load accepted a time.Duration flag field")
	}
}

// FuzzDecode: no input panics the strict decoder, and what it accepts
// re-encodes to a document it accepts again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"addr":"a","wait":"1s","limits":{"timeout":"2m","max":3},"peers":["x"],"log_level":"debug"}`,
		`{"wait":10}`, `{"zz":1}`, `{"addr":"a"} x`, `null`, `{"limits":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := testDefaults()
		if err := Decode(b, &c); err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var again testRole
		if err := Decode(out, &again); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
	})
}
