package simrm

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Scale benchmarks: 10,000 simulated nodes and 1,000 running applications
// (registered unmanaged AMs holding 5 containers each) in one process.
//
//	go test -run '^$' -bench 'Scale' -benchmem ./internal/simrm/

const (
	scaleNodes = 10000
	scaleApps  = 1000
)

type scaleRM struct {
	apps int
	rm   *RM
	ctxs []context.Context // per app: the AM's authenticated identity
	ids  []AttemptID
	resp []int32
	toks []*Token // AMRMTokens, captured before register (reports stop carrying them then)
}

func newScaleRM(b testing.TB) *scaleRM { return newScaleRMSized(b, scaleNodes, scaleApps) }

func newScaleRMSized(b testing.TB, nodes, apps int) *scaleRM {
	b.Helper()
	cfg := TestConfig()
	cfg.Nodes = nodes
	cfg.Racks = 100
	cfg.ClientAddr, cfg.SchedulerAddr, cfg.AdminAddr, cfg.WebAddr = "", "", "", ""
	rm, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := &scaleRM{rm: rm, apps: apps}
	c := rm.core()
	for i := 0; i < apps; i++ {
		id, _ := c.NewApplication()
		if err := c.Submit(SubmitRequest{ID: id, User: "bench", Unmanaged: true}); err != nil {
			b.Fatal(err)
		}
		rep, _ := c.AppReport(id)
		at := *rep.CurrentAttempt
		if _, err := c.Register(at, RegisterRequest{Host: "am", RPCPort: 1}); err != nil {
			b.Fatal(err)
		}
		resp, err := c.Allocate(at, AllocateRequest{ResponseID: 0, Asks: []ResourceRequest{anyAsk(5, 1024)}})
		if err != nil {
			b.Fatal(err)
		}
		s.ids = append(s.ids, at)
		s.toks = append(s.toks, rep.AMRMToken)
		s.resp = append(s.resp, resp.ResponseID)
		s.ctxs = append(s.ctxs, hadoopipc.ContextWithUser(context.Background(), hadoopipc.User{
			Name: at.String(), AuthMethod: "TOKEN", TokenID: rep.AMRMToken.Identifier,
		}))
	}
	c.tick()
	for i, at := range s.ids {
		resp, err := c.Allocate(at, AllocateRequest{ResponseID: s.resp[i]})
		if err != nil || len(resp.Allocated) != 5 {
			b.Fatalf("setup allocate: %v (%d containers)", err, len(resp.Allocated))
		}
		s.resp[i] = resp.ResponseID
	}
	if m := c.Metrics(); m.AppsRunning != int32(apps) || m.ContainersAllocated != int32(5*apps) || m.TotalNodes != int32(nodes) {
		b.Fatalf("scale setup: %+v", m)
	}
	return s
}

// The benchmark bodies take the RM and an iteration count so that
// TestScaleBenchmarksSmall can run each once at small scale: benchmarks are
// not run by "go test", and a broken one should still fail CI.

func benchGetClusterMetrics(tb testing.TB, s *scaleRM, n int) {
	ctx := context.Background()
	req := &yarnpb.GetClusterMetricsRequestProto{}
	for i := 0; i < n; i++ {
		resp, err := s.rm.getClusterMetrics(ctx, req)
		if err != nil || resp.GetClusterMetrics().GetNumNodeManagers() != int32(s.rm.cfg.Nodes) {
			tb.Fatal(err)
		}
	}
}

func benchRESTMetrics(tb testing.TB, s *scaleRM, n int) {
	c := s.rm.core()
	for i := 0; i < n; i++ {
		if m := c.Metrics(); m.AppsRunning != int32(s.apps) {
			tb.Fatal("wrong metrics")
		}
	}
}

func benchAllocate(tb testing.TB, s *scaleRM, n int) {
	asks := []*yarnpb.ResourceRequestProto{nil, nil}
	for i := range asks {
		asks[i] = &yarnpb.ResourceRequestProto{
			Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(i + 1)),
		}
	}
	for i := 0; i < n; i++ {
		a := i % s.apps
		req := &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(s.resp[a]), Progress: proto.Float32(0.5),
			Ask: []*yarnpb.ResourceRequestProto{asks[(i/s.apps)%2]}}
		resp, err := s.rm.allocate(s.ctxs[a], req)
		if err != nil {
			tb.Fatal(err)
		}
		s.resp[a] = resp.GetResponseId()
	}
}

// fillAsks gives every application a pending ask no node can take.
func fillAsks(tb testing.TB, s *scaleRM) {
	c := s.rm.core()
	for i, at := range s.ids {
		resp, err := c.Allocate(at, AllocateRequest{ResponseID: s.resp[i], Asks: []ResourceRequest{anyAsk(100, 8192)}})
		if err != nil {
			tb.Fatal(err)
		}
		s.resp[i] = resp.ResponseID
	}
}

func benchSchedulePass(tb testing.TB, s *scaleRM, n int) {
	for i := 0; i < n; i++ {
		s.rm.core().tick()
	}
}

// startIPC serves the scheduler port and returns an AM client logged in
// with the first application's AMRMToken.
func startIPC(tb testing.TB, s *scaleRM) *hadoopipc.Client {
	s.rm.cfg.SchedulerAddr = "127.0.0.1:0"
	if err := s.rm.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.rm.Close() })
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{s.rm.Addrs().Scheduler},
		Protocol: hadoopipc.ProtocolApplicationMaster, Token: tokenPB(s.toks[0]), DialTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })
	return cl
}

func benchAllocateIPC(tb testing.TB, s *scaleRM, cl *hadoopipc.Client, n int) {
	for i := 0; i < n; i++ {
		var resp yarnpb.AllocateResponseProto
		if err := cl.Call(context.Background(), "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(s.resp[0])}, &resp); err != nil {
			tb.Fatal(err)
		}
		s.resp[0] = resp.GetResponseId()
	}
}

// BenchmarkScaleGetClusterMetrics is the ApplicationClientProtocol handler
// (request decode and wire encode excluded).
func BenchmarkScaleGetClusterMetrics(b *testing.B) {
	s := newScaleRM(b)
	b.ReportAllocs()
	b.ResetTimer()
	benchGetClusterMetrics(b, s, b.N)
}

// BenchmarkScaleRESTMetrics is the core of /ws/v1/cluster/metrics, which
// counts running and pending applications.
func BenchmarkScaleRESTMetrics(b *testing.B) {
	s := newScaleRM(b)
	b.ReportAllocs()
	b.ResetTimer()
	benchRESTMetrics(b, s, b.N)
}

// BenchmarkScaleAllocate is one AM heartbeat through the
// ApplicationMasterProtocol handler: token check, an ask update (the ANY
// count changes every time), and the response converted to protobuf.
// Heartbeats rotate over the 1,000 AMs.
func BenchmarkScaleAllocate(b *testing.B) {
	s := newScaleRM(b)
	b.ReportAllocs()
	b.ResetTimer()
	benchAllocate(b, s, b.N)
}

// BenchmarkScaleSchedulePass is one simulated NodeManager heartbeat: a full
// scheduling pass over 1,000 applications that all have pending asks no
// node can take.
func BenchmarkScaleSchedulePass(b *testing.B) {
	s := newScaleRM(b)
	fillAsks(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	benchSchedulePass(b, s, b.N)
}

// BenchmarkScaleAllocateIPC is the same heartbeat over a real loopback
// Hadoop IPC connection with a DIGEST-MD5 (AMRMToken) login, one caller.
func BenchmarkScaleAllocateIPC(b *testing.B) {
	s := newScaleRM(b)
	cl := startIPC(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	benchAllocateIPC(b, s, cl, b.N)
}

func TestScaleBenchmarksSmall(t *testing.T) {
	s := newScaleRMSized(t, 200, 20)
	benchGetClusterMetrics(t, s, 3)
	benchRESTMetrics(t, s, 3)
	benchAllocate(t, s, 50)
	fillAsks(t, s)
	benchSchedulePass(t, s, 3)
	benchAllocateIPC(t, s, startIPC(t, s), 3)
}
