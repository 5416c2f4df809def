package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestHelpListsOnlyRealRoles: `yarnfed --help` once named a role (gpg)
// before it existed. The summary line must name exactly the registered
// roles.
func TestHelpListsOnlyRealRoles(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	_, list, ok := strings.Cut(first, ": ")
	if !ok {
		t.Fatalf("help summary %q lists no roles", first)
	}
	listed := strings.Split(list, ", ")
	var real []string
	for _, c := range root.Commands() {
		if n := c.Name(); n != "version" && n != "help" && n != "completion" {
			real = append(real, n)
		}
	}
	for _, name := range listed {
		if !slices.Contains(real, name) {
			t.Errorf("help lists %q, which is not a yarnfed subcommand (have %v)", name, real)
		}
	}
	for _, name := range real {
		if !slices.Contains(listed, name) {
			t.Errorf("help omits role %q", name)
		}
	}
	for _, want := range []string{"statestore", "router", "amrmproxy", "subcluster-agent", "simrm", "dev", "bench"} {
		if !slices.Contains(listed, want) {
			t.Errorf("help omits %q", want)
		}
	}
}
