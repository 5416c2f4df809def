package hadoopipc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func TestCallSimpleAuth(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil))
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "alice"})
	resp, err := echo(context.Background(), c, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetToken().GetKind(); got != "hello" {
		t.Errorf("echo = %q, want hello", got)
	}
	if got := resp.GetToken().GetService(); got != "alice" {
		t.Errorf("user in handler ctx = %q, want alice", got)
	}
}

func TestPipelinedCallsRepliedOutOfOrder(t *testing.T) {
	const n = 8
	// Every handler blocks until all n calls are inside handlers at once,
	// which is only possible if the server serves one connection's calls
	// concurrently; they are then released in reverse order of arrival.
	var mu sync.Mutex
	arrived := map[string]chan struct{}{}
	all := make(chan struct{})
	order := []string{}
	hook := func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) {
		mu.Lock()
		ch := make(chan struct{})
		arrived[req.GetRenewer()] = ch
		order = append(order, req.GetRenewer())
		if len(arrived) == n {
			close(all)
		}
		mu.Unlock()
		<-ch
	}
	ts := startServer(t, DefaultServerConfig(), echoProtocol(hook))
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}})

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(s string) {
			defer wg.Done()
			resp, err := echo(context.Background(), c, s)
			if err == nil && resp.GetToken().GetKind() != s {
				err = errors.New("reply routed to the wrong call: got " + resp.GetToken().GetKind() + " want " + s)
			}
			errs <- err
		}(string(rune('a' + i)))
	}
	<-all
	mu.Lock()
	for i := len(order) - 1; i >= 0; i-- {
		close(arrived[order[i]])
	}
	mu.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	c.pool.mu.Lock()
	conns := len(c.pool.conns)
	c.pool.mu.Unlock()
	if conns != 1 {
		t.Errorf("pool holds %d connections, want 1 (calls multiplexed)", conns)
	}
}

// TestErrorRepliesKeepConnection: every non-fatal error path, through our
// client; after each the same connection serves a normal call.
func TestErrorRepliesKeepConnection(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil))
	cases := []struct {
		name      string
		protocol  string
		version   uint64
		method    string
		renewer   string
		wantCode  commonpb.RpcResponseHeaderProto_RpcErrorCodeProto
		wantClass string
	}{
		{"unknown protocol", "org.example.NopePB", 1, "echo", "", errNoSuchProtocol, ClassNoSuchProtocol},
		{"wrong version", testProtocol, 2, "echo", "", errVersionMismatch, ClassVersionMismatch},
		{"unknown method", testProtocol, 1, "nope", "", errNoSuchMethod, ClassNoSuchMethod},
		{"typed application error", testProtocol, 1, "fail", ClassApplicationNotFound + ":no app", errApplication, ClassApplicationNotFound},
		{"plain error becomes YarnException", testProtocol, 1, "fail", "boom", errApplication, ClassYarnException},
		{"panic becomes ERROR", testProtocol, 1, "panic", "", errRPCServer, ClassRpcServerException},
		{"unserializable response", testProtocol, 1, "incomplete", "", errSerializingResponse, ClassIOException},
	}
	pool := NewPool()
	t.Cleanup(func() { pool.Close() })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Protocol: tc.protocol, Version: tc.version, Pool: pool})
			err := c.Call(context.Background(), tc.method, &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(tc.renewer)}, &commonpb.GetDelegationTokenResponseProto{})
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v, want *RemoteError", err)
			}
			if re.Code != tc.wantCode || re.Class != tc.wantClass || re.Fatal {
				t.Errorf("got %v/%s fatal=%v, want %v/%s", re.Code, re.Class, re.Fatal, tc.wantCode, tc.wantClass)
			}
			good := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, Protocol: testProtocol, Pool: pool})
			if _, err := echo(context.Background(), good, "after"); err != nil {
				t.Fatalf("call after error: %v", err)
			}
		})
	}
	pool.mu.Lock()
	n := len(pool.conns)
	pool.mu.Unlock()
	// Same address, protocol name differs per case only in the key; what
	// matters is that no connection was dropped: count dials.
	if n == 0 {
		t.Fatal("no pooled connections left: an ERROR closed a connection")
	}
}

func TestCancelledCallKeepsConnection(t *testing.T) {
	release := make(chan struct{})
	hook := func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) {
		if req.GetRenewer() == "slow" {
			<-release
		}
	}
	ts := startServer(t, DefaultServerConfig(), echoProtocol(hook))
	defer close(release)
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}})
	if _, err := echo(context.Background(), c, "warm"); err != nil {
		t.Fatal(err)
	}
	c.pool.mu.Lock()
	var first *clientConn
	for _, e := range c.pool.conns {
		first = e.conn
	}
	c.pool.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := echo(ctx, c, "slow"); done <- err }()
	testpoll.Poll(t, "slow call pending", func() bool {
		first.mu.Lock()
		defer first.mu.Unlock()
		return len(first.pending) == 1
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call err = %v", err)
	}
	if _, err := echo(context.Background(), c, "next"); err != nil {
		t.Fatalf("call after cancel: %v", err)
	}
	c.pool.mu.Lock()
	var second *clientConn
	for _, e := range c.pool.conns {
		second = e.conn
	}
	c.pool.mu.Unlock()
	if first != second || first.isClosed() {
		t.Error("cancelling a call replaced or closed the connection")
	}
}

func TestClientInterceptorsAndFrameLimit(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil))
	var order []string
	mk := func(name string) ClientInterceptor {
		return func(ctx context.Context, method string, req, resp proto.Message, invoker Invoker) error {
			order = append(order, name+">"+method)
			err := invoker(ctx, method, req, resp)
			order = append(order, name+"<")
			return err
		}
	}
	breakerOpen := errors.New("breaker open")
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, MaxFrameBytes: 256,
		Interceptors: []ClientInterceptor{mk("outer"), mk("inner"), func(ctx context.Context, method string, req, resp proto.Message, invoker Invoker) error {
			if method == "blocked" {
				return breakerOpen
			}
			return invoker(ctx, method, req, resp)
		}}})
	if _, err := echo(context.Background(), c, "x"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "outer>echo inner>echo inner< outer<" {
		t.Errorf("interceptor order %q", got)
	}
	if err := c.Call(context.Background(), "blocked", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, &commonpb.GetDelegationTokenResponseProto{}); !errors.Is(err, breakerOpen) {
		t.Errorf("short-circuit: %v", err)
	}
	_, err := echo(context.Background(), c, strings.Repeat("x", 300))
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized request: %v", err)
	}
	if _, err := echo(context.Background(), c, "still fine"); err != nil {
		t.Errorf("after oversized request: %v", err)
	}
}
