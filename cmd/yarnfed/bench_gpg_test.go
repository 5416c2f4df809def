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
// every steady round not at all, nor any round where one node of 40 leaves
// or returns, and each figure is printed against its target.
func TestBenchGPGSmall(t *testing.T) {
	cmd := newBenchGPGCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--subclusters", "6", "--nodes", "240", "--queues", "2", "--rounds", "4", "--kube-rounds", "2"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var changing, steady, churn []string
	var kube bool
	targets := map[string]string{}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "1. Kubernetes full recompute") && strings.Contains(l, "240 nodes, 1200 pods, 6 sub-clusters, figures checked"):
			kube = true
		case strings.HasPrefix(l, "capacity changes every round"):
			changing = strings.Fields(l)
		case strings.HasPrefix(l, "steady"):
			steady = strings.Fields(l)
		case strings.HasPrefix(l, "one node of 40 leaves/returns"):
			churn = strings.Fields(l)
		case strings.HasPrefix(l, "  ") && strings.Contains(l, "target"):
			f := strings.Fields(l)
			targets[strings.TrimSpace(l[:60])] = f[len(f)-1]
		}
	}
	// Columns from the end: ... writes/round queues/rnd write-bytes.
	if !kube || len(changing) < 3 || changing[len(changing)-3] != "1" || len(steady) < 3 || steady[len(steady)-3] != "0" ||
		len(churn) < 3 || churn[len(churn)-3] != "0" {
		t.Fatalf("bench output:\n%s", out.String())
	}
	if b := changing[len(changing)-1]; b == "0" {
		t.Errorf("a changing round's write has %s bytes", b)
	}
	writeTargets := []string{"store writes per round while capacity changes", "store writes per steady round",
		"store writes per round while one node leaves/returns"}
	for _, name := range append([]string{"Kubernetes full recompute, median", "GPG round while capacity changes, p99"}, writeTargets...) {
		if _, ok := targets[name]; !ok {
			t.Errorf("no %q line against its target:\n%s", name, out.String())
		}
	}
	for _, name := range writeTargets {
		if targets[name] != "met" {
			t.Errorf("%s: %s\n%s", name, targets[name], out.String())
		}
	}
}

// TestBenchGPGCurveSmoke runs `yarnfed bench gpg --curve` at two small
// sizes, the shape of the 10/30/100 sub-cluster curve: each size runs over
// its own store, and the curve table has one row per size with one write
// per changing round, none while steady or while one node churns.
func TestBenchGPGCurveSmoke(t *testing.T) {
	cmd := newBenchGPGCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--curve", "2x80,4x200", "--queues", "2", "--rounds", "3", "--kube-rounds", "2"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	_, table, ok := strings.Cut(out.String(), "=== curve")
	if !ok {
		t.Fatalf("no curve table:\n%s", out.String())
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) > 3 && (f[0] == "2" || f[0] == "4") {
			rows[f[0]+"x"+f[1]] = f
		}
	}
	for _, size := range []string{"2x80", "4x200"} {
		f := rows[size]
		// ... | w/chg w/std w/chrn bytes | RSS MiB peak MiB
		cols := strings.Split(strings.Join(f, " "), " | ")
		if len(cols) != 5 {
			t.Fatalf("size %s: row %q\n%s", size, f, out.String())
		}
		if w := strings.Fields(cols[3]); len(w) != 4 || w[0] != "1" || w[1] != "0" || w[2] != "0" || w[3] == "0" {
			t.Errorf("size %s: writes per round (changing, steady, churn) and bytes %q, want 1 0 0 and a size", size, w)
		}
	}
	if n := strings.Count(out.String(), "store writes per round while one node leaves/returns"); n != 2 {
		t.Errorf("%d churn target lines, want one per size", n)
	}
}

// TestParseCurve reads --curve and refuses what is not SUBCLUSTERSxNODES.
func TestParseCurve(t *testing.T) {
	got, err := parseCurve("10x10000, 30x30000,100x100000")
	if err != nil || len(got) != 3 || got[0] != (curveSize{10, 10000}) || got[2] != (curveSize{100, 100000}) {
		t.Fatalf("parseCurve = %v, %v", got, err)
	}
	for _, bad := range []string{"", "10", "10x", "x10", "0x10", "10x-1", "ax10", "10x10,"} {
		if _, err := parseCurve(bad); err == nil {
			t.Errorf("parseCurve(%q) accepted", bad)
		}
	}
}
