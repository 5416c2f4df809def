package krbtest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/yarnfed/yarnfed/internal/testenv"
)

// TestKDCIssuesTicketsGokrb5Accepts logs in from a keytab and with a password,
// gets a service ticket, and checks that the service's exported keytab
// accepts the AP-REQ built from it: the whole path a GSSAPI exchange needs.
func TestKDCIssuesTicketsGokrb5Accepts(t *testing.T) {
	kdc := Start(t, Options{})
	svcKT := kdc.AddService(t, "rm/localhost")
	aliceKT := kdc.AddUser(t, "alice")
	kdc.AddUser(t, "bob")
	cfg := kdc.Config(t)

	for name, cl := range map[string]*client.Client{
		"keytab":   client.NewWithKeytab("alice", kdc.Realm, kdc.Keytab(t, aliceKT), cfg, client.DisablePAFXFAST(true)),
		"password": client.NewWithPassword("bob", kdc.Realm, kdc.Password("bob"), cfg, client.DisablePAFXFAST(true)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := cl.Login(); err != nil {
				t.Fatalf("login: %v\nKDC log:\n%s", err, kdc.Log())
			}
			defer cl.Destroy()
			tkt, key, err := cl.GetServiceTicket("rm/localhost")
			if err != nil {
				t.Fatalf("service ticket: %v", err)
			}
			auth, err := types.NewAuthenticator(cl.Credentials.Domain(), cl.Credentials.CName())
			if err != nil {
				t.Fatal(err)
			}
			apreq, err := messages.NewAPReq(tkt, key, auth)
			if err != nil {
				t.Fatal(err)
			}
			types.SetFlag(&apreq.APOptions, flags.APOptionMutualRequired)
			settings := service.NewSettings(kdc.Keytab(t, svcKT), service.DecodePAC(false))
			ok, creds, err := service.VerifyAPREQ(&apreq, settings)
			if err != nil || !ok {
				t.Fatalf("service rejected AP-REQ: ok=%v err=%v", ok, err)
			}
			if got := creds.UserName() + "@" + creds.Domain(); got != cl.Credentials.UserName()+"@"+kdc.Realm {
				t.Fatalf("client principal %q", got)
			}
		})
	}
}

// TestWrongKeytabRejected: a keytab for another service must not accept the
// ticket (the fixture's keys are real, not shared).
func TestWrongKeytabRejected(t *testing.T) {
	kdc := Start(t, Options{})
	kdc.AddService(t, "rm/localhost")
	otherKT := kdc.AddService(t, "nm/localhost")
	aliceKT := kdc.AddUser(t, "alice")
	cl := client.NewWithKeytab("alice", kdc.Realm, kdc.Keytab(t, aliceKT), kdc.Config(t), client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatal(err)
	}
	tkt, key, err := cl.GetServiceTicket("rm/localhost")
	if err != nil {
		t.Fatal(err)
	}
	auth, _ := types.NewAuthenticator(cl.Credentials.Domain(), cl.Credentials.CName())
	apreq, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		t.Fatal(err)
	}
	ok, _, err := service.VerifyAPREQ(&apreq, service.NewSettings(kdc.Keytab(t, otherKT)))
	if ok || err == nil {
		t.Fatal("a keytab of another principal accepted the ticket")
	}
}

// TestKinitWithConf checks the written krb5.conf with MIT's own client, when
// installed (krb5-user): the file is meant for every Kerberos stack.
func TestKinitWithConf(t *testing.T) {
	kinit, err := exec.LookPath("kinit")
	if err != nil {
		testenv.Missing(t, EnvRequired, "kinit not installed (apt-get install krb5-user)")
	}
	kdc := Start(t, Options{})
	kt := kdc.AddUser(t, "carol")
	cmd := exec.Command(kinit, "-k", "-t", kt, kdc.Principal("carol"))
	cmd.Env = kdc.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v\n%s", err, out)
	}
	if !strings.Contains(kdc.Log(), "carol@"+kdc.Realm) {
		t.Fatalf("KDC log does not mention the login:\n%s", kdc.Log())
	}
}

// TestMissingBinariesSkip: without krb5kdc a test skips with the reason
// (unless YARNFED_KRB_REQUIRED=1, where Start fails it instead).
func TestMissingBinariesSkip(t *testing.T) {
	t.Setenv(EnvBinDir, t.TempDir())
	t.Setenv(EnvRequired, "")
	t.Setenv("CI", "")
	if Available() == nil {
		t.Fatal("an empty bin dir has the binaries")
	}
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t, Options{})
	})
	if !skipped {
		t.Fatal("Start did not skip without binaries")
	}
}
