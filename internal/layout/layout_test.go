package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
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
	// xtestAllowed are further exceptions, exact packages, for the
	// package's external tests only (package x_test, linked into no binary).
	xtestAllowed []string
}

// Imports flow one way: cmd -> components -> policies, statestore/client,
// internal/*. The components never import each other, and only the client
// half of the statestore (plus its wire types) is visible outside it.
var rules = []rule{
	{name: "router is independent of its peers", from: "router", denied: []string{"kuberm", "amrmproxy", "gpg", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "amrmproxy is independent of its peers", from: "amrmproxy", denied: []string{"kuberm", "router", "gpg", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "gpg is independent of its peers", from: "gpg", denied: []string{"kuberm", "router", "amrmproxy", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "subclusteragent is independent of its peers", from: "subclusteragent", denied: []string{"kuberm", "router", "amrmproxy", "gpg", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "kuberm is independent of its peers", from: "kuberm", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "cmd", "statestore"},
		allowed: []string{"statestore/client", "statestore/storepb"}},
	{name: "policies are a leaf", from: "policies", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "kuberm", "cmd", "statestore"}},
	{name: "statestore serves everyone and imports no component", from: "statestore", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "kuberm", "cmd", "policies"}},
	{name: "internal imports no component", from: "internal", denied: []string{"router", "amrmproxy", "gpg", "subclusteragent", "kuberm", "cmd"}},
}

// The router's rooms (router/DESIGN.md, "Package map"): the root
// (github.com/yarnfed/yarnfed/router) composes them and none of them
// imports it. The leaf (fed: the vocabulary every room speaks; Hadoop's ids
// are internal/yarnid, shared with simrm and kuberm) imports nothing of the
// router; the libraries (restwire, merge, spnego, dtoken, appacl) only it;
// the edges (rest: the REST API, webui: the web UI) the leaf and libraries
// they use, never the root
// (they reach it through the Core interfaces they declare) nor each other
// (webui reads REST's answers through its REST interface).
// routertest and bench are the root's test harnesses and import it.
var routerRooms = []rule{
	{name: "router/fed is a leaf", from: "router/fed", denied: []string{"router"}},
	{name: "router/restwire imports nothing of the router", from: "router/restwire", denied: []string{"router"}},
	{name: "router/spnego imports nothing of the router", from: "router/spnego", denied: []string{"router"}},
	{name: "router/dtoken imports nothing of the router", from: "router/dtoken", denied: []string{"router"}},
	{name: "router/appacl imports nothing of the router", from: "router/appacl", denied: []string{"router"}},
	{name: "router/merge imports only the leaves of the router", from: "router/merge", denied: []string{"router"}, allowed: []string{"router/fed"}},
	{name: "router/rest reaches the root only through rest.Core", from: "router/rest", denied: []string{"router"},
		allowed:      []string{"router/fed", "router/restwire", "router/merge", "router/appacl", "router/dtoken"},
		xtestAllowed: roomTests},
	{name: "router/webui reaches the root and REST only through its interfaces", from: "router/webui", denied: []string{"router"},
		allowed:      []string{"router/fed", "router/restwire", "router/merge"},
		xtestAllowed: roomTests},
}

// roomTests is what the edges' external tests may import besides: they
// drive the wired router (the root over routertest's fakes), as the
// harnesses do, and REST's token tests log in with SPNEGO cookies.
var roomTests = []string{"router", "router/routertest", "router/spnego"}

// routerHarnesses may import the router root.
var routerHarnesses = []string{"router/routertest", "router/bench"}

func init() { rules = append(rules, routerRooms...) }

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
		imports := append(append([]string{}, p.Imports...), p.TestImports...)
		for _, r := range rules {
			if !under(rel, r.from) {
				continue
			}
			for _, c := range []struct {
				imports []string
				xtest   bool
			}{{imports, false}, {p.XTestImports, true}} {
				for _, imp := range c.imports {
					if !strings.HasPrefix(imp, module) {
						continue
					}
					dep := strings.TrimPrefix(imp, module)
					if dep == rel { // an external test package imports its own
						continue
					}
					if c.xtest && slices.Contains(r.xtestAllowed, dep) {
						continue
					}
					if violates(rel, dep, r) {
						t.Errorf("%s: %s imports %s", r.name, rel, dep)
					}
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
		{"router", "router/spnego", false},
		{"router/spnego", "router", true},
		{"router/appacl", "router", true},
		{"router/dtoken", "router", true},
		{"router/webui", "router", true},
		{"router/restwire", "router", true},
		{"router/fed", "router", true},
		{"router/fed", "router/restwire", true},
		{"router/restwire", "internal/yarnid", false},
		{"router/restwire", "router/appacl", true},
		{"router/webui", "router/restwire", false},
		{"router/rest", "router", true},
		{"router/rest", "router/webui", true},
		{"router/rest", "router/spnego", true},
		{"router/rest", "router/routertest", true},
		{"router/rest", "router/restwire", false},
		{"router/rest", "router/fed", false},
		{"router/webui", "router/rest", true},
		{"router/webui", "router/appacl", true},
		{"router/webui", "router/merge", false},
		{"router/merge", "router/fed", false},
		{"router/merge", "router/restwire", true},
		{"router", "router/rest", false},
		{"router", "router/webui", false},
		{"router/appacl", "router/fed", true},
		{"router/spnego", "internal/config", false},
		{"router/dtoken", "internal/hadoopipc", false},
		{"router/webui", "gpg", true},
		{"router/routertest", "router", false},
		{"router/bench", "router", false},
		{"router/merge", "router", true},
		{"router", "router/merge", false},
		{"kuberm", "gpg/kube", true},
		{"kuberm", "internal/kubebatch", false},
		{"kuberm", "statestore/client", false},
		{"kuberm", "statestore/store", true},
		{"kuberm", "router", true},
		{"gpg", "kuberm", true},
		{"router", "kuberm", true},
		{"internal/kubebatch", "kuberm", true},
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

// TestEveryRouterRoomHasARule: a new package under router/ must be given
// its place in routerRooms (or be a harness) before it can be merged, so
// the room map cannot silently grow a package that imports the root.
func TestEveryRouterRoomHasARule(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", module+"router/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	ruled := map[string]bool{"router": true}
	for _, r := range routerRooms {
		ruled[r.from] = true
	}
	for _, h := range routerHarnesses {
		ruled[h] = true
	}
	var n int
	for _, pkg := range strings.Fields(string(out)) {
		n++
		if rel := strings.TrimPrefix(pkg, module); !ruled[rel] {
			t.Errorf("%s has no rule in routerRooms (internal/layout): say what it may import", rel)
		}
	}
	if n < len(routerRooms) {
		t.Fatalf("go list router/... found %d packages, fewer than the %d rooms", n, len(routerRooms))
	}
}

// TestRoomTestsMayImportOnlyTheListedPackages: the edges' external tests
// may import the root and routertest, but not another room through the
// root's prefix (the exception is exact, not a prefix).
func TestRoomTestsMayImportOnlyTheListedPackages(t *testing.T) {
	for _, r := range routerRooms {
		if r.from != "router/rest" && r.from != "router/webui" {
			continue
		}
		for _, dep := range []string{"router", "router/routertest"} {
			if !violates(r.from, dep, r) || !slices.Contains(r.xtestAllowed, dep) {
				t.Errorf("%s: %s must be denied to the room and allowed to its tests", r.from, dep)
			}
		}
		other := map[string]string{"router/rest": "router/webui", "router/webui": "router/rest"}[r.from]
		if !violates(r.from, other, r) || slices.Contains(r.xtestAllowed, other) {
			t.Errorf("%s: %s must stay denied, tests too", r.from, other)
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
