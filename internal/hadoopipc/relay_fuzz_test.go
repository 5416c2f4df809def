package hadoopipc

import (
	"bufio"
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fakeRelay is a TokenRelay whose upstream is simulated: a fixed challenge,
// and Complete accepts any response except one whose username is "ZmFpbA=="
// ("fail"), which it refuses as an upstream would.
type fakeRelay struct{}

type fakeLogin struct{ done chan struct{} }

const fakeChallenge = `realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`

func (fakeRelay) StartLogin(context.Context) (RelayedLogin, error) {
	return &fakeLogin{done: make(chan struct{})}, nil
}
func (l *fakeLogin) Challenge() []byte { return []byte(fakeChallenge) }
func (l *fakeLogin) Complete(_ context.Context, resp []byte) ([]byte, error) {
	if bytes.Contains(resp, []byte(`username="ZmFpbA=="`)) {
		return nil, fatal(fatalUnauthorized, ClassInvalidToken, "upstream refused")
	}
	return []byte("rspauth=0123456789abcdef0123456789abcdef"), nil
}
func (l *fakeLogin) Call(context.Context, string, proto.Message, proto.Message) error { return nil }
func (l *fakeLogin) Done() <-chan struct{}                                            { return l.done }
func (l *fakeLogin) Err() error                                                       { return nil }
func (l *fakeLogin) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

var fuzzRelayServer = func() *Server {
	cfg := DefaultServerConfig()
	cfg.TokenRelay = fakeRelay{}
	s := NewServer(cfg)
	if err := s.Register(echoProtocol(nil)); err != nil {
		panic(err)
	}
	return s
}()

// FuzzRelaySASL: a relay server's SASL state machine, fed arbitrary
// RpcSaslProto bytes, never panics, ends only with FATAL replies of the
// SASL classes, and never leaves a pending-login slot taken.
func FuzzRelaySASL(f *testing.F) {
	neg := mustPacket(saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
	auth := tokenAuth()
	resp := func(user, qop string) []byte {
		return mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(), Auths: []*commonpb.RpcSaslProto_SaslAuth{auth},
			Token: []byte(`charset=utf-8,username="` + user + `",realm="default",nonce="abc",nc=00000001,cnonce="y",digest-uri="/default",maxbuf=65536,response=0123456789abcdef0123456789abcdef,qop=` + qop)})
	}
	f.Add(joinPackets(neg, resp("aWQtdQ==", "auth")))
	f.Add(joinPackets(neg, resp("ZmFpbA==", "auth")))
	f.Add(joinPackets(neg, resp("aWQtdQ==", "auth-int")))
	f.Add(joinPackets(neg, resp("!!", "auth")))
	f.Add(joinPackets(mustPacket(saslMsg(commonpb.RpcSaslProto_INITIATE, auth)), resp("aWQtdQ==", "auth")))
	f.Add(joinPackets(neg, mustPacket(saslMsg(commonpb.RpcSaslProto_INITIATE, &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("SIMPLE"), Mechanism: proto.String("")}))))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := newServerConn(fuzzRelayServer, &nopConn{})
		c.authProtocol = authProtocolSASL
		boundedAlloc(t, len(in), func() {
			feedSASL(t, c, splitPackets(in), ClassSaslException, ClassAccessControl, ClassInvalidToken, ClassRpcServerException)
		})
		// What serve does when the connection ends.
		c.cancel()
		if c.relay != nil {
			c.relay.close()
		}
		if n := len(fuzzRelayServer.relaySlots); n != 0 {
			t.Fatalf("%d pending-login slots still taken", n)
		}
	})
}

// FuzzRelayConnHandshake: the upstream half of a relay, fed arbitrary
// upstream replies to NEGOTIATE and INITIATE, never panics and allocates
// boundedly.
func FuzzRelayConnHandshake(f *testing.F) {
	sasl := func(m *commonpb.RpcSaslProto) []byte {
		return mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(callIDSASL)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}, m)
	}
	auth := tokenAuth()
	auth.Challenge = []byte(fakeChallenge)
	f.Add(joinPackets(sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum(), Auths: []*commonpb.RpcSaslProto_SaslAuth{auth}}),
		sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum(), Token: []byte("rspauth=00000000000000000000000000000000")})))
	f.Add(joinPackets(sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})))
	f.Add(joinPackets(mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(callIDSASL)), Status: commonpb.RpcResponseHeaderProto_FATAL.Enum(),
		ExceptionClassName: proto.String(ClassInvalidToken), ErrorMsg: proto.String("no")})))
	f.Fuzz(func(t *testing.T, in []byte) {
		script := lengthPrefixed(splitPackets(in))
		sc := &scriptConn{r: bytes.NewReader(script)}
		c := newClientConn(NewPool(), connKey{}, connConfig{maxFrame: 1 << 16, protocol: testProtocol}, sc)
		rc := &RelayConn{cfg: RelayConfig{Protocol: testProtocol}, c: c, br: bufio.NewReader(sc)}
		boundedAlloc(t, len(in), func() {
			if rc.negotiate() != nil {
				return
			}
			if len(rc.Challenge()) == 0 || rc.auth.Challenge != nil {
				t.Fatal("negotiate succeeded without a challenge to relay")
			}
			rc.initiate([]byte(`username="aWQtdQ==",nonce="abc",nc=00000001,cnonce="y",digest-uri="/default",response=0123456789abcdef0123456789abcdef`))
		})
	})
}
