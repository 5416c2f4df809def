package hadoopipc

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
)

// Method is one RPC method of a Protocol: its wire name and a typed handler.
type Method struct {
	name     string
	protocol string // set by Register
	newReq   func() proto.Message
	call     func(ctx context.Context, req proto.Message) (proto.Message, error)
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
	// Errors, when set, translates the errors of every method's handler
	// (Errors.Remote) before interceptors and the reply see them: the
	// server's sentinel errors become Java exception classes.
	Errors ClassMap
}

// registry maps (protocol, version, method) to handlers. It is filled before
// Serve and read-only afterwards; Register while serving publishes a fresh
// copy. Lookups take the wire bytes: indexing a map with string(b) does not
// allocate, and the names handed to handlers are the registered strings.
type registry struct {
	protocols map[string]*protocolEntry
}

type protocolEntry struct {
	versions map[uint64]map[string]Method
}

func newRegistry() *registry { return &registry{protocols: map[string]*protocolEntry{}} }

func (r *registry) clone() *registry {
	out := &registry{protocols: make(map[string]*protocolEntry, len(r.protocols)+1)}
	for name, e := range r.protocols {
		ne := &protocolEntry{versions: make(map[uint64]map[string]Method, len(e.versions)+1)}
		for v, ms := range e.versions {
			ne.versions[v] = ms
		}
		out.protocols[name] = ne
	}
	return out
}

func (r *registry) add(p Protocol) error {
	if p.Name == "" {
		return fmt.Errorf("hadoopipc: protocol without a name")
	}
	e := r.protocols[p.Name]
	if e == nil {
		e = &protocolEntry{versions: map[uint64]map[string]Method{}}
		r.protocols[p.Name] = e
	}
	if _, dup := e.versions[p.Version]; dup {
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
		m.protocol = p.Name
		if len(p.Errors) > 0 {
			m.call = p.Errors.wrap(m.call)
		}
		methods[m.name] = m
	}
	e.versions[p.Version] = methods
	return nil
}

// lookup resolves a call or returns the IPC-level ERROR reply Hadoop sends.
func (r *registry) lookup(protocol []byte, version uint64, method []byte) (Method, *RemoteError) {
	e, ok := r.protocols[string(protocol)]
	if !ok {
		return Method{}, ipcError(errNoSuchProtocol, ClassNoSuchProtocol, "unknown protocol: %s", protocol)
	}
	methods, ok := e.versions[version]
	if !ok {
		vs := make([]uint64, 0, len(e.versions))
		for v := range e.versions {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		return Method{}, ipcError(errVersionMismatch, ClassVersionMismatch,
			"protocol %s version mismatch: client version %d, server versions %v", protocol, version, vs)
	}
	m, ok := methods[string(method)]
	if !ok {
		return Method{}, ipcError(errNoSuchMethod, ClassNoSuchMethod, "unknown method %s called on protocol %s", method, protocol)
	}
	return m, nil
}
