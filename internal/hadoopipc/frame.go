package hadoopipc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// DefaultMaxFrameBytes bounds one packet. Hadoop's default is 128 MiB; YARN
// messages are far smaller (the largest are application lists), and half of
// that still leaves room while halving what one hostile peer can pin.
const DefaultMaxFrameBytes = 64 << 20

// preamble is the connection header a client sends once.
//
//	+------+------+------+------+---------+--------------+--------------+
//	| 'h'  | 'r'  | 'p'  | 'c'  | version | serviceClass | authProtocol |
//	| 0x68 | 0x72 | 0x70 | 0x63 | 0x09    | 1 byte       | 0x00 | 0xDF  |
//	+------+------+------+------+---------+--------------+--------------+
//	                                            0x00 = none (SIMPLE, no SASL)
//	                                            0xDF = SASL (-33)
type preamble struct {
	magic        [4]byte
	version      byte
	serviceClass byte
	authProtocol byte
}

const preambleLen = 7

func (p preamble) bytes() [preambleLen]byte {
	return [preambleLen]byte{p.magic[0], p.magic[1], p.magic[2], p.magic[3], p.version, p.serviceClass, p.authProtocol}
}

// frame layout, both directions, after the preamble:
//
//	+--------------------------+---------------+--------+---------------+---------+
//	| N: uint32, big-endian    | varint len(H) | H      | varint len(B) | B       |
//	| (bytes that follow)      |               | header |               | body... |
//	+--------------------------+---------------+--------+---------------+---------+
//	|<-------- 4 bytes ------->|<------------------ N bytes ------------------->|
//
// Requests: H = RpcRequestHeaderProto; B = RequestHeaderProto then the request
// message (each varint-delimited), or IpcConnectionContextProto (call id -3),
// or RpcSaslProto (call id -33), or nothing (ping, -4).
// Replies:  H = RpcResponseHeaderProto; B = the response message only on
// SUCCESS (or RpcSaslProto for call id -33).

// readFrameLen reads the 4-byte length prefix and checks it against max
// before anything of that size is allocated.
func readFrameLen(r io.Reader, max int, lenBuf *[4]byte) (int, error) {
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(lenBuf[:])
	// A Java peer treats the prefix as a signed int; anything with the top
	// bit set is as wrong as anything over the limit.
	if n > uint32(max) || n > 1<<31-1 {
		return 0, fmt.Errorf("%w: length prefix %d, limit %d", ErrFrameTooLarge, n, max)
	}
	return int(n), nil
}

// readFrame reads one length-prefixed packet. buf is reused when it is large
// enough; the returned slice aliases it.
func readFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	var lenBuf [4]byte
	n, err := readFrameLen(r, max, &lenBuf)
	if err != nil {
		return nil, err
	}
	if cap(buf) >= n || n <= growFrom {
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf, nil
	}
	// A large announced length is only a promise: grow the buffer as the
	// bytes arrive, so a peer that announces 64 MiB and sends nothing pins
	// 64 KiB, not 64 MiB (Hadoop allocates the whole length up front).
	b := bytes.NewBuffer(make([]byte, 0, growFrom))
	got, err := b.ReadFrom(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if got < int64(n) {
		return nil, io.ErrUnexpectedEOF
	}
	return b.Bytes(), nil
}

// growFrom is the size up to which readFrame trusts the length prefix.
const growFrom = 64 << 10

// nextDelimited splits one varint-length-delimited message off the front of
// b. The length is checked against what is left of b, so a hostile prefix
// cannot cause an allocation or an out-of-range slice.
//
//	+---------------------+-----------------+-----
//	| varint L (1-5 bytes)| L message bytes | rest
//	+---------------------+-----------------+-----
func nextDelimited(b []byte) (msg, rest []byte, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: missing delimited message", ErrMalformed)
	}
	l, n := protowire.ConsumeVarint(b)
	if n < 0 {
		return nil, nil, fmt.Errorf("%w: bad varint length prefix", ErrMalformed)
	}
	b = b[n:]
	if l > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: delimited length %d exceeds the %d bytes left", ErrMalformed, l, len(b))
	}
	return b[:l], b[l:], nil
}

// unmarshalDelimited decodes the next delimited message of b into m.
func unmarshalDelimited(b []byte, m proto.Message) (rest []byte, err error) {
	msg, rest, err := nextDelimited(b)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(msg, m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return rest, nil
}

// appendDelimited appends varint(len(m)) and m.
func appendDelimited(dst []byte, m proto.Message) ([]byte, error) {
	size := proto.Size(m)
	dst = protowire.AppendVarint(dst, uint64(size))
	return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst, m)
}

// appendFrame appends one complete packet: the 4-byte length, then each
// message varint-delimited. nil messages are skipped.
func appendFrame(dst []byte, msgs ...proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	var err error
	for _, m := range msgs {
		if m == nil {
			continue
		}
		if dst, err = appendDelimited(dst, m); err != nil {
			return dst[:start], err
		}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst, nil
}

// wireCallID converts a request call id (sint32) to the reply header's
// uint32: negative ids become large values (5-byte varints), as in Java.
func wireCallID(id int32) uint32 { return uint32(id) }

// bytesReader is a minimal io.Reader over a byte slice (avoids importing
// bytes for one use).
type sliceReader struct{ b []byte }

func bytesReader(b []byte) *sliceReader { return &sliceReader{b} }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
