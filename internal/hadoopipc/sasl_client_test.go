package hadoopipc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/krb5sasl"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fakeSASLServer is a fake server for the client's side of SASL: the test's
// script reads what the client sends over a pipe and answers by hand.
type fakeSASLServer struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

// recv reads the client's next SASL message; io.EOF once the client gave up
// and closed the pipe.
func (s *fakeSASLServer) recv() (*commonpb.RpcSaslProto, error) {
	frame, err := readFrame(s.br, 1<<20, nil)
	if err != nil {
		return nil, err
	}
	hdr := &commonpb.RpcRequestHeaderProto{}
	rest, err := unmarshalDelimited(frame, hdr)
	if err != nil {
		return nil, err
	}
	if hdr.GetCallId() != callIDSASL {
		return nil, errors.New("not a SASL packet")
	}
	m := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(rest, m); err != nil {
		return nil, err
	}
	return m, nil
}

// expect reads the client's next message and checks its state.
func (s *fakeSASLServer) expect(state commonpb.RpcSaslProto_SaslState) *commonpb.RpcSaslProto {
	m, err := s.recv()
	if err != nil {
		s.t.Errorf("waiting for %v: %v", state, err)
		return nil
	}
	if m.GetState() != state {
		s.t.Errorf("client sent %v, want %v", m, state)
		return nil
	}
	return m
}

// expectHangUp: the client sends nothing more and closes.
func (s *fakeSASLServer) expectHangUp() {
	if m, err := s.recv(); !errors.Is(err, io.EOF) {
		s.t.Errorf("client went on after refusing: sent %v (err %v)", m, err)
	}
}

// reply writes SASL replies (call id -33, SUCCESS status) in one write.
func (s *fakeSASLServer) reply(ms ...*commonpb.RpcSaslProto) {
	var b []byte
	for _, m := range ms {
		var err error
		b, err = appendFrame(b, &commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(callIDSASL)),
			Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}, m)
		if err != nil {
			s.t.Errorf("encode reply: %v", err)
			return
		}
	}
	if _, err := s.nc.Write(b); err != nil {
		s.t.Errorf("reply: %v", err)
	}
}

// runClientSASL runs a client connection's SASL exchange (handshake: also
// the preamble before it and the connection context after it) against
// script, and returns the client's result once both sides are done.
func runClientSASL(t *testing.T, cfg connConfig, handshake bool, script func(s *fakeSASLServer)) (c *clientConn, simple bool, err error) {
	t.Helper()
	cli, srv := net.Pipe()
	deadline := time.Now().Add(20 * time.Second) // a hung exchange fails, never hangs the run
	cli.SetDeadline(deadline)
	srv.SetDeadline(deadline)
	if cfg.maxFrame == 0 {
		cfg.maxFrame = 1 << 20
	}
	if cfg.protocol == "" {
		cfg.protocol = testProtocol
	}
	c = &clientConn{pool: NewPool(), key: connKey{addr: "localhost:8030"}, nc: cli, cfg: cfg}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer srv.Close()
		s := &fakeSASLServer{t: t, nc: srv, br: bufio.NewReader(srv)}
		if handshake {
			pre := make([]byte, 7)
			if _, err := io.ReadFull(s.br, pre); err != nil || pre[6] != authProtocolSASL {
				t.Errorf("preamble %x, %v", pre, err)
				return
			}
		}
		if s.expect(commonpb.RpcSaslProto_NEGOTIATE) != nil {
			script(s)
		}
	}()
	if handshake {
		err = c.handshake()
	} else {
		simple, err = c.sasl()
	}
	cli.Close()
	<-done
	return c, simple, err
}

func saslAuth(method, mech, protocol, serverID string, challenge []byte) *commonpb.RpcSaslProto_SaslAuth {
	return &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(method), Mechanism: proto.String(mech),
		Protocol: proto.String(protocol), ServerId: proto.String(serverID), Challenge: challenge}
}

func negotiate(auths ...*commonpb.RpcSaslProto_SaslAuth) *commonpb.RpcSaslProto {
	return &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum(), Auths: auths}
}

func saslState(state commonpb.RpcSaslProto_SaslState, token []byte) *commonpb.RpcSaslProto {
	return &commonpb.RpcSaslProto{State: state.Enum(), Token: token}
}

var simpleAuth = saslAuth(authMethodSimple, "", "", "", nil)

// digestPeer is the server half of a real DIGEST-MD5 login (the same
// mechanism our server uses), so a script can offer a genuine challenge
// and compute the genuine rspauth.
func digestPeer(t *testing.T, qops ...string) (tokenMech, *commonpb.RpcSaslProto_SaslAuth) {
	t.Helper()
	if len(qops) == 0 {
		qops = []string{"auth"}
	}
	srv, err := newDigestServer(func(id []byte) ([]byte, error) {
		if string(id) != "id-u" {
			return nil, errors.New("unknown token")
		}
		return []byte("pw-u"), nil
	}, qops)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := srv.Challenge()
	if err != nil {
		t.Fatal(err)
	}
	return srv, saslAuth(authMethodToken, mechDigestMD5, "", "default", ch)
}

// digestLogin plays the genuine DIGEST-MD5 server srv (from digestPeer)
// up to the client's INITIATE, checking it echoes the offered auth without
// its challenge, and returns the rspauth srv would send.
func digestLogin(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth) []byte {
	s.reply(negotiate(offered, simpleAuth))
	m := s.expect(commonpb.RpcSaslProto_INITIATE)
	if m == nil {
		return nil
	}
	want := proto.Clone(offered).(*commonpb.RpcSaslProto_SaslAuth)
	want.Challenge = nil
	if len(m.GetAuths()) != 1 || !proto.Equal(m.GetAuths()[0], want) {
		s.t.Errorf("INITIATE auths %v, want the offered TOKEN auth without its challenge %v", m.GetAuths(), want)
	}
	rspauth, err := srv.Respond(m.GetToken())
	if err != nil {
		s.t.Errorf("genuine server refuses the client's response: %v", err)
	}
	return rspauth
}

// TestClientSASLDigest: the DIGEST-MD5 login's client rules. The genuine
// exchange passes (INITIATE echoes the offered auth without its challenge);
// the server must then prove the password too (rspauth).
func TestClientSASLDigest(t *testing.T) {
	tokCfg := connConfig{token: testToken("id-u", "pw-u"), user: "u"}
	t.Run("genuine server", func(t *testing.T) {
		srv, offered := digestPeer(t)
		c, simple, err := runClientSASL(t, tokCfg, false, func(s *fakeSASLServer) {
			s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, digestLogin(s, srv, offered)))
		})
		if err != nil || simple || c.layer != nil || c.krbDone {
			t.Fatalf("simple %v err %v layer %v krbDone %v", simple, err, c.layer, c.krbDone)
		}
	})
	t.Run("genuine server, auth-int installs the layer", func(t *testing.T) {
		srv, offered := digestPeer(t, "auth-int")
		c, _, err := runClientSASL(t, tokCfg, false, func(s *fakeSASLServer) {
			s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, digestLogin(s, srv, offered)))
		})
		if err != nil || c.layer == nil {
			t.Fatalf("err %v layer %v", err, c.layer)
		}
	})
	for _, tc := range []struct {
		name    string
		rspauth func(genuine []byte) []byte
	}{
		{"SUCCESS without rspauth", func([]byte) []byte { return nil }},
		{"SUCCESS with an empty rspauth", func([]byte) []byte { return []byte{} }},
		{"SUCCESS with a wrong rspauth", func(g []byte) []byte {
			b := append([]byte(nil), g...)
			if b[len(b)-1] == '0' { // one hex digit off
				b[len(b)-1] = '1'
			} else {
				b[len(b)-1] = '0'
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, offered := digestPeer(t)
			_, _, err := runClientSASL(t, tokCfg, false, func(s *fakeSASLServer) {
				s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, tc.rspauth(digestLogin(s, srv, offered))))
			})
			if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "server proof") {
				t.Fatalf("err %v, want the server's proof refused", err)
			}
		})
	}
}

// TestClientSASLOutOfOrder: server messages out of the exchange's order are
// refused, and the client sends nothing more.
func TestClientSASLOutOfOrder(t *testing.T) {
	tokCfg := connConfig{token: testToken("id-u", "pw-u"), user: "u"}
	_, again := digestPeer(t)
	for _, tc := range []struct {
		name   string
		script func(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth)
		want   error
	}{
		{"data after SUCCESS", func(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth) {
			// SUCCESS and a forged reply arrive in one segment.
			s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, digestLogin(s, srv, offered)), saslState(commonpb.RpcSaslProto_WRAP, []byte("x")))
		}, ErrMalformed},
		{"NEGOTIATE twice", func(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth) {
			digestLogin(s, srv, offered)
			s.reply(negotiate(again))
			s.expectHangUp()
		}, ErrAuth},
		{"CHALLENGE before NEGOTIATE", func(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth) {
			s.reply(saslState(commonpb.RpcSaslProto_CHALLENGE, offered.Challenge))
			s.expectHangUp()
		}, ErrAuth},
		{"unexpected state", func(s *fakeSASLServer, srv tokenMech, offered *commonpb.RpcSaslProto_SaslAuth) {
			s.reply(saslState(commonpb.RpcSaslProto_RESPONSE, nil))
			s.expectHangUp()
		}, ErrAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, offered := digestPeer(t) // one login each
			_, _, err := runClientSASL(t, tokCfg, false, func(s *fakeSASLServer) { tc.script(s, srv, offered) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

// TestClientSASLChoosesOnlyOffered: the client answers only with a
// mechanism the server offered and it can use; otherwise it goes on with
// SIMPLE when that is offered and allowed, or refuses without sending
// anything more.
func TestClientSASLChoosesOnlyOffered(t *testing.T) {
	_, digest := digestPeer(t)
	tokCfg := connConfig{token: testToken("id-u", "pw-u"), user: "u"}
	krbCfg := connConfig{krb: &KerberosClientConfig{ServerPrincipal: "rm/_HOST"}, user: "u"}
	plain := saslAuth(authMethodToken, "PLAIN", "", "default", []byte("x"))
	gssapi := saslAuth(AuthMethodKerberos, mechGSSAPI, "rm", "localhost", nil)
	cases := []struct {
		name   string
		cfg    connConfig
		offer  []*commonpb.RpcSaslProto_SaslAuth
		simple bool // the client must INITIATE SIMPLE; else refuse with ErrAuth
	}{
		// TOKEN with another mechanism is not DIGEST-MD5; a token client
		// holds no Kerberos login.
		{"token client, TOKEN/PLAIN and KERBEROS offered", tokCfg, []*commonpb.RpcSaslProto_SaslAuth{plain, gssapi}, false},
		{"token client, TOKEN/PLAIN, KERBEROS and SIMPLE offered", tokCfg, []*commonpb.RpcSaslProto_SaslAuth{plain, gssapi, simpleAuth}, true},
		{"token client, nothing offered", tokCfg, nil, false},
		// A Kerberos client never falls back to SIMPLE, nor uses TOKEN.
		{"Kerberos client, only SIMPLE offered", krbCfg, []*commonpb.RpcSaslProto_SaslAuth{simpleAuth}, false},
		{"Kerberos client, TOKEN and SIMPLE offered", krbCfg, []*commonpb.RpcSaslProto_SaslAuth{digest, simpleAuth}, false},
		{"Kerberos client, KERBEROS with another mechanism", krbCfg, []*commonpb.RpcSaslProto_SaslAuth{
			saslAuth(AuthMethodKerberos, "GS2-KRB5", "rm", "localhost", nil), simpleAuth}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, simple, err := runClientSASL(t, tc.cfg, false, func(s *fakeSASLServer) {
				s.reply(negotiate(tc.offer...))
				if tc.simple {
					m := s.expect(commonpb.RpcSaslProto_INITIATE)
					if m != nil && (len(m.GetAuths()) != 1 || m.GetAuths()[0].GetMethod() != authMethodSimple || m.Token != nil) {
						t.Errorf("INITIATE %v, want SIMPLE without a token", m)
					}
				}
				s.expectHangUp()
			})
			if tc.simple {
				if err != nil || !simple {
					t.Fatalf("simple %v err %v, want SIMPLE", simple, err)
				}
				return
			}
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("simple %v err %v, want ErrAuth", simple, err)
			}
		})
	}
}

// TestClientSASLSimpleOnlyServer: a server that answers NEGOTIATE with
// SUCCESS takes no SASL. A Kerberos client refuses (no fallback); a token
// client goes on with SIMPLE only under a configured User: with none it
// sends no connection context at all (no anonymous login).
func TestClientSASLSimpleOnlyServer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     connConfig
		context string // the effective user the client must send; "" = refuse, send nothing
	}{
		{"token client with User", connConfig{token: testToken("id-u", "pw-u"), user: "u"}, "u"},
		{"token client without User", connConfig{token: testToken("id-u", "pw-u")}, ""},
		{"Kerberos client", connConfig{krb: &KerberosClientConfig{ServerPrincipal: "rm/_HOST"}, user: "u"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runClientSASL(t, tc.cfg, true, func(s *fakeSASLServer) {
				s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, nil))
				frame, rerr := readFrame(s.br, 1<<20, nil)
				if tc.context == "" {
					if !errors.Is(rerr, io.EOF) {
						t.Errorf("client sent %x (err %v), want nothing", frame, rerr)
					}
					return
				}
				if rerr != nil {
					t.Errorf("no connection context: %v", rerr)
					return
				}
				hdr := &commonpb.RpcRequestHeaderProto{}
				rest, _ := unmarshalDelimited(frame, hdr)
				cc := &commonpb.IpcConnectionContextProto{}
				if _, err := unmarshalDelimited(rest, cc); err != nil || hdr.GetCallId() != callIDConnectionContext ||
					cc.GetUserInfo().GetEffectiveUser() != tc.context {
					t.Errorf("context %v %v (%v), want effective user %q", hdr, cc, err, tc.context)
				}
			})
			if tc.context != "" {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("err %v, want ErrAuth", err)
			}
		})
	}
}

// kerberosScript offers KERBEROS/GSSAPI for rm/localhost, takes the
// client's AP-REQ and, when complete, runs the real acceptor to the end of
// the exchange; then it sends SUCCESS with token.
func kerberosScript(s *fakeSASLServer, acceptor *krb5sasl.Server, complete bool, token []byte) {
	s.reply(negotiate(saslAuth(AuthMethodKerberos, mechGSSAPI, "rm", "localhost", nil)))
	m := s.expect(commonpb.RpcSaslProto_INITIATE)
	if m != nil && (len(m.GetToken()) == 0 || m.GetAuths()[0].GetMethod() != AuthMethodKerberos) {
		s.t.Errorf("INITIATE %v, want KERBEROS with an AP-REQ", m)
	}
	for m != nil && complete {
		out, done, err := acceptor.Step(m.GetToken())
		if err != nil {
			s.t.Errorf("acceptor: %v", err)
			return
		}
		if done {
			break
		}
		s.reply(saslState(commonpb.RpcSaslProto_CHALLENGE, out))
		m = s.expect(commonpb.RpcSaslProto_RESPONSE)
	}
	s.reply(saslState(commonpb.RpcSaslProto_SUCCESS, token))
	s.expectHangUp()
}

// TestClientSASLKerberosSuccess: SUCCESS is accepted only once the GSSAPI
// exchange is complete (the AP-REP proved the server, the layers were
// agreed) and only without a token. The script's server half is the real
// acceptor (krb5sasl) with the service's keytab. Needs a KDC
// (internal/krbtest).
func TestClientSASLKerberosSuccess(t *testing.T) {
	r := newKrbRealm(t)
	alice := r.login("alice")
	cfg := connConfig{krb: &KerberosClientConfig{Login: alice, ServerPrincipal: "rm/_HOST"}}
	for _, tc := range []struct {
		name     string
		complete bool   // run the GSSAPI exchange to its end before SUCCESS
		token    []byte // SUCCESS's token
		ok       bool
	}{
		{"SUCCESS after the exchange", true, nil, true},
		{"SUCCESS with a token after the exchange", true, []byte{1, 2, 3}, false},
		{"SUCCESS right after the AP-REQ", false, nil, false},
		{"SUCCESS with a token right after the AP-REQ", false, []byte{1, 2, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acceptor, err := krb5sasl.NewServer(krb5sasl.ServerConfig{Keytab: r.server.Keytab, Principal: r.server.Principal})
			if err != nil {
				t.Fatal(err)
			}
			c, _, err := runClientSASL(t, cfg, false, func(s *fakeSASLServer) {
				kerberosScript(s, acceptor, tc.complete, tc.token)
			})
			if tc.ok {
				if err != nil || !c.krbDone {
					t.Fatalf("err %v krbDone %v", err, c.krbDone)
				}
				return
			}
			if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "before the GSSAPI exchange finished") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
