//go:build interop

package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/dtoken"
	routerspnego "github.com/yarnfed/yarnfed/router/spnego"
)

// TestRESTDelegationTokenRouterAndRM: the same SPNEGO-authenticated REST
// token calls against a real Kerberized RM (RMWebServices) and our router.
// The answers have the same fields and statuses; the RM's token, encoded by
// Hadoop's Token.encodeToUrlString, decodes with the router's codec into an
// RMDelegationTokenIdentifier owned by alice; the router's REST token is an
// IPC login at the router.
func TestRESTDelegationTokenRouterAndRM(t *testing.T) {
	sc := newSecureCluster(t, []string{"alice", "bob"},
		"hadoop.proxyuser.router.hosts=127.0.0.1",
		"hadoop.proxyuser.router.users=*",
		// SPNEGO on the RM's REST (the RM swaps in its delegation-token-aware
		// RMAuthenticationFilter), so RMWebServices sees a Kerberos caller.
		"hadoop.http.filter.initializers=org.apache.hadoop.security.AuthenticationFilterInitializer",
		"hadoop.http.authentication.type=kerberos",
		"hadoop.http.authentication.simple.anonymous.allowed=false",
		"hadoop.http.authentication.kerberos.principal=HTTP/localhost@$REALM",
		"hadoop.http.authentication.kerberos.keytab=$SVC_KEYTAB")
	routerKeytab := sc.kdc.AddService(t, "router/localhost")
	httpKeytab := sc.kdc.ExportKeytab(t, "HTTP/localhost")
	wln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var clientAddr string
	sc.startSecureRouter(t, routerKeytab, true, func(c *router.Config) {
		c.WebListener = wln
		c.SPNEGO = routerspnego.Config{Keytab: httpKeytab, Principal: "HTTP/localhost@" + sc.kdc.Realm}
		clientAddr = c.ClientListener.Addr().String()
	})
	login := func(user string) *spnego.Client {
		cl := krbclient.NewWithKeytab(user, sc.kdc.Realm, sc.kdc.Keytab(t, sc.keys[user]), sc.kdc.Config(t), krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Destroy)
		return spnego.NewClient(cl, nil, "HTTP/localhost")
	}
	alice, bob := login("alice"), login("bob")
	do := func(c *spnego.Client, base, method, path, token, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if token != "" {
			req.Header.Set(router.DelegationTokenHeader, token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	rmBase := "http://" + strings.Replace(loopback(sc.mc.info.Web), "127.0.0.1", "localhost", 1)
	rtBase := "http://localhost:" + strings.TrimPrefix(wln.Addr().String(), "127.0.0.1:")
	const dt = "/ws/v1/cluster/delegation-token"

	for _, side := range []struct{ name, base string }{{"RM", rmBase}, {"router", rtBase}} {
		t.Run(side.name, func(t *testing.T) {
			code, b := do(alice, side.base, "POST", dt, "", `{"renewer":"bob"}`)
			if code != 200 {
				t.Fatalf("issue: %d %s", code, b)
			}
			t.Logf("%s issue: %s", side.name, b)
			var got router.DelegationToken
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"token", "renewer", "owner", "kind", "expiration-time", "max-validity"} {
				if !jsonKeys(t, b)[k] {
					t.Errorf("issue answer lacks %q: %s", k, b)
				}
			}
			tok, err := dtoken.DecodeURL(got.Token)
			if err != nil {
				t.Fatalf("decode the %s's token: %v", side.name, err)
			}
			var id yarnpb.YARNDelegationTokenIdentifierProto
			// The RM's REST names the owner by the full principal
			// (getCallerUserGroupInformation(hsr, true)); the router's
			// tokens, IPC and REST alike, by the short name.
			owner := map[string]string{"RM": "alice@" + sc.kdc.Realm, "router": "alice"}[side.name]
			if err := proto.Unmarshal(tok.GetIdentifier(), &id); err != nil || id.GetOwner() != owner || got.Owner != owner || id.GetRenewer() != "bob" || tok.GetKind() != dtoken.Kind {
				t.Fatalf("%s token: owner %q renewer %q kind %q: %v", side.name, id.GetOwner(), id.GetRenewer(), tok.GetKind(), err)
			}
			if dtoken.EncodeURL(tok) != got.Token {
				t.Errorf("re-encoding the %s's token differs:\n%s\n%s", side.name, got.Token, dtoken.EncodeURL(tok))
			}
			code, b = do(alice, side.base, "POST", dt+"/expiration", got.Token, "")
			if code != 403 {
				t.Errorf("alice renews bob's token: %d %s", code, b)
			}
			t.Logf("%s wrong renewer: %d %s", side.name, code, b)
			code, b = do(bob, side.base, "POST", dt+"/expiration", "", "")
			if code != 400 {
				t.Errorf("renew without the header: %d %s", code, b)
			}
			t.Logf("%s no header: %d %s", side.name, code, b)
			code, b = do(bob, side.base, "POST", dt+"/expiration", got.Token, "")
			if code != 200 || !jsonKeys(t, b)["expiration-time"] {
				t.Errorf("bob renews: %d %s", code, b)
			}
			if side.name == "router" {
				c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{clientAddr}, Protocol: hadoopipc.ProtocolApplicationClient, Token: tok})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := c.Call(t.Context(), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
					t.Errorf("the router's REST token over IPC to the router (and on to the Kerberized RM): %v", err)
				}
			}
			code, b = do(alice, side.base, "DELETE", dt, got.Token, "")
			if code != 200 {
				t.Errorf("alice cancels: %d %s", code, b)
			}
			code, b = do(bob, side.base, "POST", dt+"/expiration", got.Token, "")
			if code != 400 {
				t.Errorf("renew a cancelled token: %d %s", code, b)
			}
			t.Logf("%s cancelled token: %d %s", side.name, code, b)
		})
	}
}
