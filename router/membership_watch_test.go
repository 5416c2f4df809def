package router

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// fakeWatchStore is a fake of the store's gRPC API holding sub-cluster
// rows, whose watch streams deliver each change to the newest stream
// first and to the others only when the test releases them. Independent
// watch streams (of one replica, or of a leader and a follower) may hand
// the same change to their consumers in any order; this fake takes the
// worst one on purpose.
type fakeWatchStore struct {
	pb.UnimplementedStateStoreServer
	mu      sync.Mutex
	rows    map[string]*pb.SubClusterInfo
	index   uint64
	streams []chan *pb.WatchEvent // in opening order
	lists   atomic.Int64          // ListSubClusters calls answered
}

func (f *fakeWatchStore) ListSubClusters(context.Context, *pb.ListSubClustersRequest) (*pb.ListSubClustersResponse, error) {
	f.lists.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &pb.ListSubClustersResponse{}
	for _, id := range []string{"SC-A", "SC-B"} {
		out.SubClusters = append(out.SubClusters, f.rows[id])
	}
	return out, nil
}

func (f *fakeWatchStore) Watch(r *pb.WatchRequest, stream pb.StateStore_WatchServer) error {
	ch := make(chan *pb.WatchEvent, 64)
	f.mu.Lock()
	f.streams = append(f.streams, ch)
	idx := f.index
	f.mu.Unlock()
	if err := stream.Send(&pb.WatchEvent{Kind: pb.WatchEvent_SYNCED, Index: idx}); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case e := <-ch:
			if err := stream.Send(e); err != nil {
				return err
			}
		}
	}
}

// set writes id's state and sends the event to the newest stream; the
// other streams get it once release is closed.
func (f *fakeWatchStore) set(id string, st pb.SubClusterState, release <-chan struct{}) {
	f.mu.Lock()
	f.index++
	row := &pb.SubClusterInfo{SubClusterId: id, State: st, LastHeartbeatMs: time.Now().UnixMilli(), ClientRmServiceAddress: id + ":8032"}
	f.rows[id] = row
	e := &pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Index: f.index, Key: id, SubCluster: row}
	streams := append([]chan *pb.WatchEvent(nil), f.streams...)
	f.mu.Unlock()
	streams[len(streams)-1] <- e
	go func() {
		<-release
		for _, ch := range streams[:len(streams)-1] {
			ch <- e
		}
	}()
}

// TestMembershipSeesLostThroughWatch: a sub-cluster written LOST reaches
// the router's membership through the store's watch, with the poll set
// to an hour so only the watch can deliver it. Before the fix the router
// followed a watch stream of its own while reading rows through the
// client's cache, which a second stream drops: when the router's stream
// came first, its refresh was served the cached rows from before the
// change and kept them until the next poll (the 1 s tail of LOST
// propagation in `bench federation`). Each round releases the other
// streams only after the router has refreshed on the change, the order
// that lost it.
func TestMembershipSeesLostThroughWatch(t *testing.T) {
	f := &fakeWatchStore{rows: map[string]*pb.SubClusterInfo{}}
	for _, id := range []string{"SC-A", "SC-B"} {
		f.rows[id] = &pb.SubClusterInfo{SubClusterId: id, State: pb.SubClusterState_SC_RUNNING, LastHeartbeatMs: time.Now().UnixMilli(), ClientRmServiceAddress: id + ":8032"}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	pb.RegisterStateStoreServer(g, f)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	c, err := client.New(client.Config{Addrs: []string{lis.Addr().String()}, RetryTimeout: 5 * time.Second, CallTimeout: 2 * time.Second, WatchSilence: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pollUntil(t, c.Synced)

	var fetches atomic.Int64
	m := newMembership(NewClientStore(c), nil, slog.New(slog.DiscardHandler))
	m.onFetch = func(map[SubClusterID]SubClusterInfo) { fetches.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.run(ctx, time.Hour)
	pollUntil(t, func() bool { return fetches.Load() > 0 })

	state := func() pb.SubClusterState {
		sc, _ := m.get("SC-A")
		return pb.SubClusterState(sc.State)
	}
	for round := range 6 {
		want := pb.SubClusterState_SC_LOST
		if round%2 == 1 {
			want = pb.SubClusterState_SC_RUNNING
		}
		before := fetches.Load()
		release := make(chan struct{})
		f.set("SC-A", want, release)
		pollUntil(t, func() bool { return fetches.Load() > before })
		close(release)
		if !pollFor(10*time.Second, func() bool { return state() == want }) {
			t.Fatalf("round %d: router's membership has SC-A %v 10 s after it was written %v (poll period 1 h: only the watch can deliver it)", round, state(), want)
		}
	}
}

func pollFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	if !pollFor(10*time.Second, cond) {
		t.Fatal("condition not met within 10 s")
	}
}
