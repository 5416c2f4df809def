package router_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// fakeLossyStore is a fake StateStore gRPC service holding homes in a map.
// Its UpdateApplicationHome applies the update when apply is set and then
// answers a bare Unavailable, as the client sees a write whose reply was
// lost with its connection (or one refused by something in between).
type fakeLossyStore struct {
	pb.UnimplementedStateStoreServer
	mu      sync.Mutex
	homes   map[string]string
	apply   bool
	updates int
}

func (f *fakeLossyStore) UpdateApplicationHome(_ context.Context, r *pb.UpdateApplicationHomeRequest) (*pb.UpdateApplicationHomeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	if f.apply {
		f.homes[r.GetHome().GetApplicationId()] = r.GetHome().GetHomeSubClusterId()
	}
	return nil, status.Error(codes.Unavailable, "fake: connection reset")
}

func (f *fakeLossyStore) GetApplicationHome(_ context.Context, r *pb.GetApplicationHomeRequest) (*pb.GetApplicationHomeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sc, ok := f.homes[r.GetApplicationId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no home")
	}
	return &pb.GetApplicationHomeResponse{Home: &pb.ApplicationHome{ApplicationId: r.GetApplicationId(), HomeSubClusterId: sc}}, nil
}

// TestUpdateHomeResolvesUnknownOutcome: the router's update of a home may
// have been applied when the reply was lost. The client does not resend
// it; the router reads the home back and goes on only if it holds the
// router's choice.
func TestUpdateHomeResolvesUnknownOutcome(t *testing.T) {
	f := &fakeLossyStore{homes: map[string]string{"application_1_0001": "sc1"}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterStateStoreServer(g, f)
	go g.Serve(lis)
	defer g.Stop()
	c, err := client.New(client.Config{Addrs: []string{lis.Addr().String()}, RetryTimeout: 5 * time.Second, CallTimeout: 2 * time.Second, DisableCache: true, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := router.NewClientStore(c)
	ctx := context.Background()

	f.mu.Lock()
	f.apply = true
	f.mu.Unlock()
	if err := s.UpdateApplicationHome(ctx, "application_1_0001", "sc2"); err != nil {
		t.Fatalf("applied update whose reply was lost: %v", err)
	}
	f.mu.Lock()
	f.apply = false
	f.mu.Unlock()
	if err := s.UpdateApplicationHome(ctx, "application_1_0001", "sc3"); !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("update of unknown outcome that did not apply: %v, want ErrUnknownOutcome", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.updates != 2 {
		t.Fatalf("%d updates reached the store, want 2 (none resent)", f.updates)
	}
}
