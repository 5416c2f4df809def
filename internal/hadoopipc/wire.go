package hadoopipc

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Hand-written codecs for the two headers every call carries. They produce
// and accept exactly what the generated commonpb code does (the fuzz tests
// compare them), but without the per-field allocations of proto2 optional
// scalars, which dominate the cost of a small call.

// requestHeader is a decoded RpcRequestHeaderProto (the fields we use).
type requestHeader struct {
	hasKind, hasOp bool
	kind, op       int32
	callID         int32
	retry          int32
	clientID       []byte // aliases the packet buffer
}

// Errors of the header decoders, built once: decoding runs on every call.
var (
	errReqTag  = fmt.Errorf("%w: bad tag in RpcRequestHeaderProto", ErrMalformed)
	errRespTag = fmt.Errorf("%w: bad tag in RpcResponseHeaderProto", ErrMalformed)
	errHdrTag  = fmt.Errorf("%w: bad tag in RequestHeaderProto", ErrMalformed)
)

// fieldFunc decodes one field whose tag was num and typ from the front of
// v (the rest of the message) and returns the length of its value.
type fieldFunc func(num protowire.Number, typ protowire.Type, v []byte) (int, error)

// eachField walks the fields of msg, giving each to field; badTag is the
// error for a tag that does not parse.
func eachField(msg []byte, badTag error, field fieldFunc) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || !num.IsValid() {
			return badTag
		}
		m, err := field(num, typ, msg[n:])
		if err != nil {
			return err
		}
		msg = msg[n+m:]
	}
	return nil
}

// decodeReqHeader decodes a delimited RpcRequestHeaderProto from the front
// of b, enforcing its required fields (callId, clientId) as protobuf does.
func decodeReqHeader(b []byte) (h requestHeader, rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return h, nil, err
	}
	h.retry = -1
	var d reqHeaderDecoder
	if err := eachField(msg, errReqTag, func(num protowire.Number, typ protowire.Type, v []byte) (int, error) {
		return d.field(&h, num, typ, v)
	}); err != nil {
		return h, nil, err
	}
	if !d.hasCallID || !d.hasClientID {
		return h, nil, fmt.Errorf("%w: RpcRequestHeaderProto lacks required callId or clientId", ErrMalformed)
	}
	return h, rest, nil
}

// reqHeaderDecoder remembers which required fields of an
// RpcRequestHeaderProto were seen.
type reqHeaderDecoder struct{ hasCallID, hasClientID bool }

// field decodes one field of an RpcRequestHeaderProto into h:
//
//	1 rpcKind  varint (enum)   2 rpcOp      varint (enum)
//	3 callId   sint32          4 clientId   bytes
//	5 retryCount sint32        6 traceInfo, 7 callerContext: messages,
//	                             checked and dropped
//
// Any other field (state ids, router state, unknown) is skipped.
func (d *reqHeaderDecoder) field(h *requestHeader, num protowire.Number, typ protowire.Type, v []byte) (int, error) {
	switch {
	case typ == protowire.VarintType && (num == 1 || num == 2 || num == 3 || num == 5):
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return 0, errVarint()
		}
		d.setVarint(h, num, x)
		return n, nil
	case typ == protowire.BytesType && num == 4:
		x, n := protowire.ConsumeBytes(v)
		if n < 0 {
			return 0, fmt.Errorf("%w: bad clientId", ErrMalformed)
		}
		d.hasClientID, h.clientID = true, x
		return n, nil
	case typ == protowire.BytesType && (num == 6 || num == 7):
		return checkReqHeaderMessage(num, v)
	}
	n := protowire.ConsumeFieldValue(num, typ, v)
	if n < 0 {
		return 0, fmt.Errorf("%w: bad field %d in RpcRequestHeaderProto", ErrMalformed, num)
	}
	return n, nil
}

// setVarint stores varint field num (1, 2, 3 or 5) of an
// RpcRequestHeaderProto. proto2 enums are closed: an unknown rpcKind or
// rpcOp is an unknown field, so the header then has none at all.
func (d *reqHeaderDecoder) setVarint(h *requestHeader, num protowire.Number, v uint64) {
	switch {
	case num == 1 && v <= 2:
		h.hasKind, h.kind = true, int32(v)
	case num == 2 && v <= 2:
		h.hasOp, h.op = true, int32(v)
	case num == 3:
		d.hasCallID, h.callID = true, sint32(v)
	case num == 5:
		h.retry = sint32(v)
	}
}

// sint32 decodes a zigzag varint as protobuf does for sint32: only its low
// 32 bits count.
func sint32(v uint64) int32 { return int32(protowire.DecodeZigZag(v & 0xffffffff)) }

// checkReqHeaderMessage checks field 6 (traceInfo) or 7 (callerContext) of
// an RpcRequestHeaderProto: unused, but a malformed one fails the header in
// Java and protobuf-go alike.
func checkReqHeaderMessage(num protowire.Number, v []byte) (int, error) {
	x, n := protowire.ConsumeBytes(v)
	if n < 0 {
		return 0, fmt.Errorf("%w: bad field %d in RpcRequestHeaderProto", ErrMalformed, num)
	}
	var nested proto.Message = &commonpb.RPCTraceInfoProto{}
	if num == 7 {
		nested = &commonpb.RPCCallerContextProto{}
	}
	if err := proto.Unmarshal(x, nested); err != nil {
		return 0, fmt.Errorf("%w: field %d of RpcRequestHeaderProto: %v", ErrMalformed, num, err)
	}
	return n, nil
}

func errVarint() error { return fmt.Errorf("%w: bad varint in RpcRequestHeaderProto", ErrMalformed) }

// appendRespHeader appends a delimited RpcResponseHeaderProto: callId(1),
// status(2), serverIpcVersionNum(3), then for errors exceptionClassName(4),
// errorMsg(5), errorDetail(6), then clientId(7) and retryCount(8) -- field
// number order, as protobuf encoders emit it.
func appendRespHeader(dst []byte, callID int32, re *RemoteError, clientID []byte, retry int32, withVersion bool) []byte {
	var body [64]byte
	m := body[:0]
	m = protowire.AppendTag(m, 1, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(wireCallID(callID)))
	status := uint64(0)
	if re != nil {
		status = 1
		if re.Fatal {
			status = 2
		}
	}
	m = protowire.AppendTag(m, 2, protowire.VarintType)
	m = protowire.AppendVarint(m, status)
	if withVersion {
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, rpcVersion)
	}
	if re != nil {
		m = protowire.AppendTag(m, 4, protowire.BytesType)
		m = protowire.AppendString(m, re.Class)
		m = protowire.AppendTag(m, 5, protowire.BytesType)
		m = protowire.AppendString(m, re.Message)
		m = protowire.AppendTag(m, 6, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(re.code()))
	}
	if clientID != nil {
		m = protowire.AppendTag(m, 7, protowire.BytesType)
		m = protowire.AppendBytes(m, clientID)
		m = protowire.AppendTag(m, 8, protowire.VarintType)
		m = protowire.AppendVarint(m, protowire.EncodeZigZag(int64(retry)))
	}
	dst = protowire.AppendVarint(dst, uint64(len(m)))
	return append(dst, m...)
}

// appendReqHeader appends a delimited RpcRequestHeaderProto as Java and
// protobuf-go encode it: rpcKind PROTOCOL_BUFFER, rpcOp FINAL, callId and
// retryCount as sint32, clientId.
func appendReqHeader(dst []byte, callID int32, clientID []byte, retry int32) []byte {
	var body [48]byte
	m := body[:0]
	m = append(m, 0x08, byte(commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER), 0x10, byte(commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET))
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, protowire.EncodeZigZag(int64(callID)))
	m = protowire.AppendTag(m, 4, protowire.BytesType)
	m = protowire.AppendBytes(m, clientID)
	m = protowire.AppendTag(m, 5, protowire.VarintType)
	m = protowire.AppendVarint(m, protowire.EncodeZigZag(int64(retry)))
	dst = protowire.AppendVarint(dst, uint64(len(m)))
	return append(dst, m...)
}

// appendRequestHeader appends a delimited RequestHeaderProto (methodName,
// declaringClassProtocolName, clientProtocolVersion).
func appendRequestHeader(dst []byte, method, protocol string, version uint64) []byte {
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(method)) +
		protowire.SizeTag(2) + protowire.SizeBytes(len(protocol)) +
		protowire.SizeTag(3) + protowire.SizeVarint(version)
	dst = protowire.AppendVarint(dst, uint64(size))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, method)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendString(dst, protocol)
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	return protowire.AppendVarint(dst, version)
}

// respHeader is a decoded RpcResponseHeaderProto (the fields a client uses).
type respHeader struct {
	callID            int32
	status            commonpb.RpcResponseHeaderProto_RpcStatusProto
	class, msg        string
	code              commonpb.RpcResponseHeaderProto_RpcErrorCodeProto
	hasClass, hasCode bool
}

// decodeRespHeader decodes a delimited RpcResponseHeaderProto from the
// front of b; callId and status are required.
func decodeRespHeader(b []byte) (h respHeader, rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return h, nil, err
	}
	var d respHeaderDecoder
	if err := eachField(msg, errRespTag, func(num protowire.Number, typ protowire.Type, v []byte) (int, error) {
		return d.field(&h, num, typ, v)
	}); err != nil {
		return h, nil, err
	}
	if !d.hasCallID || !d.hasStatus {
		return h, nil, fmt.Errorf("%w: RpcResponseHeaderProto lacks required callId or status", ErrMalformed)
	}
	return h, rest, nil
}

// respHeaderDecoder remembers which required fields of an
// RpcResponseHeaderProto were seen.
type respHeaderDecoder struct{ hasCallID, hasStatus bool }

func badResp(what string) error {
	return fmt.Errorf("%w: bad %s in RpcResponseHeaderProto", ErrMalformed, what)
}

// field decodes one field of an RpcResponseHeaderProto into h:
//
//	1 callId     uint32          2 status       varint (enum)
//	4 exceptionClassName string  5 errorMsg     string
//	6 errorDetail varint (enum)
//
// Any other field (serverIpcVersionNum, clientId, retryCount, ...) is
// skipped.
func (d *respHeaderDecoder) field(h *respHeader, num protowire.Number, typ protowire.Type, v []byte) (int, error) {
	switch {
	case typ == protowire.VarintType && (num == 1 || num == 2 || num == 6):
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return 0, badResp("varint")
		}
		d.setVarint(h, num, x)
		return n, nil
	case typ == protowire.BytesType && (num == 4 || num == 5):
		x, n := protowire.ConsumeBytes(v)
		if n < 0 {
			return 0, badResp("string")
		}
		if num == 4 {
			h.hasClass, h.class = true, string(x)
		} else {
			h.msg = string(x)
		}
		return n, nil
	}
	n := protowire.ConsumeFieldValue(num, typ, v)
	if n < 0 {
		return 0, badResp("field")
	}
	return n, nil
}

// setVarint stores varint field num (1, 2 or 6) of an
// RpcResponseHeaderProto. Its enums are closed proto2 enums: an unknown
// value leaves the field unset.
func (d *respHeaderDecoder) setVarint(h *respHeader, num protowire.Number, v uint64) {
	switch num {
	case 1:
		d.hasCallID, h.callID = true, int32(uint32(v))
	case 2:
		if v <= 2 {
			d.hasStatus, h.status = true, commonpb.RpcResponseHeaderProto_RpcStatusProto(v)
		}
	case 6:
		if _, ok := commonpb.RpcResponseHeaderProto_RpcErrorCodeProto_name[int32(v)]; ok && v <= 15 {
			h.hasCode, h.code = true, commonpb.RpcResponseHeaderProto_RpcErrorCodeProto(v)
		}
	}
}

// remote turns a non-SUCCESS header into a *RemoteError.
func (h *respHeader) remote() *RemoteError {
	return &RemoteError{Class: h.class, Message: h.msg, Code: h.code, Fatal: h.status == commonpb.RpcResponseHeaderProto_FATAL}
}

// decodeRequestHeaderProto decodes a delimited RequestHeaderProto from the
// front of b; all three fields are required. The names alias b.
//
//	1 methodName string  2 declaringClassProtocolName string
//	3 clientProtocolVersion uint64
func decodeRequestHeaderProto(b []byte) (method, protocol []byte, version uint64, rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	var has [4]bool
	if err := eachField(msg, errHdrTag, func(num protowire.Number, typ protowire.Type, v []byte) (int, error) {
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 2):
			x, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return 0, fmt.Errorf("%w: bad string in RequestHeaderProto", ErrMalformed)
			}
			has[num] = true
			if num == 1 {
				method = x
			} else {
				protocol = x
			}
			return n, nil
		case typ == protowire.VarintType && num == 3:
			x, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return 0, fmt.Errorf("%w: bad varint in RequestHeaderProto", ErrMalformed)
			}
			has[3], version = true, x
			return n, nil
		}
		n := protowire.ConsumeFieldValue(num, typ, v)
		if n < 0 {
			return 0, fmt.Errorf("%w: bad field %d in RequestHeaderProto", ErrMalformed, num)
		}
		return n, nil
	}); err != nil {
		return nil, nil, 0, nil, err
	}
	if !has[1] || !has[2] || !has[3] {
		return nil, nil, 0, nil, fmt.Errorf("%w: RequestHeaderProto lacks a required field (methodName, declaringClassProtocolName, clientProtocolVersion)", ErrMalformed)
	}
	return method, protocol, version, rest, nil
}
