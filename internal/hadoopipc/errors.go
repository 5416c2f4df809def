package hadoopipc

import (
	"errors"
	"fmt"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Sentinel errors. Callers match them with errors.Is; the IPC layer wraps
// them with detail.
var (
	// ErrFrameTooLarge: a length prefix exceeds the configured maximum. It is
	// returned before any buffer of that size is allocated.
	ErrFrameTooLarge = errors.New("hadoopipc: frame exceeds maximum size")
	// ErrMalformed: bytes on the wire that do not decode as the IPC protocol.
	ErrMalformed = errors.New("hadoopipc: malformed packet")
	// ErrServerClosed is returned by Serve after Shutdown or Close.
	ErrServerClosed = errors.New("hadoopipc: server closed")
	// ErrClientClosed is returned by calls on a closed Client.
	ErrClientClosed = errors.New("hadoopipc: client closed")
	// ErrConnectionClosed: the connection died while a call was pending or
	// being sent. The call may or may not have run on the server.
	ErrConnectionClosed = errors.New("hadoopipc: connection closed")
	// ErrDial: no connection could be established (the call was not sent).
	ErrDial = errors.New("hadoopipc: dial failed")
	// ErrAuth: the client could not complete SASL with the server.
	ErrAuth = errors.New("hadoopipc: authentication failed")
	// ErrDuplicateProtocol is returned by Register for a second registration
	// of the same protocol name and version.
	ErrDuplicateProtocol = errors.New("hadoopipc: protocol already registered")
)

// RemoteError is an error reply: what a handler returns to choose the Java
// class, and what the client returns for every non-SUCCESS reply. Use it
// with errors.As.
type RemoteError struct {
	Class   string // Java exception class name
	Message string
	Code    commonpb.RpcResponseHeaderProto_RpcErrorCodeProto // ERROR_APPLICATION by default
	Fatal   bool                                              // FATAL status: connection closed
}

func (e *RemoteError) Error() string {
	status := "ERROR"
	if e.Fatal {
		status = "FATAL"
	}
	return fmt.Sprintf("hadoop ipc %s %s: %s: %s", status, e.code(), e.Class, e.Message)
}

// code is Code with the ERROR_APPLICATION default applied.
func (e *RemoteError) code() commonpb.RpcResponseHeaderProto_RpcErrorCodeProto {
	if e.Code == 0 {
		return commonpb.RpcResponseHeaderProto_ERROR_APPLICATION
	}
	return e.Code
}

// Errorf builds an ERROR_APPLICATION reply carrying the Java class name.
func Errorf(class, format string, args ...any) *RemoteError {
	return &RemoteError{
		Class:   class,
		Message: fmt.Sprintf(format, args...),
		Code:    commonpb.RpcResponseHeaderProto_ERROR_APPLICATION,
	}
}

// IsStandby reports whether err is a StandbyException reply (RM HA: try the
// next address).
func IsStandby(err error) bool { return hasClass(err, ClassStandby) }

// IsRetriable reports whether err is a RetriableException reply.
func IsRetriable(err error) bool { return hasClass(err, ClassRetriable) }

func hasClass(err error, class string) bool {
	var re *RemoteError
	return errors.As(err, &re) && re.Class == class
}

// toRemote converts a handler error into the reply to send: a *RemoteError
// anywhere in the chain keeps its class; anything else is a YarnException
// with the error text, which is how Java clients expect YARN failures.
func toRemote(err error) *RemoteError {
	var re *RemoteError
	if errors.As(err, &re) {
		out := *re
		out.Code = re.code()
		// A handler cannot close the connection by returning Fatal: only the
		// IPC layer decides that.
		out.Fatal = false
		if out.Class == "" {
			out.Class = ClassYarnException
		}
		return &out
	}
	return &RemoteError{Class: ClassYarnException, Message: err.Error(), Code: commonpb.RpcResponseHeaderProto_ERROR_APPLICATION}
}

// fatal builds a FATAL reply.
func fatal(code commonpb.RpcResponseHeaderProto_RpcErrorCodeProto, class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: code, Fatal: true}
}

// ipcError builds a non-fatal IPC-layer ERROR reply.
func ipcError(code commonpb.RpcResponseHeaderProto_RpcErrorCodeProto, class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: code}
}

// Short names for the error codes used throughout the server.
const (
	errApplication         = commonpb.RpcResponseHeaderProto_ERROR_APPLICATION
	errNoSuchMethod        = commonpb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD
	errNoSuchProtocol      = commonpb.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL
	errRPCServer           = commonpb.RpcResponseHeaderProto_ERROR_RPC_SERVER
	errSerializingResponse = commonpb.RpcResponseHeaderProto_ERROR_SERIALIZING_RESPONSE
	errVersionMismatch     = commonpb.RpcResponseHeaderProto_ERROR_RPC_VERSION_MISMATCH
	fatalInvalidRPCHeader  = commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER
	fatalDeserializing     = commonpb.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST
	fatalVersionMismatch   = commonpb.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH
	fatalUnauthorized      = commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED
	fatalUnknown           = commonpb.RpcResponseHeaderProto_FATAL_UNKNOWN
)
