package hadoopipc

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// The relay tests run three parties in process: a Client holding a token
// -> a relay Server (TokenRelay) -> an upstream Server that holds the
// token secrets (testSecrets). The relay's handlers call the upstream over
// the relayed login.

// startUpstream starts a token server offering qops (nil: auth).
func startUpstream(t *testing.T, qops ...string) *testServer {
	t.Helper()
	cfg := tokenConfig()
	cfg.AllowSimple = false
	cfg.QOPs = qops
	return startServer(t, cfg, echoProtocol(nil))
}

// relayHandlers is the relay server's view of calls, for assertions.
type relayHandlers struct {
	mu       sync.Mutex
	user     User
	hasLogin bool
	started  chan struct{} // "block" entered
	blockErr chan error    // what "block" saw when its ctx ended
}

// relayProtocol serves testProtocol on the relay: "echo" forwards to the
// upstream over the caller's relayed login (so the upstream's user name
// comes back in the reply); "block" waits for its context to end.
func (h *relayHandlers) protocol() Protocol {
	newReq := func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} }
	return Protocol{Name: testProtocol, Version: 1, Methods: []Method{
		NewMethod("echo", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
			u, _ := UserFromContext(ctx)
			login, ok := RelayedLoginFrom(ctx)
			h.mu.Lock()
			h.user, h.hasLogin = u, ok
			h.mu.Unlock()
			if !ok {
				return nil, errors.New("no relayed login in the handler context")
			}
			resp := &commonpb.GetDelegationTokenResponseProto{}
			if err := login.Call(ctx, "echo", req, resp); err != nil {
				return nil, err
			}
			return resp, nil
		}),
		NewMethod("block", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
			close(h.started)
			<-ctx.Done()
			h.blockErr <- ctx.Err()
			return nil, ctx.Err()
		}),
	}}
}

func newRelayHandlers() *relayHandlers {
	return &relayHandlers{started: make(chan struct{}), blockErr: make(chan error, 1)}
}

// startRelay starts a relay server in front of upstream.
func startRelay(t *testing.T, relay TokenRelay, h *relayHandlers, mod func(*ServerConfig)) *testServer {
	t.Helper()
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.TokenRelay = relay
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return startServer(t, cfg, h.protocol())
}

func dialingRelay(addr string) *DialingRelay {
	return NewDialingRelay(StaticAddr(addr), RelayConfig{Protocol: testProtocol, Timeout: 5 * time.Second})
}

func openConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// deadAddr returns a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	ts := startServer(t, DefaultServerConfig())
	addr := ts.addr
	ts.srv.Close()
	return addr
}

func TestTokenRelayLogin(t *testing.T) {
	cases := []struct {
		name      string
		relayUser func([]byte) (string, error)
		wantName  string
	}{
		{"default name is the base64 identifier", nil, base64.StdEncoding.EncodeToString([]byte("id-amuser"))},
		{"RelayUser names the caller", func(id []byte) (string, error) { return strings.TrimPrefix(string(id), "id-"), nil }, "amuser"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t)
			h := newRelayHandlers()
			rs := startRelay(t, dialingRelay(up.addr), h, func(c *ServerConfig) { c.RelayUser = tc.relayUser })
			c := newTestClient(t, ClientConfig{Addresses: []string{rs.addr}, Token: testToken("id-amuser", "pw-amuser"), FailoverAttempts: 1})
			for i := 0; i < 3; i++ { // several calls over one relayed login
				resp, err := echo(context.Background(), c, "x")
				if err != nil {
					t.Fatal(err)
				}
				// The upstream answered as the token's user: the relayed
				// login acts as the identity the upstream accepted.
				if got := resp.GetToken().GetService(); got != "amuser" {
					t.Fatalf("upstream saw user %q, want amuser", got)
				}
			}
			h.mu.Lock()
			u, hasLogin := h.user, h.hasLogin
			h.mu.Unlock()
			if !hasLogin || u.AuthMethod != "TOKEN" || string(u.TokenID) != "id-amuser" || u.Name != tc.wantName {
				t.Errorf("relay handler saw %+v (login %v)", u, hasLogin)
			}
			if n := openConns(up.srv); n != 1 {
				t.Errorf("upstream has %d connections, want 1 (one login per client connection)", n)
			}
		})
	}
}

// TestTokenRelayRefusals: every way a relayed login fails reaches the
// client as FATAL_UNAUTHORIZED with the documented class, and the client
// connection and the upstream login are both closed.
func TestTokenRelayRefusals(t *testing.T) {
	up := startUpstream(t)
	upIntOnly := startUpstream(t, "auth-int")
	upBoth := startUpstream(t, "auth", "auth-int")
	upAll := startUpstream(t, "auth", "auth-int", "auth-conf")
	dead := deadAddr(t)

	// What the upstream itself says to a wrong password, to check the relay
	// passes class and message through unchanged.
	direct := newTestClient(t, ClientConfig{Addresses: []string{up.addr}, Token: testToken("id-amuser", "wrong"), FailoverAttempts: 1})
	_, directErr := echo(context.Background(), direct, "x")
	var directRE *RemoteError
	if !errors.As(directErr, &directRE) {
		t.Fatalf("direct login: %v", directErr)
	}

	cases := []struct {
		name       string
		upstream   string
		token      *commonpb.TokenProto
		clientQOPs []string
		relayUser  func([]byte) (string, error)
		wantClass  string
		wantMsg    string // substring
		forwarded  bool   // the upstream saw the digest-response
	}{
		{"wrong password: the upstream's class and message", up.addr, testToken("id-amuser", "wrong"), nil, nil,
			directRE.Class, directRE.Message, true},
		{"unknown token", up.addr, testToken("garbage", "x"), nil, nil, ClassInvalidToken, "", true},
		{"upstream secret manager standby", up.addr, testToken("id-standby", "x"), nil, nil, ClassStandby, "not active", true},
		{"upstream down", dead, testToken("id-amuser", "pw-amuser"), nil, nil, ClassRetriable, "upstream unavailable", false},
		{"client chose auth-int", upBoth.addr, testToken("id-amuser", "pw-amuser"), []string{"auth-int"}, nil,
			ClassSaslException, "hadoop.rpc.protection=authentication", false},
		{"client chose auth-conf", upAll.addr, testToken("id-amuser", "pw-amuser"), []string{"auth-conf", "auth-int"}, nil,
			ClassSaslException, "hadoop.rpc.protection=privacy", false},
		{"upstream offers no auth", upIntOnly.addr, testToken("id-amuser", "pw-amuser"), nil, nil,
			ClassSaslException, "hadoop.rpc.protection=authentication", false},
		{"RelayUser refuses", up.addr, testToken("id-amuser", "pw-amuser"), nil,
			func([]byte) (string, error) { return "", errors.New("not an AMRMToken") }, ClassInvalidToken, "not an AMRMToken", false},
		{"RelayUser refuses with its class", up.addr, testToken("id-amuser", "pw-amuser"), nil,
			func([]byte) (string, error) { return "", Errorf(ClassStandby, "home sub-cluster failing over") }, ClassStandby, "failing over", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var upSrv *Server
			for _, u := range []*testServer{up, upIntOnly, upBoth, upAll} {
				if u.addr == tc.upstream {
					upSrv = u.srv
				}
			}
			failuresBefore := 0.0
			if upSrv != nil {
				failuresBefore = metricValue(t, upSrv.metrics.authFailure)
			}
			h := newRelayHandlers()
			rs := startRelay(t, dialingRelay(tc.upstream), h, func(c *ServerConfig) { c.RelayUser = tc.relayUser })
			c := newTestClient(t, ClientConfig{Addresses: []string{rs.addr}, Token: tc.token, QOPs: tc.clientQOPs, FailoverAttempts: 1})
			_, err := echo(context.Background(), c, "x")
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *RemoteError", err)
			}
			if !re.Fatal || re.Code != fatalUnauthorized || re.Class != tc.wantClass || !strings.Contains(re.Message, tc.wantMsg) {
				t.Errorf("got fatal=%v %v %s %q, want FATAL_UNAUTHORIZED %s containing %q", re.Fatal, re.Code, re.Class, re.Message, tc.wantClass, tc.wantMsg)
			}
			testpoll.Poll(t, "relay connections closed", func() bool { return openConns(rs.srv) == 0 })
			testpoll.Poll(t, "pending-login slots released", func() bool { return len(rs.srv.relaySlots) == 0 })
			if upSrv != nil {
				testpoll.Poll(t, "upstream login closed", func() bool { return openConns(upSrv) == 0 })
				// Our upstream counts a failed digest-response as an auth
				// failure: a refusal the relay makes itself never reaches it.
				forwarded := metricValue(t, upSrv.metrics.authFailure) > failuresBefore
				if forwarded != tc.forwarded {
					t.Errorf("digest-response forwarded = %v, want %v", forwarded, tc.forwarded)
				}
			}
		})
	}
}

// TestTokenRelayUpstreamLost: when the upstream connection dies, the relay
// closes the client's connection (the AM's client reconnects and logs in
// again), and a handler in flight sees its context cancelled.
func TestTokenRelayUpstreamLost(t *testing.T) {
	up := startUpstream(t)
	h := newRelayHandlers()
	rs := startRelay(t, dialingRelay(up.addr), h, nil)
	c := newTestClient(t, ClientConfig{Addresses: []string{rs.addr}, Token: testToken("id-amuser", "pw-amuser"), FailoverAttempts: 1})
	if _, err := echo(context.Background(), c, "x"); err != nil {
		t.Fatal(err)
	}
	callErr := make(chan error, 1)
	go func() {
		resp := &commonpb.GetDelegationTokenResponseProto{}
		callErr <- c.Call(context.Background(), "block", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, resp)
	}()
	<-h.started
	up.srv.Close() // drops the relayed login's upstream connection

	if err := <-h.blockErr; !errors.Is(err, context.Canceled) {
		t.Errorf("handler ctx ended with %v, want context.Canceled", err)
	}
	if err := <-callErr; !errors.Is(err, ErrConnectionClosed) {
		t.Errorf("client call: %v, want ErrConnectionClosed", err)
	}
	testpoll.Poll(t, "relay connection closed", func() bool { return openConns(rs.srv) == 0 })
}

// TestTokenRelayClientGone: a client that leaves takes its upstream login
// with it; nothing stays open on either server.
func TestTokenRelayClientGone(t *testing.T) {
	up := startUpstream(t)
	h := newRelayHandlers()
	rs := startRelay(t, dialingRelay(up.addr), h, nil)
	for round := 0; round < 3; round++ {
		c := newTestClient(t, ClientConfig{Addresses: []string{rs.addr}, Token: testToken("id-amuser", "pw-amuser"), FailoverAttempts: 1})
		if _, err := echo(context.Background(), c, "x"); err != nil {
			t.Fatal(err)
		}
		if n := openConns(up.srv); n != 1 {
			t.Fatalf("upstream has %d connections during the login, want 1", n)
		}
		c.Close()
		testpoll.Poll(t, "relay connection closed", func() bool { return openConns(rs.srv) == 0 })
		testpoll.Poll(t, "upstream login closed", func() bool { return openConns(up.srv) == 0 })
	}
}

// TestTokenRelayPendingBound: logins between NEGOTIATE and the upstream's
// answer are capped; beyond the cap a client gets FATAL
// RetriableException, and a closed connection frees its slot.
func TestTokenRelayPendingBound(t *testing.T) {
	up := startUpstream(t)
	rs := startRelay(t, dialingRelay(up.addr), newRelayHandlers(), func(c *ServerConfig) { c.MaxPendingRelayLogins = 1 })
	negotiate := func(r *rawConn) *commonpb.RpcResponseHeaderProto {
		r.preamble(authProtocolSASL)
		r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		h, _ := r.reply()
		return h
	}
	first := dialRaw(t, rs.addr)
	if h := negotiate(first); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("first NEGOTIATE: %v", h)
	}
	second := dialRaw(t, rs.addr)
	if h := negotiate(second); h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetExceptionClassName() != ClassRetriable {
		t.Fatalf("second NEGOTIATE: %v, want FATAL RetriableException", h)
	}
	second.expectClosed()
	first.nc.Close()
	testpoll.Poll(t, "slot released", func() bool { return len(rs.srv.relaySlots) == 0 })
	testpoll.Poll(t, "upstream login closed", func() bool { return openConns(up.srv) == 0 })
	if h := negotiate(dialRaw(t, rs.addr)); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("NEGOTIATE after release: %v", h)
	}
}

// TestTokenRelaySilentPeer: a peer that takes a relayed challenge and never
// answers loses its connection, upstream login and slot after
// TokenRelayTimeout, not after the (longer) idle timeout.
func TestTokenRelaySilentPeer(t *testing.T) {
	up := startUpstream(t)
	rs := startRelay(t, dialingRelay(up.addr), newRelayHandlers(), func(c *ServerConfig) {
		c.TokenRelayTimeout = 50 * time.Millisecond
		c.IdleTimeout = time.Hour
	})
	r := dialRaw(t, rs.addr)
	r.preamble(authProtocolSASL)
	r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
	if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("NEGOTIATE: %v", h)
	}
	r.expectClosed()
	testpoll.Poll(t, "slot released", func() bool { return len(rs.srv.relaySlots) == 0 })
	testpoll.Poll(t, "upstream login closed", func() bool { return openConns(up.srv) == 0 })
}

// stallingRelay is a fake TokenRelay whose upstream never answers.
type stallingRelay struct{}

func (stallingRelay) StartLogin(ctx context.Context) (RelayedLogin, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTokenRelayStartTimeout: StartLogin is bounded by TokenRelayTimeout.
func TestTokenRelayStartTimeout(t *testing.T) {
	rs := startRelay(t, stallingRelay{}, newRelayHandlers(), func(c *ServerConfig) { c.TokenRelayTimeout = 20 * time.Millisecond })
	c := newTestClient(t, ClientConfig{Addresses: []string{rs.addr}, Token: testToken("id-amuser", "pw-amuser"), FailoverAttempts: 1})
	_, err := echo(context.Background(), c, "x")
	var re *RemoteError
	if !errors.As(err, &re) || !re.Fatal || re.Class != ClassRetriable || !strings.Contains(re.Message, "deadline") {
		t.Fatalf("err = %v, want FATAL RetriableException after the deadline", err)
	}
}

// TestRelayConn drives the upstream half directly, as another party would.
func TestRelayConn(t *testing.T) {
	up := startUpstream(t, "auth", "auth-int")
	respond := func(t *testing.T, rc *RelayConn, tok *commonpb.TokenProto, qops []string) []byte {
		mech, err := newDigestClient(tok, "", "default", qops)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := mech.Respond(rc.Challenge())
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	dial := func(t *testing.T) *RelayConn {
		rc, err := DialRelay(context.Background(), RelayConfig{Addr: up.addr, Protocol: testProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rc.Close() })
		return rc
	}

	t.Run("login then calls", func(t *testing.T) {
		rc := dial(t)
		req := &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}
		if err := rc.Call(context.Background(), "echo", req, &commonpb.GetDelegationTokenResponseProto{}); !errors.Is(err, ErrAuth) {
			t.Fatalf("Call before Complete: %v, want ErrAuth", err)
		}
		mech, _ := newDigestClient(testToken("id-amuser", "pw-amuser"), "", "default", []string{"auth"})
		resp, err := mech.Respond(rc.Challenge())
		if err != nil {
			t.Fatal(err)
		}
		rspauth, err := rc.Complete(context.Background(), resp)
		if err != nil {
			t.Fatal(err)
		}
		// The upstream's proof verifies at the token holder: the relay is
		// transparent to mutual authentication.
		if err := mech.Verify(rspauth); err != nil {
			t.Fatalf("rspauth: %v", err)
		}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ { // pipelined
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := &commonpb.GetDelegationTokenResponseProto{}
				if err := rc.Call(context.Background(), "echo", req, out); err != nil || out.GetToken().GetService() != "amuser" {
					t.Errorf("call: %v %v", out, err)
				}
			}()
		}
		wg.Wait()
		if _, err := rc.Complete(context.Background(), resp); err == nil {
			t.Error("second Complete succeeded")
		}
		rc.Close()
		<-rc.Done()
		if !errors.Is(rc.Err(), ErrClientClosed) {
			t.Errorf("Err after Close = %v", rc.Err())
		}
	})
	t.Run("auth-int response refused before sending", func(t *testing.T) {
		before := metricValue(t, up.srv.metrics.authFailure)
		rc := dial(t)
		_, err := rc.Complete(context.Background(), respond(t, rc, testToken("id-amuser", "pw-amuser"), []string{"auth-int"}))
		if !errors.Is(err, ErrRelayProtection) {
			t.Fatalf("Complete: %v, want ErrRelayProtection", err)
		}
		<-rc.Done()
		testpoll.Poll(t, "upstream connection closed", func() bool { return openConns(up.srv) == 0 })
		if metricValue(t, up.srv.metrics.authFailure) != before {
			t.Error("the refused response reached the upstream")
		}
	})
	t.Run("upstream refusal is a RemoteError", func(t *testing.T) {
		rc := dial(t)
		_, err := rc.Complete(context.Background(), respond(t, rc, testToken("garbage", "x"), []string{"auth"}))
		var re *RemoteError
		if !errors.As(err, &re) || re.Class != ClassInvalidToken || !re.Fatal {
			t.Fatalf("Complete: %v, want FATAL InvalidToken", err)
		}
		<-rc.Done()
	})
	t.Run("dial failure", func(t *testing.T) {
		_, err := DialRelay(context.Background(), RelayConfig{Addr: deadAddr(t), Protocol: testProtocol})
		if !errors.Is(err, ErrDial) {
			t.Fatalf("DialRelay: %v, want ErrDial", err)
		}
	})
	t.Run("upstream without TOKEN", func(t *testing.T) {
		simple := startServer(t, DefaultServerConfig(), echoProtocol(nil))
		_, err := DialRelay(context.Background(), RelayConfig{Addr: simple.addr, Protocol: testProtocol})
		if !errors.Is(err, ErrAuth) {
			t.Fatalf("DialRelay: %v, want ErrAuth", err)
		}
	})
}

func TestTokenRelayConfig(t *testing.T) {
	relay := dialingRelay("127.0.0.1:1")
	cases := []struct {
		name    string
		mod     func(*ServerConfig)
		wantErr string
	}{
		{"relay alone", func(c *ServerConfig) { c.AllowSimple = false; c.TokenRelay = relay }, ""},
		{"relay and secrets", func(c *ServerConfig) { c.TokenRelay = relay; c.Secrets = testSecrets{} }, "exclusive"},
		{"relay with auth-int", func(c *ServerConfig) { c.TokenRelay = relay; c.QOPs = []string{"auth", "auth-int"} }, "always qop auth"},
		{"negative relay limit", func(c *ServerConfig) { c.TokenRelay = relay; c.MaxPendingRelayLogins = -1 }, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultServerConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
