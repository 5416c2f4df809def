package hadoopipc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Test protocol: small commonpb messages stand in for YARN ones.
const testProtocol = "org.yarnfed.test.EchoProtocolPB"

// echoMethods: "echo" returns a token whose kind is the renewer and whose
// service is the caller's user name; "fail" returns the error described by
// the renewer ("class:message"); "panic" panics.
func echoProtocol(hook func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto)) Protocol {
	newReq := func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} }
	return Protocol{
		Name:    testProtocol,
		Version: 1,
		Methods: []Method{
			NewMethod("echo", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				if hook != nil {
					hook(ctx, req)
				}
				u, _ := UserFromContext(ctx)
				return &commonpb.GetDelegationTokenResponseProto{Token: &commonpb.TokenProto{
					Identifier: []byte{}, Password: []byte{}, Kind: proto.String(req.GetRenewer()), Service: proto.String(u.Name),
				}}, nil
			}),
			NewMethod("fail", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				class, msg, ok := strings.Cut(req.GetRenewer(), ":")
				if !ok {
					return nil, errors.New(req.GetRenewer())
				}
				return nil, fmt.Errorf("wrapped: %w", Errorf(class, "%s", msg))
			}),
			NewMethod("panic", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				panic("handler exploded")
			}),
			NewMethod("incomplete", newReq, func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.TokenProto, error) {
				return &commonpb.TokenProto{}, nil // required fields unset
			}),
		},
	}
}

type testServer struct {
	srv  *Server
	addr string
	done chan error
}

// startUserServer starts a server with cfg whose echo method records the
// User its context carries; seen returns the last one recorded.
func startUserServer(t testing.TB, cfg ServerConfig) (ts *testServer, seen func() User) {
	t.Helper()
	var mu sync.Mutex
	var last User
	ts = startServer(t, cfg, echoProtocol(func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) {
		mu.Lock()
		last, _ = UserFromContext(ctx)
		mu.Unlock()
	}))
	return ts, func() User {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

func startServer(t testing.TB, cfg ServerConfig, protos ...Protocol) *testServer {
	t.Helper()
	s := NewServer(cfg)
	for _, p := range protos {
		if err := s.Register(p); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: s, addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-ts.done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ts
}

func newTestClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.Protocol == "" {
		cfg.Protocol = testProtocol
	}
	if cfg.User == "" && cfg.Token == nil {
		cfg.User = "alice"
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func echo(ctx context.Context, c *Client, s string) (*commonpb.GetDelegationTokenResponseProto, error) {
	resp := &commonpb.GetDelegationTokenResponseProto{}
	err := c.Call(ctx, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(s)}, resp)
	return resp, err
}

// rawConn speaks the wire by hand for the FATAL/ERROR table tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawConn) preamble(auth byte) { r.write([]byte{'h', 'r', 'p', 'c', 9, 0, auth}) }

func reqHeader(callID int32) *commonpb.RpcRequestHeaderProto {
	return &commonpb.RpcRequestHeaderProto{
		RpcKind:    commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:      commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:     proto.Int32(callID),
		ClientId:   []byte("0123456789abcdef"),
		RetryCount: proto.Int32(0),
	}
}

func (r *rawConn) packet(msgs ...proto.Message) {
	r.t.Helper()
	b, err := appendFrame(nil, msgs...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

func (r *rawConn) context(user string) {
	r.t.Helper()
	h := reqHeader(callIDConnectionContext)
	h.RetryCount = proto.Int32(-1)
	r.packet(h, &commonpb.IpcConnectionContextProto{
		UserInfo: &commonpb.UserInformationProto{EffectiveUser: proto.String(user)},
		Protocol: proto.String(testProtocol),
	})
}

func (r *rawConn) call(callID int32, protocol string, version uint64, method string, req proto.Message) {
	r.t.Helper()
	r.packet(reqHeader(callID), &commonpb.RequestHeaderProto{
		MethodName: proto.String(method), DeclaringClassProtocolName: proto.String(protocol), ClientProtocolVersion: proto.Uint64(version),
	}, req)
}

// reply reads one reply packet: its header and the rest of the packet.
func (r *rawConn) reply() (*commonpb.RpcResponseHeaderProto, []byte) {
	r.t.Helper()
	frame, err := readFrame(r.br, 1<<20, nil)
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	hdr := &commonpb.RpcResponseHeaderProto{}
	rest, err := unmarshalDelimited(frame, hdr)
	if err != nil {
		r.t.Fatalf("decode reply header: %v", err)
	}
	return hdr, rest
}

// expectClosed asserts the server closes the connection without sending
// anything more.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	b, err := r.br.ReadByte()
	if err == nil {
		r.t.Fatalf("connection still open: read byte %#x", b)
	}
	if !errors.Is(err, io.EOF) && !isConnReset(err) {
		r.t.Fatalf("want EOF, got %v", err)
	}
}

func isConnReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// tokenConfig is a server config with TOKEN auth offered (when DIGEST-MD5 is
// linked) as well as SIMPLE.
func tokenConfig() ServerConfig {
	cfg := DefaultServerConfig()
	cfg.Secrets = testSecrets{}
	return cfg
}

// testSecrets knows tokens whose identifier is "id-<user>" with password
// "pw-<user>".
type testSecrets struct{}

func (testSecrets) RetrievePassword(id []byte) ([]byte, string, error) {
	user, ok := strings.CutPrefix(string(id), "id-")
	if !ok {
		return nil, "", errors.New("unknown token")
	}
	if user == "standby" {
		return nil, "", Errorf(ClassStandby, "secret manager not active")
	}
	return []byte("pw-" + user), user, nil
}
