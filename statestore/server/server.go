// Package server serves a statestore replica over gRPC: the StateStore and
// Cluster services. Writes and linearizable reads that reach a follower are
// forwarded to the leader, so clients may talk to any replica.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// forwardedKey marks a request a follower forwarded, so a replica that is
// not the leader either (leadership moved meanwhile) answers Unavailable
// instead of forwarding again; the client retries.
const forwardedKey = "x-yarnfed-forwarded"

// Config configures a Server.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	// DialOptions are used to reach the leader when forwarding (default:
	// insecure, for loopback and private networks).
	DialOptions []grpc.DialOption
	// ProgressEvery is how often a watch stream carries a PROGRESS event
	// (default 1s); clients treat a few silent periods as a dead replica.
	ProgressEvery time.Duration
}

// Server implements pb.StateStoreServer and pb.ClusterServer.
type Server struct {
	pb.UnimplementedStateStoreServer
	pb.UnimplementedClusterServer

	st            *store.Store
	logger        *slog.Logger
	dial          []grpc.DialOption
	progressEvery time.Duration

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// New returns a Server for cfg.Store.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.DialOptions) == 0 {
		cfg.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	return &Server{st: cfg.Store, logger: cfg.Logger, dial: cfg.DialOptions, progressEvery: cfg.ProgressEvery, conns: map[string]*grpc.ClientConn{}}
}

// Register adds both services to g.
func (s *Server) Register(g *grpc.Server) {
	pb.RegisterStateStoreServer(g, s)
	pb.RegisterClusterServer(g, s)
}

// Close closes the connections used for forwarding.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	for a, c := range s.conns {
		err = errors.Join(err, c.Close())
		delete(s.conns, a)
	}
	return err
}

// ToStatus translates store errors to gRPC status errors at the edge.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	c := store.Code(err)
	if c == codes.Unavailable {
		// The store answers Unavailable only for commands it never
		// proposed (store.Code); say so, so that clients can tell it from
		// a connection broken after the command was sent.
		return pb.NotApplied(err.Error())
	}
	return status.Error(c, err.Error())
}

func forwarded(ctx context.Context) bool {
	md, ok := metadata.FromIncomingContext(ctx)
	return ok && len(md.Get(forwardedKey)) > 0
}

// leader returns a connection to the leader for forwarding.
func (s *Server) leader(ctx context.Context) (*grpc.ClientConn, context.Context, error) {
	if forwarded(ctx) {
		return nil, nil, pb.NotApplied("statestore: not the leader (forwarded request)")
	}
	id, addr := s.st.Leader()
	if id == "" || addr == "" {
		return nil, nil, pb.NotApplied(fmt.Sprintf("statestore: no leader known (leader %q)", id))
	}
	if id == s.st.NodeID() {
		// We were the leader a moment ago; the caller's retry will sort it out.
		return nil, nil, pb.NotApplied("statestore: leadership changing")
	}
	s.mu.Lock()
	c, ok := s.conns[addr]
	if !ok {
		var err error
		if c, err = grpc.NewClient(addr, s.dial...); err != nil {
			s.mu.Unlock()
			return nil, nil, pb.NotApplied(fmt.Sprintf("statestore: dial leader %s: %v", addr, err))
		}
		s.conns[addr] = c
	}
	s.mu.Unlock()
	out := metadata.AppendToOutgoingContext(ctx, forwardedKey, s.st.NodeID())
	return c, out, nil
}

type method[Req, Resp any] func(context.Context, Req, ...grpc.CallOption) (Resp, error)

// write runs local on the leader, else forwards.
func write[Req, Resp any](ctx context.Context, s *Server, req Req, local func(context.Context, Req) (Resp, error), remote func(pb.StateStoreClient) method[Req, Resp]) (Resp, error) {
	if s.st.IsLeader() {
		resp, err := local(ctx, req)
		if !errors.Is(err, store.ErrNotLeader) {
			return resp, ToStatus(err)
		}
	}
	var zero Resp
	c, fctx, err := s.leader(ctx)
	if err != nil {
		return zero, err
	}
	// The leader's answer goes back as it came, details included: a
	// not-applied refusal stays marked, while a link to the leader that
	// breaks mid-call is a bare Unavailable (the leader may have applied
	// the command), which clients must treat as an unknown outcome.
	return forward(fctx, req, remote(pb.NewStateStoreClient(c)))
}

// forward calls the leader. A call that failed before gRPC gave it a
// transport stream (no connection to the leader) was never sent, so its
// Unavailable is marked not applied; once a stream existed the request may
// have reached the leader, and a bare Unavailable stays unmarked.
func forward[Req, Resp any](ctx context.Context, req Req, m method[Req, Resp]) (Resp, error) {
	var p peer.Peer
	resp, err := m(ctx, req, grpc.Peer(&p))
	if err != nil && p.Addr == nil && status.Code(err) == codes.Unavailable && !pb.IsNotApplied(err) {
		return resp, pb.NotApplied("statestore: leader unreachable: " + status.Convert(err).Message())
	}
	return resp, err
}

// read serves from local state when stale reads are asked for or when a
// read barrier confirms this replica leads; otherwise it forwards.
func read[Req, Resp any](ctx context.Context, s *Server, req Req, opts *pb.ReadOptions, local func() (Resp, error), remote func(pb.StateStoreClient) method[Req, Resp]) (Resp, error) {
	if opts.GetStale() {
		resp, err := local()
		return resp, ToStatus(err)
	}
	if s.st.IsLeader() {
		err := s.st.ReadBarrier(ctx)
		if err == nil {
			resp, err := local()
			return resp, ToStatus(err)
		}
		if !errors.Is(err, store.ErrNotLeader) {
			var zero Resp
			return zero, ToStatus(err)
		}
	}
	var zero Resp
	c, fctx, err := s.leader(ctx)
	if err != nil {
		return zero, err
	}
	return forward(fctx, req, remote(pb.NewStateStoreClient(c)))
}
