package hadoopipc

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func TestStaticGroups(t *testing.T) {
	next := GroupMappingFunc(func(u string) []string { return []string{"os-" + u} })
	sg, err := ParseStaticGroups(" dr.who=; alice=eng, ops ;bob=ops;", next)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user string
		want []string
	}{
		{"alice", []string{"eng", "ops"}},
		{"bob", []string{"ops"}},
		{"dr.who", []string{}},
		{"carol", []string{"os-carol"}},
	} {
		if got := sg.Groups(tc.user); !slices.Equal(got, tc.want) {
			t.Errorf("Groups(%s) = %q, want %q", tc.user, got, tc.want)
		}
	}
	for _, bad := range []string{"alice", "=eng", "alice=eng;bob"} {
		if _, err := ParseStaticGroups(bad, nil); err == nil {
			t.Errorf("ParseStaticGroups(%q): no error", bad)
		}
	}
}

func TestNewProxyUsersRejects(t *testing.T) {
	for name, rules := range map[string]map[string]ProxyUserRule{
		"bad cidr":        {"oozie": {Hosts: "10.0.0.0/33", Users: "*"}},
		"star in list":    {"oozie": {Hosts: "*", Users: "alice,*"}},
		"dotted name":     {"oozie.hosts": {Hosts: "*", Users: "*"}},
		"empty user name": {"": {Hosts: "*", Users: "*"}},
	} {
		if _, err := NewProxyUsers(rules, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestProxyUsersAuthorize is the rule table of DefaultImpersonationProvider
// and MachineList, checked without a socket.
func TestProxyUsersAuthorize(t *testing.T) {
	groups, err := ParseStaticGroups("alice=eng;bob=ops;carol=", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProxyUsers(map[string]ProxyUserRule{
		"oozie":  {Hosts: "10.1.0.0/16,192.168.5.5", Users: "alice", Groups: "ops"},
		"hive":   {Hosts: "*", Groups: "*"},
		"router": {Hosts: "gw.example.com", Users: "*"},
		"nohost": {Users: "*"},
	}, groups)
	if err != nil {
		t.Fatal(err)
	}
	// The only reverse lookup the test knows: 10.9.9.9 is gw.example.com.
	p.lookupAddr = func(_ context.Context, addr string) ([]string, error) {
		if addr == "10.9.9.9" {
			return []string{"GW.example.com."}, nil
		}
		return nil, errors.New("no PTR")
	}
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 4000} }
	const impersonate, host = "impersonate", "host"
	cases := []struct {
		name    string
		user    User
		remote  net.Addr
		refused string // "", impersonate or host
	}{
		{"not proxied", User{Name: "mallory", AuthMethod: "SIMPLE"}, tcp("8.8.8.8"), ""},
		{"real equals effective", User{Name: "oozie", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("8.8.8.8"), ""},
		{"token never checked", User{Name: "mallory", RealUser: "oozie", AuthMethod: "TOKEN"}, tcp("8.8.8.8"), ""},
		{"listed user, cidr host", User{Name: "alice", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("10.1.200.3"), ""},
		{"listed group, exact ip", User{Name: "bob", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("192.168.5.5"), ""},
		{"ipv4-mapped ipv6 peer", User{Name: "bob", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("::ffff:10.1.0.1"), ""},
		{"unlisted user", User{Name: "carol", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("10.1.0.1"), impersonate},
		{"listed user, wrong host", User{Name: "alice", RealUser: "oozie", AuthMethod: "SIMPLE"}, tcp("10.2.0.1"), host},
		{"groups star", User{Name: "carol", RealUser: "hive", AuthMethod: "SIMPLE"}, tcp("1.2.3.4"), ""},
		{"kerberos principal short name", User{Name: "carol", RealUser: "hive/gw.example.com@EXAMPLE.COM", AuthMethod: "KERBEROS"}, tcp("1.2.3.4"), ""},
		{"kerberos refusal names the principal", User{Name: "carol", RealUser: "oozie", Principal: "oozie/gw@EXAMPLE.COM", AuthMethod: "KERBEROS"}, tcp("10.1.0.1"), impersonate},
		{"host name by reverse lookup", User{Name: "carol", RealUser: "router", AuthMethod: "SIMPLE"}, tcp("10.9.9.9"), ""},
		{"host name, other peer", User{Name: "carol", RealUser: "router", AuthMethod: "SIMPLE"}, tcp("10.9.9.8"), host},
		{"no hosts configured", User{Name: "carol", RealUser: "nohost", AuthMethod: "SIMPLE"}, tcp("127.0.0.1"), host},
		{"no rule", User{Name: "alice", RealUser: "mallory", AuthMethod: "SIMPLE"}, tcp("10.1.0.1"), impersonate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.AuthorizeConnection(context.Background(), tc.user, tc.remote)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var re *RemoteError
			if !errors.As(err, &re) || re.Class != ClassAuthorization {
				t.Fatalf("got %v, want %s", err, ClassAuthorization)
			}
			real := tc.user.RealUser
			if tc.user.Principal != "" {
				real = tc.user.Principal
			}
			want := "User: " + real + " is not allowed to impersonate " + tc.user.Name
			if tc.refused == host {
				want = "Unauthorized connection for super-user: " + real + " from IP " + addrIP(tc.remote).String()
			}
			if re.Message != want {
				t.Errorf("message %q, want %q", re.Message, want)
			}
		})
	}
}

// TestProxyUserConnection: over the wire, a refused doAs is a FATAL
// FATAL_UNAUTHORIZED AuthorizationException (as Hadoop's
// Server.authorizeConnection sends) and the connection closes; an allowed
// one is served as the effective user.
func TestProxyUserConnection(t *testing.T) {
	p, err := NewProxyUsers(map[string]ProxyUserRule{
		"oozie": {Hosts: "127.0.0.0/8", Users: "alice"},
		"far":   {Hosts: "10.0.0.0/8", Users: "*"},
	}, GroupMappingFunc(func(string) []string { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultServerConfig()
	cfg.AuthorizeConnection = p.AuthorizeConnection
	ts := startServer(t, cfg, echoProtocol(nil))

	cases := []struct {
		name, effective, real string
		wantMsg               string // "" = served
	}{
		{"allowed", "alice", "oozie", ""},
		{"plain user", "bob", "", ""},
		{"unlisted user", "bob", "oozie", "User: oozie is not allowed to impersonate bob"},
		{"wrong host", "bob", "far", "Unauthorized connection for super-user: far from IP 127.0.0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.preamble(authProtocolNone)
			ui := &commonpb.UserInformationProto{EffectiveUser: proto.String(tc.effective)}
			if tc.real != "" {
				ui.RealUser = proto.String(tc.real)
			}
			h := reqHeader(callIDConnectionContext)
			h.RetryCount = proto.Int32(-1)
			r.packet(h, &commonpb.IpcConnectionContextProto{UserInfo: ui, Protocol: proto.String(testProtocol)})
			r.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
			hdr, rest := r.reply()
			if tc.wantMsg == "" {
				if hdr.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
					t.Fatalf("reply %v", hdr)
				}
				resp := &commonpb.GetDelegationTokenResponseProto{}
				if _, err := unmarshalDelimited(rest, resp); err != nil {
					t.Fatal(err)
				}
				if got := resp.GetToken().GetService(); got != tc.effective {
					t.Errorf("served as %q, want %q", got, tc.effective)
				}
				return
			}
			if hdr.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL ||
				hdr.GetErrorDetail() != commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED ||
				hdr.GetExceptionClassName() != ClassAuthorization || hdr.GetErrorMsg() != tc.wantMsg {
				t.Fatalf("reply %v, want FATAL_UNAUTHORIZED %s %q", hdr, ClassAuthorization, tc.wantMsg)
			}
			r.expectClosed()
		})
	}
}

// TestClientRealUser: a client configured with RealUser connects as a
// proxy user, and the server's rules decide (Client surfaces the FATAL
// reply as the AuthorizationException).
func TestClientRealUser(t *testing.T) {
	p, err := NewProxyUsers(map[string]ProxyUserRule{"oozie": {Hosts: "127.0.0.1", Users: "alice"}}, GroupMappingFunc(func(string) []string { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultServerConfig()
	cfg.AuthorizeConnection = p.AuthorizeConnection
	ts := startServer(t, cfg, echoProtocol(nil))

	ok := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "alice", RealUser: "oozie"})
	resp, err := echo(ctxT(t), ok, "x")
	if err != nil || resp.GetToken().GetService() != "alice" {
		t.Fatalf("allowed proxy: %v %v", resp, err)
	}
	bad := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "bob", RealUser: "oozie", FailoverAttempts: 1})
	_, err = echo(ctxT(t), bad, "x")
	var re *RemoteError
	if !errors.As(err, &re) || re.Class != ClassAuthorization {
		t.Fatalf("refused proxy: got %v, want %s", err, ClassAuthorization)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestClientSurfacesFatalAfterContext: a server that refuses the connection
// context replies FATAL and closes while the client may already be writing
// its first call. The call must fail with the server's exception (was: a
// bare "use of closed network connection", or the FATAL wrapped out of
// reach of errors.As, in a few percent of runs: hence the loop).
func TestClientSurfacesFatalAfterContext(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.AuthorizeConnection = func(context.Context, User, net.Addr) error {
		return Errorf(ClassAuthorization, "no")
	}
	ts := startServer(t, cfg, echoProtocol(nil))
	for i := 0; i < 100; i++ {
		c, err := NewClient(ClientConfig{Addresses: []string{ts.addr}, Protocol: testProtocol, User: "alice", FailoverAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = echo(ctxT(t), c, "x")
		c.Close()
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != ClassAuthorization {
			t.Fatalf("try %d: got %v, want the server's %s", i, err, ClassAuthorization)
		}
	}
}
