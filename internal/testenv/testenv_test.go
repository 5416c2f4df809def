package testenv

import (
	"net"
	"strconv"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		name, ci, area string
		want           bool
	}{
		{"developer", "", "", false},
		{"ci", "true", "", true},
		{"area variable", "", "1", true},
		{"ci=false is not ci", "false", "", false},
		{"area variable other than 1", "", "yes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv("YARNFED_TESTENV_REQUIRED", tc.area)
			if got := Required("YARNFED_TESTENV_REQUIRED"); got != tc.want {
				t.Fatalf("Required = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMissingSkipsOnlyOffCI runs Missing on a recording testing.TB: skip on
// a developer's machine, fatal in CI.
func TestMissingSkipsOnlyOffCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		t.Setenv("YARNFED_TESTENV_REQUIRED", "")
		r := &recorder{TB: t}
		func() {
			defer func() { _ = recover() }() // the recorder stops the "test" by panicking
			Missing(r, "YARNFED_TESTENV_REQUIRED", "no %s here", "widget")
		}()
		if ci == "true" && (!r.fatal || r.skip) {
			t.Errorf("CI=true: fatal=%v skip=%v, want a failure", r.fatal, r.skip)
		}
		if ci == "" && (r.fatal || !r.skip) {
			t.Errorf("developer: fatal=%v skip=%v, want a skip", r.fatal, r.skip)
		}
	}
}

type recorder struct {
	testing.TB
	fatal, skip bool
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(string, ...any) {
	r.fatal = true
	panic("fatal")
}
func (r *recorder) Skip(...any) {
	r.skip = true
	panic("skip")
}

func TestFreeLoopbackAddrsAvoidEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	addrs := FreeLoopbackAddrs(t, 20)
	seen := map[string]bool{}
	for _, a := range addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if port < 10000 || port >= lo {
			t.Errorf("%s is outside [10000, %d)", a, lo)
		}
		if seen[a] {
			t.Errorf("%s handed out twice", a)
		}
		seen[a] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("%s is not free: %v", a, err)
			continue
		}
		ln.Close()
	}
}
