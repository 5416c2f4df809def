//go:build interop

package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
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
// extra configuration (e.g. hadoop.proxyuser.* for a router; "$SVC_KEYTAB"
// and "$REALM" in it name the service keytab and the realm).
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
	// Extras may name the service keytab and the realm, made here.
	subst := strings.NewReplacer("$SVC_KEYTAB", svc, "$REALM", kdc.Realm)
	for i := range extra {
		extra[i] = subst.Replace(extra[i])
	}
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

	sub := submitAsAlice(t, sc, conf, "secure-a", "alice's list")

	// No ticket: refused before any call, with Hadoop's client-side error;
	// the RM's AccessControlException for bob's kill.
	sc.checkAppACLs(t, conf, sub, "", "Client cannot authenticate via:[TOKEN, KERBEROS]", "")
}

// startSecureRouter runs our router in front of the Kerberized cluster: its
// own principal router/localhost on the client port (SIMPLE refused), the
// RM reached with Kerberos as router acting for each caller (the RM's
// hadoop.proxyuser.router.* allows it), application ACLs as given. It
// returns a client yarn-site.xml pointing at the router.
func (sc *secureCluster) startSecureRouter(t *testing.T, routerKeytab string, aclEnable bool, mods ...func(*router.Config)) string {
	t.Helper()
	store := routertest.NewStore()
	store.Put(router.SubClusterInfo{ID: "SC-secure", ClientRMServiceAddress: loopback(sc.mc.info.RM), State: router.StateRunning, LastStartTime: time.Now()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.DefaultConfig()
	cfg.ClientListener, cfg.WebAddress, cfg.Store = ln, "", store
	cfg.Kerberos = router.KerberosConfig{
		Principal: "router/localhost@" + sc.kdc.Realm, Keytab: routerKeytab, Krb5Conf: sc.kdc.ConfPath,
		RMPrincipal: "yarn/_HOST@" + sc.kdc.Realm,
	}
	cfg.AdminACL = "yarn"
	cfg.Authz.ACLEnable = aclEnable
	cfg.Authz.StaticGroupMapping = "alice=;bob=;carol="
	for _, m := range mods {
		m(&cfg)
	}
	r := routertest.StartRouter(t, cfg)
	// A client configured for the router: it expects the router's principal
	// where it would expect an RM's.
	return writeYarnSite(t, map[string]string{
		"hadoop.security.authentication": "kerberos",
		"yarn.resourcemanager.address":   r.ClientRMAddr().String(),
		"yarn.resourcemanager.principal": "router/localhost@" + sc.kdc.Realm,
	})
}

// TestKerberizedRouter: a real Hadoop YarnClient logged in from a keytab
// submits, lists and kills through our router, which reaches a real
// Kerberized RM as itself acting for the caller (doAs); a client without a
// ticket is refused with Hadoop's error; bob cannot kill alice's
// application, refused by the router when its ACLs are on and by the RM
// (which sees bob, through the router's doAs) when they are off.
func TestKerberizedRouter(t *testing.T) {
	sc := newSecureCluster(t, []string{"alice", "bob"},
		"hadoop.proxyuser.router.hosts=127.0.0.1",
		"hadoop.proxyuser.router.users=*")
	routerKeytab := sc.kdc.AddService(t, "router/localhost")

	// A Kerberos caller acting for others through the router (doAs): only
	// as the router's proxy_users allow, refused with Hadoop's
	// AuthorizationException otherwise.
	t.Run("proxy users", func(t *testing.T) {
		conf := sc.startSecureRouter(t, routerKeytab, false, func(c *router.Config) {
			c.Authz.ProxyUsers = map[string]hadoopipc.ProxyUserRule{"alice": {Hosts: "127.0.0.1", Users: "carol"}}
		})
		ok := sc.client(t, conf, "alice", "--user", "carol", "submit:as-carol:default:unmanaged", "report")
		var rep struct{ User string }
		ok.op(t, "report").decode(t, &rep)
		if rep.User != "carol" {
			t.Errorf("alice acting for carol: the RM recorded %q as the user", rep.User)
		}
		no := sc.client(t, conf, "alice", "--user", "bob", "metrics").op(t, "metrics")
		if no.OK || !strings.Contains(no.Message, "User: alice@"+sc.kdc.Realm+" is not allowed to impersonate bob") {
			t.Errorf("alice acting for bob: %+v, want the AuthorizationException", no)
		}
		t.Logf("Java client, refused doAs: %s: %s (remote %s)", no.Exception, firstLine(no.Message), no.RemoteClass)
	})

	for _, tc := range []struct {
		name      string
		routerACL bool
	}{{"router ACLs on", true}, {"router ACLs off, RM enforces", false}} {
		t.Run(tc.name, func(t *testing.T) {
			conf := sc.startSecureRouter(t, routerKeytab, tc.routerACL)
			sub := submitAsAlice(t, sc, conf, "via-router", "the list through the router (the RM must see alice, not the router)")

			sc.checkAppACLs(t, conf, sub, " through the router", "Client cannot authenticate via:[",
				"org.apache.hadoop.yarn.exceptions.YarnException")
		})
	}
}

// checkAppACLs checks alice's application sub as the Java client sees it
// through conf: a client without a ticket is refused (noTicket in the
// message); bob may view it but not kill it (the RM's
// AccessControlException, carried as exception killException when that is
// set); alice may kill it. via names the path in failures.
func (sc *secureCluster) checkAppACLs(t *testing.T, conf string, sub submittedApp, via, noTicket, killException string) {
	t.Helper()
	nt := sc.client(t, conf, "", "metrics").op(t, "metrics")
	if nt.OK || !strings.Contains(nt.Message, noTicket) {
		t.Errorf("client without a ticket%s: %+v, want %q", via, nt, noTicket)
	}

	kb := sc.client(t, conf, "bob", "report:"+sub.ApplicationID, "kill:"+sub.ApplicationID)
	if l := kb.op(t, "report:"+sub.ApplicationID); !l.OK {
		t.Errorf("bob's report%s: %+v", via, l)
	}
	k := kb.op(t, "kill:"+sub.ApplicationID)
	want := "java.security.AccessControlException: User bob cannot perform operation MODIFY_APP on " + sub.ApplicationID
	if k.OK || (killException != "" && k.Exception != killException) || !strings.Contains(k.Message, want) {
		t.Errorf("bob's kill%s: %+v, want %s %q", via, k, killException, want)
	}
	t.Logf("Java client, bob's kill%s: %s: %s", via, k.Exception, firstLine(k.Message))

	if l := sc.client(t, conf, "alice", "kill:"+sub.ApplicationID).op(t, "kill:"+sub.ApplicationID); !l.OK {
		t.Errorf("alice's kill%s: %+v", via, l)
	}
}

// submittedApp is what the driver prints for a submission.
type submittedApp struct {
	ApplicationID string `json:"applicationId"`
}

// submitAsAlice submits an unmanaged application as alice (bob may view it,
// nobody else modify it) and requires her listing to show it owned by
// alice; where names the listing in the failure.
func submitAsAlice(t *testing.T, sc *secureCluster, conf, name, where string) submittedApp {
	t.Helper()
	submit := "submit:" + name + ":default:unmanaged"
	run := sc.client(t, conf, "alice", "--view-acl", "bob", "--modify-acl", " ", submit, "list")
	var sub submittedApp
	run.op(t, submit).decode(t, &sub)
	var list struct {
		Applications []struct {
			ApplicationID string `json:"applicationId"`
			User          string `json:"user"`
		} `json:"applications"`
	}
	run.op(t, "list").decode(t, &list)
	for _, a := range list.Applications {
		if a.ApplicationID == sub.ApplicationID && a.User == "alice" {
			return sub
		}
	}
	t.Fatalf("%s lacks %s owned by alice: %+v", where, sub.ApplicationID, list)
	return sub
}
