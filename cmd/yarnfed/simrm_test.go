package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/logtest"
)

func TestSimrmCommandPrintsBoundAddresses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newSimrmCmd()
	out := &logtest.Buffer{}
	cmd.SetOut(out)
	cmd.SetArgs([]string{"--cluster-id", "sc7", "--nodes", "3", "--log-level", "error",
		"--client-address", "127.0.0.1:0", "--scheduler-address", "127.0.0.1:0",
		"--admin-address", "127.0.0.1:0", "--webapp-address", "127.0.0.1:0"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "webapp") {
		if time.Now().After(deadline) {
			t.Fatalf("no address lines: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"simrm sc7", "3 nodes", "yarn.resourcemanager.address", "127.0.0.1:"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, ":0\n") {
		t.Errorf("printed an unbound port:\n%s", s)
	}
}

func TestSimrmCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--queues", "a:50"}, {"--nodes", "-1"}, {"--log-level", "loud"}} {
		cmd := newSimrmCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.ExecuteContext(context.Background()); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
