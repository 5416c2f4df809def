// Package ipctest starts hadoopipc servers and clients on loopback for
// tests of code that serves or calls Hadoop IPC protocols.
//
//	srv := ipctest.Start(t, hadoopipc.DefaultServerConfig(), myProtocol)
//	c := ipctest.Client(t, srv.Addr, hadoopipc.ProtocolApplicationClient, "alice")
package ipctest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"google.golang.org/protobuf/proto"
)

// Server is a running hadoopipc server on 127.0.0.1.
type Server struct {
	*hadoopipc.Server
	Addr string
	done chan error
}

// Start registers protos and serves on a fresh loopback port. The server is
// shut down (gracefully, 5 s at most) when the test ends.
func Start(t testing.TB, cfg hadoopipc.ServerConfig, protos ...hadoopipc.Protocol) *Server {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("ipctest: %v", err)
	}
	s := hadoopipc.NewServer(cfg)
	for _, p := range protos {
		if err := s.Register(p); err != nil {
			t.Fatalf("ipctest: %v", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ipctest: %v", err)
	}
	srv := &Server{Server: s, Addr: ln.Addr().String(), done: make(chan error, 1)}
	go func() { srv.done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("ipctest: shutdown: %v", err)
		}
		if err := <-srv.done; !errors.Is(err, hadoopipc.ErrServerClosed) {
			t.Errorf("ipctest: Serve: %v", err)
		}
	})
	return srv
}

// Client returns a SIMPLE-auth client for protocol at addr, closed when the
// test ends.
func Client(t testing.TB, addr, protocol, user string) *hadoopipc.Client {
	t.Helper()
	return ClientWith(t, hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: protocol, User: user})
}

// ClientWith returns a client built from cfg, closed when the test ends.
func ClientWith(t testing.TB, cfg hadoopipc.ClientConfig) *hadoopipc.Client {
	t.Helper()
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	c, err := hadoopipc.NewClient(cfg)
	if err != nil {
		t.Fatalf("ipctest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Secrets is an in-memory hadoopipc.SecretManager: Add a token, then log in
// with it.
type Secrets struct {
	mu     sync.Mutex
	tokens map[string]secret
}

type secret struct {
	password []byte
	user     string
}

// Add makes identifier/password a valid token for user and returns it as a
// TokenProto of the given kind.
func (s *Secrets) Add(identifier, password []byte, user, kind string) *commonpb.TokenProto {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]secret{}
	}
	s.tokens[string(identifier)] = secret{password: append([]byte(nil), password...), user: user}
	return &commonpb.TokenProto{Identifier: identifier, Password: password, Kind: proto.String(kind), Service: proto.String("")}
}

// Remove revokes a token.
func (s *Secrets) Remove(identifier []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, string(identifier))
}

// RetrievePassword implements hadoopipc.SecretManager.
func (s *Secrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.tokens[string(identifier)]
	if !ok {
		return nil, "", fmt.Errorf("ipctest: unknown token identifier %x", identifier)
	}
	return sec.password, sec.user, nil
}
