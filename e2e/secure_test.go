//go:build interop

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/krbtest"
)

// secureCluster is a Kerberized MiniYARNCluster (security on, RM and NMs
// logged in from one keytab, application ACLs on) in a realm of its own.
type secureCluster struct {
	kdc  *krbtest.KDC
	mc   *miniCluster
	keys map[string]string // user -> keytab
}

// newSecureCluster starts a KDC, principals for the cluster ("yarn/localhost",
// whose short name "yarn" is the admin), for HTTP (the RM's web app needs a
// SPNEGO key once security is on) and for each user, then the cluster with
// extra configuration (e.g. hadoop.proxyuser.* for a router).
func newSecureCluster(t *testing.T, users []string, extra ...string) *secureCluster {
	t.Helper()
	needJava(t)
	kdc := krbtest.Start(t, krbtest.Options{})
	kdc.AddService(t, "yarn/localhost")
	kdc.AddService(t, "HTTP/localhost")
	svc := kdc.ExportKeytab(t, "yarn/localhost", "HTTP/localhost")
	sc := &secureCluster{kdc: kdc, keys: map[string]string{}}
	for _, u := range users {
		sc.keys[u] = kdc.AddUser(t, u)
	}
	p := func(name string) string { return name + "@" + kdc.Realm }
	set := []string{
		"hadoop.security.authentication=kerberos",
		// One JVM has one UGI login user: RM and NMs share a principal.
		"yarn.resourcemanager.principal=" + p("yarn/localhost"),
		"yarn.resourcemanager.keytab=" + svc,
		"yarn.nodemanager.principal=" + p("yarn/localhost"),
		"yarn.nodemanager.keytab=" + svc,
		"yarn.resourcemanager.webapp.spnego-principal=" + p("HTTP/localhost"),
		"yarn.resourcemanager.webapp.spnego-keytab-file=" + svc,
		"yarn.acl.enable=true",
		"yarn.admin.acl=yarn",
		// The CapacityScheduler's default acl_administer_queue is "*", and queue admins
		// may modify any application in the queue: narrow it so application ACLs decide.
		"yarn.scheduler.capacity.root.acl_administer_queue=yarn",
		"yarn.scheduler.capacity.root.default.acl_administer_queue=yarn",
		// Test users have no OS accounts: give them (no) groups without a shell lookup.
		"hadoop.user.group.static.mapping.overrides=dr.who=;yarn=;" + strings.Join(users, "=;") + "=;",
	}
	start := time.Now()
	sc.mc = newCluster(t, clusterOptions{clusterID: "e2e-secure", epoch: 13, nms: 1, jvm: kdc.JavaOpts(), set: append(set, extra...)})
	t.Logf("Kerberized MiniYARNCluster up in %s: %+v", time.Since(start).Round(time.Millisecond), sc.mc.info)
	return sc
}

// client runs YarnClientDriver logged in from user's keytab ("" = no
// ticket at all) against conf.
func (sc *secureCluster) client(t *testing.T, conf, user string, args ...string) driverRun {
	t.Helper()
	argv := []string{"--conf", conf, "--krb5conf", sc.kdc.ConfPath}
	if user != "" {
		argv = append(argv, "--principal", user+"@"+sc.kdc.Realm, "--keytab", sc.keys[user])
	}
	return needJava(t).runDriver(t, "YarnClientDriver", append(argv, args...)...)
}

// TestKerberizedRMDirect proves the Java side of the secure scenario against
// a real Kerberized RM, no router: a YarnClient logged in from a keytab
// submits, lists and kills; one without a ticket is refused with Hadoop's
// error; with ACLs on, bob cannot kill alice's application and the Java
// client shows the AccessControlException. The router scenario repeats this
// through the router (TestKerberizedRouter).
func TestKerberizedRMDirect(t *testing.T) {
	sc := newSecureCluster(t, []string{"alice", "bob"})
	conf := sc.mc.info.Conf

	run := sc.client(t, conf, "alice", "--view-acl", "bob", "--modify-acl", " ", "submit:secure-a:default:unmanaged", "list")
	var sub struct {
		ApplicationID string `json:"applicationId"`
	}
	run.op(t, "submit:secure-a:default:unmanaged").decode(t, &sub)
	var list struct {
		Applications []struct {
			ApplicationID string `json:"applicationId"`
			User          string `json:"user"`
		} `json:"applications"`
	}
	run.op(t, "list").decode(t, &list)
	found := false
	for _, a := range list.Applications {
		found = found || (a.ApplicationID == sub.ApplicationID && a.User == "alice")
	}
	if !found {
		t.Fatalf("alice's list lacks %s owned by alice: %+v", sub.ApplicationID, list)
	}

	// No ticket: refused before any call, with Hadoop's client-side error.
	nt := sc.client(t, conf, "", "metrics").op(t, "metrics")
	if nt.OK || !strings.Contains(nt.Message, "Client cannot authenticate via:[TOKEN, KERBEROS]") {
		t.Errorf("client without a ticket: %+v, want 'Client cannot authenticate via:[TOKEN, KERBEROS]'", nt)
	}

	// bob may view (VIEW_APP lists him) but not kill.
	kb := sc.client(t, conf, "bob", "report:"+sub.ApplicationID, "kill:"+sub.ApplicationID)
	if l := kb.op(t, "report:"+sub.ApplicationID); !l.OK {
		t.Errorf("bob's report: %+v", l)
	}
	k := kb.op(t, "kill:"+sub.ApplicationID)
	if k.OK || !strings.Contains(k.Message, "java.security.AccessControlException: User bob cannot perform operation MODIFY_APP on "+sub.ApplicationID) {
		t.Errorf("bob's kill: %+v, want the RM's AccessControlException", k)
	}
	t.Logf("what the Java client shows for bob's kill: %s: %s", k.Exception, firstLine(k.Message))

	// The owner can.
	if l := sc.client(t, conf, "alice", "kill:"+sub.ApplicationID).op(t, "kill:"+sub.ApplicationID); !l.OK {
		t.Errorf("alice's kill: %+v", l)
	}
}
