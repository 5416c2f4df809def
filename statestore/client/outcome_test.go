package client_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/server"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

// connTracker is a listener that remembers its connections by remote
// address, so a test can break the one a call arrived on.
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]net.Conn
}

func (l *connTracker) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns[c.RemoteAddr().String()] = c
		l.mu.Unlock()
	}
	return c, err
}

func (l *connTracker) close(remote net.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.conns[remote.String()]; c != nil {
		c.Close()
	}
}

// faultyReplica serves a real single-node store through a gRPC server whose
// interceptor can, for one call of a chosen method, apply it and then cut
// the connection before the reply leaves (the client sees a bare
// Unavailable), or answer before applying.
type faultyReplica struct {
	addr  string
	lis   *connTracker
	calls sync.Map // method -> *atomic.Int32: calls that reached the handler

	mu    sync.Mutex
	fault map[string]string // method -> "drop-reply" | "not-applied" | "bare-unavailable"
}

func newFaultyReplica(t *testing.T) *faultyReplica {
	t.Helper()
	cl := storetest.NewCluster(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &faultyReplica{addr: l.Addr().String(), lis: &connTracker{Listener: l, conns: map[string]net.Conn{}}, fault: map[string]string{}}
	srv := server.New(server.Config{Store: cl.Nodes[0].Store})
	g := grpc.NewServer(grpc.UnaryInterceptor(f.intercept))
	srv.Register(g)
	go g.Serve(f.lis)
	t.Cleanup(func() { g.Stop(); srv.Close() })
	return f
}

// once arms a fault for the next call of method (a StateStore method name,
// e.g. "DeleteApplicationHome").
func (f *faultyReplica) once(method, fault string) {
	f.mu.Lock()
	f.fault["/"+pb.StateStore_ServiceDesc.ServiceName+"/"+method] = fault
	f.mu.Unlock()
}

func (f *faultyReplica) count(method string) int32 {
	v, _ := f.calls.LoadOrStore("/"+pb.StateStore_ServiceDesc.ServiceName+"/"+method, new(atomic.Int32))
	return v.(*atomic.Int32).Load()
}

func (f *faultyReplica) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.mu.Lock()
	fault := f.fault[info.FullMethod]
	delete(f.fault, info.FullMethod)
	f.mu.Unlock()
	switch fault {
	case "not-applied":
		return nil, pb.NotApplied("test: refused before proposing")
	case "bare-unavailable":
		// Unmarked, as from a proxy or a broken forward: proves nothing.
		return nil, status.Error(codes.Unavailable, "test: bare unavailable")
	}
	v, _ := f.calls.LoadOrStore(info.FullMethod, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
	resp, err := h(ctx, req)
	if fault == "drop-reply" {
		// Applied; now lose the reply with the connection.
		if p, ok := peer.FromContext(ctx); ok {
			f.lis.close(p.Addr)
		}
		time.Sleep(50 * time.Millisecond) // let the client see the break first
	}
	return resp, err
}

func newClient(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Addrs: addrs, RetryTimeout: 10 * time.Second, CallTimeout: 3 * time.Second, DisableCache: true, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addHome(t *testing.T, c *client.Client, app, sc string) {
	t.Helper()
	if _, _, err := c.AddApplicationHome(context.Background(), &pb.ApplicationHome{ApplicationId: app, HomeSubClusterId: sc}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteWhoseReplyIsLostIsNotResent: the store applied the delete and
// the connection broke before the reply. Resending it would report
// NotFound for the caller's own success; the client must report an
// unknown outcome instead.
func TestDeleteWhoseReplyIsLostIsNotResent(t *testing.T) {
	f := newFaultyReplica(t)
	c := newClient(t, f.addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0001", "sc1")

	f.once("DeleteApplicationHome", "drop-reply")
	err := c.DeleteApplicationHome(ctx, "application_1_0001")
	if !errors.Is(err, client.ErrUnknownOutcome) || errors.Is(err, client.ErrNotFound) {
		t.Fatalf("delete whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	if n := f.count("DeleteApplicationHome"); n != 1 {
		t.Fatalf("delete reached the store %d times, want 1", n)
	}
	if _, err := c.GetApplicationHome(ctx, "application_1_0001", false); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("home after the applied delete: %v, want ErrNotFound", err)
	}
}

// TestUpdateWhoseReplyIsLostIsNotResent: a resent blind update could undo a
// concurrent caller's update (X, Y, X).
func TestUpdateWhoseReplyIsLostIsNotResent(t *testing.T) {
	f := newFaultyReplica(t)
	c := newClient(t, f.addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0002", "sc1")

	f.once("UpdateApplicationHome", "drop-reply")
	err := c.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0002", HomeSubClusterId: "sc2"})
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("update whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	if n := f.count("UpdateApplicationHome"); n != 1 {
		t.Fatalf("update reached the store %d times, want 1", n)
	}
	h, err := c.GetApplicationHome(ctx, "application_1_0002", false)
	if err != nil || h.GetHomeSubClusterId() != "sc2" {
		t.Fatalf("home after the applied update: %v %v, want sc2", h, err)
	}
}

// TestIdempotentInsertIsResentAfterLostReply: insert-if-absent answers the
// stored home, so resending it is safe and the caller gets an answer.
func TestIdempotentInsertIsResentAfterLostReply(t *testing.T) {
	f := newFaultyReplica(t)
	c := newClient(t, f.addr)
	f.once("AddApplicationHome", "drop-reply")
	stored, _, err := c.AddApplicationHome(context.Background(), &pb.ApplicationHome{ApplicationId: "application_1_0003", HomeSubClusterId: "sc1"})
	if err != nil || stored.GetHomeSubClusterId() != "sc1" {
		t.Fatalf("insert after a lost reply: %v %v", stored, err)
	}
	if n := f.count("AddApplicationHome"); n != 2 {
		t.Fatalf("insert reached the store %d times, want 2 (resent)", n)
	}
}

// TestNotAppliedIsResent: the replica's own marked refusal is retried for a
// non-idempotent write; an unmarked Unavailable after sending is not.
func TestNotAppliedIsResent(t *testing.T) {
	f := newFaultyReplica(t)
	c := newClient(t, f.addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0004", "sc1")

	f.once("DeleteApplicationHome", "not-applied")
	if err := c.DeleteApplicationHome(ctx, "application_1_0004"); err != nil {
		t.Fatalf("delete after a not-applied refusal: %v", err)
	}
	addHome(t, c, "application_1_0004", "sc1")
	f.once("DeleteApplicationHome", "bare-unavailable")
	if err := c.DeleteApplicationHome(ctx, "application_1_0004"); !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("delete after an unmarked Unavailable: %v, want ErrUnknownOutcome", err)
	}
}

// TestUnsentCallMovesOn: a replica that is down never received the call,
// so even a non-idempotent write moves on to the next address.
func TestUnsentCallMovesOn(t *testing.T) {
	f := newFaultyReplica(t)
	addHome(t, newClient(t, f.addr), "application_1_0005", "sc1")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	// The first call goes to the first address: the dead one.
	c := newClient(t, dead, f.addr)
	if err := c.DeleteApplicationHome(context.Background(), "application_1_0005"); err != nil {
		t.Fatalf("delete with the first replica down: %v", err)
	}
}
