package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"google.golang.org/protobuf/proto"
)

// CallInfo describes the call an interceptor is looking at.
type CallInfo struct {
	Protocol   string
	Version    uint64
	Method     string
	CallID     int32
	ClientID   []byte
	RetryCount int32
	User       User
	Remote     net.Addr

	method Method
}

// Handler serves one decoded request.
type Handler func(ctx context.Context, req proto.Message) (proto.Message, error)

// Interceptor wraps a Handler, in the style of gRPC unary interceptors: it
// may inspect or replace the request, call next zero or one time, and
// inspect or replace the reply.
type Interceptor func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error)

// Chain composes interceptors; the first is outermost.
func Chain(interceptors ...Interceptor) Interceptor {
	switch len(interceptors) {
	case 0:
		return func(ctx context.Context, _ *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
			return next(ctx, req)
		}
	case 1:
		return interceptors[0]
	}
	return func(ctx context.Context, info *CallInfo, req proto.Message, final Handler) (proto.Message, error) {
		return chainFrom(interceptors, 0, info, final)(ctx, req)
	}
}

func chainFrom(ics []Interceptor, i int, info *CallInfo, final Handler) Handler {
	if i == len(ics) {
		return final
	}
	return func(ctx context.Context, req proto.Message) (proto.Message, error) {
		return ics[i](ctx, info, req, chainFrom(ics, i+1, info, final))
	}
}

// MetricsInterceptor counts calls and their duration.
func MetricsInterceptor(m *Metrics) Interceptor {
	return func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		outcome := "success"
		if err != nil {
			outcome = "error"
		}
		m.calls.WithLabelValues(info.Protocol, info.Method, outcome).Inc()
		m.duration.WithLabelValues(info.Protocol, info.Method).Observe(time.Since(start).Seconds())
		return resp, err
	}
}

// LoggingInterceptor logs failed calls at Info and every call at Debug.
func LoggingInterceptor(log *slog.Logger) Interceptor {
	return func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		if err != nil {
			re := toRemote(err)
			log.LogAttrs(ctx, slog.LevelInfo, "ipc call failed",
				slog.String("protocol", info.Protocol), slog.String("method", info.Method),
				slog.String("user", info.User.Name), slog.Any("remote", info.Remote),
				slog.String("class", re.Class), slog.String("error", re.Message),
				slog.Duration("took", time.Since(start)))
		} else if log.Enabled(ctx, slog.LevelDebug) {
			log.LogAttrs(ctx, slog.LevelDebug, "ipc call",
				slog.String("protocol", info.Protocol), slog.String("method", info.Method),
				slog.String("user", info.User.Name), slog.Duration("took", time.Since(start)))
		}
		return resp, err
	}
}

// Authorizer decides whether the connection's user may make a call. Return
// nil to allow; any other error is sent as an AccessControlException unless
// it is a *RemoteError.
type Authorizer func(ctx context.Context, info *CallInfo) error

// AuthInterceptor rejects calls the Authorizer refuses. A nil Authorizer
// allows every authenticated connection.
func AuthInterceptor(authorize Authorizer) Interceptor {
	return func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (proto.Message, error) {
		if authorize != nil {
			if err := authorize(ctx, info); err != nil {
				var re *RemoteError
				if errors.As(err, &re) {
					return nil, err
				}
				return nil, Errorf(ClassAccessControl, "user %s is not allowed to call %s.%s: %v", info.User.Name, info.Protocol, info.Method, err)
			}
		}
		return next(ctx, req)
	}
}

// RecoveryOption configures RecoveryInterceptor.
type RecoveryOption func(*recoveryOptions)

type recoveryOptions struct {
	log *slog.Logger
}

// WithRecoveryLogger logs each panic with its stack.
func WithRecoveryLogger(l *slog.Logger) RecoveryOption {
	return func(o *recoveryOptions) { o.log = l }
}

// RecoveryInterceptor turns a panicking handler into an ERROR reply
// (ERROR_RPC_SERVER, RpcServerException) instead of a crashed process.
func RecoveryInterceptor(opts ...RecoveryOption) Interceptor {
	o := recoveryOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	return func(ctx context.Context, info *CallInfo, req proto.Message, next Handler) (resp proto.Message, err error) {
		defer func() {
			if p := recover(); p != nil {
				if o.log != nil {
					o.log.Error("ipc handler panicked", "protocol", info.Protocol, "method", info.Method,
						"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				}
				resp = nil
				err = ipcError(errRPCServer, ClassRpcServerException, "internal error serving %s.%s", info.Protocol, info.Method)
			}
		}()
		return next(ctx, req)
	}
}
