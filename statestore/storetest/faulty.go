package storetest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/server"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
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

// Fault is what FaultyReplica does to one call.
type Fault int

const (
	// DropReply applies the call, then cuts the connection it came on:
	// the client sees a bare Unavailable for a write that took effect.
	DropReply Fault = iota + 1
	// NotApplied refuses the call the way a replica that is not the
	// leader does (marked not applied), without applying it.
	NotApplied
	// BareUnavailable refuses the call with an unmarked Unavailable,
	// without applying it (as a proxy might): proves nothing.
	BareUnavailable
)

// FaultyReplica serves a real single-node store through a gRPC server whose
// interceptor can break one call of a chosen method (see Fault).
type FaultyReplica struct {
	// Addr is the replica's gRPC address (loopback).
	Addr  string
	lis   *connTracker
	calls sync.Map // method -> *atomic.Int32: calls that reached the handler

	mu    sync.Mutex
	fault map[string]Fault
}

func NewFaultyReplica(t testing.TB) *FaultyReplica {
	t.Helper()
	cl := NewCluster(t, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &FaultyReplica{Addr: l.Addr().String(), lis: &connTracker{Listener: l, conns: map[string]net.Conn{}}, fault: map[string]Fault{}}
	srv := server.New(server.Config{Store: cl.Nodes[0].Store})
	g := grpc.NewServer(grpc.UnaryInterceptor(f.intercept))
	srv.Register(g)
	go g.Serve(f.lis)
	t.Cleanup(func() { g.Stop(); srv.Close() })
	return f
}

// Once arms a fault for the next call of method (a StateStore or Cluster
// method name, e.g. "DeleteApplicationHome" or "Join").
func (f *FaultyReplica) Once(method string, fault Fault) {
	f.mu.Lock()
	f.fault[fullMethod(method)] = fault
	f.mu.Unlock()
}

// Calls counts the calls of method that reached the store.
func (f *FaultyReplica) Calls(method string) int32 {
	v, _ := f.calls.LoadOrStore(fullMethod(method), new(atomic.Int32))
	return v.(*atomic.Int32).Load()
}

// fullMethod names method the way gRPC does ("/service/method"); the two
// services share no method name. An unknown name is left under StateStore,
// where no call will ever match it.
func fullMethod(method string) string {
	for _, m := range pb.Cluster_ServiceDesc.Methods {
		if m.MethodName == method {
			return "/" + pb.Cluster_ServiceDesc.ServiceName + "/" + method
		}
	}
	return "/" + pb.StateStore_ServiceDesc.ServiceName + "/" + method
}

func (f *FaultyReplica) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.mu.Lock()
	fault := f.fault[info.FullMethod]
	delete(f.fault, info.FullMethod)
	f.mu.Unlock()
	switch fault {
	case NotApplied:
		return nil, pb.NotApplied("test: refused before proposing")
	case BareUnavailable:
		// Unmarked, as from a proxy or a broken forward: proves nothing.
		return nil, status.Error(codes.Unavailable, "test: bare unavailable")
	}
	v, _ := f.calls.LoadOrStore(info.FullMethod, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
	resp, err := h(ctx, req)
	if fault == DropReply {
		// Applied; now lose the reply with the connection.
		if p, ok := peer.FromContext(ctx); ok {
			f.lis.close(p.Addr)
		}
		time.Sleep(50 * time.Millisecond) // let the client see the break first
	}
	return resp, err
}
