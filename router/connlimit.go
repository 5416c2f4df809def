package router

import (
	"net"
	"sync"

	"github.com/yarnfed/yarnfed/internal/hostport"
)

// perAddrListener closes accepted connections from an IP that already has
// max open, so one host cannot take every slot of the server-wide cap
// (netutil.LimitListener, which it wraps: a refused connection never holds
// one of those slots). Refusal is a close, not an HTTP error: nothing has
// been read yet, and writing a reply to a peer we want gone costs more.
type perAddrListener struct {
	net.Listener
	max     int
	refused func()
	mu      sync.Mutex
	open    map[string]int
}

func limitPerAddr(ln net.Listener, max int, refused func()) net.Listener {
	return &perAddrListener{Listener: ln, max: max, refused: refused, open: map[string]int{}}
}

func (l *perAddrListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := hostport.IP(c.RemoteAddr())
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			l.refused()
			c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &perAddrConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *perAddrListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// perAddrConn gives its slot back on the first Close.
type perAddrConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *perAddrConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
