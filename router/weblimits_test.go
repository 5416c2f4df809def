package router_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/testenv"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// webFed starts a router with its REST port on loopback and web limits set
// by mod.
func webFed(t *testing.T, mod func(*router.WebConfig)) string {
	f := routertest.NewFed(t, 1, func(c *router.Config) {
		c.WebAddress = "127.0.0.1:0"
		mod(&c.Web)
	})
	return f.Router.WebAddr().String()
}

// slowPeer opens a connection and sends the start of a request, then one
// byte at a time until the server closes the connection; closed receives
// what the server said (possibly nothing) once it has.
func slowPeer(t *testing.T, addr, start string, closed chan<- string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	if _, err := io.WriteString(nc, start); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			if _, err := nc.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() {
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(nc) // until the server closes
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !isReset(err) {
			b = append(b, " / "+err.Error()...)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			b = []byte("STILL OPEN")
		}
		closed <- string(b)
	}()
	return nc
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}

func getHealthz(t *testing.T, addr string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("legitimate REST client: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("legitimate REST client: %s", resp.Status)
	}
}

// TestRESTSlowPeersClosedAtReadTimeout: peers trickling headers or a body
// are closed at web.read_header_timeout / web.read_timeout (they used to be
// held as long as they kept sending), and a legitimate client is served.
func TestRESTSlowPeersClosedAtReadTimeout(t *testing.T) {
	addr := webFed(t, func(w *router.WebConfig) {
		w.ReadHeaderTimeout = router.Duration(200 * time.Millisecond)
		w.ReadTimeout = router.Duration(300 * time.Millisecond)
	})
	closed := make(chan string, 4)
	slowPeer(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", closed)
	slowPeer(t, addr, "POST /ws/v1/cluster/apps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{", closed)
	for range 2 {
		if got := <-closed; got == "STILL OPEN" {
			t.Fatal("slow peer still connected after 20 s")
		}
	}
	getHealthz(t, addr)
}

// TestRESTConnectionCap: web.max_conns connections are served at once; a
// further one waits (in the listen backlog) until one closes, then is
// served. Header and body timeouts are an hour here, so only the cap acts.
func TestRESTConnectionCap(t *testing.T) {
	const maxConns = 4
	addr := webFed(t, func(w *router.WebConfig) {
		w.ReadHeaderTimeout = router.Duration(time.Hour)
		w.ReadTimeout = router.Duration(time.Hour)
		w.MaxConns = maxConns
	})
	closed := make(chan string, maxConns)
	var held []net.Conn
	for range maxConns {
		held = append(held, slowPeer(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", closed))
	}
	nc, err := net.Dial("tcp", addr) // the kernel completes it; we do not accept it
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	answered := make(chan *http.Response, 1)
	go func() {
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("request beyond the cap, once a slot freed: %v", err)
			close(answered)
			return
		}
		answered <- resp
	}()
	select {
	case resp := <-answered:
		t.Fatalf("served beyond web.max_conns=%d: %v", maxConns, resp)
	case <-time.After(300 * time.Millisecond): // a non-event: cannot flake
	}
	held[0].Close()
	resp, ok := <-answered
	if !ok {
		return
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request beyond the cap: %s", resp.Status)
	}
}

// TestRESTHeaderBound: headers beyond web.max_header_bytes are refused
// (431) before they are buffered.
func TestRESTHeaderBound(t *testing.T) {
	addr := webFed(t, func(w *router.WebConfig) { w.MaxHeaderBytes = 4 << 10 })
	req, _ := http.NewRequest("GET", "http://"+addr+"/healthz", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 64<<10))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %s, want 431", resp.Status)
	}
	getHealthz(t, addr)
}

// TestRESTPerAddressCap: one address past web.max_conns_per_addr gets the
// extra connections closed at once; another address is served, and so is
// the first once it closes one.
func TestRESTPerAddressCap(t *testing.T) {
	addr := webFed(t, func(w *router.WebConfig) {
		w.ReadHeaderTimeout = router.Duration(time.Hour)
		w.ReadTimeout = router.Duration(time.Hour)
		w.MaxConnsPerAddr = 2
	})
	closed := make(chan string, 2)
	first := slowPeer(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", closed)
	slowPeer(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ", closed)
	// Both held: prove the server has accepted them by a served request
	// from elsewhere, then the third from this address is closed.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: testenv.SecondLoopback(t)}}
	other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	resp, err := other.Get("http://" + addr + "/healthz")
	if err != nil {
		// The address works here (checked above): the server refused a
		// client it should have served.
		t.Fatalf("client from another address: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("client from another address: %s", resp.Status)
	}
	routertest.Poll(t, "third connection from one address closed on accept", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer nc.Close()
		io.WriteString(nc, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(nc)
		return len(b) == 0 // closed without an answer
	})
	first.Close()
	routertest.Poll(t, "a freed slot served", func() bool {
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}
