package nmpush

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/gpg/kube"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/krbtest"
)

// TestPushToKerberizedRM: an RM admin service that takes only SASL
// KERBEROS (tickets from a real KDC) accepts the push of a Pusher logged in
// as the GPG's principal, which calls as itself (not the configured SIMPLE
// user), and refuses a Pusher without Kerberos.
func TestPushToKerberizedRM(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKT := kdc.AddService(t, "rm/localhost")
	gpgKT := kdc.AddService(t, "gpg/localhost")
	scfg := hadoopipc.DefaultServerConfig()
	scfg.AllowSimple = false
	scfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: kdc.Principal("rm/localhost"), Keytab: kdc.Keytab(t, rmKT)}
	rm := startAdminRMWith(t, scfg)

	login, err := krblogin.Config{Principal: kdc.Principal("gpg/localhost"), Keytab: gpgKT, Krb5Conf: kdc.ConfPath}.Login(nil)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, kdc.Log())
	}
	t.Cleanup(login.Destroy)

	push := func(k *hadoopipc.KerberosClientConfig) int {
		src := &fakeNodes{m: map[string]kube.NodeResult{}}
		src.set("n1", "sc-a", "n1.example:8041", 8, 16_000)
		cfg := DefaultConfig()
		cfg.Name, cfg.Registerer = "k8s-1", prometheus.NewRegistry()
		cfg.RMs = StaticRMs{"sc-a": {rm.addr}}
		cfg.User, cfg.Kerberos = "yarn", k
		p, err := New(cfg, src)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		return p.PushOnce(context.Background())
	}

	if n := push(nil); n != 0 {
		t.Fatalf("a SIMPLE pusher got %d NodeManagers through a Kerberos-only RM", n)
	}
	if n := push(&hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "rm/_HOST@" + kdc.Realm}); n != 1 {
		t.Fatalf("Kerberized pusher: %d NodeManagers accepted, want 1\nKDC log:\n%s", n, kdc.Log())
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if got, want := fmt.Sprint(rm.calls), "[[n1.example:8041=8/16000/-1]]"; got != want {
		t.Fatalf("RM calls %s, want %s", got, want)
	}
	if len(rm.users) != 1 || rm.users[0].Name != "gpg" || rm.users[0].RealUser != "" || rm.users[0].AuthMethod != hadoopipc.AuthMethodKerberos {
		t.Fatalf("RM saw callers %+v, want gpg by Kerberos, not acting for anyone", rm.users)
	}
}
