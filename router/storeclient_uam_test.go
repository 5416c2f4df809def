package router_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// fakeUAMStore is a fake StateStore gRPC service holding UAM rows, to
// check the adapter's mapping through the real statestore client.
type fakeUAMStore struct {
	fakeLossyStore
	mu      sync.Mutex
	rows    []*pb.UAMRecord
	stale   []bool // Read.Stale of each GetUAMs
	deleted []string
}

func (f *fakeUAMStore) GetUAMs(_ context.Context, r *pb.GetUAMsRequest) (*pb.GetUAMsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale = append(f.stale, r.GetRead().GetStale())
	out := &pb.GetUAMsResponse{}
	for _, x := range f.rows {
		if x.GetApplicationId() == r.GetApplicationId() {
			out.Records = append(out.Records, x)
		}
	}
	return out, nil
}

func (f *fakeUAMStore) DeleteUAM(_ context.Context, r *pb.DeleteUAMRequest) (*pb.DeleteUAMResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, r.GetApplicationId()+"/"+r.GetSubClusterId())
	return &pb.DeleteUAMResponse{Deleted: 1}, nil
}

// TestClientStoreReachesUAMRegistry: ClientStore reads UAM rows through
// statestore/client (linearizable for a kill, stale for display) and
// deletes them. It fails until statestore/client has GetUAMs/DeleteUAM
// with UAMAPI.md's signatures (the router would otherwise never kill a
// UAM in production).
func TestClientStoreReachesUAMRegistry(t *testing.T) {
	f := &fakeUAMStore{rows: []*pb.UAMRecord{{ApplicationId: "application_1_0001", SubClusterId: "SC-2", HomeSubClusterId: "SC-1",
		UamAttemptId: "appattempt_1_0001_000001", Proxy: "nm1:8049", User: "alice", Registered: true, AmrmToken: []byte("secret")}}}
	s := startUAMStore(t, f)
	rows, err := s.GetUAMs(ctxT(t), "application_1_0001", false)
	if err != nil {
		t.Fatalf("GetUAMs: %v", err)
	}
	if len(rows) != 1 || rows[0].SubCluster != "SC-2" || rows[0].Home != "SC-1" || !rows[0].Registered || rows[0].User != "alice" || rows[0].Proxy != "nm1:8049" {
		t.Fatalf("rows %+v", rows)
	}
	if _, err := s.GetUAMs(ctxT(t), "application_1_0001", true); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteUAM(ctxT(t), "application_1_0001", ""); err != nil || n != 1 {
		t.Fatalf("DeleteUAM: %d %v", n, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.stale) != 2 || f.stale[0] || !f.stale[1] || len(f.deleted) != 1 || f.deleted[0] != "application_1_0001/" {
		t.Fatalf("store saw stale=%v deleted=%v", f.stale, f.deleted)
	}
}

func startUAMStore(t *testing.T, f *fakeUAMStore) *router.ClientStore {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterStateStoreServer(g, f)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := client.New(client.Config{Addrs: []string{lis.Addr().String()}, RetryTimeout: 5 * time.Second, CallTimeout: 2 * time.Second, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return router.NewClientStore(c)
}

var _ router.UAMRegistry = (*router.ClientStore)(nil)
