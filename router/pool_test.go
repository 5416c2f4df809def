package router

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/ipctest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fakeRMClients is a DialFunc whose clients count opens and closes; a call
// for a user in block waits until that channel is closed.
type fakeRMClients struct {
	open, closed atomic.Int64
	mu           sync.Mutex
	block        map[string]chan struct{}
	entered      chan string
}

type fakeRMClient struct {
	f      *fakeRMClients
	user   string
	closed atomic.Bool
}

func (f *fakeRMClients) dial(_ context.Context, _ SubClusterInfo, user string) (RMClient, error) {
	f.open.Add(1)
	return &fakeRMClient{f: f, user: user}, nil
}

func (c *fakeRMClient) Call(ctx context.Context, _ string, _, _ proto.Message) error {
	if c.closed.Load() {
		return hadoopipc.ErrClientClosed
	}
	c.f.mu.Lock()
	ch := c.f.block[c.user]
	c.f.mu.Unlock()
	if ch != nil {
		c.f.entered <- c.user
		<-ch
	}
	if c.closed.Load() { // closed under a call in flight: the call would fail
		return hadoopipc.ErrClientClosed
	}
	return nil
}

func (c *fakeRMClient) Close() error {
	if !c.closed.Swap(true) {
		c.f.closed.Add(1)
	}
	return nil
}

// TestPoolCyclingUsers: 10,000 user names through a pool of 64 keep at most
// 64 clients open; every evicted client is closed.
func TestPoolCyclingUsers(t *testing.T) {
	f := &fakeRMClients{}
	const bound = 64
	p := newPool(f.dial, clientAddr, bound)
	var evicted int
	p.evictions = func() { evicted++ }
	sc := SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "rm:8032"}
	for i := range 10_000 {
		if err := p.call(context.Background(), sc, fmt.Sprintf("user-%d", i), "m", nil, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if n := p.len(); n > bound {
			t.Fatalf("pool holds %d clients, bound %d", n, bound)
		}
		if live := f.open.Load() - f.closed.Load(); live > bound {
			t.Fatalf("%d clients open, bound %d", live, bound)
		}
	}
	if evicted != 10_000-bound {
		t.Errorf("evictions = %d, want %d", evicted, 10_000-bound)
	}
	// The most recent users are still pooled: no re-dial.
	opened := f.open.Load()
	if err := p.call(context.Background(), sc, "user-9999", "m", nil, nil); err != nil {
		t.Fatal(err)
	}
	if f.open.Load() != opened {
		t.Error("a recent user's client was re-dialled")
	}
	p.close()
	if f.open.Load() != f.closed.Load() {
		t.Errorf("after close: %d opened, %d closed", f.open.Load(), f.closed.Load())
	}
}

// TestPoolEvictionWaitsForCallsInFlight: a client evicted while a call uses
// it is closed only when that call ends, and the call succeeds.
func TestPoolEvictionWaitsForCallsInFlight(t *testing.T) {
	f := &fakeRMClients{block: map[string]chan struct{}{"slow": make(chan struct{})}, entered: make(chan string, 1)}
	p := newPool(f.dial, clientAddr, 4)
	sc := SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "rm:8032"}
	done := make(chan error, 1)
	go func() { done <- p.call(context.Background(), sc, "slow", "m", nil, nil) }()
	<-f.entered
	for i := range 100 { // evicts "slow" many times over
		if err := p.call(context.Background(), sc, fmt.Sprintf("u%d", i), "m", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if live := f.open.Load() - f.closed.Load(); live != 4+1 {
		t.Fatalf("%d clients open, want the 4 pooled + the evicted one in use", live)
	}
	close(f.block["slow"])
	if err := <-done; err != nil {
		t.Fatalf("call in flight on an evicted client: %v", err)
	}
	if live := f.open.Load() - f.closed.Load(); live != 4 {
		t.Fatalf("%d clients open after the call ended, want 4", live)
	}
	// retain drops a vanished sub-cluster's clients the same way.
	p.retain(map[SubClusterID]SubClusterInfo{})
	if p.len() != 0 || f.open.Load() != f.closed.Load() {
		t.Fatalf("after retain: %d pooled, %d opened, %d closed", p.len(), f.open.Load(), f.closed.Load())
	}
}

// TestPoolCyclingUsersRealSockets: the production dialer against a real
// Hadoop IPC server: cycling 2,000 user names through a pool of 16 leaves
// the process's descriptors bounded (evicted clients close their sockets at
// once), and a legitimate user's calls keep working throughout.
func TestPoolCyclingUsersRealSockets(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd here")
	}
	srv := ipctest.Start(t, hadoopipc.DefaultServerConfig(), hadoopipc.Protocol{
		Name: hadoopipc.ProtocolApplicationClient, Version: 1,
		Methods: []hadoopipc.Method{hadoopipc.NewMethod("getDelegationToken",
			func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} },
			func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				return &commonpb.GetDelegationTokenResponseProto{}, nil
			})},
	})
	const bound = 16
	p := newPool(hadoopDialer(hadoopipc.ProtocolApplicationClient, clientAddr, 5*time.Second, nil), clientAddr, bound)
	t.Cleanup(p.close)
	sc := SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: srv.Addr}
	call := func(user string) error {
		return p.call(context.Background(), sc, user, "getDelegationToken",
			&commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, &commonpb.GetDelegationTokenResponseProto{})
	}
	if err := call("legit"); err != nil {
		t.Fatal(err)
	}
	base := countFDs(t)
	// Each pooled client holds one socket here and the server one more.
	limit := base + 2*bound + 8
	peak := 0
	for i := range 2_000 {
		if err := call(fmt.Sprintf("cycler-%d", i)); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		if i%100 == 0 {
			if err := call("legit"); err != nil {
				t.Fatalf("legitimate user during the cycling: %v", err)
			}
			peak = max(peak, countFDs(t))
		}
	}
	// The server closes its side when it reads EOF, a moment later: allow
	// some lag. Without the bound, descriptors grew by two per user name
	// until the 10 s client idle timeout.
	if peak > limit+64 {
		t.Errorf("descriptors peaked at %d during the cycling, base %d, pool bound %d", peak, base, bound)
	}
	testpoll.Poll(t, "descriptors back within the pool bound", func() bool { return countFDs(t) <= limit })
	if p.len() > bound {
		t.Fatalf("pool holds %d clients, bound %d", p.len(), bound)
	}
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
