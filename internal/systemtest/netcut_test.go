package systemtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Network partitions between real replica processes, without root: every
// replica advertises a proxy address (--raft-advertise, --grpc-advertise)
// in front of its real Raft and gRPC ports, so every byte one replica
// sends another (replication, votes, forwarded requests) crosses a proxy
// the test owns. A proxy learns which replica dialed it from the kernel:
// the accepted connection's peer port is found in /proc/net/tcp, and its
// socket inode among the file descriptors of the replica processes.
//
// A cut pair behaves like a dropped link, not a refused one: connections
// open when the cut starts are closed, new ones are accepted and their
// bytes swallowed (the sender waits for answers that never come, as behind
// a partition), and those are closed when the link heals. Clients (this
// test process) dial the real ports and are never cut.

// netCut is the network between n replicas.
type netCut struct {
	mu      sync.Mutex
	cut     map[[2]int]bool // [from, to]
	pid     func(i int) int // current pid of replica i, 0 if not running
	proxies []*cutProxy
}

func newNetCut(pid func(int) int) *netCut { return &netCut{cut: map[[2]int]bool{}, pid: pid} }

// cutProxy forwards one replica's advertised address to its real port.
type cutProxy struct {
	nc     *netCut
	to     int // the replica behind it
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[*cutConn]bool
	closed bool
}

type cutConn struct {
	from   int // dialing replica, -1 if not one of ours
	client net.Conn
	server net.Conn // nil while black-holed
}

func (c *cutConn) close() {
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// proxy listens on a fresh loopback port for replica `to`.
func (nc *netCut) proxy(to int) (*cutProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cutProxy{nc: nc, to: to, ln: ln, conns: map[*cutConn]bool{}}
	nc.mu.Lock()
	nc.proxies = append(nc.proxies, p)
	nc.mu.Unlock()
	go p.serve()
	return p, nil
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) setTarget(t string) {
	p.mu.Lock()
	p.target = t
	p.mu.Unlock()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *cutProxy) handle(c net.Conn) {
	from := p.nc.whoDialed(c)
	cc := &cutConn{from: from, client: c}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	target := p.target
	p.conns[cc] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, cc)
		p.mu.Unlock()
		cc.close()
	}()
	if p.nc.isCut(from, p.to) {
		_, _ = io.Copy(io.Discard, c) // until the heal closes it
		return
	}
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	p.mu.Lock()
	cc.server = s
	stillOpen := p.conns[cc]
	p.mu.Unlock()
	if !stillOpen || p.nc.isCut(from, p.to) {
		return // cut while dialing
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
	<-done
}

func (p *cutProxy) close() {
	p.mu.Lock()
	p.closed = true
	for cc := range p.conns {
		cc.close()
	}
	p.mu.Unlock()
	p.ln.Close()
}

func (nc *netCut) isCut(from, to int) bool {
	if from < 0 {
		return false
	}
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.cut[[2]int{from, to}]
}

// partition cuts every link between replicas in different groups, both
// ways; replicas in no group keep every link.
func (nc *netCut) partition(groups ...[]int) {
	nc.mu.Lock()
	for gi, g := range groups {
		for hi, h := range groups {
			if gi == hi {
				continue
			}
			for _, a := range g {
				for _, b := range h {
					nc.cut[[2]int{a, b}] = true
				}
			}
		}
	}
	proxies := append([]*cutProxy(nil), nc.proxies...)
	nc.mu.Unlock()
	// Connections across the new cut break now.
	for _, p := range proxies {
		p.mu.Lock()
		for cc := range p.conns {
			if cc.from >= 0 && nc.isCut(cc.from, p.to) {
				delete(p.conns, cc)
				cc.close()
			}
		}
		p.mu.Unlock()
	}
}

// heal restores every link; black-holed connections are closed so their
// senders dial again.
func (nc *netCut) heal() {
	nc.mu.Lock()
	clear(nc.cut)
	proxies := append([]*cutProxy(nil), nc.proxies...)
	nc.mu.Unlock()
	for _, p := range proxies {
		p.mu.Lock()
		for cc := range p.conns {
			if cc.server == nil {
				delete(p.conns, cc)
				cc.close()
			}
		}
		p.mu.Unlock()
	}
}

func (nc *netCut) close() {
	nc.mu.Lock()
	proxies := nc.proxies
	nc.mu.Unlock()
	for _, p := range proxies {
		p.close()
	}
}

// whoDialed returns the replica whose process owns the other end of c, or
// -1 (this test process, or not found).
func (nc *netCut) whoDialed(c net.Conn) int {
	peer, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1
	}
	inode := tcpInode(peer.Port, local.Port)
	if inode == "" {
		return -1
	}
	want := "socket:[" + inode + "]"
	nc.mu.Lock()
	n := len(nc.proxies)
	nc.mu.Unlock()
	for i := 0; i < n; i++ {
		pid := nc.pid(i)
		if pid <= 0 {
			continue
		}
		fdDir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && l == want {
				return i
			}
		}
	}
	return -1
}

// tcpInode finds in /proc/net/tcp the socket inode of the loopback
// connection from localPort to remotePort ("" if none).
func tcpInode(localPort, remotePort int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	loc := fmt.Sprintf("0100007F:%04X", localPort)
	rem := fmt.Sprintf("0100007F:%04X", remotePort)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == loc && fs[2] == rem {
			if _, err := strconv.Atoi(fs[9]); err == nil {
				return fs[9]
			}
		}
	}
	return ""
}
