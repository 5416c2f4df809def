package gpg

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest/spnegotest"
)

// TestCleanerKerberizedRMs: with both RMs' REST APIs behind SPNEGO
// (tickets from a real KDC), a GPG without Kerberos is refused and deletes
// nothing; a GPG logged in from its keytab lists both RMs and cleans.
func TestCleanerKerberizedRMs(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKT := kdc.AddService(t, "HTTP/localhost")
	gpgKT := kdc.AddService(t, "gpg/localhost")

	e := newCleanEnv(t, false)
	eps := spnegoFront(t, e.st, kdc.Keytab(t, httpKT))
	clean := func(k krblogin.Config) cleanResult {
		g := newTestGPG(t, e.st, nil, nil, func(c *Config) {
			c.Cleaner.MinRMUptime = 0
			c.Cleaner.RMTimeout = Duration(5 * time.Second)
			c.Kerberos = k
		})
		t.Cleanup(func() { _ = g.Close() })
		acquire(t, g)
		res, err := g.cleanApps(context.Background(), g.lease.fence())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	all := e.st.Homes()
	if res := clean(krblogin.Config{}); res.Complete || e.st.Writes("DeleteApplicationHomes") != 0 {
		t.Fatalf("GPG without Kerberos: complete=%v (%s), %d deletions", res.Complete, res.Reason, e.st.Writes("DeleteApplicationHomes"))
	}

	res := clean(krblogin.Config{Principal: kdc.Principal("gpg/localhost"), Keytab: gpgKT, Krb5Conf: kdc.ConfPath})
	if !res.Complete {
		t.Fatalf("Kerberized GPG: incomplete round: %s\nKDC log:\n%s", res.Reason, kdc.Log())
	}
	var gone []string
	for _, id := range all {
		if !slices.Contains(e.st.Homes(), id) {
			gone = append(gone, id)
		}
	}
	want := slices.Clone(e.ghosts)
	slices.Sort(want)
	if !slices.Equal(gone, want) {
		t.Fatalf("deleted %v, want the ghosts %v", gone, want)
	}
	for i, ep := range eps {
		if ep.Tokens.Load() == 0 || ep.Refused.Load() != 0 {
			t.Fatalf("RM %d: tokens %d, refused %d", i, ep.Tokens.Load(), ep.Refused.Load())
		}
	}
}

// TestRMKerberos: the RM admin (IPC) login the node-resource push uses is
// there only with kerberos.rm_principal.
func TestRMKerberos(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	kt := kdc.AddService(t, "gpg/localhost")
	k := krblogin.Config{Principal: kdc.Principal("gpg/localhost"), Keytab: kt, Krb5Conf: kdc.ConfPath}
	st := gpgtest.NewFakeStore(nil)
	g := newTestGPG(t, st, nil, nil, func(c *Config) { c.Kerberos = k })
	defer g.Close()
	if g.RMKerberos() != nil {
		t.Fatal("RMKerberos without rm_principal")
	}
	k.RMPrincipal = "rm/_HOST@" + kdc.Realm
	g2 := newTestGPG(t, st, nil, nil, func(c *Config) { c.Kerberos = k })
	defer g2.Close()
	rk := g2.RMKerberos()
	if rk == nil || rk.ServerPrincipal != k.RMPrincipal || rk.Login == nil || rk.Login.Credentials.UserName() != "gpg/localhost" {
		t.Fatalf("RMKerberos = %+v", rk)
	}
	if g3 := newTestGPG(t, st, nil, nil, nil); g3.RMKerberos() != nil {
		t.Fatal("RMKerberos without Kerberos")
	}
}

// TestUAMReaperKerberizedRMs: with both RMs' REST APIs behind SPNEGO, a
// GPG without Kerberos cannot list, ask or kill, and leaves the UAM; a GPG
// logged in from its keytab kills it (PUT state through SPNEGO).
func TestUAMReaperKerberizedRMs(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	httpKT := kdc.AddService(t, "HTTP/localhost")
	gpgKT := kdc.AddService(t, "gpg/localhost")

	e := newReapEnv(t, false)
	app := e.spanning(t)
	killApp(t, e.rm1, app)
	eps := spnegoFront(t, e.st, kdc.Keytab(t, httpKT))
	reap := func(k krblogin.Config) reapResult {
		g := newTestGPG(t, e.st, nil, nil, func(c *Config) {
			c.UAMReaper.Enabled, c.UAMs = true, e.uams
			c.UAMReaper.RMTimeout = Duration(5 * time.Second)
			c.Kerberos = k
		})
		t.Cleanup(func() { _ = g.Close() })
		acquire(t, g)
		res, err := g.reapUAMs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := reap(krblogin.Config{}); len(res.Reaped) != 0 || !live(appState(t, e.rm2, app)) {
		t.Fatalf("GPG without Kerberos: reaped %v, UAM %s", res.Reaped, appState(t, e.rm2, app))
	}
	res := reap(krblogin.Config{Principal: kdc.Principal("gpg/localhost"), Keytab: gpgKT, Krb5Conf: kdc.ConfPath})
	if len(res.Reaped) != 1 || appState(t, e.rm2, app) != "KILLED" || e.uams.Has(app, "SC-2") {
		t.Fatalf("Kerberized GPG: reaped %v kept %v, UAM %s, rows %v\nKDC log:\n%s", res.Reaped, res.Kept, appState(t, e.rm2, app), e.uams.Rows(), kdc.Log())
	}
	for i, ep := range eps {
		if ep.Tokens.Load() == 0 || ep.Refused.Load() != 0 {
			t.Fatalf("RM %d: tokens %d, refused %d", i, ep.Tokens.Load(), ep.Refused.Load())
		}
	}
}

// spnegoFront puts a SPNEGO endpoint (HTTP/localhost, keys from kt) in
// front of SC-1's and SC-2's RM REST APIs and registers the endpoints'
// addresses as the sub-clusters' RM web addresses.
func spnegoFront(t *testing.T, st *gpgtest.FakeStore, kt *keytab.Keytab) []*spnegotest.Endpoint {
	t.Helper()
	var eps []*spnegotest.Endpoint
	for _, id := range []string{"SC-1", "SC-2"} {
		sc := st.SubCluster(id)
		ep := spnegotest.New(spnegotest.Proxy(sc.GetRmWebServiceAddress()), kt, "HTTP/localhost")
		sc.RmWebServiceAddress = ep.Serve(t)
		st.Register(sc)
		eps = append(eps, ep)
	}
	return eps
}
