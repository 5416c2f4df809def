package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerBinaryLinksNoBenchCode: the binary operators deploy (built
// without -tags bench) links no benchmark package, test fake or bench-only
// client (ZooKeeper, etcd); bin/yarnfed-bench does.
func TestServerBinaryLinksNoBenchCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	banned := []string{
		"github.com/yarnfed/yarnfed/router/bench",
		"github.com/yarnfed/yarnfed/router/routertest",
		"github.com/yarnfed/yarnfed/statestore/bench",
		"github.com/yarnfed/yarnfed/kuberm/bench",
		"github.com/go-zookeeper/zk",
		"go.etcd.io/etcd/client/v3",
	}
	for _, tags := range []string{"", "bench"} {
		out, err := exec.Command("go", "list", "-tags="+tags, "-deps", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags=%q: %v\n%s", tags, err, out)
		}
		deps := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			deps[p] = true
		}
		for _, b := range banned {
			if tags == "" && deps[b] {
				t.Errorf("the server binary links %s", b)
			}
		}
		if tags == "bench" && (!deps["github.com/yarnfed/yarnfed/statestore/bench"] || !deps["go.etcd.io/etcd/client/v3"]) {
			t.Errorf("-tags bench does not link the benchmarks: the check above proves nothing")
		}
	}
}
