package krblogin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/internal/krbtest"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		c    Config
		ipc  bool
		want string // "" = valid
	}{
		{"off", Config{}, false, ""},
		{"on", Config{Principal: "yarnfed/_HOST@R", Keytab: "/k"}, false, ""},
		{"IPC role with rm_principal", Config{Principal: "yarnfed/h@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R"}, true, ""},
		{"keytab alone", Config{Keytab: "/k"}, false, "need kerberos.principal"},
		{"rm_http_principal alone", Config{RMHTTPPrincipal: "HTTP/_HOST@R"}, false, "need kerberos.principal"},
		{"no keytab", Config{Principal: "yarnfed/h@R"}, false, "kerberos.keytab: required"},
		{"no realm", Config{Principal: "yarnfed/h", Keytab: "/k"}, false, "needs its realm"},
		{"rm_principal on a REST-only role", Config{Principal: "a@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R"}, false, "kerberos.rm_principal"},
		{"SPNEGO principal not HTTP", Config{Principal: "a@R", Keytab: "/k", RMHTTPPrincipal: "rm/_HOST@R"}, false, "kerberos.rm_http_principal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate(tc.ipc)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBindFlags(t *testing.T) {
	for _, ipc := range []bool{false, true} {
		var c Config
		f := pflag.NewFlagSet("x", pflag.ContinueOnError)
		c.BindFlags(f, "test", ipc)
		args := []string{"--kerberos-principal", "p@R", "--kerberos-keytab", "/k", "--krb5-conf", "/c", "--rm-http-principal", "HTTP/h"}
		if ipc {
			args = append(args, "--rm-principal", "rm/_HOST@R")
		}
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		want := Config{Principal: "p@R", Keytab: "/k", Krb5Conf: "/c", RMHTTPPrincipal: "HTTP/h"}
		if ipc {
			want.RMPrincipal = "rm/_HOST@R"
		}
		if c != want {
			t.Fatalf("ipc=%v: %+v, want %+v", ipc, c, want)
		}
		if !ipc && f.Lookup("rm-principal") != nil {
			t.Fatal("--rm-principal bound for a role without IPC")
		}
	}
}

// TestLogin logs in to a real KDC from a keytab, with _HOST expanded to
// this host's lower-cased name and krb5.conf found through KRB5_CONFIG,
// and names the setting at fault when it cannot.
func TestLogin(t *testing.T) {
	kdc := krbtest.Start(t, krbtest.Options{})
	kt := kdc.AddService(t, "yarnfed/agent1.example.com")
	old := hostname
	hostname = func() (string, error) { return "Agent1.Example.COM", nil }
	t.Cleanup(func() { hostname = old })
	t.Setenv("KRB5_CONFIG", kdc.ConfPath)

	cl, err := Config{Principal: "yarnfed/_HOST@" + kdc.Realm, Keytab: kt}.Login(nil)
	if err != nil {
		t.Fatalf("login: %v\nKDC log:\n%s", err, kdc.Log())
	}
	defer cl.Destroy()
	if got := cl.Credentials.UserName() + "@" + cl.Credentials.Realm(); got != "yarnfed/agent1.example.com@"+kdc.Realm {
		t.Fatalf("logged in as %s", got)
	}
	if _, _, err := cl.GetServiceTicket("yarnfed/agent1.example.com"); err != nil {
		t.Fatalf("service ticket with the login: %v", err)
	}

	bad := filepath.Join(t.TempDir(), "missing-krb5.conf")
	for name, tc := range map[string]struct {
		c    Config
		want string
	}{
		"missing keytab":          {Config{Principal: "yarnfed/x@" + kdc.Realm, Keytab: filepath.Join(t.TempDir(), "none")}, "kerberos.keytab"},
		"principal not in keytab": {Config{Principal: "other/x@" + kdc.Realm, Keytab: kt}, "login as other/x@"},
		"missing krb5.conf":       {Config{Principal: "yarnfed/_HOST@" + kdc.Realm, Keytab: kt, Krb5Conf: bad}, "kerberos.krb5_conf"},
		"not enabled":             {Config{}, "no kerberos.principal"},
	} {
		t.Run(name, func(t *testing.T) {
			cl, err := tc.c.Login(nil)
			if err == nil {
				cl.Destroy()
				t.Fatalf("login succeeded, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
