package security

import (
	"container/list"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/yarnfed/yarnfed/internal/hostport"
)

// HandshakeLimits bound what peers that have not (yet) authenticated can
// make a Raft listener hold. Zero fields take DefaultHandshakeLimits.
//
// Pending handshakes are split in two pools by the connection's source
// IP: listed peers (the IPs of the Raft configuration's and the bootstrap
// list's addresses, see StreamLayer.SetPeers) and everyone else. A flood
// from unlisted addresses fills only its own pool, so a replica's
// handshake always finds room. Within a full pool (or a full per-address
// quota) the oldest pending handshake that has not sent a byte yet is
// closed to make room, not the newcomer: a real peer sends its
// ClientHello at once, so a flood of silent sockets (which an attacker on
// a peer's own host could also open) evicts only itself.
type HandshakeLimits struct {
	// MaxPending bounds handshakes from unlisted addresses at once.
	MaxPending int
	// MaxPendingPerAddr bounds one unlisted IP's pending handshakes.
	MaxPendingPerAddr int
	// MaxPendingPerPeer bounds one listed peer IP's pending handshakes
	// (a separate pool, not counted in MaxPending).
	MaxPendingPerPeer int
	// HelloTimeout is how long an accepted socket may stay silent before
	// sending its first byte (a replica sends its ClientHello at once).
	HelloTimeout time.Duration
	// HandshakeTimeout bounds the whole handshake from accept.
	HandshakeTimeout time.Duration

	// Measurement switches (statestore/DESIGN.md compares the variants);
	// production leaves them false.
	//
	// RefuseNew closes a newcomer when its pool is full instead of
	// evicting the oldest pending handshake (the behaviour before the
	// eviction).
	RefuseNew bool
	// NoPeerPool puts every address in the unlisted pool.
	NoPeerPool bool
}

// DefaultHandshakeLimits: 64 unlisted handshakes, 16 per unlisted IP, 64
// per peer IP, 2 s to the first byte, 5 s for the whole handshake (a TLS
// 1.3 handshake between replicas takes a few milliseconds).
func DefaultHandshakeLimits() HandshakeLimits {
	return HandshakeLimits{MaxPending: 64, MaxPendingPerAddr: 16, MaxPendingPerPeer: 64, HelloTimeout: 2 * time.Second, HandshakeTimeout: 5 * time.Second}
}

func (l HandshakeLimits) withDefaults() HandshakeLimits {
	d := DefaultHandshakeLimits()
	if l.MaxPending <= 0 {
		l.MaxPending = d.MaxPending
	}
	if l.MaxPendingPerAddr <= 0 {
		l.MaxPendingPerAddr = d.MaxPendingPerAddr
	}
	if l.MaxPendingPerPeer <= 0 {
		l.MaxPendingPerPeer = d.MaxPendingPerPeer
	}
	if l.HelloTimeout <= 0 {
		l.HelloTimeout = d.HelloTimeout
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = d.HandshakeTimeout
	}
	if l.HelloTimeout > l.HandshakeTimeout {
		l.HelloTimeout = l.HandshakeTimeout
	}
	return l
}

// Handshake outcomes (label values of yarnfed_statestore_raft_handshakes_total).
const (
	hsOK      = "ok"
	hsFailed  = "failed"  // bad certificate, protocol error, deadline
	hsEvicted = "evicted" // closed to make room for a newer handshake
	hsRefused = "refused" // closed at accept (RefuseNew only)
)

// pendingConn is one accepted socket still authenticating.
type pendingConn struct {
	net.Conn
	g      *gate
	ip     string
	peer   bool
	accept time.Time
	spoke  atomic.Bool // its first bytes arrived
	elem   *list.Element
	gone   bool // removed from the gate (evicted or finished); under g.mu
}

// Read marks the connection as speaking at its first bytes and moves its
// deadline from the hello to the handshake timeout.
func (p *pendingConn) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	if n > 0 && !p.spoke.Load() {
		p.spoke.Store(true)
		_ = p.Conn.SetDeadline(p.accept.Add(p.g.lim.HandshakeTimeout))
	}
	return n, err
}

// gate admits accepted sockets to the handshake, within the limits.
type gate struct {
	lim   HandshakeLimits
	mu    sync.Mutex
	order *list.List // of *pendingConn, oldest first
	perIP map[string]int
	other int                             // pending from unlisted addresses
	peers atomic.Pointer[map[string]bool] // listed IPs

	outcomes *prometheus.CounterVec
	pendingG *prometheus.GaugeVec
	limitsG  *prometheus.GaugeVec
	timeoutG *prometheus.GaugeVec
}

func newGate(lim HandshakeLimits) *gate {
	g := &gate{lim: lim.withDefaults(), order: list.New(), perIP: map[string]int{}}
	empty := map[string]bool{}
	g.peers.Store(&empty)
	g.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_statestore_raft_handshakes_total",
		Help: "Raft TLS handshakes by result: ok, failed (certificate, protocol, deadline), evicted (closed for a newer one), refused; pool is peer (a configured replica's IP) or other."}, []string{"result", "pool"})
	g.pendingG = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_statestore_raft_handshakes_pending",
		Help: "Raft connections accepted and still authenticating, by pool (peer or other)."}, []string{"pool"})
	g.limitsG = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_statestore_raft_handshake_limit",
		Help: "Configured bounds on pending Raft handshakes: max_pending (unlisted addresses), max_pending_per_addr, max_pending_per_peer."}, []string{"limit"})
	g.timeoutG = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_statestore_raft_handshake_timeout_seconds",
		Help: "Configured Raft handshake deadlines: hello (first byte) and handshake (whole handshake), from accept."}, []string{"phase"})
	g.limitsG.WithLabelValues("max_pending").Set(float64(g.lim.MaxPending))
	g.limitsG.WithLabelValues("max_pending_per_addr").Set(float64(g.lim.MaxPendingPerAddr))
	g.limitsG.WithLabelValues("max_pending_per_peer").Set(float64(g.lim.MaxPendingPerPeer))
	g.timeoutG.WithLabelValues("hello").Set(g.lim.HelloTimeout.Seconds())
	g.timeoutG.WithLabelValues("handshake").Set(g.lim.HandshakeTimeout.Seconds())
	for _, pool := range []string{"peer", "other"} {
		g.pendingG.WithLabelValues(pool)
		for _, r := range []string{hsOK, hsFailed, hsEvicted, hsRefused} {
			g.outcomes.WithLabelValues(r, pool)
		}
	}
	return g
}

func poolName(peer bool) string {
	if peer {
		return "peer"
	}
	return "other"
}

// admit registers c, evicting (or, with RefuseNew, refusing) to stay
// within the limits. nil: c was refused and closed.
func (g *gate) admit(c net.Conn) *pendingConn {
	ip := hostport.IP(c.RemoteAddr())
	peer := !g.lim.NoPeerPool && (*g.peers.Load())[ip]
	p := &pendingConn{Conn: c, g: g, ip: ip, peer: peer, accept: time.Now()}
	var victims []*pendingConn
	g.mu.Lock()
	perAddr := g.lim.MaxPendingPerAddr
	if peer {
		perAddr = g.lim.MaxPendingPerPeer
	}
	full := func() bool {
		return g.perIP[ip] >= perAddr || (!peer && g.other >= g.lim.MaxPending)
	}
	for full() {
		if g.lim.RefuseNew {
			g.mu.Unlock()
			g.outcomes.WithLabelValues(hsRefused, poolName(peer)).Inc()
			c.Close()
			return nil
		}
		var v *pendingConn
		if g.perIP[ip] >= perAddr {
			v = g.oldest(func(q *pendingConn) bool { return q.ip == ip })
		} else {
			v = g.oldest(func(q *pendingConn) bool { return !q.peer })
		}
		if v == nil { // cannot happen: a full scope has members
			break
		}
		g.remove(v)
		victims = append(victims, v)
	}
	g.perIP[ip]++
	if !peer {
		g.other++
	}
	p.elem = g.order.PushBack(p)
	g.pendingG.WithLabelValues(poolName(peer)).Inc()
	g.mu.Unlock()
	for _, v := range victims {
		g.outcomes.WithLabelValues(hsEvicted, poolName(v.peer)).Inc()
		v.Conn.Close()
	}
	return p
}

// oldest returns the oldest pending connection in scope that has not
// spoken yet (no byte read, none waiting in its socket), else the oldest
// in scope. Under g.mu.
func (g *gate) oldest(in func(*pendingConn) bool) *pendingConn {
	var first *pendingConn
	for e := g.order.Front(); e != nil; e = e.Next() {
		q := e.Value.(*pendingConn)
		if !in(q) {
			continue
		}
		if !q.spoke.Load() {
			if !HasUnreadBytes(q.Conn) {
				return q
			}
			q.spoke.Store(true) // its ClientHello is waiting to be read
		}
		if first == nil {
			first = q
		}
	}
	return first
}

// remove takes p out of the gate's accounting. Under g.mu.
func (g *gate) remove(p *pendingConn) {
	if p.gone {
		return
	}
	p.gone = true
	g.order.Remove(p.elem)
	if g.perIP[p.ip]--; g.perIP[p.ip] <= 0 {
		delete(g.perIP, p.ip)
	}
	if !p.peer {
		g.other--
	}
	g.pendingG.WithLabelValues(poolName(p.peer)).Dec()
}

// done ends p's handshake with result (ok or failed); an evicted p was
// already counted.
func (g *gate) done(p *pendingConn, result string) {
	g.mu.Lock()
	evicted := p.gone
	g.remove(p)
	g.mu.Unlock()
	if !evicted {
		g.outcomes.WithLabelValues(result, poolName(p.peer)).Inc()
	}
}

// setPeers replaces the listed IPs.
func (g *gate) setPeers(ips map[string]bool) { g.peers.Store(&ips) }

func (g *gate) collectors() []prometheus.Collector {
	return []prometheus.Collector{g.outcomes, g.pendingG, g.limitsG, g.timeoutG}
}

// resolvePeerIPs maps Raft addresses (host:port) to the IPs their hosts
// resolve to; an address that does not resolve is left out (it is tried
// again at the next refresh).
func resolvePeerIPs(ctx context.Context, r *net.Resolver, addrs []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if ip := net.ParseIP(host); ip != nil {
			out[ip.String()] = true
			continue
		}
		ips, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			continue
		}
		for _, ip := range ips {
			out[ip.IP.String()] = true
		}
	}
	return out
}
