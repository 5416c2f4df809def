package node

import (
	"container/list"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/credentials"

	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// connLimits bound what peers can make the gRPC port hold (the config
// fields GRPCMaxConns, GRPCMaxConnsPerAddr, GRPCMaxPendingHandshakes,
// GRPCHandshakeTimeout).
type connLimits struct {
	maxConns, maxPerAddr, maxPending int
	handshakeTimeout                 time.Duration
}

// Refusal reasons (label values of yarnfed_statestore_grpc_connections_refused_total).
const (
	refusedPerAddr = "max_conns_per_addr"
	refusedTotal   = "max_conns"
	evictedPending = "evicted_pending" // an older unauthenticated one closed for a newcomer
)

// guardedListener applies connLimits at accept. A connection is pending
// from its accept until its handshake (TLS, then gRPC's ConnectionTimeout
// covers the HTTP/2 preface) succeeds in guardCreds. When a limit is
// reached the oldest pending connection in its scope (the same IP for the
// per-address cap, any for the others) is closed for the newcomer, so
// idle sockets cannot keep a real client out; only when every connection
// in scope is authenticated is the newcomer refused.
type guardedListener struct {
	net.Listener
	lim     connLimits
	mu      sync.Mutex
	pending *list.List // of *guardedConn, oldest first
	open    map[string]int
	total   int

	refused  *prometheus.CounterVec
	openG    prometheus.GaugeFunc
	pendingG prometheus.GaugeFunc
	limitsG  *prometheus.GaugeVec
}

func newGuardedListener(ln net.Listener, lim connLimits) *guardedListener {
	l := &guardedListener{Listener: ln, lim: lim, pending: list.New(), open: map[string]int{}}
	l.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_statestore_grpc_connections_refused_total",
		Help: "gRPC connections closed by the connection limits: max_conns_per_addr and max_conns refuse a newcomer, evicted_pending closes the oldest unauthenticated connection for one."}, []string{"reason"})
	for _, r := range []string{refusedPerAddr, refusedTotal, evictedPending} {
		l.refused.WithLabelValues(r)
	}
	l.openG = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "yarnfed_statestore_grpc_connections_open",
		Help: "gRPC connections open (authenticated or not)."}, func() float64 { l.mu.Lock(); defer l.mu.Unlock(); return float64(l.total) })
	l.pendingG = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "yarnfed_statestore_grpc_connections_pending",
		Help: "gRPC connections accepted and not yet authenticated."}, func() float64 { l.mu.Lock(); defer l.mu.Unlock(); return float64(l.pending.Len()) })
	l.limitsG = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "yarnfed_statestore_grpc_connection_limit",
		Help: "Configured gRPC connection bounds: max_conns, max_conns_per_addr, max_pending_handshakes, handshake_timeout_seconds."}, []string{"limit"})
	l.limitsG.WithLabelValues("max_conns").Set(float64(lim.maxConns))
	l.limitsG.WithLabelValues("max_conns_per_addr").Set(float64(lim.maxPerAddr))
	l.limitsG.WithLabelValues("max_pending_handshakes").Set(float64(lim.maxPending))
	l.limitsG.WithLabelValues("handshake_timeout_seconds").Set(lim.handshakeTimeout.Seconds())
	return l
}

func (l *guardedListener) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.refused, l.openG, l.pendingG, l.limitsG}
}

// guardedConn is an accepted connection counted by its listener.
type guardedConn struct {
	net.Conn
	l       *guardedListener
	ip      string
	elem    *list.Element // in l.pending while unauthenticated; under l.mu
	closed  bool          // under l.mu
	spoke   bool          // bytes were seen waiting; under l.mu
	closeMu sync.Once
}

func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.closeMu.Do(func() { c.l.release(c) })
	return err
}

// authenticated takes c out of the pending list (its handshake is done).
func (c *guardedConn) authenticated() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.elem != nil {
		c.l.pending.Remove(c.elem)
		c.elem = nil
	}
}

func (l *guardedListener) release(c *guardedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.elem != nil {
		l.pending.Remove(c.elem)
		c.elem = nil
	}
	if l.open[c.ip]--; l.open[c.ip] <= 0 {
		delete(l.open, c.ip)
	}
	l.total--
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(raw); c != nil {
			return c, nil
		}
	}
}

// admit counts raw in, closing the oldest pending connections in scope
// to make room, or refuses it (nil) when the scope holds only
// authenticated connections.
func (l *guardedListener) admit(raw net.Conn) *guardedConn {
	ip := hostport.IP(raw.RemoteAddr())
	var victims []*guardedConn
	refuse := ""
	l.mu.Lock()
	for refuse == "" {
		var scope func(*guardedConn) bool
		reason := ""
		switch {
		case l.open[ip] >= l.lim.maxPerAddr:
			scope, reason = func(c *guardedConn) bool { return c.ip == ip }, refusedPerAddr
		case l.total >= l.lim.maxConns:
			scope, reason = func(*guardedConn) bool { return true }, refusedTotal
		case l.pending.Len() >= l.lim.maxPending:
			scope, reason = func(*guardedConn) bool { return true }, refusedTotal
		}
		if scope == nil {
			break
		}
		v := l.oldestPending(scope)
		if v == nil {
			refuse = reason
			break
		}
		l.pending.Remove(v.elem)
		v.elem = nil
		victims = append(victims, v)
		// Its slot is given back by its Close below (counted now so the
		// loop sees the room).
		v.closed = true
		if l.open[v.ip]--; l.open[v.ip] <= 0 {
			delete(l.open, v.ip)
		}
		l.total--
	}
	var c *guardedConn
	if refuse == "" {
		c = &guardedConn{Conn: raw, l: l, ip: ip}
		c.elem = l.pending.PushBack(c)
		l.open[ip]++
		l.total++
	}
	l.mu.Unlock()
	for _, v := range victims {
		l.refused.WithLabelValues(evictedPending).Inc()
		v.Conn.Close()
	}
	if refuse != "" {
		l.refused.WithLabelValues(refuse).Inc()
		raw.Close()
	}
	return c
}

// oldestPending is the oldest unauthenticated connection in scope that has
// sent nothing yet (no bytes waiting in its socket: a real client's
// ClientHello arrives at once, before grpc-go's goroutine reads it), else
// the oldest unauthenticated one in scope. Under l.mu.
func (l *guardedListener) oldestPending(in func(*guardedConn) bool) *guardedConn {
	var first *guardedConn
	for e := l.pending.Front(); e != nil; e = e.Next() {
		c := e.Value.(*guardedConn)
		if !in(c) {
			continue
		}
		if !c.spoke && !security.HasUnreadBytes(c.Conn) {
			return c
		}
		c.spoke = true
		if first == nil {
			first = c
		}
	}
	return first
}

// guardCreds marks a guardedConn authenticated when its server handshake
// succeeds.
type guardCreds struct {
	credentials.TransportCredentials
}

func (g guardCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := g.TransportCredentials.ServerHandshake(raw)
	if err == nil {
		if gc, ok := raw.(*guardedConn); ok {
			gc.authenticated()
		}
	}
	return c, info, err
}

func (g guardCreds) Clone() credentials.TransportCredentials {
	return guardCreds{g.TransportCredentials.Clone()}
}
