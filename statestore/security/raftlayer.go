package security

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// StreamLayer is a raft.StreamLayer over mutual TLS: both ends must
// present a certificate from the current CA carrying RoleReplica. A peer
// without one fails the handshake before raft decodes a byte, so an
// unauthenticated RequestVote or AppendEntries changes nothing.
type StreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	gate      *gate

	once      sync.Once
	ready     chan net.Conn
	done      chan struct{} // closed when the listener fails or closes
	acceptErr error         // set before done is closed
}

// NewStreamLayerWithLimits listens on bind; advertise (nil: the bound
// address) is what peers are told to dial. Handshakes are bounded by lim
// (zero fields: DefaultHandshakeLimits).
func NewStreamLayerWithLimits(bind string, advertise net.Addr, r *Reloader, lim HandshakeLimits) (*StreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if ta, ok := advertise.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		ln.Close()
		return nil, errors.New("raft advertise address is unspecified (0.0.0.0): set an address peers can dial")
	}
	return &StreamLayer{ln: ln, advertise: advertise, server: r.ServerConfig(RoleReplica), client: r.ClientConfig(),
		gate: newGate(lim), ready: make(chan net.Conn), done: make(chan struct{})}, nil
}

// SetPeers lists the Raft addresses (host:port) of the cluster's replicas:
// connections from their IPs authenticate in their own pool, which
// unlisted addresses cannot fill. Host names are resolved now, with ctx.
func (l *StreamLayer) SetPeers(ctx context.Context, addrs []string) {
	l.gate.setPeers(resolvePeerIPs(ctx, net.DefaultResolver, addrs))
}

// Collectors are the layer's metrics (handshake results, pending
// handshakes, the configured limits).
func (l *StreamLayer) Collectors() []prometheus.Collector { return l.gate.collectors() }

// Accept returns the next connection that completed its TLS handshake.
// Handshakes run concurrently (admitted by the gate, with deadlines), so a
// silent or failing peer neither blocks nor stops the transport's accept
// loop, and a flood of them cannot keep a replica out (HandshakeLimits).
func (l *StreamLayer) Accept() (net.Conn, error) {
	l.once.Do(l.start)
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, l.acceptErr
	}
}

func (l *StreamLayer) start() {
	go func() {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				l.acceptErr = err
				close(l.done)
				return
			}
			if p := l.gate.admit(c); p != nil {
				go l.handshake(p)
			}
		}
	}()
}

// handshake authenticates p: its first byte within HelloTimeout of the
// accept, the whole handshake within HandshakeTimeout (pendingConn.Read
// moves the deadline).
func (l *StreamLayer) handshake(p *pendingConn) {
	_ = p.Conn.SetDeadline(p.accept.Add(l.gate.lim.HelloTimeout))
	tc := tls.Server(p, l.server)
	err := tc.Handshake()
	if err == nil {
		err = p.Conn.SetDeadline(time.Time{})
	}
	if err != nil {
		l.gate.done(p, hsFailed)
		p.Conn.Close()
		return
	}
	l.gate.done(p, hsOK)
	select {
	case l.ready <- tc:
	case <-l.done:
		tc.Close()
	}
}

// Close stops listening.
func (l *StreamLayer) Close() error { return l.ln.Close() }

// Addr is the advertised address.
func (l *StreamLayer) Addr() net.Addr { return l.advertise }

// Dial connects to a peer and completes the handshake.
func (l *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, l.client)
	_ = tc.SetDeadline(time.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}
