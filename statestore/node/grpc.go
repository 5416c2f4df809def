package node

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/security"
)

// newGRPCServer builds the replica's gRPC server: mutual TLS when tls is
// set, and the interceptor chain metrics -> access log -> auth -> recovery
// (innermost, so a panicking handler is still counted, logged and
// answered with codes.Internal). Auth runs only under TLS: a plaintext
// replica has no identity to check (--insecure).
func newGRPCServer(cfg Config, tls *security.Reloader) *grpc.Server {
	log := cfg.Logger
	metrics := grpcprom.NewServerMetrics(
		grpcprom.WithServerCounterOptions(grpcprom.WithNamespace("yarnfed"), grpcprom.WithSubsystem("statestore")),
		grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramNamespace("yarnfed"), grpcprom.WithHistogramSubsystem("statestore")),
	)
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(metrics); err != nil {
			log.Warn("statestore: gRPC metrics not registered", "err", err)
		}
	}
	accessLog := logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		log.Log(ctx, slog.Level(lvl), msg, fields...)
	})
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		// Successful calls at debug: the store serves tens of thousands
		// a second; failures at the default levels.
		logging.WithLevels(func(c codes.Code) logging.Level {
			if c == codes.OK {
				return logging.LevelDebug
			}
			return logging.DefaultServerCodeToLevel(c)
		}),
		logging.WithFieldsFromContext(func(ctx context.Context) logging.Fields {
			if id, ok := security.PeerIdentity(ctx); ok {
				return logging.Fields{"peer.name", id.Name}
			}
			return nil
		}),
	}
	recoverOpt := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		log.Error("statestore: panic in gRPC handler", "panic", p, "stack", string(debug.Stack()))
		return status.Error(codes.Internal, fmt.Sprintf("statestore: internal error: %v", p))
	})
	unary := []grpc.UnaryServerInterceptor{metrics.UnaryServerInterceptor(), logging.UnaryServerInterceptor(accessLog, logOpts...)}
	stream := []grpc.StreamServerInterceptor{metrics.StreamServerInterceptor(), logging.StreamServerInterceptor(accessLog, logOpts...)}
	// ConnectionTimeout bounds the TLS handshake and HTTP/2 preface (the
	// default, 120 s, let idle sockets pile up); guardCreds tells the
	// connection limits (connguard.go) when a connection authenticated.
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(cfg.MaxContextBytes + 1<<20), grpc.ConnectionTimeout(cfg.GRPCHandshakeTimeout.D())}
	if tls != nil {
		auth := security.Authorizer{}
		unary = append(unary, auth.Unary())
		stream = append(stream, auth.Stream())
		opts = append(opts, grpc.Creds(guardCreds{credentials.NewTLS(tls.ServerConfig(""))}))
	} else {
		opts = append(opts, grpc.Creds(guardCreds{insecure.NewCredentials()}))
	}
	unary = append(unary, recovery.UnaryServerInterceptor(recoverOpt))
	stream = append(stream, recovery.StreamServerInterceptor(recoverOpt))
	opts = append(opts, grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	return grpc.NewServer(opts...)
}
