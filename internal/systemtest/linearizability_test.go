package systemtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/lincheck"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// History-checked linearizability of the state store (statestore/DESIGN.md
// "Linearizability check"): concurrent clients run application-home and
// policy operations against three real replica processes while a nemesis
// SIGKILLs and restarts the leader, SIGSTOPs followers and the leader, and
// partitions the replicas (netcut_test.go); porcupine then checks the
// recorded history against lincheck's model.
//
//	go test -run TestStoreLinearizable ./internal/systemtest/                      # short run (make test)
//	YARNFED_LINCHECK_DURATION=10m go test -run TestStoreLinearizable -timeout 30m ./internal/systemtest/
//	make lincheck-long                                                             # the same, 10 minutes
//
// On a violation the HTML visualization is written to $YARNFED_ARTIFACTS
// (default: $TMPDIR/yarnfed-artifacts) and named in the failure.

// cutStore is a 3-replica store whose replicas reach each other only
// through netCut proxies.
type cutStore struct {
	*storeCluster
	nc    *netCut
	conns []*grpc.ClientConn
	stubs []pb.StateStoreClient // one per replica, dialing its real gRPC port
}

func startCutStore(t *testing.T, h *harness, n int) *cutStore {
	t.Helper()
	cs := &cutStore{storeCluster: &storeCluster{h: h}}
	cs.nc = newNetCut(func(i int) int {
		if i >= len(cs.nodes) || cs.nodes[i].p == nil {
			return 0
		}
		p := cs.nodes[i].p
		if dead, _ := p.Exited(); dead {
			return 0
		}
		return p.Pid()
	})
	t.Cleanup(cs.nc.close)
	raftP, grpcP := make([]*cutProxy, n), make([]*cutProxy, n)
	var peers []string
	for i := range n {
		var err error
		if raftP[i], err = cs.nc.proxy(i); err != nil {
			t.Fatal(err)
		}
		if grpcP[i], err = cs.nc.proxy(i); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, fmt.Sprintf("ss%d=%s", i+1, raftP[i].addr()))
	}
	h.launch(fmt.Sprintf("%d-replica state store behind cuttable links", n), 3*n, 30*time.Second, func(ports []string) []*proc {
		cs.nodes = nil
		var ps []*proc
		for i := range n {
			nd := &storeNode{id: fmt.Sprintf("ss%d", i+1), grpc: ports[3*i], raft: ports[3*i+1], httpAddr: ports[3*i+2]}
			nd.dir = dataDir(h, fmt.Sprintf("%s-%s", nd.id, strings.ReplaceAll(nd.raft, ":", "_")))
			raftP[i].setTarget(nd.raft)
			grpcP[i].setTarget(nd.grpc)
			cs.nodes = append(cs.nodes, nd)
		}
		for i, nd := range cs.nodes {
			nd.p = h.spawn("statestore-"+nd.id, "statestore", "--node-id", nd.id, "--data-dir", nd.dir,
				"--grpc-address", nd.grpc, "--grpc-advertise", grpcP[i].addr(),
				"--raft-address", nd.raft, "--raft-advertise", raftP[i].addr(),
				"--http-address", nd.httpAddr, "--bootstrap", "--peers", strings.Join(peers, ","),
				"--heartbeat-timeout", "500ms", "--election-timeout", "500ms", "--insecure")
			ps = append(ps, nd.p)
		}
		return ps
	}, cs.agreedLeader)
	for _, nd := range cs.nodes {
		conn, err := grpc.NewClient(nd.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		cs.conns = append(cs.conns, conn)
		cs.stubs = append(cs.stubs, pb.NewStateStoreClient(conn))
	}
	return cs
}

// others lists the indexes of every node but x.
func (cs *cutStore) others(x int) []int {
	var o []int
	for i := range cs.nodes {
		if i != x {
			o = append(o, i)
		}
	}
	return o
}

// isolateLeader cuts the leader off from the followers for two seconds.
func (cs *cutStore) isolateLeader(t *testing.T) {
	l := cs.index(cs.leader(t))
	cs.nc.partition([]int{l}, cs.others(l))
	time.Sleep(2 * time.Second)
	cs.nc.heal()
}

// freezeLeader stops the leader's process (SIGSTOP) for 1.5 seconds.
func (cs *cutStore) freezeLeader(t *testing.T) {
	l := cs.leader(t)
	signal(t, l.p, syscall.SIGSTOP)
	time.Sleep(1500 * time.Millisecond)
	signal(t, l.p, syscall.SIGCONT)
}

func (cs *cutStore) index(nd *storeNode) int {
	for i, x := range cs.nodes {
		if x == nd {
			return i
		}
	}
	panic("not our replica")
}

// do runs one operation on replica r and records it. Answers the store
// gives only for calls it did not apply (Unavailable with the store's
// not-applied marker, storepb.NotApplied: not the leader, no leader,
// leadership changing, leader unreachable before sending) drop the call; timeouts, broken connections and Aborted
// ("outcome unknown") leave a write pending. The store's claim that an
// Unavailable call was not applied is thereby checked too.
func do(ctx context.Context, rec *lincheck.Recorder, client int, stub pb.StateStoreClient, in lincheck.Input, stale bool) error {
	_, err := doCounted(ctx, rec, client, stub, in, stale)
	return err
}

// doCounted is do, also returning the answer's gRPC code.
func doCounted(ctx context.Context, rec *lincheck.Recorder, client int, stub pb.StateStoreClient, in lincheck.Input, stale bool) (codes.Code, error) {
	call := rec.Invoke(client, in)
	var read *pb.ReadOptions
	if stale {
		read = &pb.ReadOptions{Stale: true}
	}
	var out lincheck.Output
	var err error
	switch in.Kind {
	case lincheck.InsertHome:
		var r *pb.AddApplicationHomeResponse
		r, err = stub.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: in.Key, HomeSubClusterId: in.Value}})
		out.Value = r.GetStored().GetHomeSubClusterId()
	case lincheck.GetHome:
		var r *pb.GetApplicationHomeResponse
		r, err = stub.GetApplicationHome(ctx, &pb.GetApplicationHomeRequest{ApplicationId: in.Key, Read: read})
		out.Value = r.GetHome().GetHomeSubClusterId()
	case lincheck.UpdateHome:
		_, err = stub.UpdateApplicationHome(ctx, &pb.UpdateApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: in.Key, HomeSubClusterId: in.Value}})
	case lincheck.DeleteHome:
		_, err = stub.DeleteApplicationHome(ctx, &pb.DeleteApplicationHomeRequest{ApplicationId: in.Key})
	case lincheck.SetPolicy:
		_, err = stub.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: in.Key, Type: linPolicyType, Params: []byte(in.Value)}})
	case lincheck.GetPolicy:
		var r *pb.GetPolicyResponse
		r, err = stub.GetPolicy(ctx, &pb.GetPolicyRequest{Queue: in.Key, Read: read})
		out.Value = string(r.GetPolicy().GetParams())
	}
	st, _ := status.FromError(err)
	switch {
	case err == nil:
		call.Return(out)
	case st.Code() == codes.NotFound && in.Kind != lincheck.InsertHome && in.Kind != lincheck.SetPolicy:
		call.Return(lincheck.Output{NotFound: true})
	case pb.IsNotApplied(err):
		call.Failed()
	case st.Code() == codes.InvalidArgument, st.Code() == codes.PermissionDenied, st.Code() == codes.Unimplemented,
		st.Code() == codes.NotFound, st.Code() == codes.FailedPrecondition:
		call.Failed()
		return st.Code(), fmt.Errorf("%s: %w", in.Kind, err)
	default:
		call.Unknown()
	}
	return st.Code(), nil
}

const linPolicyType = "org.apache.hadoop.yarn.server.federation.policies.manager.UniformBroadcastPolicyManager"

// linWorkload runs clients until ctx ends. Application keys come from a
// window of 8 that moves on every 2 s (so each key's history, and the
// checker's search, stays small however long the run); policies use 3
// queues throughout. Killed replicas are skipped (a refused connection
// teaches nothing); frozen and cut-off ones are not.
func linWorkload(ctx context.Context, t *testing.T, cs *cutStore, rec *lincheck.Recorder, clients int, down func(i int) bool, codeCounts *[codes.Unauthenticated + 1]atomic.Int64) *sync.WaitGroup {
	start := time.Now()
	var wg sync.WaitGroup
	var seq atomic.Int64
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				r := rng.IntN(len(cs.stubs))
				if down(r) {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				in := randomOp(rng, start, seq.Add(1), opMix{30, 58, 73, 83, 91})
				// Not the run's ctx: a call in flight at the end finishes
				// (or times out) on its own and is recorded either way.
				octx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
				code, err := doCounted(octx, rec, c, cs.stubs[r], in, false)
				cancel()
				if err != nil {
					t.Errorf("client %d on %s: %v", c, cs.nodes[r].id, err)
					return
				}
				codeCounts[code].Add(1)
				if code != codes.OK && code != codes.NotFound {
					// Do not spin on a replica that has no leader.
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	return &wg
}

// artifactDir is where failure visualizations go.
func artifactDir() string {
	if d := os.Getenv("YARNFED_ARTIFACTS"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "yarnfed-artifacts")
}

// TestStoreLinearizableUnderFaults: 6 clients against 3 replicas while the
// nemesis cycles through leader SIGKILL + restart, follower SIGSTOP,
// leader isolation by partition, leader SIGSTOP, and a follower cut off;
// the whole history must be linearizable. Short by default (make test);
// YARNFED_LINCHECK_DURATION runs it longer.
func TestStoreLinearizableUnderFaults(t *testing.T) {
	h := newHarness(t)
	duration := lincheckDuration(t)
	cs := startCutStore(t, h, 3)
	rec := lincheck.NewRecorder()
	var killed sync.Map // replica index -> true while SIGKILLed
	down := func(i int) bool { _, ok := killed.Load(i); return ok }
	ctx, stop := context.WithCancel(context.Background())
	var codeCounts [codes.Unauthenticated + 1]atomic.Int64
	wg := linWorkload(ctx, t, cs, rec, 6, down, &codeCounts)
	stopClients := stopAtCleanup(t, stop, wg)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	faults := []struct {
		name string
		run  func()
	}{
		{"SIGKILL the leader, restart it", func() {
			l := cs.leader(t)
			i := cs.index(l)
			killed.Store(i, true)
			l.p.Kill()
			time.Sleep(1500 * time.Millisecond)
			h.restart(l.p)
			killed.Delete(i)
		}},
		{"SIGSTOP a follower", func() {
			l := cs.leader(t)
			f := cs.nodes[cs.others(cs.index(l))[rng.IntN(2)]]
			signal(t, f.p, syscall.SIGSTOP)
			time.Sleep(1500 * time.Millisecond)
			signal(t, f.p, syscall.SIGCONT)
		}},
		{"partition the leader from the followers", func() { cs.isolateLeader(t) }},
		{"SIGSTOP the leader", func() { cs.freezeLeader(t) }},
		{"cut a follower off", func() {
			l := cs.index(cs.leader(t))
			f := cs.others(l)[rng.IntN(2)]
			cs.nc.partition([]int{f}, cs.others(f))
			time.Sleep(1500 * time.Millisecond)
			cs.nc.heal()
		}},
	}
	end := time.Now().Add(duration)
	n := 0
	for time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond) // some operations in calm weather
		f := faults[n%len(faults)]
		if n >= len(faults) {
			f = faults[rng.IntN(len(faults))]
		}
		t.Logf("fault %d: %s", n+1, f.name)
		f.run()
		n++
		waitFor(t, 30*time.Second, "an agreed leader after "+f.name, cs.agreedLeader)
	}
	time.Sleep(time.Second) // operations after the last recovery
	stopClients()
	ok, unknown, dropped := rec.Stats()
	var answers []string
	for c := range codeCounts {
		if n := codeCounts[c].Load(); n > 0 {
			answers = append(answers, fmt.Sprintf("%s %d", codes.Code(c), n))
		}
	}
	t.Logf("%d faults; %d operations answered, %d writes with unknown outcome, %d refused or unanswered reads (answers: %s)",
		n, ok, unknown, dropped, strings.Join(answers, ", "))
	if ok < 200 {
		t.Fatalf("only %d operations answered: the workload did not run", ok)
	}
	if err := lincheck.Check(rec.Operations(), 2*time.Minute+duration, artifactDir()); err != nil {
		t.Fatal(err)
	}
}

// TestLinearizabilityCheckerCatchesStaleReads: the check run against real
// processes can fail. A follower is cut off from the others, the home is
// updated through the leader, and a stale read (ReadOptions.stale, which
// serves local state by design) from the cut-off follower still answers
// the old home; the checker must call that history not linearizable.
func TestLinearizabilityCheckerCatchesStaleReads(t *testing.T) {
	h := newHarness(t)
	cs := startCutStore(t, h, 3)
	rec := lincheck.NewRecorder()
	leader := cs.index(cs.leader(t))
	follower := (leader + 1) % 3
	lead, fol := cs.stubs[leader], cs.stubs[follower]
	const app = "application_1700000000000_000001"
	must := func(stub pb.StateStoreClient, in lincheck.Input, stale bool) {
		t.Helper()
		if err := do(ctxT(t, 10*time.Second), rec, 0, stub, in, stale); err != nil {
			t.Fatal(err)
		}
	}
	must(lead, lincheck.Input{Kind: lincheck.InsertHome, Key: app, Value: "SC-1"}, false)
	waitFor(t, 10*time.Second, "the follower has the insert", func() (bool, string) {
		r, err := fol.GetApplicationHome(ctxT(t, 5*time.Second), &pb.GetApplicationHomeRequest{ApplicationId: app, Read: &pb.ReadOptions{Stale: true}})
		return err == nil && r.GetHome().GetHomeSubClusterId() == "SC-1", fmt.Sprint(r, err)
	})
	cs.nc.partition([]int{follower}, []int{leader, 3 - leader - follower})
	must(lead, lincheck.Input{Kind: lincheck.UpdateHome, Key: app, Value: "SC-2"}, false)
	must(lead, lincheck.Input{Kind: lincheck.GetHome, Key: app}, false)
	must(fol, lincheck.Input{Kind: lincheck.GetHome, Key: app}, true) // stale: the old home
	ops := rec.Operations()
	if last := ops[len(ops)-1].Output.(lincheck.Output); last.Value != "SC-1" {
		t.Fatalf("the cut-off follower's stale read answered %+v, want the old home SC-1 (is the cut real?)", last)
	}
	err := lincheck.Check(ops, time.Minute, t.TempDir())
	if !errors.Is(err, lincheck.ErrNotLinearizable) {
		t.Fatalf("checker on a history with a stale read: %v, want a violation", err)
	}
	// The same history without the stale read is fine.
	if err := lincheck.Check(ops[:len(ops)-1], time.Minute, ""); err != nil {
		t.Fatalf("history without the stale read: %v", err)
	}
}

// lincheckDuration is how long a linearizability run lasts: 12 s, or
// YARNFED_LINCHECK_DURATION.
func lincheckDuration(t *testing.T) time.Duration {
	d := os.Getenv("YARNFED_LINCHECK_DURATION")
	if d == "" {
		return 12 * time.Second
	}
	duration, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("YARNFED_LINCHECK_DURATION: %v", err)
	}
	return duration
}

// opMix is a lincheck client's operation mix: cumulative percentages below
// which a draw is an insert, a get, an update, a delete of a home, or a
// policy write; the rest are policy reads.
type opMix [5]int

// randomOp draws one operation: homes of a window of eight application ids
// that slides every two seconds (so operations collide on a key while it is
// live), policies of three queues, v the written value.
func randomOp(rng *rand.Rand, start time.Time, v int64, mix opMix) lincheck.Input {
	window := int(time.Since(start) / (2 * time.Second))
	app := fmt.Sprintf("application_1700000000000_%06d", window*4+rng.IntN(8))
	queue := fmt.Sprintf("q%d", rng.IntN(3))
	switch p := rng.IntN(100); {
	case p < mix[0]:
		return lincheck.Input{Kind: lincheck.InsertHome, Key: app, Value: fmt.Sprintf("SC-%d", v)}
	case p < mix[1]:
		return lincheck.Input{Kind: lincheck.GetHome, Key: app}
	case p < mix[2]:
		return lincheck.Input{Kind: lincheck.UpdateHome, Key: app, Value: fmt.Sprintf("SC-%d", v)}
	case p < mix[3]:
		return lincheck.Input{Kind: lincheck.DeleteHome, Key: app}
	case p < mix[4]:
		return lincheck.Input{Kind: lincheck.SetPolicy, Key: queue, Value: fmt.Sprintf(`{"v":%d}`, v)}
	default:
		return lincheck.Input{Kind: lincheck.GetPolicy, Key: queue}
	}
}
