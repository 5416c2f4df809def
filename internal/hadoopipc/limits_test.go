package hadoopipc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/testenv"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Attacks by unauthenticated peers on the server's memory and descriptors
// (DESIGN.md, "Limits"). Each test also checks that a legitimate client is
// served while the attack goes on.

// partialFrame starts a packet of n announced bytes and sends only part of
// it, as a peer pinning a read buffer would.
func partialFrame(r *rawConn, n uint32, sent int) {
	r.t.Helper()
	b := binary.BigEndian.AppendUint32(nil, n)
	r.write(append(b, make([]byte, sent)...))
}

// TestPreAuthBudgetPartialFrames: many connections each announce a large
// handshake packet and trickle it. The bytes held for them stay within
// PreAuthBufferBytes, the excess is refused with FATAL RetriableException,
// a packet above MaxPreAuthFrameBytes is refused before any allocation, and
// a legitimate client completes calls meanwhile.
func TestPreAuthBudgetPartialFrames(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxPreAuthFrameBytes = 16 << 10
	cfg.PreAuthBufferBytes = 256 << 10 // room for 16 such packets
	ts := startServer(t, cfg, echoProtocol(nil))
	legit := newTestClient(t, ClientConfig{Addresses: []string{ts.addr}})

	const attackers = 64
	var over sync.WaitGroup
	stop := make(chan struct{})
	var maxSeen int64
	var mu sync.Mutex
	over.Add(1)
	go func() { // sample the counter throughout the attack
		defer over.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			v := ts.srv.PreAuthBufferedBytes()
			mu.Lock()
			maxSeen = max(maxSeen, v)
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
		}
	}()

	conns := make([]*rawConn, attackers)
	for i := range conns {
		r := dialRaw(t, ts.addr)
		r.preamble(authProtocolSASL)
		partialFrame(r, 16<<10, 100)
		conns[i] = r
		if _, err := echo(context.Background(), legit, "during"); err != nil {
			t.Fatalf("legitimate client refused during the attack (%d attackers): %v", i+1, err)
		}
	}
	// Exactly 16 fit; the others were refused with a retriable FATAL.
	testpoll.Poll(t, "refusals of packets over the budget", func() bool {
		return metricValue(t, ts.srv.metrics.rejected.WithLabelValues("preauth_budget")) == attackers-16
	})
	if got := ts.srv.PreAuthBufferedBytes(); got != 16*(16<<10) {
		t.Errorf("pre-auth bytes held = %d, want %d", got, 16*(16<<10))
	}
	refused := 0
	for _, r := range conns {
		r.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		h, _, err := tryReply(r)
		if err != nil {
			continue // still held (under budget): no reply yet
		}
		if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetExceptionClassName() != ClassRetriable {
			t.Fatalf("refusal = %v, want FATAL %s", h, ClassRetriable)
		}
		refused++
	}
	if refused != attackers-16 {
		t.Errorf("%d connections refused, want %d", refused, attackers-16)
	}

	// A length prefix beyond MaxPreAuthFrameBytes (64 MiB, the post-auth
	// limit) is FATAL at once, without touching the budget.
	big := dialRaw(t, ts.addr)
	big.preamble(authProtocolNone)
	partialFrame(big, DefaultMaxFrameBytes, 0)
	if h, _ := big.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetErrorDetail() != fatalInvalidRPCHeader {
		t.Fatalf("large pre-auth packet: %v", h)
	}

	if _, err := echo(context.Background(), legit, "after"); err != nil {
		t.Fatalf("legitimate client after the attack: %v", err)
	}
	close(stop)
	over.Wait()
	if maxSeen > cfg.PreAuthBufferBytes {
		t.Errorf("pre-auth bytes reached %d, budget %d", maxSeen, cfg.PreAuthBufferBytes)
	}
	// Closing the attackers returns every byte (no leaked reservation).
	for _, r := range conns {
		r.nc.Close()
	}
	testpoll.Poll(t, "pre-auth bytes back to zero", func() bool { return ts.srv.PreAuthBufferedBytes() == 0 })
}

// tryReply is rawConn.reply returning the error instead of failing.
func tryReply(r *rawConn) (*commonpb.RpcResponseHeaderProto, []byte, error) {
	frame, err := readFrame(r.br, 1<<20, nil)
	if err != nil {
		return nil, nil, err
	}
	h := &commonpb.RpcResponseHeaderProto{}
	rest, err := unmarshalDelimited(frame, h)
	return h, rest, err
}

// TestPreAuthHandshakePacketBound: before the connection context a packet
// may be at most MaxPreAuthFrameBytes (a peer could otherwise announce
// 64 MiB and send most of it, the buffer growing to hold it); after it,
// MaxFrameBytes applies.
func TestPreAuthHandshakePacketBound(t *testing.T) {
	cfg := DefaultServerConfig()
	ts := startServer(t, cfg, echoProtocol(nil))
	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolNone)
	partialFrame(r, DefaultMaxPreAuthFrame+1, 0)
	h, _ := r.reply()
	if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL {
		t.Fatalf("packet of %d bytes before the context: %v", DefaultMaxPreAuthFrame+1, h)
	}
	// After the context the full MaxFrameBytes applies again.
	ok := dialRaw(t, ts.addr)
	ok.preamble(authProtocolNone)
	ok.context("alice")
	big := string(make([]byte, 512<<10))
	ok.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String(big)})
	if h, _ := ok.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("512 KiB call after the handshake: %v", h)
	}
}

// TestPerAddressConnectionLimit: one address opening connections past
// MaxConnsPerAddr gets the extra ones closed; another address is served.
func TestPerAddressConnectionLimit(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.MaxConnsPerAddr = 4
	ts := startServer(t, cfg, echoProtocol(nil))
	held := make([]*rawConn, 0, cfg.MaxConnsPerAddr)
	for range cfg.MaxConnsPerAddr {
		r := dialRaw(t, ts.addr)
		r.preamble(authProtocolNone)
		r.context("mallory")
		held = append(held, r)
	}
	// The held connections are served: prove each was accepted.
	for i, r := range held {
		r.call(int32(i), testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
		if h, _ := r.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
			t.Fatalf("connection %d: %v", i, h)
		}
	}
	for range 3 {
		extra := dialRaw(t, ts.addr)
		extra.expectClosed()
	}
	if got := metricValue(t, ts.srv.metrics.rejected.WithLabelValues("max_conns_per_addr")); got != 3 {
		t.Errorf("max_conns_per_addr rejections = %v, want 3", got)
	}

	// Another loopback address (Linux routes all of 127/8 to lo).
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: testenv.SecondLoopback(t)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial from another address: %v", err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	other := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	other.preamble(authProtocolNone)
	other.context("alice")
	other.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("y")})
	if h, _ := other.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		t.Fatalf("client from another address: %v", h)
	}

	// A slot freed by a closed connection is reusable.
	held[0].nc.Close()
	testpoll.Poll(t, "a freed per-address slot", func() bool {
		// Until the server has seen the close, this connection is refused
		// and reset: every write here reports that instead of failing the
		// test (the rawConn helpers would).
		r := dialRaw(t, ts.addr)
		defer r.nc.Close()
		ctxHeader := reqHeader(callIDConnectionContext)
		ctxHeader.RetryCount = proto.Int32(-1)
		for _, b := range [][]byte{
			{'h', 'r', 'p', 'c', 9, 0, authProtocolNone},
			mustFrame(t, ctxHeader, &commonpb.IpcConnectionContextProto{
				UserInfo: &commonpb.UserInformationProto{EffectiveUser: proto.String("alice")},
				Protocol: proto.String(testProtocol),
			}),
			mustFrame(t, reqHeader(1), &commonpb.RequestHeaderProto{
				MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(testProtocol), ClientProtocolVersion: proto.Uint64(1),
			}, &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("z")}),
		} {
			if _, err := r.nc.Write(b); err != nil {
				return false
			}
		}
		h, _, err := tryReply(r)
		return err == nil && h.GetStatus() == commonpb.RpcResponseHeaderProto_SUCCESS
	})
}

func mustFrame(t *testing.T, msgs ...proto.Message) []byte {
	b, err := appendFrame(nil, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHandshakeDeadline: a peer that stops (or trickles) before its
// connection context is closed at HandshakeTimeout, not at the idle
// timeout; a connection that finished its handshake stays.
func TestHandshakeDeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attack func(r *rawConn)
	}{
		{"preamble then nothing", func(r *rawConn) { r.preamble(authProtocolNone) }},
		{"nothing at all", func(r *rawConn) {}},
		{"SASL negotiate then nothing", func(r *rawConn) {
			r.preamble(authProtocolSASL)
			r.packet(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
		}},
		{"trickled packet", func(r *rawConn) {
			r.preamble(authProtocolNone)
			r.write([]byte{0, 0, 16, 0})
			go func() { // one byte at a time, each well within any per-read timeout
				for {
					if _, err := r.nc.Write([]byte{0}); err != nil {
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tokenConfig()
			cfg.HandshakeTimeout = 500 * time.Millisecond
			cfg.IdleTimeout = time.Hour // a close can only be the handshake deadline
			ts := startServer(t, cfg, echoProtocol(nil))
			legit := dialRaw(t, ts.addr)
			legit.preamble(authProtocolNone)
			legit.context("alice")

			r := dialRaw(t, ts.addr)
			tc.attack(r)
			for { // skip the SASL reply, if any, then expect the close
				if _, _, err := tryReply(r); err != nil {
					if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isConnReset(err) {
						t.Fatalf("want the server to close, got %v", err)
					}
					break
				}
			}
			if got := metricValue(t, ts.srv.metrics.rejected.WithLabelValues("handshake_timeout")); got != 1 {
				t.Errorf("handshake_timeout closes = %v", got)
			}
			// The legitimate connection is older than the attacker's and
			// past the handshake deadline too, yet still served.
			legit.call(1, testProtocol, 1, "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")})
			if h, _ := legit.reply(); h.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
				t.Fatalf("legitimate connection after the handshake deadline: %v", h)
			}
		})
	}
}

func TestServerConfigValidateLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*ServerConfig)
	}{
		{"negative per-address cap", func(c *ServerConfig) { c.MaxConnsPerAddr = -1 }},
		{"negative handshake timeout", func(c *ServerConfig) { c.HandshakeTimeout = -time.Second }},
		{"negative pre-auth frame", func(c *ServerConfig) { c.MaxPreAuthFrameBytes = -1 }},
		{"budget below one packet", func(c *ServerConfig) { c.PreAuthBufferBytes = 1 << 10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultServerConfig()
			tc.mod(&cfg)
			if err := cfg.Validate(); err == nil {
				t.Fatal("Validate accepted it")
			}
		})
	}
	if err := DefaultServerConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// FuzzServeConnPreAuth: any byte stream a peer sends through a whole
// connection (preamble, handshake packets, anything) ends with every byte
// of the pre-auth budget returned, and the counter never exceeds the
// budget while packets above the free size are in play.
func FuzzServeConnPreAuth(f *testing.F) {
	pre := []byte{'h', 'r', 'p', 'c', 9, 0, authProtocolSASL}
	f.Add(append(append([]byte{}, pre...), 0, 0, 64, 0, 1, 2, 3))
	f.Add(append(append([]byte{}, pre...), mustPacket(saslHeader(), saslMsg(commonpb.RpcSaslProto_NEGOTIATE))...))
	f.Add([]byte{'h', 'r', 'p', 'c', 9, 0, authProtocolNone, 0, 0, 2, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := tokenConfig()
		cfg.PreAuthBufferBytes = 16 << 10
		cfg.HandshakeTimeout = time.Second
		s := NewServer(cfg)
		if err := s.Register(echoProtocol(nil)); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		srvEnd, peer := net.Pipe()
		go io.Copy(io.Discard, peer) // replies, so the server never blocks on writes
		go func() {
			peer.Write(in)
			peer.Close()
		}()
		c := newServerConn(s, srvEnd)
		c.serve()
		if n := s.PreAuthBufferedBytes(); n != 0 {
			t.Fatalf("%d pre-auth bytes still reserved after the connection ended", n)
		}
	})
}
