package hadoopipc

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Method is one RPC method of a Protocol: its wire name and a typed handler.
type Method struct {
	name   string
	newReq func() proto.Message
	call   func(ctx context.Context, req proto.Message) (proto.Message, error)
}

// NewMethod binds a method name to a typed handler; newReq returns an empty
// request message.
func NewMethod[Req, Resp proto.Message](name string, newReq func() Req,
	h func(ctx context.Context, req Req) (Resp, error)) Method {
	return Method{
		name:   name,
		newReq: func() proto.Message { return newReq() },
		call: func(ctx context.Context, req proto.Message) (proto.Message, error) {
			r, ok := req.(Req)
			if !ok {
				// Only reachable if an interceptor swapped the request.
				return nil, fmt.Errorf("hadoopipc: method %s got request %T", name, req)
			}
			resp, err := h(ctx, r)
			if err != nil {
				return nil, err
			}
			return resp, nil
		},
	}
}

// Name is the method name as it appears on the wire.
func (m Method) Name() string { return m.name }

// Protocol is a named, versioned set of methods served together.
type Protocol struct {
	Name    string // wire protocol name, e.g. ProtocolApplicationClient
	Version uint64 // 1 for YARN protocols
	Methods []Method
}

type protoKey struct {
	name    string
	version uint64
}

// registry maps (protocol, version, method) to handlers. It is filled before
// Serve and read-only afterwards, except for Register calls made while
// serving, which take the server mutex and publish a fresh copy.
type registry struct {
	protocols map[protoKey]map[string]Method
	// versions lists the registered versions of each protocol name, to tell
	// "unknown protocol" from "wrong version".
	versions map[string][]uint64
}

func (r *registry) clone() *registry {
	out := &registry{protocols: make(map[protoKey]map[string]Method, len(r.protocols)+1), versions: make(map[string][]uint64, len(r.versions)+1)}
	for k, v := range r.protocols {
		out.protocols[k] = v
	}
	for k, v := range r.versions {
		out.versions[k] = append([]uint64(nil), v...)
	}
	return out
}

func (r *registry) add(p Protocol) error {
	if p.Name == "" {
		return fmt.Errorf("hadoopipc: protocol without a name")
	}
	k := protoKey{p.Name, p.Version}
	if _, dup := r.protocols[k]; dup {
		return fmt.Errorf("%w: %s version %d", ErrDuplicateProtocol, p.Name, p.Version)
	}
	methods := make(map[string]Method, len(p.Methods))
	for _, m := range p.Methods {
		if m.name == "" || m.call == nil || m.newReq == nil {
			return fmt.Errorf("hadoopipc: protocol %s: method %q not built with NewMethod", p.Name, m.name)
		}
		if _, dup := methods[m.name]; dup {
			return fmt.Errorf("hadoopipc: protocol %s: method %s listed twice", p.Name, m.name)
		}
		methods[m.name] = m
	}
	r.protocols[k] = methods
	r.versions[p.Name] = append(r.versions[p.Name], p.Version)
	return nil
}

// lookup resolves a call or returns the IPC-level ERROR reply Hadoop sends.
func (r *registry) lookup(protocol string, version uint64, method string) (Method, *RemoteError) {
	methods, ok := r.protocols[protoKey{protocol, version}]
	if !ok {
		if vs := r.versions[protocol]; len(vs) > 0 {
			return Method{}, ipcError(errVersionMismatch, ClassVersionMismatch,
				"protocol %s version mismatch: client version %d, server versions %v", protocol, version, vs)
		}
		return Method{}, ipcError(errNoSuchProtocol, ClassNoSuchProtocol, "unknown protocol: %s", protocol)
	}
	m, ok := methods[method]
	if !ok {
		return Method{}, ipcError(errNoSuchMethod, ClassNoSuchMethod, "unknown method %s called on protocol %s", method, protocol)
	}
	return m, nil
}
