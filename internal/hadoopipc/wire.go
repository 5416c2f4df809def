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

// decodeReqHeader decodes a delimited RpcRequestHeaderProto from the front
// of b, enforcing its required fields (callId, clientId) as protobuf does.
func decodeReqHeader(b []byte) (h requestHeader, rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return h, nil, err
	}
	h.retry = -1
	var hasCallID, hasClientID bool
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || !num.IsValid() {
			return h, nil, fmt.Errorf("%w: bad tag in RpcRequestHeaderProto", ErrMalformed)
		}
		msg = msg[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return h, nil, errVarint()
			}
			msg = msg[n:]
			// proto2 enums are closed: an unknown value is an unknown
			// field, so the header then has no rpcKind at all.
			if v <= 2 {
				h.hasKind, h.kind = true, int32(v)
			}
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return h, nil, errVarint()
			}
			msg = msg[n:]
			if v <= 2 {
				h.hasOp, h.op = true, int32(v)
			}
		case num == 3 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return h, nil, errVarint()
			}
			hasCallID, h.callID, msg = true, int32(protowire.DecodeZigZag(v&0xffffffff)), msg[n:]
		case num == 4 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return h, nil, fmt.Errorf("%w: bad clientId", ErrMalformed)
			}
			hasClientID, h.clientID, msg = true, v, msg[n:]
		case num == 5 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return h, nil, errVarint()
			}
			h.retry, msg = int32(protowire.DecodeZigZag(v&0xffffffff)), msg[n:]
		case (num == 6 || num == 7) && typ == protowire.BytesType:
			// Trace info and caller context: unused, but a malformed one
			// fails the header in Java and protobuf-go alike.
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return h, nil, fmt.Errorf("%w: bad field %d in RpcRequestHeaderProto", ErrMalformed, num)
			}
			var nested proto.Message = &commonpb.RPCTraceInfoProto{}
			if num == 7 {
				nested = &commonpb.RPCCallerContextProto{}
			}
			if err := proto.Unmarshal(v, nested); err != nil {
				return h, nil, fmt.Errorf("%w: field %d of RpcRequestHeaderProto: %v", ErrMalformed, num, err)
			}
			msg = msg[n:]
		default:
			// State ids, router state, or unknown fields.
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return h, nil, fmt.Errorf("%w: bad field %d in RpcRequestHeaderProto", ErrMalformed, num)
			}
			msg = msg[n:]
		}
	}
	if !hasCallID || !hasClientID {
		return h, nil, fmt.Errorf("%w: RpcRequestHeaderProto lacks required callId or clientId", ErrMalformed)
	}
	return h, rest, nil
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
	var hasCallID, hasStatus bool
	bad := func(what string) error { return fmt.Errorf("%w: bad %s in RpcResponseHeaderProto", ErrMalformed, what) }
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || !num.IsValid() {
			return h, nil, bad("tag")
		}
		msg = msg[n:]
		switch {
		case (num == 1 || num == 2 || num == 6) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return h, nil, bad("varint")
			}
			msg = msg[n:]
			switch num {
			case 1:
				hasCallID, h.callID = true, int32(uint32(v))
			case 2:
				// Closed proto2 enum: unknown values leave it unset.
				if v <= 2 {
					hasStatus, h.status = true, commonpb.RpcResponseHeaderProto_RpcStatusProto(v)
				}
			case 6:
				if _, ok := commonpb.RpcResponseHeaderProto_RpcErrorCodeProto_name[int32(v)]; ok && v <= 15 {
					h.hasCode, h.code = true, commonpb.RpcResponseHeaderProto_RpcErrorCodeProto(v)
				}
			}
		case (num == 4 || num == 5) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return h, nil, bad("string")
			}
			msg = msg[n:]
			if num == 4 {
				h.hasClass, h.class = true, string(v)
			} else {
				h.msg = string(v)
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return h, nil, bad("field")
			}
			msg = msg[n:]
		}
	}
	if !hasCallID || !hasStatus {
		return h, nil, fmt.Errorf("%w: RpcResponseHeaderProto lacks required callId or status", ErrMalformed)
	}
	return h, rest, nil
}

// remote turns a non-SUCCESS header into a *RemoteError.
func (h *respHeader) remote() *RemoteError {
	return &RemoteError{Class: h.class, Message: h.msg, Code: h.code, Fatal: h.status == commonpb.RpcResponseHeaderProto_FATAL}
}

// decodeRequestHeaderProto decodes a delimited RequestHeaderProto from the
// front of b; all three fields are required. The names alias b.
func decodeRequestHeaderProto(b []byte) (method, protocol []byte, version uint64, rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	var has [4]bool
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 || !num.IsValid() {
			return nil, nil, 0, nil, fmt.Errorf("%w: bad tag in RequestHeaderProto", ErrMalformed)
		}
		msg = msg[n:]
		switch {
		case (num == 1 || num == 2) && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil, nil, 0, nil, fmt.Errorf("%w: bad string in RequestHeaderProto", ErrMalformed)
			}
			msg = msg[n:]
			has[num] = true
			if num == 1 {
				method = v
			} else {
				protocol = v
			}
		case num == 3 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(msg)
			if n < 0 {
				return nil, nil, 0, nil, fmt.Errorf("%w: bad varint in RequestHeaderProto", ErrMalformed)
			}
			msg = msg[n:]
			has[3], version = true, v
		default:
			n := protowire.ConsumeFieldValue(num, typ, msg)
			if n < 0 {
				return nil, nil, 0, nil, fmt.Errorf("%w: bad field %d in RequestHeaderProto", ErrMalformed, num)
			}
			msg = msg[n:]
		}
	}
	if !has[1] || !has[2] || !has[3] {
		return nil, nil, 0, nil, fmt.Errorf("%w: RequestHeaderProto lacks a required field (methodName, declaringClassProtocolName, clientProtocolVersion)", ErrMalformed)
	}
	return method, protocol, version, rest, nil
}
