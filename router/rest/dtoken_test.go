package rest_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbspnego "github.com/jcmturner/gokrb5/v8/spnego"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/router/routertest"
	"github.com/yarnfed/yarnfed/router/spnego"
)

// restUser sends REST calls as one Kerberos principal (SPNEGO).
type restUser struct {
	t    *testing.T
	base string
	sc   *krbspnego.Client
}

func (u restUser) do(method, path, header, ctype, accept, body string) (int, http.Header, []byte) {
	u.t.Helper()
	req, _ := http.NewRequest(method, u.base+path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if header != "" {
		req.Header.Set(router.DelegationTokenHeader, header)
	}
	resp, err := u.sc.Do(req)
	if err != nil {
		u.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func tokenIPCClient(t *testing.T, r *router.Router, tok *commonpb.TokenProto) *hadoopipc.Client {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRESTDelegationTokens: with SPNEGO on (and Kerberos on the client
// port, as in production) REST issues, renews and cancels the same tokens
// IPC does, against a real MIT KDC, with RMWebServices' statuses.
func TestRESTDelegationTokens(t *testing.T) {
	e := routertest.NewKrbEnv(t)
	httpKeytab := e.KDC.AddService(t, "HTTP/localhost")
	rm := routertest.NewRM("SC-1", 1000)
	f := &routertest.Fed{T: t, Store: routertest.NewStore(), RMs: map[router.SubClusterID]*routertest.RM{"SC-1": rm}}
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning})
	f.Client = &hadoopipc.Client{} // Kerberos only: no SIMPLE dial
	r := f.NewRouter(func(c *router.Config) {
		e.RouterConfig(c)
		c.SPNEGO = spnego.Config{Keytab: httpKeytab, Principal: e.KDC.Principal("HTTP/localhost")}
	}, rm)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close)
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	logins := map[string]*krbclient.Client{}
	as := func(name string) restUser {
		if logins[name] == nil {
			logins[name] = e.LoginKeytab(name)
		}
		return restUser{t: t, base: base, sc: krbspnego.NewClient(logins[name], nil, "HTTP/localhost")}
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	const dt = "/ws/v1/cluster/delegation-token"

	// Issue (JSON).
	before := time.Now()
	code, hdr, b := alice.do("POST", dt, "", "application/json", "", `{"renewer":"bob"}`)
	var got router.DelegationToken
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal(b, &got) != nil {
		t.Fatalf("issue: %d %s", code, b)
	}
	if got.Owner != "alice" || got.Renewer != "bob" || got.Kind != dtoken.Kind || got.ExpirationTime == nil || got.MaxValidity == nil {
		t.Fatalf("issue: %s", b)
	}
	if exp := time.UnixMilli(*got.ExpirationTime); exp.Before(before.Add(24*time.Hour-time.Second)) || exp.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("expiration-time %v, want a day from now", exp)
	}
	if maxv := time.UnixMilli(*got.MaxValidity); maxv.Before(before.Add(7*24*time.Hour-time.Second)) || maxv.After(time.Now().Add(7*24*time.Hour)) {
		t.Errorf("max-validity %v, want a week from now", maxv)
	}
	tok, err := dtoken.DecodeURL(got.Token)
	if err != nil {
		t.Fatalf("decode %q: %v", got.Token, err)
	}
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(tok.GetIdentifier(), &id); err != nil || id.GetOwner() != "alice" || id.GetRenewer() != "bob" ||
		tok.GetKind() != dtoken.Kind || tok.GetService() != r.ClientRMAddr().String() {
		t.Fatalf("token %v / %v: %v", tok, &id, err)
	}
	if dtoken.EncodeURL(tok) != got.Token {
		t.Errorf("re-encoding differs: %s", dtoken.EncodeURL(tok))
	}

	// Issue (XML).
	code, hdr, b = alice.do("POST", dt, "", "application/xml", "application/xml", `<delegation-token><renewer>bob</renewer></delegation-token>`)
	var gotX router.DelegationToken
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/xml") || xml.Unmarshal(b, &gotX) != nil ||
		gotX.Owner != "alice" || gotX.Token == "" || gotX.ExpirationTime == nil {
		t.Fatalf("issue XML: %d %s", code, b)
	}

	// A REST token is an IPC login.
	ipc := tokenIPCClient(t, r, tok)
	if err := ipc.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("REST-issued token over IPC: %v", err)
	}

	// Only the renewer renews: the RM's plain-text 403.
	code, _, b = alice.do("POST", dt+"/expiration", got.Token, "", "", "")
	if code != 403 || !strings.Contains(string(b), "non-matching renewer") {
		t.Fatalf("alice renews bob's token: %d %s", code, b)
	}
	code, _, b = bob.do("POST", dt+"/expiration", got.Token, "", "", "")
	var renewed router.DelegationToken
	if code != 200 || json.Unmarshal(b, &renewed) != nil || renewed.ExpirationTime == nil || renewed.Token != "" ||
		*renewed.ExpirationTime < *got.ExpirationTime {
		t.Fatalf("bob renews: %d %s", code, b)
	}
	code, _, b = bob.do("POST", dt+"/expiration", got.Token, "", "application/xml", "")
	if code != 200 || !bytes.Contains(b, []byte("<delegation-token><expiration-time>")) {
		t.Fatalf("bob renews, XML: %d %s", code, b)
	}

	// Bad tokens are 400 BadRequestException.
	tampered := proto.Clone(tok).(*commonpb.TokenProto)
	tampered.Password = append([]byte(nil), tok.GetPassword()...)
	tampered.Password[0] ^= 1
	for name, h := range map[string]string{"no header": "", "not a token": "!!!", "wrong password": dtoken.EncodeURL(tampered)} {
		code, _, b = bob.do("POST", dt+"/expiration", h, "", "", "")
		if code != 400 || !strings.Contains(string(b), `"exception":"BadRequestException"`) {
			t.Errorf("%s: %d %s", name, code, b)
		}
	}

	// A token issued over IPC renews and cancels over REST.
	aliceIPC := routertest.KrbRouterClient(t, r, logins["alice"], "")
	ipcTok := &commonpb.GetDelegationTokenResponseProto{}
	if err := aliceIPC.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("bob")}, ipcTok); err != nil {
		t.Fatal(err)
	}
	enc := dtoken.EncodeURL(ipcTok.GetToken())
	if code, _, b = bob.do("POST", dt+"/expiration", enc, "", "", ""); code != 200 {
		t.Fatalf("bob renews an IPC token over REST: %d %s", code, b)
	}
	if code, _, b = carol.do("DELETE", dt, enc, "", "", ""); code != 403 || !strings.Contains(string(b), "not authorized to cancel") {
		t.Fatalf("carol cancels alice's token: %d %s", code, b)
	}
	if code, _, b = alice.do("DELETE", dt, enc, "", "", ""); code != 200 || len(b) != 0 {
		t.Fatalf("alice cancels her IPC token over REST: %d %s", code, b)
	}
	if code, _, b = bob.do("POST", dt+"/expiration", enc, "", "", ""); code != 400 {
		t.Fatalf("renew a cancelled token: %d %s", code, b)
	}
	err = tokenIPCClient(t, r, ipcTok.GetToken()).Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if err == nil {
		t.Fatal("a token cancelled over REST still logs in over IPC")
	}

	// The renewer may cancel too; then the REST token no longer logs in.
	if code, _, b = bob.do("DELETE", dt, got.Token, "", "", ""); code != 200 {
		t.Fatalf("bob cancels: %d %s", code, b)
	}
	err = tokenIPCClient(t, r, tok).Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if err == nil {
		t.Fatal("a cancelled REST token still logs in over IPC")
	}

	// No ticket: ?user.name= earns the Negotiate challenge, not a token.
	resp, err := http.Post(base+dt+"?user.name=alice", "application/json", strings.NewReader(`{"renewer":"bob"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("user.name with SPNEGO on: %d", resp.StatusCode)
	}
}

// TestRESTDelegationTokensNeedSPNEGO: without SPNEGO every token call is
// refused with the RM's 403, whatever user.name claims.
func TestRESTDelegationTokensNeedSPNEGO(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	srv := httptest.NewServer(f.Router.Handler())
	t.Cleanup(srv.Close)
	for _, c := range []struct{ method, path string }{
		{"POST", "/ws/v1/cluster/delegation-token"}, {"DELETE", "/ws/v1/cluster/delegation-token"},
		{"POST", "/ws/v1/cluster/delegation-token/expiration"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path+"?user.name=alice", strings.NewReader(`{"renewer":"alice"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(router.DelegationTokenHeader, "AAAA")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), "Kerberos authenticated channel") {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
}
