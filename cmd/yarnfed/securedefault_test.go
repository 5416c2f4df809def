package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/security"
)

// TestRolesRefusePlaintextByDefault: given neither certificates nor the
// explicit insecure flag, the state store and every role that talks to it
// refuse to start, and the error names both ways out. Each run is bounded:
// a role that started anyway would fail the test, not hang it.
func TestRolesRefusePlaintextByDefault(t *testing.T) {
	cases := []struct {
		name              string
		args              []string
		tlsFlag, insecure string
	}{
		{"statestore", []string{"statestore", "--node-id", "s1", "--data-dir", t.TempDir(), "--grpc-address", "127.0.0.1:0", "--raft-address", "127.0.0.1:0", "--http-address", "", "--bootstrap"}, "--tls-cert", "--insecure"},
		{"router", []string{"router", "--store", "127.0.0.1:1"}, "--store-tls-cert", "--store-insecure"},
		{"amrmproxy", []string{"amrmproxy", "--store", "127.0.0.1:1"}, "--store-tls-cert", "--store-insecure"},
		{"gpg", []string{"gpg", "--store", "127.0.0.1:1"}, "--store-tls-cert", "--store-insecure"},
		{"subcluster-agent", []string{"subcluster-agent", "--store", "127.0.0.1:1", "--subcluster-id", "SC-1", "--rm", "clientrm=127.0.0.1:1"}, "--store-tls-cert", "--store-insecure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			root := newRootCmd()
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(tc.args)
			err := root.ExecuteContext(ctx)
			if !errors.Is(err, security.ErrPlaintext) {
				t.Fatalf("err = %v, want ErrPlaintext", err)
			}
			for _, want := range []string{tc.tlsFlag, tc.insecure} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}
