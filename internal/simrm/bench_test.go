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
	rm    *RM
	ctxs  []context.Context // per app: the AM's authenticated identity
	ids   []AttemptID
	resp  []int32
	tokID [][]byte
}

func newScaleRM(b *testing.B) *scaleRM {
	b.Helper()
	cfg := TestConfig()
	cfg.Nodes = scaleNodes
	cfg.Racks = 100
	cfg.ClientAddr, cfg.SchedulerAddr, cfg.AdminAddr, cfg.WebAddr = "", "", "", ""
	rm, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s := &scaleRM{rm: rm}
	c := rm.core()
	for i := 0; i < scaleApps; i++ {
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
	if m := c.Metrics(); m.AppsRunning != scaleApps || m.ContainersAllocated != 5*scaleApps || m.TotalNodes != scaleNodes {
		b.Fatalf("scale setup: %+v", m)
	}
	return s
}

// BenchmarkScaleGetClusterMetrics is the ApplicationClientProtocol handler
// (request decode and wire encode excluded).
func BenchmarkScaleGetClusterMetrics(b *testing.B) {
	s := newScaleRM(b)
	ctx := context.Background()
	req := &yarnpb.GetClusterMetricsRequestProto{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := s.rm.getClusterMetrics(ctx, req)
		if err != nil || resp.GetClusterMetrics().GetNumNodeManagers() != scaleNodes {
			b.Fatal(err)
		}
	}
}

// BenchmarkScaleRESTMetrics is the core of /ws/v1/cluster/metrics, which
// counts running and pending applications.
func BenchmarkScaleRESTMetrics(b *testing.B) {
	s := newScaleRM(b)
	c := s.rm.core()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if m := c.Metrics(); m.AppsRunning != scaleApps {
			b.Fatal("wrong metrics")
		}
	}
}

// BenchmarkScaleAllocate is one AM heartbeat through the
// ApplicationMasterProtocol handler: token check, an ask update (the ANY
// count changes every time), and the response with its containers and NM
// tokens converted to protobuf. Heartbeats rotate over the 1,000 AMs.
func BenchmarkScaleAllocate(b *testing.B) {
	s := newScaleRM(b)
	asks := []*yarnpb.ResourceRequestProto{nil, nil}
	for i := range asks {
		asks[i] = &yarnpb.ResourceRequestProto{
			Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(i + 1)),
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := i % scaleApps
		req := &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(s.resp[a]), Progress: proto.Float32(0.5),
			Ask: []*yarnpb.ResourceRequestProto{asks[(i/scaleApps)%2]}}
		resp, err := s.rm.allocate(s.ctxs[a], req)
		if err != nil {
			b.Fatal(err)
		}
		s.resp[a] = resp.GetResponseId()
	}
}

// BenchmarkScaleSchedulePass is one simulated NodeManager heartbeat: a full
// scheduling pass over 1,000 applications that all have pending asks, on a
// cluster with room for only a few of them each pass.
func BenchmarkScaleSchedulePass(b *testing.B) {
	s := newScaleRM(b)
	c := s.rm.core()
	for i, at := range s.ids {
		resp, err := c.Allocate(at, AllocateRequest{ResponseID: s.resp[i], Asks: []ResourceRequest{anyAsk(100, 8192)}})
		if err != nil {
			b.Fatal(err)
		}
		s.resp[i] = resp.ResponseID
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.tick()
	}
}

// BenchmarkScaleAllocateIPC is the same heartbeat over a real loopback
// Hadoop IPC connection with a DIGEST-MD5 (AMRMToken) login, one caller.
func BenchmarkScaleAllocateIPC(b *testing.B) {
	s := newScaleRM(b)
	s.rm.cfg.SchedulerAddr = "127.0.0.1:0"
	if err := s.rm.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer s.rm.Close()
	rep, _ := s.rm.core().AppReport(s.ids[0].App)
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{s.rm.Addrs().Scheduler},
		Protocol: hadoopipc.ProtocolApplicationMaster, Token: tokenPB(rep.AMRMToken), DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	next := s.resp[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var resp yarnpb.AllocateResponseProto
		if err := cl.Call(context.Background(), "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(next)}, &resp); err != nil {
			b.Fatal(err)
		}
		next = resp.GetResponseId()
	}
}
