package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/yarnfed/yarnfed/statestore/security"
)

// TestCertsCommand: `yarnfed certs` issues loadable certificates whose
// identity is NAME and ROLEs, reuses its CA on a second run, and rejects
// unknown roles.
func TestCertsCommand(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) error {
		root := newRootCmd()
		root.SetOut(&bytes.Buffer{})
		root.SetArgs(append([]string{"certs", "--dir", dir}, args...))
		return root.Execute()
	}
	if err := run("ss1=replica", "ops=admin", "SC-1=agent", "both=router+admin"); err != nil {
		t.Fatal(err)
	}
	if err := run("r2=router"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]security.Role{
		"ss1": {security.RoleReplica}, "ops": {security.RoleAdmin}, "SC-1": {security.RoleAgent},
		"both": {security.RoleRouter, security.RoleAdmin}, "r2": {security.RoleRouter},
	} {
		d := filepath.Join(dir, name)
		info := security.TLSInfo{CertFile: filepath.Join(d, "cert.crt"), KeyFile: filepath.Join(d, "cert.key"), CAFile: filepath.Join(d, "ca.crt")}
		r, err := security.NewReloader(info)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cert, err := r.ClientConfig().GetClientCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		id := security.IdentityOf(cert.Leaf)
		slices.Sort(id.Roles)
		slices.Sort(want)
		if id.Name != name || !slices.Equal(id.Roles, want) {
			t.Errorf("%s: identity %+v, want roles %v", name, id, want)
		}
	}
	// The second run reused the CA: both parties trust the same bundle.
	a, errA := os.ReadFile(filepath.Join(dir, "ss1", "ca.crt"))
	b, errB := os.ReadFile(filepath.Join(dir, "r2", "ca.crt"))
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("CA not reused (%v, %v)", errA, errB)
	}
	for _, bad := range [][]string{{"x=root"}, {"noequals"}, {"../x=admin"}} {
		if err := run(bad...); err == nil {
			t.Errorf("certs %v accepted", bad)
		}
	}
}
