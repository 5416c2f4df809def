package hadoopipc

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func TestServerConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(*ServerConfig)
		wantErr bool
	}{
		{"default", func(*ServerConfig) {}, false},
		{"token only", func(c *ServerConfig) { c.AllowSimple = false; c.Secrets = testSecrets{} }, false},
		{"no auth method", func(c *ServerConfig) { c.AllowSimple = false }, true},
		{"bad qop", func(c *ServerConfig) { c.QOPs = []string{"auth-everything"} }, true},
		{"negative limit", func(c *ServerConfig) { c.MaxConns = -1 }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultServerConfig()
			tc.mutate(&cfg)
			if err := cfg.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestShutdownDrainsInFlightCalls(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	ts := startServer(t, DefaultServerConfig(), echoProtocol(func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) {
		if req.GetRenewer() == "slow" {
			close(entered)
			<-release
		}
	}))
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, FailoverAttempts: 1})
	callDone := make(chan error, 1)
	go func() { _, err := echo(context.Background(), c, "slow"); callDone <- err }()
	<-entered

	shutDone := make(chan error, 1)
	go func() { shutDone <- ts.srv.Shutdown(context.Background()) }()
	// The listener closes at once: new connections are refused.
	testpoll.Poll(t, "listener closed", func() bool {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			return true
		}
		nc.Close()
		return false
	})
	select {
	case err := <-shutDone:
		t.Fatalf("Shutdown returned %v with a call in flight", err)
	default:
	}
	close(release)
	if err := <-callDone; err != nil {
		t.Fatalf("in-flight call failed during graceful shutdown: %v", err)
	}
	if err := <-shutDone; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestShutdownDeadlineCancelsHandlers(t *testing.T) {
	cancelled := make(chan struct{})
	shutdownPastDeadline(t, func(ctx context.Context) {
		<-ctx.Done()
		close(cancelled)
	})
	<-cancelled
}

// shutdownPastDeadline serves handle, makes one call to it and, once the
// handler runs, shuts the server down with a deadline the handler does not
// return by: Shutdown must report the deadline missed.
func shutdownPastDeadline(t *testing.T, handle func(ctx context.Context)) {
	t.Helper()
	entered := make(chan struct{})
	ts := startServer(t, DefaultServerConfig(), echoProtocol(func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) {
		close(entered)
		handle(ctx)
	}))
	c := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, FailoverAttempts: 1})
	go echo(context.Background(), c, "stuck")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
}

// TestIdleConnectionClosed: a call in flight is not idleness, however long
// it runs; once it is answered, the idle timeout closes the connection.
func TestIdleConnectionClosed(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.IdleTimeout = 30 * time.Millisecond
	var srv atomic.Pointer[Server]
	ts := startServer(t, cfg, echoProtocol(func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) {
		if req.GetRenewer() != "slow" {
			return
		}
		// Outlive the idle timeout: return only once the reader has
		// passed its idle deadline twice with this call in flight (were
		// that idleness, the connection would be closed by then).
		for srv.Load().idleBusy.Load() < 2 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	}))
	srv.Store(ts.srv)
	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolNone)
	r.context("alice")
	r.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("slow")})
	if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("slow call: %v", h)
	}
	r.expectClosed() // then idle: closed without a reply
	if got := metricValue(t, ts.srv.metrics.rejected.WithLabelValues("idle")); got != 1 {
		t.Errorf("idle closes = %v", got)
	}
}

func TestConnectionCap(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxConns = 1
	ts := startServer(t, cfg, echoProtocol(nil))
	first := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}})
	if _, err := echo(context.Background(), first, "x"); err != nil {
		t.Fatal(err)
	}
	r := dialRaw(t, ts.addr)
	r.expectClosed()
	if got := metricValue(t, ts.srv.metrics.rejected.WithLabelValues("max_conns")); got != 1 {
		t.Errorf("max_conns rejections = %v", got)
	}
	if _, err := echo(context.Background(), first, "y"); err != nil {
		t.Fatalf("existing connection broken by the cap: %v", err)
	}
}

func TestInFlightLimitBackPressure(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxInFlightPerConn = 2
	var inside atomic.Int32
	release := make(chan struct{})
	ts := startServer(t, cfg, echoProtocol(func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) {
		inside.Add(1)
		<-release
	}))
	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolNone)
	r.context("alice")
	for i := int32(1); i <= 3; i++ {
		r.call(i, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
	}
	testpoll.Poll(t, "two calls in handlers", func() bool { return inside.Load() >= 2 })
	// The reader decodes call 3 only after dispatching 1 and 2, finds no
	// slot and counts its wait; with the limit broken call 3 would run
	// instead and no wait would ever be counted.
	testpoll.Poll(t, "the reader to wait for a slot, or a third call", func() bool {
		return metricValue(t, ts.srv.metrics.backPressure) >= 1 || inside.Load() > 2
	})
	if n := inside.Load(); n != 2 {
		t.Fatalf("%d calls in handlers with a limit of 2", n)
	}
	close(release)
	seen := map[uint32]bool{}
	for i := 0; i < 3; i++ {
		h, _ := r.reply()
		seen[h.GetCallId()] = true
	}
	if len(seen) != 3 || inside.Load() != 3 {
		t.Fatalf("replies %v, handled %d", seen, inside.Load())
	}
}

func TestMetricsAndAuthorizer(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := DefaultServerConfig()
	cfg.Registerer = reg
	cfg.Authorize = func(ctx context.Context, info *CallInfo) error {
		if info.User.Name == "mallory" {
			return errors.New("not on the list")
		}
		return nil
	}
	ts := startServer(t, cfg, echoProtocol(nil))
	alice := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "alice"})
	mallory := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}, User: "mallory"})
	if _, err := echo(context.Background(), alice, "x"); err != nil {
		t.Fatal(err)
	}
	_, err := echo(context.Background(), mallory, "x")
	var re *RemoteError
	if !errors.As(err, &re) || re.Class != ClassAccessControl || re.Code != errApplication {
		t.Fatalf("unauthorized call: %v", err)
	}
	m := ts.srv.metrics
	if got := metricValue(t, m.calls.WithLabelValues(testProtocol, "echo", "success")); got != 1 {
		t.Errorf("success calls = %v", got)
	}
	if got := metricValue(t, m.calls.WithLabelValues(testProtocol, "echo", "error")); got != 1 {
		t.Errorf("error calls = %v", got)
	}
	if got := metricValue(t, m.conns); got != 2 {
		t.Errorf("open connections = %v", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "yarnfed_ipc_call_duration_seconds" {
			found = len(f.GetMetric()) == 1 && f.GetMetric()[0].GetHistogram().GetSampleCount() == 2
		}
	}
	if !found {
		t.Error("yarnfed_ipc_call_duration_seconds: want one series with 2 samples")
	}
}

// TestFailover: RM HA. The first address is down, the second answers
// StandbyException, the third serves; the client remembers the active one.
// A retried call keeps its client id and call id and raises retryCount.
func TestFailover(t *testing.T) {
	type seen struct {
		callID, retry int32
		clientID      string
	}
	var mu sync.Mutex
	var calls []seen
	record := func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
		mu.Lock()
		calls = append(calls, seen{info.CallID, info.RetryCount, string(info.ClientID)})
		mu.Unlock()
		return next(ctx, req)
	}
	standbyCfg := DefaultServerConfig()
	standbyCfg.Interceptors = []Interceptor{record}
	standby := startServer(t, standbyCfg, Protocol{Name: testProtocol, Version: 1, Methods: []Method{
		NewMethod("echo", func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} },
			func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				return nil, Errorf(ClassStandby, "Operation category READ is not supported in state standby")
			}),
	}})
	activeCfg := DefaultServerConfig()
	activeCfg.Interceptors = []Interceptor{record}
	active := startServer(t, activeCfg, echoProtocol(nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	c := newTestClient(t, ClientConfig{Addresses: []string{dead, standby.addr, active.addr}, FailoverBackoff: time.Millisecond})
	if _, err := echo(context.Background(), c, "x"); err != nil {
		t.Fatalf("failover call: %v", err)
	}
	mu.Lock()
	if len(calls) != 2 || calls[0].callID != calls[1].callID || calls[0].clientID != calls[1].clientID ||
		calls[0].retry != 1 || calls[1].retry != 2 {
		t.Fatalf("server-side view of the tries: %+v", calls)
	}
	mu.Unlock()
	if _, err := echo(context.Background(), c, "y"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(calls) != 3 || calls[2].retry != 0 {
		t.Fatalf("second call did not go straight to the active server: %+v", calls)
	}
	mu.Unlock()

	// Nothing active: the StandbyException comes back after the attempts.
	c2 := newTestClient(t, ClientConfig{Addresses: []string{standby.addr, dead}, FailoverAttempts: 4, FailoverBackoff: time.Millisecond})
	_, err = echo(context.Background(), c2, "x")
	if !IsStandby(err) && !errors.Is(err, ErrDial) {
		t.Fatalf("all standby: %v", err)
	}
}

// metricValue reads a counter or gauge without the testutil dependency.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Counter != nil {
		return out.GetCounter().GetValue()
	}
	return out.GetGauge().GetValue()
}

// TestShutdownIdleAndHandshakingConnections: connections with nothing in
// flight (silent before the preamble, or idle after the context) do not
// hold Shutdown until their idle timeout.
func TestShutdownIdleAndHandshakingConnections(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil)) // idle timeout 2 min
	silent := dialRaw(t, ts.addr)
	idle := dialRaw(t, ts.addr)
	idle.preamble(authProtocolNone)
	idle.context("alice")
	idle.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
	idle.reply()
	testpoll.Poll(t, "both connections registered", func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		return len(ts.srv.conns) == 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	silent.expectClosed()
	idle.expectClosed()
}

// TestRetriableStaysOnServer: RetriableException means "this server,
// later": the client retries the same address, it does not fail over.
func TestRetriableStaysOnServer(t *testing.T) {
	var tries atomic.Int32
	busy := startServer(t, DefaultServerConfig(), Protocol{Name: testProtocol, Version: 1, Methods: []Method{
		NewMethod("echo", func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} },
			func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				if tries.Add(1) < 3 {
					return nil, Errorf(ClassRetriable, "server too busy")
				}
				return &commonpb.GetDelegationTokenResponseProto{}, nil
			}),
	}})
	other := startServer(t, DefaultServerConfig()) // nothing registered: a call here would fail
	c := newTestClient(t, ClientConfig{Addresses: []string{busy.addr, other.addr}, FailoverAttempts: 5, FailoverBackoff: time.Millisecond})
	if _, err := echo(context.Background(), c, "x"); err != nil {
		t.Fatalf("call: %v", err)
	}
	if tries.Load() != 3 {
		t.Fatalf("busy server saw %d tries, want 3", tries.Load())
	}
}

// TestShutdownDeadlineWithStuckHandler: a handler that ignores its context
// cannot hold Shutdown past its deadline.
func TestShutdownDeadlineWithStuckHandler(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	shutdownPastDeadline(t, func(context.Context) { <-stuck }) // ignores ctx
}
