//go:build interop

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/router/routertest"
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
			var seen callerLog
			cfg.Authorize = seen.authorize
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
			callers := seen.users()
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

// startKerberosRPCServer runs KerberosRpcServer (a real Hadoop IPC server in
// Kerberos mode serving Hadoop's TestRpcService) and returns its address.
func startKerberosRPCServer(t *testing.T, j *javaEnv, args ...string) string {
	t.Helper()
	var r struct{ Port int }
	startJavaServer(t, j, "KerberosRpcServer", nil, args...).decode(t, &r)
	return fmt.Sprintf("127.0.0.1:%d", r.Port)
}

// startJavaServer runs the e2e Java server class (org.yarnfed.e2e.class)
// and returns its "ready" line; onLine, if not nil, gets every other JSON
// line it prints on stdout, from another goroutine. Its stdin stays open
// while it runs: the test's cleanup closes it (the server's cue to exit)
// and kills the JVM if it lingers past 10 s.
func startJavaServer(t *testing.T, j *javaEnv, class string, onLine func(driverLine), args ...string) driverLine {
	t.Helper()
	argv := append(append([]string{}, j.jvmArgs...), "-cp", j.classpath, "org.yarnfed.e2e."+class)
	cmd := exec.Command(j.java, append(argv, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan driverLine, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l driverLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			if l.Op == "ready" {
				ready <- l
			} else if onLine != nil {
				onLine(l)
			}
		}
		close(ready)
	}()
	select {
	case l, ok := <-ready:
		if !ok {
			t.Fatalf("%s exited; stderr:\n%s", class, tail(stderr.String(), 4000))
		}
		return l
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s not ready; stderr:\n%s", class, tail(stderr.String(), 4000))
	}
	return driverLine{}
}

// Our Go client logs in from a keytab (gokrb5) and talks SASL KERBEROS to a
// real Hadoop IPC server (Hadoop's Server + the JDK's GSSAPI acceptor): every
// protection, the connection context Hadoop reads as the principal itself,
// a doAs Hadoop's ProxyUsers allows, and one it refuses.
func TestGoKerberosClientAgainstHadoopServer(t *testing.T) {
	j := needJava(t)
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKeytab := kdc.AddService(t, "rm/localhost")
	routerKT := kdc.AddUser(t, "router")
	login := krbclient.NewWithKeytab("router", kdc.Realm, kdc.Keytab(t, routerKT), kdc.Config(t), krbclient.DisablePAFXFAST(true))
	if err := login.Login(); err != nil {
		t.Fatal(err)
	}
	defer login.Destroy()
	const protocol = "org.apache.hadoop.ipc.TestRpcBase$TestRpcService"
	for _, protection := range []string{"authentication", "integrity", "privacy"} {
		t.Run(protection, func(t *testing.T) {
			addr := startKerberosRPCServer(t, j, "--krb5conf", kdc.ConfPath, "--principal", "rm/localhost@"+kdc.Realm,
				"--keytab", rmKeytab, "--protection", protection, "--proxyuser", "router:bob")
			call := func(user, method string, req, resp proto.Message) error {
				c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
					Addresses: []string{addr}, Protocol: protocol, User: user,
					Kerberos: &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "rm/_HOST@" + kdc.Realm},
				})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				return c.Call(ctx, method, req, resp)
			}
			// Over 64 KiB: more than the maxbuf Hadoop announces; Hadoop does not
			// enforce it on unwrap, and we send each packet as one token.
			msg := strings.Repeat("kerberos ", 20000)
			echo := &wrapperspb.StringValue{}
			if err := call("", "echo", wrapperspb.String(msg), echo); err != nil || echo.GetValue() != msg {
				t.Fatalf("echo: %v (%d bytes back)", err, len(echo.GetValue()))
			}
			who := &wrapperspb.StringValue{}
			if err := call("", "getAuthUser", &emptypb.Empty{}, who); err != nil || who.GetValue() != "router@"+kdc.Realm {
				t.Fatalf("Hadoop saw user %q, err %v", who.GetValue(), err)
			}
			if err := call("bob", "getAuthUser", &emptypb.Empty{}, who); err != nil || who.GetValue() != "bob" {
				t.Fatalf("doAs bob: Hadoop saw user %q, err %v", who.GetValue(), err)
			}
			err := call("mallory", "getAuthUser", &emptypb.Empty{}, who)
			var re *hadoopipc.RemoteError
			// At the connection, FATAL_UNAUTHORIZED: what the router's breaker
			// must not count as the RM being down (router.refusedLogin).
			if !errors.As(err, &re) || re.Class != "org.apache.hadoop.security.authorize.AuthorizationException" ||
				!re.Fatal || re.Code != commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED {
				t.Fatalf("doAs mallory (not in hadoop.proxyuser.router.users): %v", err)
			}
		})
	}
}

// Hadoop's YarnClient, logged in from a keytab, through our Router with
// Kerberos on, to a Kerberized (Go) RM the Router reaches as itself acting
// for the caller: calls work end to end, the RM sees alice via the router's
// principal, a delegation token is issued over Kerberos, and a SIMPLE
// client is refused at the Router.
func TestJavaKerberosYarnClientThroughRouter(t *testing.T) {
	j := needJava(t)
	kdc := krbtest.Start(t, krbtest.Options{})
	rmKeytab := kdc.AddService(t, "rm/localhost")
	aliceKeytab := kdc.AddUser(t, "alice")

	rmCfg := hadoopipc.DefaultServerConfig()
	rmCfg.AllowSimple = false
	rmCfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: "rm/localhost@" + kdc.Realm, Keytab: kdc.Keytab(t, rmKeytab)}
	var seen callerLog
	rmCfg.Authorize = seen.authorize
	rmAddr := serveIPC(t, rmCfg, newFakeRM().protocol())

	store := routertest.NewStore()
	store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: rmAddr, State: router.StateRunning, LastStartTime: time.Now()})
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.DefaultConfig()
	cfg.ClientListener, cfg.WebAddress, cfg.Store = cln, "", store
	cfg.Kerberos = router.KerberosConfig{
		// Java clients check the router against yarn.resourcemanager.principal.
		Principal: "rm/localhost@" + kdc.Realm, Keytab: rmKeytab, Krb5Conf: kdc.ConfPath,
		RMPrincipal: "rm/_HOST@" + kdc.Realm,
	}
	r := routertest.StartRouter(t, cfg)

	conf := writeYarnSite(t, map[string]string{
		"yarn.resourcemanager.address":   r.ClientRMAddr().String(),
		"yarn.resourcemanager.principal": "rm/_HOST@" + kdc.Realm,
	})
	run := j.runDriver(t, "YarnClientDriver", "--conf", conf, "--krb5conf", kdc.ConfPath,
		"--principal", "alice@"+kdc.Realm, "--keytab", aliceKeytab, "metrics", "submit:krb", "report", "dtoken:yarn")
	for _, op := range []string{"metrics", "submit:krb", "report", "dtoken:yarn"} {
		if l := run.op(t, op); !l.OK {
			t.Fatalf("%s through the Kerberos router: %s %s (remote %s)\nstderr:\n%s", op, l.Exception, l.Message, l.RemoteClass, tail(run.stderr, 3000))
		}
	}
	var rep struct{ User string }
	run.op(t, "report").decode(t, &rep)
	if rep.User != "alice" {
		t.Errorf("application user at the RM %q, want alice", rep.User)
	}
	var tok struct{ Kind string }
	run.op(t, "dtoken:yarn").decode(t, &tok)
	if tok.Kind != dtoken.Kind {
		t.Errorf("delegation token kind %q", tok.Kind)
	}
	atRM := seen.users()
	for _, u := range atRM {
		if u.AuthMethod != hadoopipc.AuthMethodKerberos || u.Name != "alice" || u.RealUser != "rm" {
			t.Errorf("the RM saw %+v, want alice acting through the router's principal", u)
		}
	}
	if len(atRM) == 0 {
		t.Fatal("no call reached the RM")
	}

	simple := j.runDriver(t, "YarnClientDriver", "--conf", conf, "metrics")
	if l := simple.op(t, "metrics"); l.OK || !strings.Contains(l.Message, "SIMPLE authentication is not enabled") {
		t.Fatalf("a SIMPLE client through the Kerberos router: %+v", l)
	}
}

// callerLog records the caller of every call an IPC server authorizes (and
// authorizes them all).
type callerLog struct {
	mu   sync.Mutex
	seen []hadoopipc.User
}

func (l *callerLog) authorize(ctx context.Context, _ *hadoopipc.CallInfo) error {
	u, _ := hadoopipc.UserFromContext(ctx)
	l.mu.Lock()
	l.seen = append(l.seen, u)
	l.mu.Unlock()
	return nil
}

func (l *callerLog) users() []hadoopipc.User {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}
