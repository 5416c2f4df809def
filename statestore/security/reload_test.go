package security

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// due makes the next use of r re-check its files (they are stat'ed at
// most once a second).
func due(r *Reloader) {
	r.mu.Lock()
	r.checked = time.Time{}
	r.mu.Unlock()
}

// TestReloadFailureSurfaced: a certificate file that cannot be loaded keeps
// the previous pair but is reported (Err, one log line and one count per
// broken state, the failing gauge), and clears once the file is fixed.
func TestReloadFailureSurfaced(t *testing.T) {
	dir := t.TempDir()
	info := issue(t, newCA(t), dir, "c", Leaf{Name: "a", Roles: []Role{RoleAdmin}})
	r := reloader(t, info)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	if err := r.Observe(slog.New(slog.NewTextHandler(&logs, nil)), reg, "yarnfed_test"); err != nil {
		t.Fatal(err)
	}
	failures := func() float64 { return metricValue(t, reg, "yarnfed_test_tls_reload_failures_total") }
	failing := func() float64 { return metricValue(t, reg, "yarnfed_test_tls_reload_failing") }
	logged := func() int { return strings.Count(logs.String(), "reloading the certificate files failed") }

	good, err := os.ReadFile(info.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info.CertFile, []byte("-----BEGIN CERTIFICATE-----\nbroken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	due(r)
	if c, _ := r.current(); c == nil || c.Leaf.Subject.CommonName != "a" {
		t.Fatalf("lost the good pair: %+v", c)
	}
	if r.Err() == nil || failures() != 1 || failing() != 1 || logged() != 1 {
		t.Fatalf("broken cert: Err %v, failures %v, failing %v, logged %d; want an error, 1, 1, 1", r.Err(), failures(), failing(), logged())
	}
	// The same broken files, checked again: no new log line or count.
	for range 3 {
		due(r)
		r.current()
	}
	if r.Err() == nil || failures() != 1 || logged() != 1 {
		t.Fatalf("same broken state re-checked: Err %v, failures %v, logged %d; want an error, 1, 1", r.Err(), failures(), logged())
	}
	// Another broken state (the CA bundle gone) is a new failure.
	ca, err := os.ReadFile(info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(info.CAFile); err != nil {
		t.Fatal(err)
	}
	due(r)
	if r.Err() == nil || failures() != 2 || logged() != 2 {
		t.Fatalf("CA removed: Err %v, failures %v, logged %d; want an error, 2, 2", r.Err(), failures(), logged())
	}
	// Fixed: the error and the gauge clear; the count stays.
	if err := os.WriteFile(info.CAFile, ca, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info.CertFile, good, 0o644); err != nil {
		t.Fatal(err)
	}
	due(r)
	if err := r.Err(); err != nil || failing() != 0 || failures() != 2 {
		t.Fatalf("fixed: Err %v, failing %v, failures %v; want nil, 0, 2", err, failing(), failures())
	}
	if !strings.Contains(logs.String(), "certificate files load again") {
		t.Fatalf("no log line for the recovery:\n%s", logs.String())
	}
}

// metricValue is the value of the unlabelled counter or gauge name in reg.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
