package security

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// holdSilent keeps n silent TCP connections from srcIP to addr open,
// reopening each one the server closes, until the test ends.
func holdSilent(t *testing.T, addr, srcIP string, n int) *atomic.Int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var dials atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(srcIP)}, Timeout: time.Second}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1)
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue
				}
				dials.Add(1)
				mu.Lock()
				conns[c] = true
				mu.Unlock()
				_, _ = c.Read(buf)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return &dials
}

// raftPair is a listening StreamLayer and a dialling one, both with
// replica certificates of one CA.
func raftPair(t *testing.T, lim HandshakeLimits) (srv, cli *StreamLayer, accepted *atomic.Int64) {
	t.Helper()
	ca := newCA(t)
	dir := t.TempDir()
	r1 := reloader(t, issue(t, ca, dir, "r1", Leaf{Name: "r1", Roles: []Role{RoleReplica}}))
	r2 := reloader(t, issue(t, ca, dir, "r2", Leaf{Name: "r2", Roles: []Role{RoleReplica}}))
	srv, err := NewStreamLayerWithLimits("127.0.0.1:0", nil, r1, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cli, err = NewStreamLayerWithLimits("127.0.0.1:0", nil, r2, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return srv, cli, accepted
}

// TestRaftLayerSilentFloodCannotKeepPeersOut: 70 silent sockets, reopened
// as soon as they are closed, against a Raft port; a replica still
// authenticates 20 times, each within a few tries. From an address that
// is not a replica's (the peer pool keeps the flood out of the replicas'
// room), and from the replica's own address (eviction of the oldest
// silent handshake makes room: a replica speaks at once). With the old
// limits (64 handshake slots, newcomers closed, 10 s deadline) the slots
// stay full of silent sockets and no try gets through.
//
// Tries, not one dial each: a replica's ClientHello follows its connect
// at once, but under CI load (server, client and flood share this process
// and two busy cores) its goroutine can stall long enough for 63 flood
// reconnects to make its socket the oldest silent one, and it is evicted
// (a run of .ci/run saw "dial 13 under the flood: EOF"; 7 of 40 runs
// beside six busy loops). hashicorp/raft retries a failed dial at its
// next heartbeat, so what must hold is that tries get through, not that
// none is lost.
func TestRaftLayerSilentFloodCannotKeepPeersOut(t *testing.T) {
	old := HandshakeLimits{MaxPending: 64, MaxPendingPerAddr: 1 << 20, MaxPendingPerPeer: 1 << 20,
		HelloTimeout: 10 * time.Second, HandshakeTimeout: 10 * time.Second, RefuseNew: true, NoPeerPool: true}
	for _, tc := range []struct {
		name, src string
		lim       HandshakeLimits
		old       bool
	}{{"other-address", "127.0.0.2", HandshakeLimits{}, false}, {"peer-address", "127.0.0.1", HandshakeLimits{}, false},
		{"peer-address-old-limits", "127.0.0.1", old, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli, accepted := raftPair(t, tc.lim)
			srv.SetPeers(context.Background(), []string{"127.0.0.1:1"}) // the dialling replica's host
			dials := holdSilent(t, srv.Addr().String(), tc.src, 70)
			deadline := time.Now().Add(30 * time.Second)
			for dials.Load() < 70 {
				if time.Now().After(deadline) {
					t.Fatal("the flood did not connect")
				}
				time.Sleep(5 * time.Millisecond)
			}
			const conns, tries = 20, 5
			lost := 0
			for i := range conns {
				var err error
				for try := 0; try < tries; try++ {
					var c net.Conn
					if c, err = cli.Dial(raft.ServerAddress(srv.Addr().String()), 2*time.Second); err == nil {
						c.Close()
						break
					}
					lost++
					time.Sleep(50 * time.Millisecond)
				}
				if tc.old {
					if err == nil {
						t.Fatalf("connection %d got through the old limits' full slots", i)
					}
					return // refused every try, as before the gate
				}
				if err != nil {
					t.Fatalf("connection %d under the flood: %d tries failed, the last: %v", i, tries, err)
				}
			}
			t.Logf("%d connections under the flood, %d tries lost", conns, lost)
			deadline = time.Now().Add(10 * time.Second)
			for accepted.Load() < conns {
				if time.Now().After(deadline) {
					t.Fatalf("the layer accepted %d of %d replica connections", accepted.Load(), conns)
				}
				time.Sleep(5 * time.Millisecond)
			}
			pool := "other"
			if tc.src == "127.0.0.1" {
				pool = "peer"
			}
			if ok := value(srv.gate.outcomes.WithLabelValues(hsOK, "peer")); ok < conns {
				t.Errorf("handshakes ok in the peer pool = %v, want >= %d", ok, conns)
			}
			if ev := value(srv.gate.outcomes.WithLabelValues(hsEvicted, pool)); ev == 0 {
				t.Errorf("no silent socket evicted in pool %s", pool)
			}
		})
	}
}

// TestRaftLayerSilentSocketClosedAtHelloTimeout: a socket that sends
// nothing is closed at the hello timeout, not held for the whole
// handshake timeout.
func TestRaftLayerSilentSocketClosedAtHelloTimeout(t *testing.T) {
	srv, _, _ := raftPair(t, HandshakeLimits{HelloTimeout: 200 * time.Millisecond, HandshakeTimeout: time.Minute})
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read data from a server that should have closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the silent socket was still open after 30 s (hello timeout 200 ms)")
	}
	if f := value(srv.gate.outcomes.WithLabelValues(hsFailed, "other")); f != 1 {
		t.Errorf("failed handshakes = %v, want 1", f)
	}
}

// TestRaftGateEvictsSilentBeforeSpeaking: within a full scope the victim
// is the oldest socket that has not spoken, then the oldest.
func TestRaftGateEvictsSilentBeforeSpeaking(t *testing.T) {
	g := newGate(HandshakeLimits{MaxPending: 3, MaxPendingPerAddr: 3})
	var ps []*pendingConn
	for range 3 {
		a, b := net.Pipe()
		defer b.Close()
		ps = append(ps, g.admit(&addrConn{Conn: a}))
	}
	ps[0].spoke.Store(true) // the oldest has spoken
	a, b := net.Pipe()
	defer b.Close()
	p3 := g.admit(&addrConn{Conn: a})
	if ps[0].gone || !ps[1].gone || ps[2].gone {
		t.Fatalf("evicted (0,1,2) = %v %v %v, want the oldest silent one (1)", ps[0].gone, ps[1].gone, ps[2].gone)
	}
	for _, p := range []*pendingConn{ps[2], p3} {
		p.spoke.Store(true)
	}
	a, b = net.Pipe()
	defer b.Close()
	g.admit(&addrConn{Conn: a}) // all three have spoken: the oldest goes
	if !ps[0].gone || ps[2].gone || p3.gone {
		t.Fatal("with every pending socket speaking, the oldest should go")
	}
}

// addrConn gives a pipe a TCP remote address.
type addrConn struct{ net.Conn }

func (addrConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1} }

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
