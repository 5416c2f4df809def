package hadoopipc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/krb5sasl"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

var errTooManyFiles = syscall.EMFILE

// serverConn is one accepted connection. One goroutine (serve) reads and
// decodes packets in order and owns the handshake state; each call then runs
// on its own goroutine (a pooled worker, see workerPool), and replies go
// through one batchWriter, so they never interleave but may leave in any
// order.
type serverConn struct {
	srv    *Server
	nc     net.Conn
	br     *bufio.Reader
	remote net.Addr

	ctx    context.Context // cancelled when the connection dies
	cancel context.CancelFunc

	sem      chan struct{} // in-flight call slots
	calls    sync.WaitGroup
	draining atomic.Bool
	closed   atomic.Bool

	w      *batchWriter
	wrapFn func([]byte) ([]byte, error)
	layer  securityLayer // non-nil after an auth-int/auth-conf login; guarded by w.mu

	// Handshake state, owned by the serve goroutine.
	authProtocol   byte
	sentNegotiate  bool
	saslDone       bool
	contextRead    bool
	token          tokenMech
	krb            *krb5sasl.Server // a KERBEROS login in progress
	relay          *relayMech       // the relayed TOKEN login (TokenRelay), closed with the connection
	saslUser       *User            // identity proven by SASL (TOKEN or KERBEROS)
	user           *User
	userCtx        context.Context
	unwrapPending  []byte // partial inner packet of auth-int wrapped data
	connectionProt string
	rbuf           []byte    // reused packet buffer: decoding copies out of it
	handshakeBy    time.Time // HandshakeTimeout: the context must have arrived by then
	bigReader      bool      // br was enlarged after the handshake
	lingering      bool      // a last reply was sent: close gently (see lingerClose)
}

// lingerClose half-closes after a FATAL (or HTTP) reply and discards what
// the peer still sends for a moment. Closing a socket with unread input
// makes the kernel send RST, and a peer that gets RST may lose our reply
// before reading it; Hadoop likewise shuts down output first.
func (c *serverConn) lingerClose() {
	tc, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || tc.CloseWrite() != nil {
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.Copy(io.Discard, io.LimitReader(c.br, lingerBytes))
}

const (
	lingerTimeout = time.Second
	lingerBytes   = 256 << 10
)

func newServerConn(s *Server, nc net.Conn) *serverConn {
	ctx, cancel := context.WithCancel(s.baseCtx)
	c := &serverConn{
		srv: s,
		nc:  nc,
		// A small read buffer until the handshake is done: an
		// unauthenticated peer pins 1 KiB here, not 16 (see upgradeReader).
		br:          bufio.NewReaderSize(nc, preAuthReadBuf),
		remote:      nc.RemoteAddr(),
		handshakeBy: time.Now().Add(s.cfg.HandshakeTimeout),
		ctx:         ctx,
		cancel:      cancel,
		sem:         make(chan struct{}, s.cfg.MaxInFlightPerConn),
	}
	// A peer that stops reading must not pin handlers forever: writes time
	// out after the idle timeout and a failed write closes the connection.
	c.w = newBatchWriter(nc, s.cfg.IdleTimeout, func(err error) {
		c.debug("ipc write failed", err)
		c.nc.Close()
	})
	c.wrapFn = c.wrapLocked
	return c
}

// drain asks the reader to stop at the next packet boundary; calls in flight
// finish and reply before the socket closes.
func (c *serverConn) drain() {
	c.draining.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// abort closes the socket now.
func (c *serverConn) abort() {
	c.closed.Store(true)
	c.cancel()
	c.nc.Close()
}

func (c *serverConn) serve() {
	graceful := false
	defer func() { c.finish(graceful) }()
	if err := c.handshake(); err != nil {
		if isTimeout(err) && !c.draining.Load() {
			c.srv.metrics.rejected.WithLabelValues("handshake_timeout").Inc()
		}
		c.debug("ipc handshake ended", err)
		return
	}
	for more := true; more; {
		if !c.contextRead {
			more = c.servePreAuthPacket()
		} else {
			more, graceful = c.servePacket()
		}
	}
}

// finish ends the connection. Gracefully (draining), calls in flight reply
// first, unless Close cuts the drain short: a handler that ignores its
// context must not hang Shutdown past its deadline.
func (c *serverConn) finish(graceful bool) {
	if graceful {
		drained := make(chan struct{})
		go func() { c.calls.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-c.ctx.Done():
		}
	}
	if c.lingering {
		c.lingerClose()
	}
	c.cancel()
	c.nc.Close()
	if c.relay != nil {
		c.relay.close()
	}
}

// servePacket waits for, reads and handles one packet of a connection that
// has sent its context. It reports whether the connection goes on and, if
// not, whether it ends gracefully (draining).
func (c *serverConn) servePacket() (more, graceful bool) {
	if !c.bigReader {
		c.upgradeReader()
	}
	// Wait for the first byte of the next packet with the idle deadline.
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	if c.draining.Load() {
		return false, true
	}
	if _, err := c.br.Peek(1); err != nil {
		return c.waitEnded(err)
	}
	// The packet itself must arrive within the idle timeout too.
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.IdleTimeout))
	frame, err := readFrame(c.br, c.srv.cfg.MaxFrameBytes, c.rbuf)
	if err != nil {
		c.frameReadFailed(err)
		return false, false
	}
	if cap(frame) <= 64<<10 {
		c.rbuf = frame[:0]
	}
	return c.processPacket(frame) == nil, false
}

// waitEnded judges a wait for the next packet that ended in err. A timeout
// with calls in flight is not idleness: the connection goes on.
func (c *serverConn) waitEnded(err error) (more, graceful bool) {
	if isTimeout(err) && !c.draining.Load() && len(c.sem) > 0 {
		c.srv.idleBusy.Add(1)
		return true, false
	}
	graceful = c.draining.Load()
	if isTimeout(err) && !graceful {
		c.srv.metrics.rejected.WithLabelValues("idle").Inc()
	}
	c.debug("ipc connection read ended", err)
	return false, graceful
}

// servePreAuthPacket reads and handles one packet of a connection that has
// not sent its connection context. Everything an unauthenticated peer can
// make us hold is bounded here: the whole handshake must end by
// handshakeBy (HandshakeTimeout from accept), a packet may be at most
// MaxPreAuthFrameBytes, and packets above preAuthFree bytes must fit in the
// server-wide PreAuthBufferBytes budget while they are read and handled.
// It reports whether the connection goes on.
func (c *serverConn) servePreAuthPacket() bool {
	deadline := c.handshakeBy
	if c.relay != nil && c.relay.slot {
		// A relayed challenge is out and holds an upstream connection
		// and a pending-login slot for a peer not yet authenticated:
		// its answer gets TokenRelayTimeout at most.
		deadline = earliest(deadline, time.Now().Add(c.srv.cfg.TokenRelayTimeout))
	}
	c.nc.SetReadDeadline(deadline)
	if c.draining.Load() {
		return false
	}
	var lenBuf [4]byte
	n, err := readFrameLen(c.br, c.srv.cfg.MaxPreAuthFrameBytes, &lenBuf)
	if err != nil {
		c.frameReadFailed(err)
		return false
	}
	if n > preAuthFree {
		if !c.srv.reservePreAuth(n) {
			c.sendFatal(callIDAuthFailed, invalidRetryCount, fatal(fatalUnknown, ClassRetriable,
				"server busy: too many unauthenticated connections sending large packets; retry later"))
			// Counted once the reply is out (tests wait for the count).
			c.srv.metrics.rejected.WithLabelValues("preauth_budget").Inc()
			return false
		}
		defer c.srv.releasePreAuth(n)
	} else {
		// Always admitted, so a legitimate handshake cannot be starved by
		// others' large packets; counted all the same.
		c.srv.reservePreAuthSmall(n)
		defer c.srv.releasePreAuth(n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.br, frame); err != nil {
		c.frameReadFailed(err)
		return false
	}
	return c.processPacket(frame) == nil
}

// frameReadFailed accounts for a packet that could not be read.
func (c *serverConn) frameReadFailed(err error) {
	switch {
	case errors.Is(err, ErrFrameTooLarge):
		c.srv.metrics.rejected.WithLabelValues("frame_too_large").Inc()
		c.sendFatal(callIDAuthFailed, invalidRetryCount, fatal(fatalInvalidRPCHeader, ClassRpcServerException, "%v", err))
	case isTimeout(err) && !c.contextRead && !c.draining.Load():
		c.srv.metrics.rejected.WithLabelValues("handshake_timeout").Inc()
	}
	c.debug("ipc connection read ended", err)
}

// upgradeReader swaps the handshake's small read buffer for the full-size
// one, keeping bytes already buffered (a client may send its first call
// right behind the context).
func (c *serverConn) upgradeReader() {
	c.bigReader = true
	var src io.Reader = c.nc
	if n := c.br.Buffered(); n > 0 {
		rest, _ := c.br.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(rest)), c.nc)
	}
	c.br = bufio.NewReaderSize(src, 16<<10)
}

// Pre-auth read sizes: the handshake's read buffer, and the packet size up
// to which a handshake packet is admitted whatever the budget says (SASL
// NEGOTIATE, a DIGEST-MD5 response and a connection context are all well
// below it).
const (
	preAuthReadBuf = 1 << 10
	preAuthFree    = 1 << 10
)

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// reservePreAuth takes n bytes of the pre-auth budget, if they fit.
func (s *Server) reservePreAuth(n int) bool {
	for {
		cur := s.preAuthBytes.Load()
		if cur+int64(n) > s.cfg.PreAuthBufferBytes {
			return false
		}
		if s.preAuthBytes.CompareAndSwap(cur, cur+int64(n)) {
			s.metrics.preAuth.Add(float64(n))
			return true
		}
	}
}

// reservePreAuthSmall counts a small handshake packet, which is admitted
// regardless of the budget (bounded by MaxConns * preAuthFree).
func (s *Server) reservePreAuthSmall(n int) {
	s.preAuthBytes.Add(int64(n))
	s.metrics.preAuth.Add(float64(n))
}

func (s *Server) releasePreAuth(n int) {
	s.preAuthBytes.Add(-int64(n))
	s.metrics.preAuth.Sub(float64(n))
}

// handshake reads the preamble and answers the ways it can be wrong.
func (c *serverConn) handshake() error {
	c.nc.SetReadDeadline(c.handshakeBy)
	// Checked after setting the deadline: a drain that came first would
	// otherwise be overwritten and wait out the whole timeout.
	if c.draining.Load() {
		return ErrServerClosed
	}
	var p [preambleLen]byte
	if _, err := io.ReadFull(c.br, p[:4]); err != nil {
		return err
	}
	if [4]byte(p[:4]) == httpGet {
		c.srv.metrics.rejected.WithLabelValues("http").Inc()
		c.writeRaw([]byte(httpOnIPCPortReply))
		c.lingering = true
		return errors.New("HTTP request on the IPC port")
	}
	if _, err := io.ReadFull(c.br, p[4:]); err != nil {
		return err
	}
	version, auth := p[4], p[6]
	if [4]byte(p[:4]) != rpcMagic || version != rpcVersion {
		c.srv.metrics.rejected.WithLabelValues("version").Inc()
		re := fatal(fatalVersionMismatch, ClassVersionMismatch,
			"server IPC version %d cannot communicate with client version %d", rpcVersion, int8(version))
		c.sendFatal(callIDAuthFailed, invalidRetryCount, re)
		return re
	}
	switch auth {
	case authProtocolNone:
		if !c.srv.cfg.AllowSimple {
			c.srv.metrics.rejected.WithLabelValues("auth").Inc()
			re := fatal(fatalUnauthorized, ClassAccessControl, "SIMPLE authentication is not enabled. Available: %v", c.srv.authMethods())
			c.sendFatal(callIDAuthFailed, invalidRetryCount, re)
			return re
		}
	case authProtocolSASL:
	default:
		c.srv.metrics.rejected.WithLabelValues("auth").Inc()
		re := fatal(fatalUnauthorized, ClassIpcException, "unknown auth protocol: %d", int8(auth))
		c.sendFatal(callIDAuthFailed, invalidRetryCount, re)
		return re
	}
	c.authProtocol = auth
	return nil
}

// processPacket handles one packet. A non-nil result is a FATAL reply that
// has been sent; the caller closes the connection.
func (c *serverConn) processPacket(frame []byte) *RemoteError {
	hdr, rest, err := decodeReqHeader(frame)
	if err != nil {
		re := fatal(fatalDeserializing, ClassRpcServerException, "error decoding RpcRequestHeaderProto: %v", err)
		c.sendFatal(callIDAuthFailed, invalidRetryCount, re)
		return re
	}
	re := c.dispatch(&hdr, rest)
	if re != nil {
		c.srv.metrics.rejected.WithLabelValues("fatal").Inc()
		c.sendFatal(hdr.callID, hdr.retry, re)
	}
	return re
}

// dispatch routes a decoded packet; it returns the FATAL error to send, if
// any. Non-fatal errors are answered here.
func (c *serverConn) dispatch(hdr *requestHeader, body []byte) *RemoteError {
	if !hdr.hasOp {
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "IPC server: no rpc op in RpcRequestHeaderProto")
	}
	if op := commonpb.RpcRequestHeaderProto_OperationProto(hdr.op); op != commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET {
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "IPC server does not implement rpc header operation %v", op)
	}
	if !hdr.hasKind {
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "IPC server: no rpc kind in RpcRequestHeaderProto")
	}
	switch {
	case hdr.callID < 0:
		return c.outOfBand(hdr.callID, body)
	case !c.contextRead:
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "connection context not established")
	case commonpb.RpcKindProto(hdr.kind) != commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER:
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "unknown rpc kind in rpc header: %v", commonpb.RpcKindProto(hdr.kind))
	}
	c.startCall(hdr, body)
	return nil
}

func (c *serverConn) outOfBand(callID int32, body []byte) *RemoteError {
	switch callID {
	case callIDConnectionContext:
		if c.authProtocol == authProtocolSASL && !c.saslDone {
			return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "connection context sent during SASL negotiation")
		}
		return c.connectionContext(body)
	case callIDSASL:
		if c.authProtocol != authProtocolSASL {
			return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "SASL protocol not requested by client")
		}
		return c.sasl(body)
	case callIDPing:
		return nil
	}
	return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "unknown out of band call #%d", callID)
}

func (c *serverConn) connectionContext(body []byte) *RemoteError {
	if c.contextRead {
		return fatal(fatalInvalidRPCHeader, ClassRpcServerException, "connection context already processed")
	}
	cc := &commonpb.IpcConnectionContextProto{}
	if _, err := unmarshalDelimited(body, cc); err != nil {
		return fatal(fatalDeserializing, ClassRpcServerException, "error decoding IpcConnectionContextProto: %v", err)
	}
	c.connectionProt = cc.GetProtocol()
	effective, real := cc.GetUserInfo().GetEffectiveUser(), cc.GetUserInfo().GetRealUser()
	var u User
	if c.saslUser != nil && c.saslUser.AuthMethod == AuthMethodKerberos {
		u = kerberosContextUser(*c.saslUser, effective)
	} else if c.saslUser != nil {
		u = *c.saslUser
		// With a token the token decides who the caller is; doAs is not
		// allowed (as in Hadoop). Only an explicit effectiveUser claims an
		// identity: Hadoop's ProtoUtil.getUgi yields no user for a context
		// with realUser alone, so such a context is accepted as the token's
		// user (some third-party AM clients send it).
		if effective != "" && effective != u.Name {
			return fatal(fatalUnauthorized, ClassAccessControl,
				"authenticated user (%s) doesn't match what the client claims to be (%s)", u.Name, effective)
		}
	} else {
		// Some Go clients send only realUser: it is then the user.
		claimed := effective
		if claimed == "" {
			claimed = real
			real = ""
		}
		if claimed == "" {
			return fatal(fatalUnauthorized, ClassAccessControl, "connection context names no user")
		}
		u = User{Name: claimed, RealUser: real, AuthMethod: authMethodSimple}
	}
	if err := c.authorizeConnection(u); err != nil {
		return err
	}
	c.user = &u
	c.userCtx = context.WithValue(c.ctx, userKey{}, c.user)
	if c.relay != nil && c.saslUser != nil {
		c.userCtx = context.WithValue(c.userCtx, relayKey{}, c.relay.login)
	}
	c.contextRead = true
	return nil
}

// inboundCall is one decoded request on its way to a handler.
type inboundCall struct {
	conn *serverConn
	info CallInfo
	req  proto.Message
}

func (c *serverConn) startCall(hdr *requestHeader, body []byte) {
	callID, retry, clientID := hdr.callID, hdr.retry, hdr.clientID
	method, protocol, version, rest, err := decodeRequestHeaderProto(body)
	if err != nil {
		c.reply(callID, retry, clientID, ipcError(errApplication, ClassInvalidProtocolBuffer, "error decoding RequestHeaderProto: %v", err), nil)
		return
	}
	m, lerr := c.srv.reg.Load().lookup(protocol, version, method)
	if lerr != nil {
		c.srv.metrics.rejected.WithLabelValues(lookupReason(lerr)).Inc()
		c.reply(callID, retry, clientID, lerr, nil)
		return
	}
	req := m.newReq()
	if _, err := unmarshalDelimited(rest, req); err != nil {
		c.reply(callID, retry, clientID, ipcError(errApplication, ClassInvalidProtocolBuffer,
			"error decoding %s request: %v", m.name, err), nil)
		return
	}
	// The packet buffer is reused once we return: keep our own client id.
	clientID = append([]byte(nil), clientID...)
	call := &inboundCall{
		conn: c,
		info: CallInfo{
			Protocol: m.protocol, Version: version,
			Method: m.name, CallID: callID, ClientID: clientID, RetryCount: retry,
			User: *c.user, Remote: c.remote, method: m,
		},
		req: req,
	}
	// Back-pressure: with every slot taken the reader waits here, so the
	// peer's packets queue in TCP buffers rather than in our memory.
	select {
	case c.sem <- struct{}{}:
	default:
		c.srv.metrics.backPressure.Inc()
		c.sem <- struct{}{}
	}
	c.calls.Add(1)
	c.srv.workers.run(call)
}

func lookupReason(re *RemoteError) string {
	switch re.Code {
	case errNoSuchProtocol:
		return "no_such_protocol"
	case errNoSuchMethod:
		return "no_such_method"
	case errVersionMismatch:
		return "version_mismatch"
	}
	return "lookup"
}

func (c *serverConn) runCall(call *inboundCall) {
	defer func() {
		if p := recover(); p != nil {
			// Last resort: the recovery interceptor normally catches
			// handler panics; this guards the layer itself.
			c.srv.log.Error("ipc call panicked outside the handler chain", "panic", fmt.Sprint(p))
			c.reply(call.info.CallID, call.info.RetryCount, call.info.ClientID,
				ipcError(errRPCServer, ClassRpcServerException, "internal error"), nil)
		}
		<-c.sem
		c.calls.Done()
	}()
	resp, err := c.srv.invoke(c.userCtx, &call.info, call.req)
	if err != nil {
		c.reply(call.info.CallID, call.info.RetryCount, call.info.ClientID, toRemote(err), nil)
		return
	}
	if resp == nil {
		c.reply(call.info.CallID, call.info.RetryCount, call.info.ClientID,
			ipcError(errSerializingResponse, ClassIOException, "handler for %s returned no response", call.info.Method), nil)
		return
	}
	c.reply(call.info.CallID, call.info.RetryCount, call.info.ClientID, nil, resp)
}

// reply sends a SUCCESS (re == nil) or ERROR reply for a call.
func (c *serverConn) reply(callID, retry int32, clientID []byte, re *RemoteError, resp proto.Message) {
	if c.closed.Load() {
		return // a FATAL reply or Close ended the connection
	}
	if clientID == nil {
		clientID = []byte{}
	}
	buf := getBuf()
	if re == nil {
		var err error
		buf = append(buf, 0, 0, 0, 0)
		buf = appendRespHeader(buf, callID, nil, clientID, retry, true)
		if buf, err = appendDelimited(buf, resp); err != nil {
			// Typically a required field left unset by the handler.
			c.srv.log.Warn("ipc response does not serialize", "callId", callID, "err", err)
			re = ipcError(errSerializingResponse, ClassIOException, "error serializing response: %v", err)
		}
	}
	if re != nil {
		buf = append(buf[:0], 0, 0, 0, 0)
		buf = appendRespHeader(buf, callID, re, clientID, retry, true)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	c.writeFrame(buf)
	putBuf(buf)
}

// sendFatal writes a FATAL reply and marks the connection closed. Hadoop
// sends these with an empty client id.
func (c *serverConn) sendFatal(callID, retry int32, re *RemoteError) {
	c.debug("ipc fatal reply", re)
	buf := appendRespHeader([]byte{0, 0, 0, 0}, callID, re, []byte{}, retry, true)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	// Wait for it: the reader closes the socket as soon as we return.
	c.w.send(buf, c.wrapFn, true)
	c.lingering = true
	c.closed.Store(true)
	c.cancel()
}

// saslReply sends an RpcSaslProto as Hadoop does: call id -33, SUCCESS,
// empty client id, retry count -1, and never wrapped.
func (c *serverConn) saslReply(msg *commonpb.RpcSaslProto) {
	buf := appendRespHeader([]byte{0, 0, 0, 0}, callIDSASL, nil, []byte{}, invalidRetryCount, true)
	buf, err := appendDelimited(buf, msg)
	if err != nil {
		c.srv.log.Error("ipc SASL reply does not serialize", "err", err)
		return
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	c.writeRaw(buf)
}

// writeFrame writes one complete reply packet, wrapping it when a SASL
// security layer is active.
//
// Wrapped reply (auth-int / auth-conf):
//
//	+-------+--------------------------------------+-------------------------------------+
//	| N (4) | RpcResponseHeaderProto{callId: -33,  | RpcSaslProto{state: WRAP,           |
//	|       |   status: SUCCESS} (delimited)       |   token: wrap(whole inner packet)}  |
//	+-------+--------------------------------------+-------------------------------------+
func (c *serverConn) writeFrame(frame []byte) {
	// The caller's call holds one in-flight slot: more than one taken
	// means other replies may be about to join this write.
	c.w.sendMaybeBatched(frame, c.wrapFn, false, len(c.sem) > 1)
}

// wrapLocked runs under the writer's lock, in wire order.
func (c *serverConn) wrapLocked(frame []byte) ([]byte, error) {
	if c.layer == nil {
		return frame, nil
	}
	tok, err := c.layer.Wrap(frame)
	if err != nil {
		c.srv.log.Error("ipc SASL wrap failed", "err", err)
		return nil, err
	}
	// Hadoop's wrapped replies carry a bare header: no version, client id
	// or retry count.
	wrapped := appendRespHeader([]byte{0, 0, 0, 0}, callIDSASL, nil, nil, 0, false)
	if wrapped, err = appendDelimited(wrapped, &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_WRAP.Enum(), Token: tok}); err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(wrapped, uint32(len(wrapped)-4))
	return wrapped, nil
}

// writeRaw sends bytes that are never wrapped (SASL replies, the HTTP hint)
// and waits until they are on the wire.
func (c *serverConn) writeRaw(b []byte) {
	c.w.send(b, nil, true)
}

func (c *serverConn) debug(msg string, err error) {
	if c.srv.log.Enabled(context.Background(), -4) {
		c.srv.log.Debug(msg, "remote", c.remote, "err", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) > 64<<10 {
		return // do not keep rare huge buffers alive
	}
	bufPool.Put(&b)
}

// authorizeConnection applies ServerConfig.AuthorizeConnection (proxy-user
// rules) to the user the context named.
func (c *serverConn) authorizeConnection(u User) *RemoteError {
	authorize := c.srv.cfg.AuthorizeConnection
	if authorize == nil {
		return nil
	}
	err := authorize(c.ctx, u, c.remote)
	if err == nil {
		return nil
	}
	c.srv.log.Info("ipc connection unauthorized", "remote", c.remote, "user", u.Name, "real_user", u.RealUser,
		"protocol", c.connectionProt, "error", err)
	var re *RemoteError
	if errors.As(err, &re) {
		return fatal(fatalUnauthorized, re.Class, "%s", re.Message)
	}
	return fatal(fatalUnauthorized, ClassAuthorization, "%v", err)
}
