package systemtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoreMutualTLS runs the store the way the README's "Secure the state
// store" section tells an operator to: `yarnfed certs`, two replicas with
// replica certificates (the second joins over mutual TLS), and yarnfedctl
// with an admin certificate. A client without a certificate, or with a
// certificate whose role does not allow the call, is refused.
func TestStoreMutualTLS(t *testing.T) {
	h := newHarness(t)
	pki := h.path("pki")
	out, err := exec.Command(yarnfedBin, "certs", "--dir", pki, "ss1=replica", "ss2=replica", "ops=admin", "nm-1=amrmproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("yarnfed certs: %v\n%s", err, out)
	}
	files := func(prefix, name string) []string {
		d := filepath.Join(pki, name)
		return []string{"--" + prefix + "tls-cert", filepath.Join(d, "cert.crt"), "--" + prefix + "tls-key", filepath.Join(d, "cert.key"), "--" + prefix + "tls-ca", filepath.Join(d, "ca.crt")}
	}
	st := &storeCluster{h: h}
	st.addReplica(t, files("", "ss1")...)
	st.addReplica(t, files("", "ss2")...)
	for _, nd := range st.nodes {
		if nd.p.LogContains("PLAINTEXT") {
			t.Errorf("%s warns of plaintext although it has certificates", nd.id)
		}
	}

	addrs := st.nodes[1].grpc + "," + st.nodes[0].grpc
	admin := append([]string{"--store", addrs}, files("store-", "ops")...)
	waitFor(t, 30*time.Second, "2 replicas in status", func() (bool, string) {
		s, err := runCtl(append(admin, "store", "status")...)
		return err == nil && strings.Contains(s, "ss1") && strings.Contains(s, "ss2"), s
	})
	// An admin writes a policy through a follower (forwarded to the leader).
	if s, err := runCtl(append(admin, "policy", "save", "-s", "root.a;SC-1:1;SC-1:1;1.0")...); err != nil {
		t.Fatalf("admin policy save: %v\n%s", err, s)
	}

	proxy := append([]string{"--store", addrs}, files("store-", "nm-1")...)
	for _, c := range []struct {
		name string
		args []string
		ok   bool
		msg  string // in the output
	}{
		{"amrmproxy reads policies", append(proxy, "policy", "get", "root.a"), true, "SC-1"},
		{"amrmproxy cannot write policies", append(proxy, "policy", "save", "-s", "root.b;SC-1:1;SC-1:1;1.0"), false, "permission denied"},
		{"no certificate", []string{"--store", addrs, "--store-insecure", "--timeout", "3s", "policy", "get", "root.a"}, false, "PLAINTEXT"},
	} {
		s, err := runCtl(c.args...)
		if (err == nil) != c.ok || !strings.Contains(s, c.msg) {
			t.Errorf("%s: err %v, want ok=%v and %q in\n%s", c.name, err, c.ok, c.msg, s)
		}
	}
}

// runCtl runs yarnfedctl and returns stdout and stderr together.
func runCtl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b bytes.Buffer
	cmd := exec.CommandContext(ctx, yarnfedctlBin, args...)
	cmd.Stdout, cmd.Stderr = &b, &b
	cmd.Env = append(os.Environ(), "YARNFED_STORE=", "YARNFED_STORE_INSECURE=")
	err := cmd.Run()
	return b.String(), err
}

// TestPlaintextMustBeAskedFor: a replica given neither certificates nor
// --insecure, a router given neither --store-tls-* nor --store-insecure,
// and yarnfedctl given neither (nor the env variables) exit at once with an
// error naming both ways out, as an operator who forgot the flags sees it.
func TestPlaintextMustBeAskedFor(t *testing.T) {
	h := newHarness(t)
	ports := freePorts(t, 5)
	for _, c := range []struct {
		name  string
		args  []string
		flags []string
	}{
		{"statestore", []string{"statestore", "--node-id", "ss1", "--data-dir", dataDir(h, "ss1"), "--bootstrap",
			"--grpc-address", ports[0], "--raft-address", ports[1], "--http-address", ports[2]}, []string{"--tls-cert", "--insecure"}},
		{"router", []string{"router", "--store", ports[0], "--clientrm-address", ports[3], "--web-address", ports[4], "--admin-address", ""},
			[]string{"--store-tls-cert", "--store-insecure"}},
	} {
		p := h.spawn(c.name, c.args...)
		waitFor(t, 20*time.Second, c.name+" exits", func() (bool, string) {
			dead, _ := p.Exited()
			return dead, p.Tail(5)
		})
		if _, err := p.Exited(); err == nil {
			t.Errorf("%s exited 0 without a transport", c.name)
		}
		for _, want := range append(c.flags, "refusing to start") {
			if !p.LogContains(want) {
				t.Errorf("%s: log does not name %q:\n%s", c.name, want, p.Tail(10))
			}
		}
	}
	s, err := runCtl("--store", ports[0], "store", "status")
	if err == nil || !strings.Contains(s, "--store-insecure") || !strings.Contains(s, "YARNFED_STORE_INSECURE=1") {
		t.Errorf("yarnfedctl without a transport: err %v\n%s", err, s)
	}
}
