package hadoopipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// FuzzReadFrame: the frame reader never panics, never returns more than the
// limit, and never allocates on the strength of a length prefix alone.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0x10, 0x01, 0})
	f.Add([]byte{0, 0, 0, 0})
	const limit = 4096
	f.Fuzz(func(t *testing.T, in []byte) {
		frame, err := readFrame(bytes.NewReader(in), limit, nil)
		if err != nil {
			if len(in) >= 4 && errors.Is(err, ErrFrameTooLarge) == (int(uint32(in[0])<<24|uint32(in[1])<<16|uint32(in[2])<<8|uint32(in[3])) <= limit) {
				t.Fatalf("ErrFrameTooLarge mismatch for prefix %x: %v", in[:4], err)
			}
			return
		}
		if len(frame) > limit || len(frame) > len(in)-4 {
			t.Fatalf("frame of %d bytes from %d input bytes", len(frame), len(in))
		}
		// Delimited splitting stays within the frame.
		for rest := frame; len(rest) > 0; {
			msg, r, err := nextDelimited(rest)
			if err != nil {
				break
			}
			if len(msg) > len(rest) || len(r) >= len(rest) {
				t.Fatalf("nextDelimited grew: msg %d rest %d of %d", len(msg), len(r), len(rest))
			}
			rest = r
		}
		// Round trip: re-framing the payload gives back the input prefix.
		out := append([]byte{0, 0, 0, 0}, frame...)
		out[0], out[1], out[2], out[3] = in[0], in[1], in[2], in[3]
		if !bytes.Equal(out, in[:4+len(frame)]) {
			t.Fatal("frame does not round-trip")
		}
	})
}

// nopConn is a net.Conn that swallows writes, for driving a serverConn
// without sockets.
type nopConn struct{ written int }

func (c *nopConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (c *nopConn) Write(p []byte) (int, error)      { c.written += len(p); return len(p), nil }
func (c *nopConn) Close() error                     { return nil }
func (c *nopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *nopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *nopConn) SetDeadline(time.Time) error      { return nil }
func (c *nopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *nopConn) SetWriteDeadline(time.Time) error { return nil }

var fuzzServer = func() *Server {
	cfg := tokenConfig()
	s := NewServer(cfg)
	if err := s.Register(echoProtocol(nil)); err != nil {
		panic(err)
	}
	return s
}()

func fuzzConn(auth byte, contextRead bool) *serverConn {
	c := newServerConn(fuzzServer, &nopConn{})
	c.authProtocol = auth
	if contextRead {
		c.contextRead = true
		c.user = &User{Name: "fuzz", AuthMethod: authMethodSimple}
		c.userCtx = c.ctx
	}
	return c
}

// splitPackets cuts fuzz input into packets: one length byte, then that
// many bytes.
func splitPackets(in []byte) [][]byte {
	var out [][]byte
	for len(in) > 0 {
		n := int(in[0])
		in = in[1:]
		n = min(n, len(in))
		out = append(out, in[:n])
		in = in[n:]
	}
	return out
}

func joinPackets(pkts ...[]byte) []byte {
	var out []byte
	for _, p := range pkts {
		out = append(out, byte(len(p)))
		out = append(out, p...)
	}
	return out
}

func mustPacket(msgs ...proto.Message) []byte {
	b, err := appendFrame(nil, msgs...)
	if err != nil {
		panic(err)
	}
	return b[4:]
}

// FuzzServerPackets: request decoding and dispatch never panic, whatever the
// packets and connection state; a FATAL stops processing as on the wire.
func FuzzServerPackets(f *testing.F) {
	call := mustPacket(reqHeader(1), &commonpb.RequestHeaderProto{
		MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(testProtocol), ClientProtocolVersion: proto.Uint64(1),
	}, &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("r")})
	ctx := mustPacket(reqHeader(-3), &commonpb.IpcConnectionContextProto{UserInfo: &commonpb.UserInformationProto{EffectiveUser: proto.String("u")}})
	f.Add(byte(0), joinPackets(ctx, call))
	f.Add(byte(1), joinPackets(call, call))
	f.Add(byte(1), joinPackets(mustPacket(reqHeader(-4)), []byte{0x1a, 0x00}))
	f.Add(byte(2), joinPackets(mustPacket(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE)), ctx))
	f.Fuzz(func(t *testing.T, mode byte, in []byte) {
		auth := authProtocolNone
		if mode&2 != 0 {
			auth = authProtocolSASL
		}
		c := fuzzConn(auth, mode&1 != 0)
		boundedAlloc(t, len(in), func() {
			for _, p := range splitPackets(in) {
				if re := c.processPacket(p); re != nil {
					if !re.Fatal || re.Class == "" {
						t.Fatalf("bad fatal reply %+v", re)
					}
					break
				}
			}
			c.calls.Wait()
		})
	})
}

// FuzzSASLExchange: the server's SASL state machine, fed arbitrary
// RpcSaslProto bytes after a valid start, never panics and only ends with
// FATAL replies of the SASL error classes.
func FuzzSASLExchange(f *testing.F) {
	neg := mustPacket(saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
	auth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"), Protocol: proto.String(""), ServerId: proto.String("default")}
	ini := &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(), Auths: []*commonpb.RpcSaslProto_SaslAuth{auth},
		Token: []byte(`charset=utf-8,username="aWQtdQ==",realm="default",nonce="x",nc=00000001,cnonce="y",digest-uri="/default",maxbuf=65536,response=0123456789abcdef0123456789abcdef,qop=auth`)}
	f.Add(joinPackets(neg, mustPacket(ini)))
	f.Add(joinPackets(mustPacket(saslMsg(commonpb.RpcSaslProto_INITIATE, &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("SIMPLE"), Mechanism: proto.String("")}))))
	f.Add(joinPackets(neg, mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_WRAP.Enum(), Token: []byte("abc")})))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := fuzzConn(authProtocolSASL, false)
		boundedAlloc(t, len(in), func() {
			feedSASL(t, c, splitPackets(in), ClassSaslException, ClassAccessControl, ClassInvalidToken, ClassRpcServerException, ClassStandby)
		})
	})
}

// feedSASL sends each packet to c as the payload of a SASL frame, as a
// client's connection would, until the first error reply, whose class must
// be one of allowed (the SASL exchange's own terms); then waits for the
// calls c started.
func feedSASL(t *testing.T, c *serverConn, packets [][]byte, allowed ...string) {
	t.Helper()
	hdr := mustPacket(saslHeader())
	for _, p := range packets {
		pkt := append(append([]byte{byte(len(hdr))}, hdr...), append(protoLen(len(p)), p...)...)
		if re := c.processPacket(pkt); re != nil {
			if !slices.Contains(allowed, re.Class) {
				t.Fatalf("unexpected class in %+v", re)
			}
			break
		}
	}
	c.calls.Wait()
}

// lengthPrefixed is what a server sends for packets: each after its
// 4-byte big-endian length.
func lengthPrefixed(packets [][]byte) []byte {
	var out []byte
	for _, p := range packets {
		out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

func protoLen(n int) []byte {
	var b []byte
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// FuzzClientReply: the client's reply decoder never panics on what a server
// sends, and fails pending calls rather than hanging them.
func FuzzClientReply(f *testing.F) {
	ok := mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(1), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()},
		&commonpb.GetDelegationTokenResponseProto{})
	f.Add(ok)
	f.Add(mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(1), Status: commonpb.RpcResponseHeaderProto_FATAL.Enum(),
		ExceptionClassName: proto.String("x"), ErrorDetail: fatalUnknown.Enum()}))
	f.Add(mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(-33)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := &clientConn{pool: NewPool(), nc: &nopConn{}, pending: map[int32]chan callResult{}, cfg: connConfig{maxFrame: 1 << 16, idle: time.Hour}}
		ch := make(chan callResult, 1)
		c.pending[1] = ch
		if err := c.handleReply(in); err != nil {
			c.close(err)
		}
	})
}

// FuzzRequestHeader: the hand-written header codecs agree with the
// generated protobuf code on every input.
func FuzzRequestHeader(f *testing.F) {
	f.Add(mustPacket(reqHeader(-33)))
	f.Add(mustPacket(reqHeader(7)))
	h := reqHeader(1)
	h.TraceInfo = &commonpb.RPCTraceInfoProto{TraceId: proto.Int64(5)}
	h.RpcOp = nil
	f.Add(mustPacket(h))
	f.Add([]byte{0x06, 0x08, 0x07, 0x18, 0x01, 0x22, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gotRest, gotErr := decodeReqHeader(in)
		want := &commonpb.RpcRequestHeaderProto{}
		wantRest, wantErr := unmarshalDelimited(in, want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("decodeReqHeader err %v, protobuf err %v", gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		// protobuf-go keeps unknown proto2 enum values; Java (and we) treat
		// them as unknown fields (absent, or the earlier known value): only
		// compare enums protobuf-go ended with a known value for.
		kindKnown := want.RpcKind == nil || uint32(want.GetRpcKind()) <= 2
		opKnown := want.RpcOp == nil || uint32(want.GetRpcOp()) <= 2
		if (kindKnown && (got.hasKind != (want.RpcKind != nil) || got.kind != int32(want.GetRpcKind()))) ||
			(opKnown && (got.hasOp != (want.RpcOp != nil) || got.op != int32(want.GetRpcOp()))) ||
			got.callID != want.GetCallId() || got.retry != want.GetRetryCount() ||
			!bytes.Equal(got.clientID, want.GetClientId()) || !bytes.Equal(gotRest, wantRest) {
			t.Fatalf("decodeReqHeader %+v, protobuf %v", got, want)
		}

		// The reply header encoder, fed values from the input, matches
		// the generated encoder byte for byte.
		re := &RemoteError{Class: string(got.clientID), Message: "m", Code: commonpb.RpcResponseHeaderProto_RpcErrorCodeProto(got.kind + 1), Fatal: got.op == 1}
		for _, withErr := range []bool{false, true} {
			var e *RemoteError
			ref := &commonpb.RpcResponseHeaderProto{
				CallId: proto.Uint32(wireCallID(got.callID)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum(),
				ServerIpcVersionNum: proto.Uint32(9), ClientId: got.clientID, RetryCount: proto.Int32(got.retry),
			}
			if got.clientID == nil {
				ref.ClientId = []byte{}
			}
			if withErr {
				e = re
				setError(ref, re)
			}
			enc, err := appendDelimited(nil, ref)
			if err != nil {
				t.Fatal(err)
			}
			if mine := appendRespHeader(nil, got.callID, e, ref.ClientId, got.retry, true); !bytes.Equal(mine, enc) {
				t.Fatalf("appendRespHeader\n got %x\nwant %x", mine, enc)
			}
		}
	})
}

// setError fills the error fields of a generated reply header (reference
// for appendRespHeader).
func setError(hdr *commonpb.RpcResponseHeaderProto, re *RemoteError) {
	status := commonpb.RpcResponseHeaderProto_ERROR
	if re.Fatal {
		status = commonpb.RpcResponseHeaderProto_FATAL
	}
	hdr.Status = status.Enum()
	hdr.ExceptionClassName = proto.String(re.Class)
	hdr.ErrorMsg = proto.String(re.Message)
	hdr.ErrorDetail = re.code().Enum()
}

// FuzzResponseHeader: the client's reply-header decoder agrees with
// protobuf-go; the request encoders match the generated encoders.
func FuzzResponseHeader(f *testing.F) {
	f.Add(mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(-33)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}), "echo")
	f.Add(mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(3), Status: commonpb.RpcResponseHeaderProto_ERROR.Enum(),
		ExceptionClassName: proto.String(ClassStandby), ErrorMsg: proto.String("m"), ErrorDetail: errApplication.Enum()}), "getApplications")
	f.Fuzz(func(t *testing.T, in []byte, method string) {
		got, gotRest, gotErr := decodeRespHeader(in)
		want := &commonpb.RpcResponseHeaderProto{}
		wantRest, wantErr := unmarshalDelimited(in, want)
		// An unknown status value: protobuf-go keeps it, Java (and we)
		// treat the required field as missing.
		statusOdd := wantErr == nil && uint32(want.GetStatus()) > 2
		if (gotErr == nil) != (wantErr == nil) && !statusOdd {
			t.Fatalf("decodeRespHeader err %v, protobuf err %v", gotErr, wantErr)
		}
		if gotErr == nil && wantErr == nil {
			statusKnown := uint32(want.GetStatus()) <= 2
			_, codeKnown := commonpb.RpcResponseHeaderProto_RpcErrorCodeProto_name[int32(want.GetErrorDetail())]
			wantCode := want.GetErrorDetail()
			if want.ErrorDetail == nil { // proto2 default is the first value; we keep 0
				wantCode = 0
			}
			if got.callID != int32(want.GetCallId()) || (statusKnown && got.status != want.GetStatus()) ||
				got.class != want.GetExceptionClassName() || got.msg != want.GetErrorMsg() ||
				(codeKnown && got.code != wantCode) || !bytes.Equal(gotRest, wantRest) {
				t.Fatalf("decodeRespHeader %+v, protobuf %v", got, want)
			}
		}

		callID := int32(len(in)) - 40
		ref, err := appendDelimited(nil, &commonpb.RpcRequestHeaderProto{
			RpcKind: commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), RpcOp: commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
			CallId: proto.Int32(callID), ClientId: in, RetryCount: proto.Int32(-callID),
		})
		if err != nil {
			t.Fatal(err)
		}
		if mine := appendReqHeader(nil, callID, in, -callID); !bytes.Equal(mine, ref) {
			t.Fatalf("appendReqHeader\n got %x\nwant %x", mine, ref)
		}
		ref, err = appendDelimited(nil, &commonpb.RequestHeaderProto{MethodName: proto.String(method),
			DeclaringClassProtocolName: proto.String(string(in)), ClientProtocolVersion: proto.Uint64(uint64(len(method)))})
		if err != nil {
			t.Fatal(err)
		}
		if mine := appendRequestHeader(nil, method, string(in), uint64(len(method))); !bytes.Equal(mine, ref) {
			t.Fatalf("appendRequestHeader\n got %x\nwant %x", mine, ref)
		}
	})
}

// TestLargeFramePromiseDoesNotAllocate: a length prefix alone (under the
// limit, body never sent) must not make the reader allocate that much.
func TestLargeFramePromiseDoesNotAllocate(t *testing.T) {
	in := append([]byte{0x02, 0, 0, 0}, make([]byte, 1000)...) // announces 32 MiB, sends 1000 bytes
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(in), DefaultMaxFrameBytes, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("reading a truncated 32 MiB frame allocated %d bytes", grew)
	}
	// And a real large frame still arrives intact.
	body := bytes.Repeat([]byte("abcdefgh"), 100000)
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	got, err := readFrame(bytes.NewReader(frame), DefaultMaxFrameBytes, nil)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("large frame: %v, %d bytes", err, len(got))
	}
}

// boundedAlloc fails the test if f allocates more than a fixed allowance
// plus a small multiple of the input: decoders must not trust lengths.
func boundedAlloc(t *testing.T, inputLen int, f func()) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(1<<20+64*inputLen) {
		t.Fatalf("%d input bytes allocated %d bytes", inputLen, grew)
	}
}

// FuzzRequestHeaderProto: the hand-written RequestHeaderProto decoder
// agrees with protobuf-go.
func FuzzRequestHeaderProto(f *testing.F) {
	f.Add(mustPacket(&commonpb.RequestHeaderProto{MethodName: proto.String("getApplications"),
		DeclaringClassProtocolName: proto.String(ProtocolApplicationClient), ClientProtocolVersion: proto.Uint64(1)}))
	f.Add([]byte{0x04, 0x0a, 0x00, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, in []byte) {
		method, protocol, version, rest, err := decodeRequestHeaderProto(in)
		want := &commonpb.RequestHeaderProto{}
		wantRest, wantErr := unmarshalDelimited(in, want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeRequestHeaderProto err %v, protobuf err %v", err, wantErr)
		}
		if err == nil && (string(method) != want.GetMethodName() || string(protocol) != want.GetDeclaringClassProtocolName() ||
			version != want.GetClientProtocolVersion() || !bytes.Equal(rest, wantRest)) {
			t.Fatalf("decoded %q %q %d, protobuf %v", method, protocol, version, want)
		}
	})
}

// scriptConn is a net.Conn whose reads come from a script and whose writes
// are discarded: the server side of a client handshake under fuzzing.
type scriptConn struct {
	nopConn
	r *bytes.Reader
}

func (c *scriptConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// FuzzClientSASL: the client's side of the SASL exchange, fed arbitrary
// server replies, never panics, never hangs, and allocates boundedly.
func FuzzClientSASL(f *testing.F) {
	sasl := func(m *commonpb.RpcSaslProto) []byte {
		return mustPacket(&commonpb.RpcResponseHeaderProto{CallId: proto.Uint32(wireCallID(callIDSASL)), Status: commonpb.RpcResponseHeaderProto_SUCCESS.Enum()}, m)
	}
	auth := &commonpb.RpcSaslProto_SaslAuth{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5"), Protocol: proto.String(""), ServerId: proto.String("default"),
		Challenge: []byte(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`)}
	f.Add(joinPackets(sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum(), Auths: []*commonpb.RpcSaslProto_SaslAuth{auth}}),
		sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum(), Token: []byte("rspauth=00000000000000000000000000000000")})))
	f.Add(joinPackets(sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})))
	f.Add(joinPackets(sasl(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_CHALLENGE.Enum(), Token: auth.Challenge})))
	f.Fuzz(func(t *testing.T, in []byte) {
		script := lengthPrefixed(splitPackets(in))
		c := &clientConn{pool: NewPool(), nc: &scriptConn{r: bytes.NewReader(script)},
			cfg: connConfig{token: testToken("id-u", "pw-u"), user: "u", maxFrame: 1 << 16, protocol: testProtocol}}
		boundedAlloc(t, len(in), func() { c.sasl() })
	})
}
