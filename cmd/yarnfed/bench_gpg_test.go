//go:build bench

package main

import (
	"context"
	"strings"
	"testing"
)

// TestBenchGPGSmall runs `yarnfed bench gpg` small: the Kubernetes
// recompute checks its figures against the closed-form truth, the GPG bench
// starts a real store, every round that changes capacity writes exactly once,
// every steady round not at all, and each figure is printed against its
// target.
func TestBenchGPGSmall(t *testing.T) {
	cmd := newBenchGPGCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--subclusters", "6", "--nodes", "120", "--queues", "2", "--rounds", "4", "--kube-rounds", "2"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var changing, steady []string
	var kube bool
	targets := map[string]string{}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "1. Kubernetes full recompute") && strings.Contains(l, "120 nodes, 600 pods, 6 sub-clusters, figures checked"):
			kube = true
		case strings.HasPrefix(l, "capacity changes every round"):
			changing = strings.Fields(l)
		case strings.HasPrefix(l, "steady"):
			steady = strings.Fields(l)
		case strings.HasPrefix(l, "  ") && strings.Contains(l, "target"):
			f := strings.Fields(l)
			targets[strings.TrimSpace(l[:60])] = f[len(f)-1]
		}
	}
	// Columns from the end: ... writes/round queues/rnd.
	if !kube || len(changing) < 2 || changing[len(changing)-2] != "1" || len(steady) < 2 || steady[len(steady)-2] != "0" {
		t.Fatalf("bench output:\n%s", out.String())
	}
	for _, name := range []string{"Kubernetes full recompute, median", "GPG round while capacity changes, p99",
		"store writes per round while capacity changes", "store writes per steady round"} {
		if _, ok := targets[name]; !ok {
			t.Errorf("no %q line against its target:\n%s", name, out.String())
		}
	}
	for _, name := range []string{"store writes per round while capacity changes", "store writes per steady round"} {
		if targets[name] != "met" {
			t.Errorf("%s: %s\n%s", name, targets[name], out.String())
		}
	}
}
