package hadoopipc

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func saslHeader() *commonpb.RpcRequestHeaderProto {
	h := reqHeader(callIDSASL)
	h.RetryCount = proto.Int32(-1)
	h.ClientId = []byte{}
	return h
}

func saslMsg(state commonpb.RpcSaslProto_SaslState, auths ...*commonpb.RpcSaslProto_SaslAuth) *commonpb.RpcSaslProto {
	return &commonpb.RpcSaslProto{State: state.Enum(), Auths: auths}
}

func tokenAuth() *commonpb.RpcSaslProto_SaslAuth {
	return &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"),
		Protocol: proto.String(""), ServerId: proto.String("default")}
}

// TestSASLInitiateWithoutNegotiate: a client that skips NEGOTIATE and sends
// INITIATE TOKEN with an empty token gets the challenge as CHALLENGE.
func TestSASLInitiateWithoutNegotiate(t *testing.T) {
	ts := startServer(t, tokenConfig(), echoProtocol(nil))
	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolSASL)
	m := saslMsg(commonpb.RpcSaslProto_INITIATE, tokenAuth())
	m.Token = []byte{}
	r.packet(saslHeader(), m)
	h, rest := r.reply()
	ch := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(rest, ch); err != nil || h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS ||
		ch.GetState() != commonpb.RpcSaslProto_CHALLENGE || !bytes.Contains(ch.GetToken(), []byte("nonce=")) {
		t.Fatalf("reply %v %v %v", h, ch, err)
	}
}

// TestConnectionContextUsers: effectiveUser wins; realUser alone is the
// user; both make a proxy user.
func TestConnectionContextUsers(t *testing.T) {
	ts, seen := startUserServer(t, DefaultServerConfig())
	cases := []struct {
		name            string
		effective, real *string
		want            User
	}{
		{"effective only", proto.String("alice"), nil, User{Name: "alice", AuthMethod: "SIMPLE"}},
		{"real only", nil, proto.String("bob"), User{Name: "bob", AuthMethod: "SIMPLE"}},
		{"proxy", proto.String("alice"), proto.String("oozie"), User{Name: "alice", RealUser: "oozie", AuthMethod: "SIMPLE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := dialRaw(t, ts.addr)
			r.preamble(authProtocolNone)
			h := reqHeader(-3)
			r.packet(h, &commonpb.IpcConnectionContextProto{UserInfo: &commonpb.UserInformationProto{EffectiveUser: tc.effective, RealUser: tc.real}})
			r.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
			if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
				t.Fatalf("reply %v", h)
			}
			got := seen()
			if got.Name != tc.want.Name || got.RealUser != tc.want.RealUser || got.AuthMethod != tc.want.AuthMethod {
				t.Errorf("user %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFatalReplies covers every FATAL path: the reply's call id, error code
// and Java class, and that the server then closes the connection.
func TestFatalReplies(t *testing.T) {
	simpleOnly := DefaultServerConfig()
	noSimple := DefaultServerConfig()
	noSimple.AllowSimple = false
	small := DefaultServerConfig()
	small.MaxFrameBytes = 1024

	kerberos := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("KERBEROS"), Mechanism: proto.String("GSSAPI")}
	simpleAuth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("SIMPLE"), Mechanism: proto.String("")}

	cases := []struct {
		name      string
		cfg       ServerConfig
		steps     func(r *rawConn)
		wantCall  int32
		wantCode  commonpb.RpcResponseHeaderProto_RpcErrorCodeProto
		wantClass string
	}{
		{"bad magic", simpleOnly, func(r *rawConn) { r.write([]byte("hrpx\x09\x00\x00")) },
			-1, fatalVersionMismatch, ClassVersionMismatch},
		{"old rpc version", simpleOnly, func(r *rawConn) { r.write([]byte("hrpc\x08\x00\x00")) },
			-1, fatalVersionMismatch, ClassVersionMismatch},
		{"simple auth disabled", noSimple, func(r *rawConn) { r.preamble(authProtocolNone) },
			-1, fatalUnauthorized, ClassAccessControl},
		{"unknown auth protocol", simpleOnly, func(r *rawConn) { r.preamble(0x05) },
			-1, fatalUnauthorized, ClassIpcException},
		{"frame over the limit", small, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.write([]byte{0, 0, 4, 1}) // 1025 bytes announced, none sent
		}, -1, fatalInvalidRPCHeader, ClassRpcServerException},
		{"negative frame length", small, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.write([]byte{0x80, 0, 0, 0})
		}, -1, fatalInvalidRPCHeader, ClassRpcServerException},
		{"undecodable rpc header", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.write([]byte{0, 0, 0, 3, 2, 0xff, 0xff})
		}, -1, fatalDeserializing, ClassRpcServerException},
		{"rpc header without rpcOp", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			h := reqHeader(-3)
			h.RpcOp = nil
			r.packet(h)
		}, -3, fatalInvalidRPCHeader, ClassRpcServerException},
		{"continuation packet", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			h := reqHeader(-3)
			h.RpcOp = commonpb.RpcRequestHeaderProto_RPC_CONTINUATION_PACKET.Enum()
			r.packet(h)
		}, -3, fatalInvalidRPCHeader, ClassRpcServerException},
		{"rpc header without rpcKind", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			h := reqHeader(-3)
			h.RpcKind = nil
			r.packet(h)
		}, -3, fatalInvalidRPCHeader, ClassRpcServerException},
		{"call before connection context", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.call(7, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
		}, 7, fatalInvalidRPCHeader, ClassRpcServerException},
		{"second connection context", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.context("alice")
			r.context("alice")
		}, -3, fatalInvalidRPCHeader, ClassRpcServerException},
		{"undecodable connection context", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			b, _ := appendFrame(nil, reqHeader(-3))
			b = append(b, 3, 0x12, 0xff, 0xff) // delimited, truncated field
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			r.write(b)
		}, -3, fatalDeserializing, ClassRpcServerException},
		{"connection context without a user", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.packet(reqHeader(-3), &commonpb.IpcConnectionContextProto{Protocol: proto.String(testProtocol)})
		}, -3, fatalUnauthorized, ClassAccessControl},
		{"unknown out-of-band call id", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.packet(reqHeader(-7))
		}, -7, fatalInvalidRPCHeader, ClassRpcServerException},
		{"writable rpc kind", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.context("alice")
			h := reqHeader(1)
			h.RpcKind = commonpb.RpcKindProto_RPC_WRITABLE.Enum()
			r.packet(h)
		}, 1, fatalInvalidRPCHeader, ClassRpcServerException},
		{"SASL packet on a non-SASL connection", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		}, -33, fatalInvalidRPCHeader, ClassRpcServerException},
		{"connection context during SASL", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.context("alice")
		}, -3, fatalInvalidRPCHeader, ClassRpcServerException},
		{"undecodable SASL message", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			b, _ := appendFrame(nil, saslHeader())
			b = append(b, 2, 0x10, 0x09) // state 9: not an enum value of a required field... still decodes? use truncation:
			b = b[:len(b)-1]
			b[len(b)-2] = 2
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			r.write(b)
		}, -33, fatalDeserializing, ClassRpcServerException},
		{"SASL INITIATE with two auths", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_INITIATE, simpleAuth, simpleAuth))
		}, -33, fatalUnauthorized, ClassSaslException},
		{"SASL RESPONSE without an exchange", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			m := saslMsg(commonpb.RpcSaslProto_RESPONSE)
			m.Token = []byte("x")
			r.packet(saslHeader(), m)
		}, -33, fatalUnauthorized, ClassSaslException},
		{"SASL state the client may not send", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_CHALLENGE))
		}, -33, fatalUnauthorized, ClassSaslException},
		{"SASL WRAP before negotiation", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			m := saslMsg(commonpb.RpcSaslProto_WRAP)
			m.Token = []byte("x")
			r.packet(saslHeader(), m)
		}, -33, fatalInvalidRPCHeader, ClassSaslException},
		{"SASL on a connection switched to SIMPLE", simpleOnly, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
			if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
				r.t.Fatalf("NEGOTIATE reply status %v", h.GetStatus())
			}
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		}, -33, fatalInvalidRPCHeader, ClassRpcServerException},
		{"SASL with no method enabled", ServerConfig{}, func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		}, -33, fatalUnauthorized, ClassAccessControl},
		{"SASL INITIATE of a method not offered after NEGOTIATE", tokenConfig(), func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
			r.reply()
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_INITIATE, kerberos))
		}, -33, fatalUnauthorized, ClassAccessControl},
		{"SASL INITIATE TOKEN with an initial response but no challenge", tokenConfig(), func(r *rawConn) {
			r.preamble(authProtocolSASL)
			m := saslMsg(commonpb.RpcSaslProto_INITIATE, tokenAuth())
			m.Token = []byte("username=\"x\"")
			r.packet(saslHeader(), m)
		}, -33, fatalUnauthorized, ClassSaslException},
		{"SASL RESPONSE without a token", tokenConfig(), func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
			r.reply()
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_RESPONSE))
		}, -33, fatalUnauthorized, ClassSaslException},
		{"SASL digest response that does not parse", tokenConfig(), func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
			r.reply()
			m := saslMsg(commonpb.RpcSaslProto_INITIATE, tokenAuth())
			m.Token = []byte("\x00garbage")
			r.packet(saslHeader(), m)
		}, -33, fatalUnauthorized, ClassSaslException},
		{"second SASL NEGOTIATE", tokenConfig(), func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
			r.reply()
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		}, -33, fatalUnauthorized, ClassAccessControl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, tc.cfg, echoProtocol(nil))
			r := dialRaw(t, ts.addr)
			tc.steps(r)
			h, rest := r.reply()
			if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL {
				t.Fatalf("status %v (%s: %s), want FATAL", h.GetStatus(), h.GetExceptionClassName(), h.GetErrorMsg())
			}
			if got := int32(h.GetCallId()); got != tc.wantCall {
				t.Errorf("callId %d, want %d", got, tc.wantCall)
			}
			if h.GetErrorDetail() != tc.wantCode || h.GetExceptionClassName() != tc.wantClass {
				t.Errorf("got %v %s (%s), want %v %s", h.GetErrorDetail(), h.GetExceptionClassName(), h.GetErrorMsg(), tc.wantCode, tc.wantClass)
			}
			if h.GetErrorMsg() == "" {
				t.Error("empty error message")
			}
			if h.GetServerIpcVersionNum() != 9 || h.ClientId == nil || len(h.GetClientId()) != 0 {
				t.Errorf("header %v: want serverIpcVersionNum 9 and an empty clientId", h)
			}
			if len(rest) != 0 {
				t.Errorf("%d bytes after a FATAL header", len(rest))
			}
			r.expectClosed()
		})
	}
}

func TestHTTPGetOnIPCPort(t *testing.T) {
	ts := startServer(t, DefaultServerConfig())
	r := dialRaw(t, ts.addr)
	r.write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	body, err := io.ReadAll(r.br)
	if err != nil && !isConnReset(err) {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, []byte("HTTP/1.1 404 ")) || !bytes.Contains(body, []byte("Hadoop IPC")) {
		t.Errorf("reply %q", body)
	}
}

// TestErrorRepliesRaw: the ERROR paths on the wire; the client id and retry
// count are echoed and the same connection serves the next call.
func TestErrorRepliesRaw(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil))
	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolNone)
	r.context("bob")
	req := &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("r")}
	garbage := func(callID int32, validHeader bool, body ...byte) func() {
		return func() {
			b, _ := appendFrame(nil, reqHeader(callID))
			if validHeader {
				b, _ = appendFrame(nil, reqHeader(callID), &commonpb.RequestHeaderProto{
					MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(testProtocol), ClientProtocolVersion: proto.Uint64(1)})
			}
			if body == nil {
				body = []byte{2, 0x0a, 0x05} // delimited message with a truncated field
			}
			b = append(b, body...)
			binary.BigEndian.PutUint32(b, uint32(len(b)-4))
			r.write(b)
		}
	}
	cases := []struct {
		name      string
		send      func()
		callID    int32
		wantCode  commonpb.RpcResponseHeaderProto_RpcErrorCodeProto
		wantClass string
	}{
		{"no such protocol", func() { r.call(1, "org.example.NopePB", 1, "echo", req) }, 1, errNoSuchProtocol, ClassNoSuchProtocol},
		{"no such method", func() { r.call(2, testProtocol, 1, "nope", req) }, 2, errNoSuchMethod, ClassNoSuchMethod},
		{"version mismatch", func() { r.call(3, testProtocol, 7, "echo", req) }, 3, errVersionMismatch, ClassVersionMismatch},
		{"undecodable request header", garbage(4, false), 4, errApplication, ClassInvalidProtocolBuffer},
		{"undecodable request body", garbage(5, true), 5, errApplication, ClassInvalidProtocolBuffer},
		{"missing required request field", garbage(6, true, 0) /* empty message: renewer unset */, 6, errApplication, ClassInvalidProtocolBuffer},
		{"application error", func() {
			r.call(8, testProtocol, 1, "fail", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(ClassStandby + ":not active")})
		}, 8, errApplication, ClassStandby},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.send()
			h, rest := r.reply()
			if h.GetStatus() != commonpb.RpcResponseHeaderProto_ERROR {
				t.Fatalf("status %v, want ERROR", h.GetStatus())
			}
			if int32(h.GetCallId()) != tc.callID || h.GetErrorDetail() != tc.wantCode || h.GetExceptionClassName() != tc.wantClass {
				t.Errorf("got call %d %v %s (%s), want call %d %v %s", int32(h.GetCallId()), h.GetErrorDetail(), h.GetExceptionClassName(), h.GetErrorMsg(), tc.callID, tc.wantCode, tc.wantClass)
			}
			if string(h.GetClientId()) != "0123456789abcdef" || h.GetRetryCount() != 0 {
				t.Errorf("clientId %q retry %d not echoed", h.GetClientId(), h.GetRetryCount())
			}
			if len(rest) != 0 {
				t.Errorf("%d body bytes after an ERROR header", len(rest))
			}
			// The connection still works.
			r.call(100, testProtocol, 1, "echo", req)
			h, rest = r.reply()
			if h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS || h.GetCallId() != 100 {
				t.Fatalf("follow-up call: %v", h)
			}
			resp := &commonpb.GetDelegationTokenResponseProto{}
			if _, err := unmarshalDelimited(rest, resp); err != nil || resp.GetToken().GetService() != "bob" {
				t.Fatalf("follow-up reply %v %v", resp, err)
			}
		})
	}
	// A ping gets no reply: the next reply is for the call after it.
	h := reqHeader(callIDPing)
	h.RetryCount = proto.Int32(-1)
	r.packet(h)
	r.call(101, testProtocol, 1, "echo", req)
	if h, _ := r.reply(); h.GetCallId() != 101 {
		t.Fatalf("after ping: reply to %d", int32(h.GetCallId()))
	}
	_ = context.Background
}
