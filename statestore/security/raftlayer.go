package security

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
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

	once      sync.Once
	ready     chan net.Conn
	done      chan struct{} // closed when the listener fails or closes
	acceptErr error         // set before done is closed
}

// handshakeTimeout bounds how long an accepted or dialled connection may
// take to authenticate (an idle unauthenticated socket is closed).
const handshakeTimeout = 10 * time.Second

// NewStreamLayer listens on bind; advertise (nil: the bound address) is
// what peers are told to dial.
func NewStreamLayer(bind string, advertise net.Addr, r *Reloader) (*StreamLayer, error) {
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
	return &StreamLayer{ln: ln, advertise: advertise, server: r.ServerConfig(RoleReplica), client: r.ClientConfig(), ready: make(chan net.Conn), done: make(chan struct{})}, nil
}

// maxHandshakes bounds connections authenticating at once; more are
// closed at once (an unauthenticated peer cannot make us hold more).
const maxHandshakes = 64

// Accept returns the next connection that completed its TLS handshake.
// Handshakes run concurrently (bounded, with a deadline), so a silent or
// failing peer neither blocks nor stops the transport's accept loop.
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
		sem := make(chan struct{}, maxHandshakes)
		for {
			c, err := l.ln.Accept()
			if err != nil {
				l.acceptErr = err
				close(l.done)
				return
			}
			select {
			case sem <- struct{}{}:
			default:
				c.Close()
				continue
			}
			go func() {
				defer func() { <-sem }()
				tc := tls.Server(c, l.server)
				if err := handshake(tc); err != nil {
					c.Close()
					return
				}
				select {
				case l.ready <- tc:
				case <-l.done:
					tc.Close()
				}
			}()
		}
	}()
}

func handshake(tc *tls.Conn) error {
	_ = tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return err
	}
	return tc.SetDeadline(time.Time{})
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
