package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/yarnfed/yarnfed/"

// rule forbids packages under from importing packages under any of denied.
type rule struct {
	name   string
	from   string
	denied []string
	// allowed lists exceptions inside denied prefixes.
	allowed []string
}

// Imports flow one way: cmd -> components -> policies, statestore/client,
// internal/*. The components never import each other, and only the client
// half of the statestore (plus its wire types) is visible outside it.
var rules = []rule{
	{name: "router is independent of its peers", from: "router", denied: []string{"amrmproxy", "gpg", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "amrmproxy is independent of its peers", from: "amrmproxy", denied: []string{"router", "gpg", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "gpg is independent of its peers", from: "gpg", denied: []string{"router", "amrmproxy", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "subclusteragent is independent of its peers", from: "subclusteragent", denied: []string{"router", "amrmproxy", "gpg", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "policies are a leaf", from: "policies", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "cmd", "statestore"}},
	{name: "statestore serves everyone and imports no component", from: "statestore", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "cmd", "policies"}},
	{name: "internal imports no component", from: "internal", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "cmd"}},
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var checked int
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		checked++
		rel := strings.TrimPrefix(p.ImportPath, module)
		imports := append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...)
		for _, r := range rules {
			if !under(rel, r.from) {
				continue
			}
			for _, imp := range imports {
				if !strings.HasPrefix(imp, module) {
					continue
				}
				dep := strings.TrimPrefix(imp, module)
				if violates(rel, dep, r) {
					t.Errorf("%s: %s imports %s", r.name, rel, dep)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list returned no packages")
	}
}

func TestRulesCatchViolations(t *testing.T) {
	cases := []struct {
		from, dep string
		bad       bool
	}{
		{"router", "amrmproxy/proxy", true},
		{"router/rest", "statestore/client", false},
		{"router", "statestore/raftstore", true},
		{"gpg", "router", true},
		{"policies", "internal/yarnpb", false},
		{"internal/simrm", "router", true},
		{"statestore/client", "statestore/storepb", false},
		{"router/bench", "statestore/bench", false},
		{"router/bench", "statestore/security", false},
		{"router", "statestore/bench", true},
		{"router/bench", "statestore/store", true},
		{"router/bench", "gpg", true},
		{"subclusteragent", "statestore/client", false},
		{"subclusteragent", "statestore/node", true},
		{"subclusteragent", "router", true},
		{"router", "subclusteragent", true},
		{"gpg", "subclusteragent", true},
		{"internal/simrm", "subclusteragent", true},
	}
	for _, c := range cases {
		got := false
		for _, r := range rules {
			if under(c.from, r.from) && violates(c.from, c.dep, r) {
				got = true
			}
		}
		if got != c.bad {
			t.Errorf("%s -> %s: violation=%v, want %v", c.from, c.dep, got, c.bad)
		}
	}
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

// benchHarnessAllowed are what a component's bench harness (a package named
// bench, linked only into bin/yarnfed-bench: cmd/yarnfed's deps test) may
// import beyond its component's rule: it starts real state store replicas
// as separate processes, with their TLS material, as the store's own bench
// does, and measures the component against them.
var benchHarnessAllowed = []string{"statestore/bench", "statestore/security"}

func isBenchHarness(pkg string) bool {
	return strings.HasSuffix(pkg, "/bench") || strings.Contains(pkg, "/bench/")
}

func violates(from, dep string, r rule) bool {
	if isBenchHarness(from) {
		for _, a := range benchHarnessAllowed {
			if under(dep, a) {
				return false
			}
		}
	}
	for _, a := range r.allowed {
		if under(dep, a) {
			return false
		}
	}
	for _, d := range r.denied {
		if under(dep, d) {
			return true
		}
	}
	return false
}
