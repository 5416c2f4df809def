//go:build interop

package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
)

// Hadoop's real YarnClient, logged in from a keytab with
// UserGroupInformation.loginUserFromKeytab against a real MIT KDC, talks SASL
// KERBEROS/GSSAPI to our Go IPC server: every hadoop.rpc.protection, and a
// proxy user (doAs) that reaches the handler as such.
func TestJavaKerberosYarnClientAgainstGoServer(t *testing.T) {
	j := needJava(t)
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKeytab := kdc.AddService(t, "rm/localhost")
	aliceKeytab := kdc.AddUser(t, "alice")

	for _, tc := range []struct {
		protection string
		qop        string
		doAs       string
	}{
		{"authentication", "auth", ""},
		{"integrity", "auth-int", ""},
		{"privacy", "auth-conf", ""},
		{"authentication", "auth", "bob"},
	} {
		name := tc.protection
		if tc.doAs != "" {
			name += "/doAs_" + tc.doAs
		}
		t.Run(name, func(t *testing.T) {
			cfg := hadoopipc.DefaultServerConfig()
			cfg.AllowSimple = false
			cfg.QOPs = []string{tc.qop}
			cfg.Kerberos = &hadoopipc.KerberosServerConfig{
				Principal: "rm/localhost@" + kdc.Realm,
				Keytab:    kdc.Keytab(t, rmKeytab),
			}
			var mu sync.Mutex
			var callers []hadoopipc.User
			cfg.Authorize = func(ctx context.Context, info *hadoopipc.CallInfo) error {
				u, _ := hadoopipc.UserFromContext(ctx)
				mu.Lock()
				callers = append(callers, u)
				mu.Unlock()
				return nil
			}
			rm := newFakeRM()
			addr := serveIPC(t, cfg, rm.protocol())
			conf := writeYarnSite(t, map[string]string{
				"yarn.resourcemanager.address":   addr,
				"yarn.resourcemanager.principal": "rm/_HOST@" + kdc.Realm,
				"hadoop.rpc.protection":          tc.protection,
			})
			args := []string{"--conf", conf, "--krb5conf", kdc.ConfPath,
				"--principal", "alice@" + kdc.Realm, "--keytab", aliceKeytab}
			if tc.doAs != "" {
				args = append(args, "--user", tc.doAs)
			}
			run := j.runDriver(t, "YarnClientDriver", append(args, "metrics", "submit:krb", "report")...)
			for _, op := range []string{"metrics", "submit:krb", "report"} {
				if l := run.op(t, op); !l.OK {
					t.Fatalf("%s failed over Kerberos: %s %s\nstderr:\n%s\nKDC log:\n%s", op, l.Exception, l.Message, tail(run.stderr, 3000), tail(kdc.Log(), 2000))
				}
			}
			var rep struct{ User string }
			run.op(t, "report").decode(t, &rep)
			wantUser := "alice"
			if tc.doAs != "" {
				wantUser = tc.doAs
			}
			if rep.User != wantUser {
				t.Errorf("application user %q, want %q", rep.User, wantUser)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, u := range callers {
				wantReal := ""
				if tc.doAs != "" {
					wantReal = "alice"
				}
				if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != wantUser || u.RealUser != wantReal || u.Principal != "alice@"+kdc.Realm {
					t.Fatalf("server saw caller %+v", u)
				}
			}
			if len(callers) == 0 {
				t.Fatal("no call reached the server")
			}
		})
	}

	t.Run("SIMPLE client refused", func(t *testing.T) {
		cfg := hadoopipc.DefaultServerConfig()
		cfg.AllowSimple = false
		cfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: "rm/localhost@" + kdc.Realm, Keytab: kdc.Keytab(t, rmKeytab)}
		addr := serveIPC(t, cfg, newFakeRM().protocol())
		conf := writeYarnSite(t, map[string]string{"yarn.resourcemanager.address": addr})
		run := j.runDriver(t, "YarnClientDriver", "--conf", conf, "metrics")
		l := run.op(t, "metrics")
		if l.OK || !strings.Contains(l.Message+strings.Join(l.Causes, " "), "AccessControlException") && l.RemoteClass != "org.apache.hadoop.security.AccessControlException" {
			t.Fatalf("a SIMPLE client got %+v", l)
		}
		if !strings.Contains(l.Message, "SIMPLE authentication is not enabled") {
			t.Errorf("message %q does not say why (Hadoop: 'SIMPLE authentication is not enabled.  Available:[...]')", l.Message)
		}
	})
}
