package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/spnego"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/internal/rmrest/spnegotest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// keytabSecrets are the Secrets that hold keytabs (deploy/README.md "Secure
// deployment" creates them). Which keys go in which file is read from the
// roles' configs and flags: each principal a config names is created in the
// test's KDC and exported to the keytab file the same config names.
var keytabSecrets = map[string]bool{
	"yarnfed-router-keytab": true,
	"yarnfed-gpg-keytab":    true,
	"yarnfed-agent-keytab":  true,
}

// krbEnv is the real MIT KDC an overlay with a krb5.conf ConfigMap runs
// against: started with the realm that krb5.conf names, and reached at the
// "kdc = host:port" addresses it names (rewritten to the KDC's loopback
// port like every other address).
type krbEnv struct {
	kdc      *krbtest.KDC
	hosts    map[string]bool // KDC hosts of krb5.conf: allowed outside addresses
	created  map[string]bool // principals made so far
	rmFronts []*rmFront
}

// rmFront is the SPNEGO-only web endpoint standing in front of a simrm: what
// a Kerberized RM's AuthenticationFilter does to the agents' and the GPG's
// REST calls.
type rmFront struct {
	host   string
	active bool
	ep     *spnegotest.Endpoint
}

var (
	realmLine = regexp.MustCompile(`(?m)^\s*default_realm\s*=\s*(\S+)`)
	kdcLine   = regexp.MustCompile(`(?m)^\s*kdc\s*=\s*(\S+)`)
)

// startKerberos starts the KDC when the rendered overlay carries a
// krb5.conf; overlays without one run without Kerberos.
func (h *harness) startKerberos() {
	t := h.t
	var conf string
	for _, name := range sortedKeys(h.r.configMaps) {
		if c, ok := h.r.configMaps[name].Data["krb5.conf"]; ok {
			conf = c
		}
	}
	if conf == "" {
		return
	}
	m := realmLine.FindStringSubmatch(conf)
	if m == nil {
		t.Fatal("krb5.conf: no default_realm")
	}
	kdc := krbtest.Start(t, krbtest.Options{Realm: m[1]}) // skips without krb5-kdc unless YARNFED_KRB_REQUIRED=1
	_, kport, err := net.SplitHostPort(kdc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(kport)
	k := &krbEnv{kdc: kdc, hosts: map[string]bool{}, created: map[string]bool{}}
	kdcs := kdcLine.FindAllStringSubmatch(conf, -1)
	if len(kdcs) == 0 {
		t.Fatal("krb5.conf names no kdc")
	}
	for _, l := range kdcs {
		host, p, err := net.SplitHostPort(l[1])
		if err != nil {
			t.Fatalf("krb5.conf: kdc = %s: write host:port (this test maps addresses with their ports): %v", l[1], err)
		}
		// Every KDC of the realm is the one test KDC.
		h.ports["ext:"+host+"/"+p] = port
		h.used[port] = true
		k.hosts[host] = true
	}
	h.krb = k
}

// principal creates name (a service with a random key) once.
func (k *krbEnv) principal(t testing.TB, name string) {
	if !k.created[name] {
		k.kdc.AddService(t, name)
		k.created[name] = true
	}
}

// ownHost expands _HOST in a role's own principal as the binary does: this
// host's lower-cased name (in a pod: the pod's hostname).
func ownHost(t testing.TB, p string) string {
	if !strings.Contains(p, "_HOST") {
		return p
	}
	hn, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(p, "_HOST", strings.ToLower(hn))
}

// fillKeytabs writes the keytabs pod p's rewritten configs and args name
// into its keytab Secret volumes (dirs: volume directory -> Secret), with
// exactly the principals those configs log in or accept as. A keytab named
// outside such a volume, a principal without its keytab, or a required
// keytab Secret no config reads fails the test.
func (h *harness) fillKeytabs(p *pod, dirs map[string]string, optional map[string]bool, configFiles, args []string) {
	t := h.t
	want := map[string][]string{} // keytab path -> principals
	add := func(what, principal, keytab string) {
		switch {
		case principal == "" && keytab == "":
			return
		case keytab == "":
			return // the binary reports it (or takes the key from elsewhere)
		case principal == "" || principal == "*":
			t.Fatalf("%s: %s: keytab %s without a named principal: this test cannot tell which keys the operator must put there", p.name, what, keytab)
		}
		want[keytab] = append(want[keytab], ownHost(t, principal))
	}
	for _, f := range configFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Kerberos struct {
				Principal      string `json:"principal"`
				LoginPrincipal string `json:"login_principal"`
				Keytab         string `json:"keytab"`
			} `json:"kerberos"`
			SPNEGO struct {
				Principal string `json:"principal"`
				Keytab    string `json:"keytab"`
			} `json:"spnego"`
		}
		if json.Unmarshal(b, &doc) != nil {
			continue
		}
		add("kerberos.principal", doc.Kerberos.Principal, doc.Kerberos.Keytab)
		if doc.Kerberos.LoginPrincipal != "" {
			add("kerberos.login_principal", doc.Kerberos.LoginPrincipal, doc.Kerberos.Keytab)
		}
		add("spnego.principal", doc.SPNEGO.Principal, doc.SPNEGO.Keytab)
	}
	flags := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
			flags[k] = v
		} else if strings.Contains(a, "keytab") || strings.Contains(a, "principal") {
			t.Fatalf("%s: arg %q: write Kerberos flags as --flag=value (this test reads them so)", p.name, a)
		}
	}
	add("--kerberos-principal", flags["--kerberos-principal"], flags["--kerberos-keytab"])
	if lp := flags["--kerberos-login-principal"]; lp != "" {
		add("--kerberos-login-principal", lp, flags["--kerberos-keytab"])
	}
	add("--spnego-principal", flags["--spnego-principal"], flags["--spnego-keytab"])

	filled := map[string]bool{}
	for _, path := range sortedKeys(want) {
		dir, ok := "", false
		for d := range dirs {
			if filepath.Dir(path) == d {
				dir, ok = d, true
			}
		}
		if !ok {
			t.Fatalf("%s: keytab %s is on no keytab Secret volume (%v)", p.name, path, keytabSecretNames())
		}
		if h.krb == nil {
			t.Fatalf("%s: keytab %s but the overlay has no krb5.conf ConfigMap", p.name, path)
		}
		names := dedupe(want[path])
		for _, n := range names {
			h.krb.principal(t, n)
		}
		b, err := os.ReadFile(h.krb.kdc.ExportKeytab(t, names...))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, b)
		filled[dir] = true
		t.Logf("%s: %s/%s holds %s", p.name, dirs[dir], filepath.Base(path), strings.Join(names, ", "))
	}
	for d, secret := range dirs {
		if !filled[d] && !optional[d] {
			t.Fatalf("%s: mounts required keytab Secret %s, but no config or flag names a keytab in it", p.name, secret)
		}
	}
}

func keytabSecretNames() []string { return sortedKeys(keytabSecrets) }

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// frontRM serves a SPNEGO-only endpoint on web (the address the manifests'
// RM web address was rewritten to) in front of the simrm's own web port
// inner. Its principal is HTTP/<host the callers dial>: the agents and the
// GPG default to HTTP/<RM web host> as written in --rm, which this test
// rewrote to 127.0.0.1 (in a pod: HTTP/rm1.sc-1.example.com).
func (h *harness) frontRM(host, web, inner string, active bool) {
	t := h.t
	spn := "HTTP/127.0.0.1"
	h.krb.principal(t, spn)
	ep := spnegotest.New(spnegotest.Proxy(inner), h.krb.kdc.Keytab(t, h.krb.kdc.ExportKeytab(t, spn)), spn)
	l, err := net.Listen("tcp", web)
	if err != nil {
		t.Fatalf("SPNEGO front of %s: %v", host, err)
	}
	srv := &http.Server{Handler: ep, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.krb.rmFronts = append(h.krb.rmFronts, &rmFront{host: host, active: active, ep: ep})
}

// checkRMFronts: the agent reached the active RM through SPNEGO (tickets
// from the KDC for the keytab the manifests mount), and no token was
// refused.
func (h *harness) checkRMFronts() {
	for _, f := range h.krb.rmFronts {
		if n := f.ep.Refused.Load(); n > 0 {
			h.t.Errorf("RM %s refused %d SPNEGO tokens", f.host, n)
		}
		if f.active && f.ep.Tokens.Load()+f.ep.CookieHits.Load() == 0 {
			h.t.Errorf("active RM %s saw no SPNEGO-authenticated request (challenges: %d)", f.host, f.ep.Challenges.Load())
		}
	}
}

// checkKerberosRouter: with the manifests' config, the router's client port
// takes a Kerberos login (a delegation token is issued to the user the
// ticket names) and refuses SIMPLE; its REST API answers 401 Negotiate
// without credentials and 200 with a SPNEGO token for its HTTP principal;
// /readyz (already polled) stays open.
func (h *harness) checkKerberosRouter(ctx context.Context, p *pod, cfgFile string) {
	t := h.t
	b, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Kerberos struct {
			Principal string `json:"principal"`
		} `json:"kerberos"`
		SPNEGO struct {
			Principal string `json:"principal"`
		} `json:"spnego"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Kerberos.Principal == "" || cfg.SPNEGO.Principal == "" {
		t.Fatalf("%s: the Kerberos overlay's router config sets no kerberos.principal or spnego.principal", p.name)
	}
	kdc := h.krb.kdc
	login := krbclient.NewWithKeytab("alice", kdc.Realm, kdc.Keytab(t, kdc.AddUser(t, "alice")), kdc.Config(t), krbclient.DisablePAFXFAST(true))
	if err := login.Login(); err != nil {
		t.Fatal(err)
	}
	defer login.Destroy()

	port, _ := containerPort(p.template, "clientrm")
	addr := h.loop(p.name + "/" + strconv.Itoa(int(port)))
	// Clients name the router's principal as they would name an RM's
	// (yarn.resourcemanager.principal); from here, without _HOST, since the
	// address dialled is the test's loopback stand-in.
	krbc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationClient,
		Kerberos: &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: ownHost(t, cfg.Kerberos.Principal)}})
	if err != nil {
		t.Fatal(err)
	}
	defer krbc.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := &commonpb.GetDelegationTokenResponseProto{}
	if err := krbc.Call(cctx, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn")}, got); err != nil {
		t.Fatalf("%s: getDelegationToken over Kerberos: %v", p.name, err)
	}
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(got.GetToken().GetIdentifier(), &id); err != nil || id.GetOwner() != "alice" {
		t.Fatalf("%s: token owner %q (%v), want alice", p.name, id.GetOwner(), err)
	}
	simple, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer simple.Close()
	err = simple.Call(cctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != hadoopipc.ClassAccessControl {
		t.Fatalf("%s: a SIMPLE client was not refused with AccessControlException: %v", p.name, err)
	}

	wport, _ := containerPort(p.template, "web")
	url := "http://" + h.loop(p.name+"/"+strconv.Itoa(int(wport))) + "/ws/v1/cluster/info"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Negotiate") {
		t.Fatalf("%s: %s without credentials: %s %q, want 401 Negotiate", p.name, url, resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	spn, _, _ := strings.Cut(ownHost(t, cfg.SPNEGO.Principal), "@")
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	resp, err = spnego.NewClient(login, nil, spn).Do(req)
	if err != nil {
		t.Fatalf("%s: SPNEGO GET %s: %v", p.name, url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: SPNEGO GET %s as alice: %s", p.name, url, resp.Status)
	}
	t.Logf("%s: Kerberos on the client port (token for alice, SIMPLE refused), SPNEGO on REST (%s)", p.name, fmt.Sprint(resp.StatusCode))
	h.checkSessionsShared(ctx, p, resp)
}

// checkSessionsShared: a hadoop.auth cookie one router replica signed after
// a SPNEGO negotiation is accepted by another replica (behind one Service a
// client's next request may land on either). It starts a second replica of
// p's Deployment, as the Deployment's second pod, with the same mounted
// Secrets, and sends it only the cookie.
func (h *harness) checkSessionsShared(ctx context.Context, p *pod, first *http.Response) {
	t := h.t
	var cookie *http.Cookie
	for _, c := range first.Cookies() {
		if c.Name == "hadoop.auth" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("%s: no hadoop.auth cookie after a SPNEGO negotiation (Set-Cookie: %q)", p.name, first.Header.Values("Set-Cookie"))
	}
	second := &pod{name: p.owner + "-7d9f8-r2m5v", kind: p.kind, owner: p.owner, template: p.template}
	s := h.launch(second)
	h.waitHTTP(ctx, s.proc, s.probeURL)
	wport, _ := containerPort(second.template, "web")
	url := "http://" + h.loop(second.name+"/"+strconv.Itoa(int(wport))) + "/ws/v1/cluster/info"
	get := func(c *http.Cookie) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := get(nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%s: %s without credentials: %s, want 401", second.name, url, resp.Status)
	}
	if resp := get(cookie); resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: the hadoop.auth cookie %s signed was refused (%s): replicas do not share the signing secret (spnego.signature_secret_file)", second.name, p.name, resp.Status)
	}
	t.Logf("%s accepted the session cookie %s issued", second.name, p.name)
}
