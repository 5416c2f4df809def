package bench_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// BenchmarkRouterOp measures one router op (getNewApplication +
// submitApplication + getApplicationReport) in-process: simrm and the
// router on loopback, the router over the IN-MEMORY test store (no Raft
// write, so this isolates the router's own CPU, not a real submission's
// latency). "direct" runs the same op against simrm alone; router minus
// direct is what the router adds. The router logs at Info to io.Discard,
// so the audit lines are formatted as in production.
//
// Wall-clock numbers are noise on a loaded machine; compare cpu-us/op
// (user+sys CPU of the whole process per op, from getrusage; still
// inflated by contention), writes/op and reads/op (syscalls, from
// /proc/self/io), allocs/op and B/op, or instructions per op under
// callgrind (see router/DESIGN.md):
//
//	go test -run='^$' -bench=RouterOp -benchmem -benchtime=3000x ./router/bench/
func BenchmarkRouterOp(b *testing.B) {
	rmCfg := simrm.TestConfig()
	rmCfg.ClusterID = "SC-1"
	rmCfg.Logger = slog.New(slog.DiscardHandler)
	rmCfg.Nodes = 64
	rmCfg.SimAM.Containers = 0
	rm, err := simrm.New(rmCfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := rm.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rm.Close() })
	addrs := rm.Addrs()

	store := routertest.NewStore()
	store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: addrs.Client, AMRMServiceAddress: addrs.Scheduler,
		RMAdminServiceAddress: addrs.Admin, RMWebServiceAddress: addrs.Web, State: router.StateRunning})
	rcfg := router.DefaultConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	rcfg.ClientListener, rcfg.WebAddress, rcfg.Store = ln, "", store
	rcfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt, err := router.New(rcfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rt.Run(ctx) })
	b.Cleanup(func() { stop(); wg.Wait() })

	for _, target := range []struct{ name, addr string }{{"direct", addrs.Client}, {"router", rt.ClientRMAddr().String()}} {
		for _, clients := range []int{1, 16} {
			b.Run(target.name+"/clients="+itoa(clients), func(b *testing.B) {
				c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{target.addr},
					Protocol: hadoopipc.ProtocolApplicationClient, User: "bench", Pool: hadoopipc.NewPool()})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				if err := routerOp(c); err != nil { // connect, warm caches
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0, w0, r0 := cpuTime(), syscalls("syscw"), syscalls("syscr")
				b.ResetTimer()
				if clients == 1 {
					for b.Loop() {
						if err := routerOp(c); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.SetParallelism((clients + 1) / 2) // GOMAXPROCS is 2 here; x8 = 16 callers
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if err := routerOp(c); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.StopTimer()
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
				b.ReportMetric(float64(syscalls("syscw")-w0)/float64(b.N), "writes/op")
				b.ReportMetric(float64(syscalls("syscr")-r0)/float64(b.N), "reads/op")
			})
		}
	}
}

func routerOp(c *hadoopipc.Client) error {
	ctx := context.Background()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return err
	}
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("bench"), Queue: proto.String("default"),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
	}}
	if err := c.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return err
	}
	rr := &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}
	return c.Call(ctx, "getApplicationReport", rr, &yarnpb.GetApplicationReportResponseProto{})
}

// cpuTime is this process's user+sys CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// syscalls reads a counter of this process's read or write syscalls
// ("syscr", "syscw") from /proc/self/io; 0 where it is not available.
func syscalls(field string) int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+": "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
