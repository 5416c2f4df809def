//go:build bench

package main

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// TestBenchStatestoreOverTLS: `yarnfed bench statestore --store` measures
// a running cluster that, as deployed, accepts only mutual TLS; without a
// transport it refuses to start, as every store client does.
func TestBenchStatestoreOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ca, err := security.NewCA("bench-test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	issue := func(name string, role security.Role) security.TLSInfo {
		info, err := ca.WriteFiles(filepath.Join(dir, name), "cert", security.Leaf{Name: name, Roles: []security.Role{role}})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := l.Addr().String()
	l.Close()
	nc := node.DefaultConfig()
	nc.NodeID, nc.DataDir, nc.Bootstrap = "ss1", filepath.Join(dir, "ss1"), true
	nc.GRPCAddress, nc.RaftAddress, nc.HTTPAddress = "127.0.0.1:0", raftAddr, ""
	nc.HeartbeatTimeout, nc.ElectionTimeout = config.Duration(200*time.Millisecond), config.Duration(200*time.Millisecond)
	nc.TLS = issue("ss1", security.RoleReplica)
	n, err := node.Start(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for !n.Store.IsLeader() {
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}

	router := issue("router-1", security.RoleRouter)
	run := func(extra ...string) (string, error) {
		cmd := newBenchStatestoreCmd()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs(append([]string{"--store", n.GRPCAddr(), "--duration", "200ms", "--concurrency", "1",
			"--read-concurrency", "1", "--conns", "1", "--zookeeper=false"}, extra...))
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run("--store-tls-cert", router.CertFile, "--store-tls-key", router.KeyFile, "--store-tls-ca", router.CAFile)
	if err != nil {
		t.Fatalf("bench over TLS: %v\n%s", err, out)
	}
	if !strings.Contains(out, "already running at "+n.GRPCAddr()) || !strings.Contains(out, "mutual TLS") {
		t.Errorf("the table does not say what it measured:\n%s", out)
	}
	inserted := false
	for _, line := range strings.Split(out, "\n") {
		// workload, clients, ops/s, p50, p99, CPU/op, errors, ...
		if f := strings.Fields(line); len(f) > 7 && f[0] == "app-home" && f[1] == "insert" {
			inserted = f[7] == "0" && f[3] != "0"
		}
	}
	if !inserted {
		t.Fatalf("no error-free insert row over TLS:\n%s", out)
	}
	if _, err := run(); !errors.Is(err, security.ErrPlaintext) {
		t.Fatalf("no transport given: %v, want %v", err, security.ErrPlaintext)
	}
}
