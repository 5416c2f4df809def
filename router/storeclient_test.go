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
	mu       sync.Mutex
	homes    map[string]*pb.ApplicationHome
	apply    bool
	updates  int
	inserts  int
	dropNext bool // the next batched insert applies, then answers Unavailable
}

func (f *fakeLossyStore) AddApplicationHomes(_ context.Context, r *pb.AddApplicationHomesRequest) (*pb.AddApplicationHomesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inserts++
	out := &pb.AddApplicationHomesResponse{}
	for _, h := range r.GetHomes() {
		res := &pb.AddApplicationHomesResponse_Result{}
		if old, ok := f.homes[h.GetApplicationId()]; ok {
			res.Stored = old
		} else {
			f.homes[h.GetApplicationId()] = h
			res.Stored, res.Inserted = &pb.ApplicationHome{ApplicationId: h.GetApplicationId(), HomeSubClusterId: h.GetHomeSubClusterId()}, true
		}
		out.Results = append(out.Results, res)
	}
	if f.dropNext {
		f.dropNext = false
		return nil, status.Error(codes.Unavailable, "fake: connection reset")
	}
	return out, nil
}

func (f *fakeLossyStore) UpdateApplicationHome(_ context.Context, r *pb.UpdateApplicationHomeRequest) (*pb.UpdateApplicationHomeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates++
	if old, ok := f.homes[r.GetHome().GetApplicationId()]; ok && f.apply {
		f.homes[r.GetHome().GetApplicationId()] = &pb.ApplicationHome{ApplicationId: old.GetApplicationId(), HomeSubClusterId: r.GetHome().GetHomeSubClusterId(), SubmissionContext: old.GetSubmissionContext()}
	}
	return nil, status.Error(codes.Unavailable, "fake: connection reset")
}

func (f *fakeLossyStore) GetApplicationHome(_ context.Context, r *pb.GetApplicationHomeRequest) (*pb.GetApplicationHomeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.homes[r.GetApplicationId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no home")
	}
	return &pb.GetApplicationHomeResponse{Home: &pb.ApplicationHome{ApplicationId: r.GetApplicationId(), HomeSubClusterId: h.GetHomeSubClusterId()}}, nil
}

// serveFakeStore serves srv, a fake of the store's gRPC API, on a
// loopback port and returns the router's store client over it.
func serveFakeStore(t *testing.T, srv pb.StateStoreServer) *router.ClientStore {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterStateStoreServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := client.New(client.Config{Addrs: []string{lis.Addr().String()}, RetryTimeout: 5 * time.Second, CallTimeout: 2 * time.Second, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return router.NewClientStore(c)
}

// TestUpdateHomeResolvesUnknownOutcome: the router's update of a home may
// have been applied when the reply was lost. The client does not resend
// it; the router reads the home back and goes on only if it holds the
// router's choice.
func TestUpdateHomeResolvesUnknownOutcome(t *testing.T) {
	f := &fakeLossyStore{homes: map[string]*pb.ApplicationHome{"application_1_0001": {ApplicationId: "application_1_0001", HomeSubClusterId: "sc1"}}}
	s := serveFakeStore(t, f)
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

// TestAddHomeInsertsAgainAfterUnknownOutcome: the router's batched insert
// was applied and its reply lost. The client reports an unknown outcome;
// the router inserts again, finds its own row (inserted=false, its own
// submission context) and goes on.
func TestAddHomeInsertsAgainAfterUnknownOutcome(t *testing.T) {
	f := &fakeLossyStore{homes: map[string]*pb.ApplicationHome{}, dropNext: true}
	s := serveFakeStore(t, f)
	sc, sub, inserted, err := s.AddApplicationHome(context.Background(), "application_1_0002", "sc1", []byte("ctx"))
	if err != nil || sc != "sc1" || inserted || string(sub) != "ctx" {
		t.Fatalf("insert after an unknown outcome: %q %q inserted=%v %v, want sc1 with its own context, not inserted", sc, sub, inserted, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inserts != 2 {
		t.Fatalf("%d inserts reached the store, want 2", f.inserts)
	}
}
