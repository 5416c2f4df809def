package hadoopipc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// connConfig is what a client connection needs from its Client.
type connConfig struct {
	protocol    string
	user        string
	realUser    string
	token       *commonpb.TokenProto
	dialTimeout time.Duration
	maxFrame    int
	idle        time.Duration
	qops        []string
	krb         *KerberosClientConfig
	log         *slog.Logger
}

// callResult is what the reader hands to a waiting call.
type callResult struct {
	body []byte // the response message bytes (SUCCESS)
	err  error  // *RemoteError or a connection error
}

// clientConn is one connection to a server: a reader goroutine matches
// replies to pending calls by call id; writers share a batchWriter.
type clientConn struct {
	pool *Pool
	key  connKey
	cfg  connConfig
	nc   net.Conn

	w      *batchWriter
	wrapFn func([]byte) ([]byte, error)
	layer  securityLayer // auth-int/auth-conf: wrap requests, unwrap replies; set before w is used
	// krbDone: the handshake logged in with KERBEROS (the context then
	// names the effective user, as Hadoop's ProtoUtil does).
	krbDone bool

	mu      sync.Mutex
	pending map[int32]chan callResult
	closed  bool
	err     error
	idleT   *time.Timer
	done    chan struct{} // closed by close; nil in some tests
}

func newClientConn(pool *Pool, key connKey, cfg connConfig, nc net.Conn) *clientConn {
	return &clientConn{pool: pool, key: key, cfg: cfg, nc: nc, pending: make(map[int32]chan callResult), done: make(chan struct{})}
}

// dialTCP opens the socket for a client connection.
func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDial, addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return nc, nil
}

// boundHandshake makes blocking handshake I/O on nc end at ctx's deadline
// or cancellation; the returned func lifts the bound.
func boundHandshake(ctx context.Context, nc net.Conn) (release func()) {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		nc.SetDeadline(time.Time{})
	}
}

// dialConn connects, runs the preamble, SASL and the connection context,
// then starts the reader.
func dialConn(ctx context.Context, pool *Pool, key connKey, cfg connConfig) (*clientConn, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.dialTimeout)
	defer cancel()
	nc, err := dialTCP(dctx, key.addr)
	if err != nil {
		return nil, err
	}
	c := newClientConn(pool, key, cfg, nc)
	// The handshake is bounded by the dial deadline and by ctx.
	release := boundHandshake(dctx, nc)
	err = c.handshake()
	release()
	if err != nil {
		nc.Close()
		return nil, handshakeError(ctx, key.addr, err)
	}
	c.start(bufio.NewReaderSize(nc, 16<<10))
	return c, nil
}

// handshakeError is what a dial whose handshake failed answers: ctx's
// error once it has ended; the server's refusal (a RemoteError, ErrAuth)
// as it is; else ErrDial, since the server went away mid-handshake and
// nothing was sent for any call.
func handshakeError(ctx context.Context, addr string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *RemoteError
	if errors.As(err, &re) || errors.Is(err, ErrAuth) {
		return err
	}
	return fmt.Errorf("%w: %s: handshake: %v", ErrDial, addr, err)
}

// start makes a connection whose handshake is done ready for calls: the
// writer, the idle timer and the read loop (reading from br, which may
// hold nothing the handshake left unread).
func (c *clientConn) start(br *bufio.Reader) {
	c.wrapFn = c.wrapRequest
	c.w = newBatchWriter(c.nc, clientWriteTimeout, func(err error) {
		c.close(fmt.Errorf("%w: %s: write: %v", ErrConnectionClosed, c.key.addr, err))
	})
	// Arm before the read loop starts: the loop may close the connection at
	// once (a server that refuses us replies FATAL right after the
	// preamble), and close reads the timer under c.mu.
	c.mu.Lock()
	c.armIdle()
	c.mu.Unlock()
	go c.readLoop(br)
}

// handshake, client side:
//
//	-> "hrpc" 0x09 0x00 0x00                      (SIMPLE)
//	-> "hrpc" 0x09 0x00 0xDF  + SASL exchange      (TOKEN; see sasl())
//	-> [-3] IpcConnectionContextProto{userInfo{effectiveUser}, protocol}
func (c *clientConn) handshake() error {
	auth := authProtocolNone
	if c.cfg.token != nil || c.cfg.krb != nil {
		auth = authProtocolSASL
	}
	pre := preamble{magic: rpcMagic, version: rpcVersion, authProtocol: auth}.bytes()
	buf := append([]byte(nil), pre[:]...)
	simple := auth == authProtocolNone
	if !simple {
		if _, err := c.nc.Write(buf); err != nil {
			return err
		}
		buf = buf[:0]
		var err error
		simple, err = c.sasl()
		if err != nil {
			return err
		}
	}
	return c.sendContext(buf, simple)
}

// sendContext appends the connection context to buf (which may hold the
// preamble) and writes it. With a token the token names the user, so, as
// Java's client, we send no user.
func (c *clientConn) sendContext(buf []byte, simple bool) error {
	cc := &commonpb.IpcConnectionContextProto{Protocol: proto.String(c.cfg.protocol)}
	if c.krbDone {
		user := c.cfg.user
		if user == "" {
			// Not acting for anyone: Hadoop sends the full principal.
			user = c.cfg.krb.principal()
		}
		cc.UserInfo = &commonpb.UserInformationProto{EffectiveUser: proto.String(user)}
	} else if simple {
		user := c.cfg.user
		if user == "" {
			return fmt.Errorf("%w: server offers only SIMPLE and no User is configured", ErrAuth)
		}
		cc.UserInfo = &commonpb.UserInformationProto{EffectiveUser: proto.String(user)}
		if real := c.cfg.realUser; real != "" && real != user {
			cc.UserInfo.RealUser = proto.String(real)
		}
	}
	buf, err := appendFrame(buf, c.oobHeader(callIDConnectionContext, c.pool.clientID), cc)
	if err != nil {
		return err
	}
	return c.writePacket(buf)
}

func (c *clientConn) oobHeader(callID int32, clientID []byte) *commonpb.RpcRequestHeaderProto {
	return &commonpb.RpcRequestHeaderProto{
		RpcKind:    commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:      commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:     proto.Int32(callID),
		ClientId:   clientID,
		RetryCount: proto.Int32(invalidRetryCount),
	}
}

// saslSend writes one SASL message (call id -33, never wrapped).
func (c *clientConn) saslSend(m *commonpb.RpcSaslProto) error {
	b, err := appendFrame(nil, c.oobHeader(callIDSASL, []byte{}), m)
	if err != nil {
		return err
	}
	_, err = c.nc.Write(b)
	return err
}

// saslRecv reads one SASL reply; an error reply is a *RemoteError.
func (c *clientConn) saslRecv(br *bufio.Reader) (*commonpb.RpcSaslProto, error) {
	frame, err := readFrame(br, c.cfg.maxFrame, nil)
	if err != nil {
		return nil, err
	}
	hdr := &commonpb.RpcResponseHeaderProto{}
	rest, err := unmarshalDelimited(frame, hdr)
	if err != nil {
		return nil, err
	}
	if hdr.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
		return nil, remoteFromHeader(hdr)
	}
	if int32(hdr.GetCallId()) != callIDSASL {
		return nil, fmt.Errorf("%w: reply to call %d during SASL", ErrMalformed, int32(hdr.GetCallId()))
	}
	m := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(rest, m); err != nil {
		return nil, err
	}
	return m, nil
}

// remoteFromHeader turns a non-SUCCESS reply header into a *RemoteError.
func remoteFromHeader(h *commonpb.RpcResponseHeaderProto) *RemoteError {
	return &RemoteError{
		Class:   h.GetExceptionClassName(),
		Message: h.GetErrorMsg(),
		Code:    h.GetErrorDetail(),
		Fatal:   h.GetStatus() == commonpb.RpcResponseHeaderProto_FATAL,
	}
}

// writePacket writes one request packet, wrapping it when a security layer
// is active:
//
//	+-------+------------------------------------------+---------------------------------+
//	| N (4) | RpcRequestHeaderProto{callId: -33,       | RpcSaslProto{state: WRAP,       |
//	|       |   retryCount: -1, clientId: ""}          |   token: wrap(inner packet)}    |
//	+-------+------------------------------------------+---------------------------------+
func (c *clientConn) writePacket(b []byte) error {
	b, err := c.wrapRequest(b)
	if err != nil {
		return err
	}
	_, err = c.nc.Write(b)
	return err
}

// clientWriteTimeout bounds one write to a server that stopped reading.
const clientWriteTimeout = time.Minute

func (c *clientConn) wrapRequest(b []byte) ([]byte, error) {
	if c.layer == nil {
		return b, nil
	}
	tok, err := c.layer.Wrap(b)
	if err != nil {
		return nil, err
	}
	return appendFrame(nil, c.oobHeader(callIDSASL, []byte{}), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_WRAP.Enum(), Token: tok})
}

func (c *clientConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// close fails every pending call with err and closes the socket.
func (c *clientConn) close(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = err
	pending := c.pending
	c.pending = nil
	if c.idleT != nil {
		c.idleT.Stop()
	}
	c.mu.Unlock()
	c.nc.Close()
	for _, ch := range pending {
		ch <- callResult{err: err}
	}
	c.pool.removeConn(c)
	if c.done != nil {
		close(c.done)
	}
}

func (p *Pool) removeConn(c *clientConn) {
	p.mu.Lock()
	if e := p.conns[c.key]; e != nil && e.conn == c {
		delete(p.conns, c.key)
	}
	p.mu.Unlock()
}

// armIdle (re)starts the idle timer when no call is pending. Called with
// c.mu held. A connection configured with no idle timeout (a relayed
// login lives as long as its client connection) has no timer.
func (c *clientConn) armIdle() {
	if c.cfg.idle <= 0 {
		return
	}
	if c.idleT == nil {
		c.idleT = time.AfterFunc(c.cfg.idle, c.idleFire)
		return
	}
	c.idleT.Reset(c.cfg.idle)
}

func (c *clientConn) idleFire() {
	c.mu.Lock()
	idle := !c.closed && len(c.pending) == 0
	c.mu.Unlock()
	if idle {
		c.close(fmt.Errorf("%w: idle", ErrConnectionClosed))
	}
}

func (c *clientConn) readLoop(br *bufio.Reader) {
	var rbuf []byte
	for {
		frame, err := readFrame(br, c.cfg.maxFrame, rbuf)
		if err != nil {
			c.close(fmt.Errorf("%w: %s: %v", ErrConnectionClosed, c.key.addr, err))
			return
		}
		if cap(frame) <= 64<<10 {
			rbuf = frame[:0]
		}
		if err := c.handleReply(frame); err != nil {
			c.close(err)
			return
		}
	}
}

// handleReply routes one reply packet. A returned error closes the
// connection.
func (c *clientConn) handleReply(frame []byte) error {
	hdr, rest, err := decodeRespHeader(frame)
	if err != nil {
		return fmt.Errorf("%w: %s: bad reply header: %v", ErrConnectionClosed, c.key.addr, err)
	}
	callID := hdr.callID
	if callID == callIDSASL && hdr.status == commonpb.RpcResponseHeaderProto_SUCCESS {
		return c.handleWrapped(rest)
	}
	switch hdr.status {
	case commonpb.RpcResponseHeaderProto_FATAL:
		// The server closes the connection: every pending call fails with
		// this error.
		return hdr.remote()
	case commonpb.RpcResponseHeaderProto_ERROR:
		c.deliver(callID, callResult{err: hdr.remote()})
		return nil
	}
	body, _, err := nextDelimited(rest)
	if err != nil {
		c.deliver(callID, callResult{err: fmt.Errorf("%w: reply body: %v", ErrMalformed, err)})
		return nil
	}
	c.deliver(callID, callResult{body: append([]byte(nil), body...)})
	return nil
}

func (c *clientConn) handleWrapped(rest []byte) error {
	if c.layer == nil {
		return fmt.Errorf("%w: %s: unexpected SASL packet", ErrConnectionClosed, c.key.addr)
	}
	m := &commonpb.RpcSaslProto{}
	if _, err := unmarshalDelimited(rest, m); err != nil || m.GetState() != commonpb.RpcSaslProto_WRAP {
		return fmt.Errorf("%w: %s: bad WRAP packet", ErrConnectionClosed, c.key.addr)
	}
	plain, err := c.layer.Unwrap(m.GetToken())
	if err != nil {
		return fmt.Errorf("%w: %s: unwrap: %v", ErrConnectionClosed, c.key.addr, err)
	}
	// A Hadoop server wraps one whole reply packet per WRAP token.
	for len(plain) > 0 {
		inner, err := readFrame(bytesReader(plain), c.cfg.maxFrame, nil)
		if err != nil {
			return fmt.Errorf("%w: %s: wrapped reply: %v", ErrConnectionClosed, c.key.addr, err)
		}
		plain = plain[4+len(inner):]
		if err := c.handleReply(inner); err != nil {
			return err
		}
	}
	return nil
}

func (c *clientConn) deliver(callID int32, r callResult) {
	c.mu.Lock()
	ch, ok := c.pending[callID]
	if ok {
		delete(c.pending, callID)
		if len(c.pending) == 0 {
			c.armIdle()
		}
	}
	c.mu.Unlock()
	if ok {
		ch <- r // buffered: never blocks
	}
	// Replies for cancelled calls are dropped.
}

// call sends one request and waits for its reply or ctx.
func (c *clientConn) call(ctx context.Context, callID, retry int32, protocol string, version uint64, method string, req, resp proto.Message) error {
	ch := make(chan callResult, 1)
	c.mu.Lock()
	if c.closed {
		err := c.err
		c.mu.Unlock()
		// Nothing was sent on this connection for this call. A server's
		// FATAL reply stays reachable with errors.As (e.g. a refused
		// proxy user's AuthorizationException).
		return fmt.Errorf("%w: %w", ErrDial, err)
	}
	c.pending[callID] = ch
	others := len(c.pending) > 1
	if c.idleT != nil {
		c.idleT.Stop()
	}
	c.mu.Unlock()

	buf := append(getBuf(), 0, 0, 0, 0)
	buf = appendReqHeader(buf, callID, c.pool.clientID, retry)
	buf = appendRequestHeader(buf, method, protocol, version)
	buf, err := appendDelimited(buf, req)
	if err != nil {
		c.forget(callID)
		return fmt.Errorf("hadoopipc: encoding %s request: %w", method, err)
	}
	if len(buf)-4 > c.cfg.maxFrame {
		c.forget(callID)
		return fmt.Errorf("%w: request of %d bytes", ErrFrameTooLarge, len(buf)-4)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	// Queued, not necessarily written, when send returns: a call may
	// give up on ctx while another goroutine's write is still blocked.
	err = c.w.sendMaybeBatched(buf, c.wrapFn, false, others)
	putBuf(buf)
	if err != nil {
		// The connection is closed; pending calls, ours included, fail
		// with the close error. If the reader closed it on the server's
		// FATAL reply (a refused login or proxy user, sent right after
		// the connection context), that reply is the answer.
		r := <-ch
		var re *RemoteError
		if errors.As(r.err, &re) {
			return r.err
		}
		return fmt.Errorf("%w: %s: write: %v", ErrConnectionClosed, c.key.addr, err)
	}

	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if err := proto.Unmarshal(r.body, resp); err != nil {
			return fmt.Errorf("%w: %s response: %v", ErrMalformed, method, err)
		}
		return nil
	case <-ctx.Done():
		// Forget the call; its reply, if any, is dropped and the
		// connection stays usable for others.
		c.forget(callID)
		return ctx.Err()
	}
}

func (c *clientConn) forget(callID int32) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, callID)
		if len(c.pending) == 0 && !c.closed {
			c.armIdle()
		}
	}
	c.mu.Unlock()
}
