package store

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// BenchmarkOneClientRound: one caller inserting application homes into three
// in-process replicas over loopback TCP, Raft log fsync on, data dirs under
// $TMPDIR, with the leader's log write before replication (serial: upstream
// hashicorp/raft) and in parallel with it (the default). Reports the p50
// insert and, from hashicorp/raft's own timers (go-metrics, an in-memory
// sink), the means of the round's parts in ms:
//
//	local-append  the leader's own StoreLogs (serial: dispatchLog, which is
//	              the StoreLogs; parallel: the appender's write)
//	ae-rpc        an AppendEntries round trip to a follower (its store included)
//	follower-store a follower's StoreLogs
//	commit        dispatch to commit on the leader
//	fsm-apply     the FSM's batch apply (one bbolt transaction)
//
// go test -run '^$' -bench BenchmarkOneClientRound -benchtime 2000x ./statestore/store/
func BenchmarkOneClientRound(b *testing.B) {
	// Interleaved, three times each: the shared machine's load drifts.
	for _, mode := range []string{"serial", "parallel", "serial", "parallel", "serial", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			inm := metrics.NewInmemSink(time.Hour, time.Hour)
			mc := metrics.DefaultConfig("b")
			mc.EnableHostname, mc.EnableRuntimeMetrics, mc.EnableServiceLabel = false, false, false
			if _, err := metrics.NewGlobal(mc, inm); err != nil {
				b.Fatal(err)
			}
			defer metrics.NewGlobal(mc, &metrics.BlackholeSink{})
			leader := startTCPCluster(b, mode == "serial")
			ctx := context.Background()
			run := time.Now().UnixMilli()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				_, err := leader.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{
					ApplicationId: fmt.Sprintf("application_%d_%06d", run, i+1), HomeSubClusterId: "SC-1"}})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
			means := map[string]float64{}
			counts := map[string]int{}
			for _, iv := range inm.Data() {
				for name, s := range iv.Samples {
					means[name] += s.Sum
					counts[name] += s.Count
				}
			}
			mean := func(prefix string) float64 {
				sum, n := 0.0, 0
				for name := range means {
					if strings.HasPrefix(name, prefix) {
						sum += means[name]
						n += counts[name]
					}
				}
				if n == 0 {
					return 0
				}
				return sum / float64(n)
			}
			local := mean("b.raft.leader.dispatchLog")
			if mode == "parallel" {
				local = mean("b.raft.leader.parallelAppend")
			}
			b.ReportMetric(local, "local-append-ms")
			b.ReportMetric(mean("b.raft.replication.appendEntries.rpc;"), "ae-rpc-ms")
			b.ReportMetric(mean("b.raft.rpc.appendEntries.storeLogs"), "follower-store-ms")
			b.ReportMetric(mean("b.raft.commitTime"), "commit-ms")
			b.ReportMetric(mean("b.raft.fsm.applyBatch"), "fsm-apply-ms")
		})
	}
}

// startTCPCluster opens three replicas on loopback TCP and returns the
// leader.
func startTCPCluster(b *testing.B, serial bool) *Store {
	var peers []Peer
	for i := 0; i < 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		peers = append(peers, Peer{ID: fmt.Sprintf("r%d", i), RaftAddr: addr})
	}
	var stores []*Store
	for _, p := range peers {
		s, err := Open(Config{
			NodeID: p.ID, Dir: b.TempDir(), RaftAddr: p.RaftAddr, GRPCAddr: "127.0.0.1:1",
			Bootstrap: true, Peers: peers, ParallelLeaderAppend: !serial,
			HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
			LeaderLeaseTimeout: 250 * time.Millisecond, CommitTimeout: 10 * time.Millisecond,
			Logger: discardLogger(), LogStore: testLogStore,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		for _, s := range stores {
			if s.IsLeader() {
				if _, err := s.Propose(ctx, CmdSetNodeAddress, &pb.SetNodeAddressCommand{NodeId: s.NodeID(), GrpcAddress: "127.0.0.1:1"}); err != nil {
					b.Fatal(err)
				}
				return s
			}
		}
		if ctx.Err() != nil {
			b.Fatal("no leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
