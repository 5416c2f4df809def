package router_test

import (
	"context"
	"sync"
	"testing"

	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
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
	s := serveFakeStore(t, f)
	rows, err := s.GetUAMs(routertest.Ctx(t), "application_1_0001", false)
	if err != nil {
		t.Fatalf("GetUAMs: %v", err)
	}
	if len(rows) != 1 || rows[0].SubCluster != "SC-2" || rows[0].Home != "SC-1" || !rows[0].Registered || rows[0].User != "alice" || rows[0].Proxy != "nm1:8049" {
		t.Fatalf("rows %+v", rows)
	}
	if _, err := s.GetUAMs(routertest.Ctx(t), "application_1_0001", true); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteUAM(routertest.Ctx(t), "application_1_0001", ""); err != nil || n != 1 {
		t.Fatalf("DeleteUAM: %d %v", n, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.stale) != 2 || f.stale[0] || !f.stale[1] || len(f.deleted) != 1 || f.deleted[0] != "application_1_0001/" {
		t.Fatalf("store saw stale=%v deleted=%v", f.stale, f.deleted)
	}
}

var _ router.UAMRegistry = (*router.ClientStore)(nil)
