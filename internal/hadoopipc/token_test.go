package hadoopipc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func testToken(id, pw string) *commonpb.TokenProto {
	return &commonpb.TokenProto{Identifier: []byte(id), Password: []byte(pw), Kind: proto.String("YARN_AM_RM_TOKEN"), Service: proto.String("")}
}

func TestTokenAuth(t *testing.T) {
	cases := []struct {
		name       string
		serverQOPs []string
		clientQOPs []string
		wantLayer  bool
	}{
		{"qop auth", []string{"auth"}, nil, false},
		{"qop auth-int", []string{"auth-int"}, nil, true},
		{"qop auth-conf", []string{"auth-conf"}, nil, true},
		{"client prefers auth-int", []string{"auth", "auth-int"}, []string{"auth-int", "auth"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tokenConfig()
			cfg.AllowSimple = false
			cfg.QOPs = tc.serverQOPs
			ts, seen := startUserServer(t, cfg)
			c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Token: testToken("id-amuser", "pw-amuser"), QOPs: tc.clientQOPs})
			for i := 0; i < 3; i++ { // several packets through the layer
				resp, err := echo(context.Background(), c, "x")
				if err != nil {
					t.Fatal(err)
				}
				if resp.GetToken().GetService() != "amuser" {
					t.Errorf("handler saw user %q", resp.GetToken().GetService())
				}
			}
			if got := seen(); got.AuthMethod != "TOKEN" || string(got.TokenID) != "id-amuser" || got.Name != "amuser" {
				t.Errorf("User in ctx = %+v", got)
			}
			var conn *clientConn
			c.pool.mu.Lock()
			for _, e := range c.pool.conns {
				conn = e.conn
			}
			c.pool.mu.Unlock()
			if got := conn.layer != nil; got != tc.wantLayer {
				t.Errorf("security layer active = %v, want %v", got, tc.wantLayer)
			}
		})
	}
}

// TestTokenAuthFailures: a login that fails gets FATAL_UNAUTHORIZED with
// the right class and the connection is closed.
func TestTokenAuthFailures(t *testing.T) {
	cases := []struct {
		name      string
		token     *commonpb.TokenProto
		wantClass string
	}{
		{"wrong password", testToken("id-amuser", "not-the-password"), ClassSaslException},
		{"unknown token", testToken("garbage", "x"), ClassInvalidToken},
		{"secret manager standby", testToken("id-standby", "x"), ClassStandby},
	}
	cfg := tokenConfig()
	cfg.AllowSimple = false
	ts := startServer(t, cfg, echoProtocol(nil))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Token: tc.token, FailoverAttempts: 1})
			_, err := echo(context.Background(), c, "x")
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *RemoteError", err)
			}
			if !re.Fatal || re.Code != fatalUnauthorized || re.Class != tc.wantClass {
				t.Errorf("got fatal=%v %v %s (%s), want FATAL_UNAUTHORIZED %s", re.Fatal, re.Code, re.Class, re.Message, tc.wantClass)
			}
		})
	}
	// The wire view: the FATAL reply, then the server closes.
	r := dialRaw(t, ts.addr)
	_, h, _ := rawDigestInitiate(t, r, testToken("id-amuser", "wrong"))
	if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != fatalUnauthorized || int32(h.GetCallId()) != callIDSASL {
		t.Fatalf("wrong password reply %v", h)
	}
	r.expectClosed()
}

// rawDigestInitiate plays a client holding tok on r by hand: preamble,
// NEGOTIATE (which must succeed), then the DIGEST-MD5 INITIATE answering
// the server's challenge. It returns the mechanism (to check the server's
// proof with) and the server's reply to the INITIATE.
func rawDigestInitiate(t *testing.T, r *rawConn, tok *commonpb.TokenProto) (tokenClientMech, *commonpb.RpcResponseHeaderProto, []byte) {
	t.Helper()
	r.preamble(authProtocolSASL)
	r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
	h, rest := r.reply()
	neg := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(rest, neg); err != nil || h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("negotiate reply %v %v", h, err)
	}
	mech, err := newDigestClient(tok, "", "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := mech.Respond(neg.GetAuths()[0].GetChallenge())
	if err != nil {
		t.Fatal(err)
	}
	auth := proto.Clone(neg.GetAuths()[0]).(*commonpb.RpcSaslProto_SaslAuth)
	auth.Challenge = nil
	m := saslMsg(commonpb.RpcSaslProto_INITIATE, auth)
	m.Token = resp
	r.packet(saslHeader(), m)
	h, rest = r.reply()
	return mech, h, rest
}

// rawTokenLogin runs a DIGEST-MD5 login for tok by hand on r and checks the
// server's proof.
func rawTokenLogin(t *testing.T, r *rawConn, tok *commonpb.TokenProto) {
	t.Helper()
	mech, h, rest := rawDigestInitiate(t, r, tok)
	ok := &commonpb.RpcSaslProto{}
	unmarshalDelimited(rest, ok)
	if ok.GetState() != commonpb.RpcSaslProto_SUCCESS {
		t.Fatalf("login: %v %v", h, ok)
	}
	if err := mech.Verify(ok.GetToken()); err != nil {
		t.Fatal(err)
	}
}

// TestTokenConnectionContextUser: on a TOKEN connection the token names the
// user. As in Hadoop (ProtoUtil.getUgi, Server.processConnectionContext),
// only an explicit effectiveUser that differs is refused; a context with
// realUser alone names nobody and is accepted as the token's user (some
// third-party AM clients send that).
func TestTokenConnectionContextUser(t *testing.T) {
	ts, seen := startUserServer(t, tokenConfig())
	cases := []struct {
		name            string
		userInfo        bool
		effective, real *string
		refused         bool
	}{
		{"no user info (Java)", false, nil, nil, false},
		{"empty user info", true, nil, nil, false},
		{"realUser only, another name", true, nil, proto.String("mallory"), false},
		{"realUser only, the token user", true, nil, proto.String("amuser"), false},
		{"effectiveUser is the token user", true, proto.String("amuser"), nil, false},
		{"effectiveUser is the token user, with realUser", true, proto.String("amuser"), proto.String("oozie"), false},
		{"effectiveUser differs", true, proto.String("mallory"), nil, true},
		{"effectiveUser differs, realUser is the token user", true, proto.String("mallory"), proto.String("amuser"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			rawTokenLogin(t, r, testToken("id-amuser", "pw-amuser"))
			cc := &commonpb.IpcConnectionContextProto{Protocol: proto.String(testProtocol)}
			if tc.userInfo {
				cc.UserInfo = &commonpb.UserInformationProto{EffectiveUser: tc.effective, RealUser: tc.real}
			}
			h := reqHeader(callIDConnectionContext)
			h.RetryCount = proto.Int32(-1)
			r.packet(h, cc)
			if tc.refused {
				h, _ := r.reply()
				if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != fatalUnauthorized || h.GetExceptionClassName() != ClassAccessControl {
					t.Fatalf("reply %v", h)
				}
				r.expectClosed()
				return
			}
			r.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
			if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
				t.Fatalf("reply %v", h)
			}
			got := seen()
			if got.Name != "amuser" || got.AuthMethod != "TOKEN" || got.RealUser != "" || string(got.TokenID) != "id-amuser" {
				t.Errorf("user %+v, want the token's user amuser", got)
			}
		})
	}
}

// TestWrappedPipelinedCalls: many concurrent calls over one auth-int and
// one auth-conf connection. DIGEST-MD5 layers number every message, so any
// reordering between wrapping and writing (either side) breaks the stream.
func TestWrappedPipelinedCalls(t *testing.T) {
	for _, qop := range []string{"auth-int", "auth-conf"} {
		t.Run(qop, func(t *testing.T) {
			cfg := tokenConfig()
			cfg.QOPs = []string{qop}
			ts := startServer(t, cfg, echoProtocol(nil))
			c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Token: testToken("id-amuser", "pw-amuser"), FailoverAttempts: 1})
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 0; i < 20; i++ {
						want := strings.Repeat(string(rune('a'+g)), 1+i*37)
						resp, err := echo(context.Background(), c, want)
						if err == nil && resp.GetToken().GetKind() != want {
							err = errors.New("reply for another call")
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}(g)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}
