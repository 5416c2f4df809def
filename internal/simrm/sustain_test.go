package simrm

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Sustained load at default settings: clients submit applications over
// Hadoop IPC as fast as simrm answers, far faster than its 8 default nodes
// run them (each managed application holds its AM and two containers for
// 10 s). Before the queue split a scheduling pass walked every application
// waiting for an AM and the backlog grew without bound: direct throughput
// fell from 3,016 to 875 ops/s over five minutes while RSS grew from 130 to
// 490 MB. Now the backlog stops at MaxApplications (later submissions are
// rejected, as a capacity scheduler rejects them) and a pass skips the
// waiting applications once no AM fits.
//
//	go test -run '^$' -bench SustainedSubmit -benchtime 300s ./internal/simrm/
//
// reports ops/s of the first and the last tenth of the run and their ratio
// (1.0 = flat), and the heap in use at the end.

const sustainWorkers = 8

// sustain runs n ops (getNewApplication + submitApplication +
// getApplicationReport) against a default-config simrm over loopback IPC
// and returns the duration of each tenth of them.
func sustain(tb testing.TB, cfg Config, n int) (tenths []time.Duration, forgot int64, rm *RM) {
	tb.Helper()
	cfg.ClientAddr, cfg.SchedulerAddr, cfg.AdminAddr, cfg.WebAddr = "127.0.0.1:0", "", "", ""
	rm, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := rm.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rm.Close() })
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "bench", DialTimeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cl.Close() })

	var next, done, forgotten atomic.Int64
	marks := make([]time.Time, 11)
	marks[0] = time.Now()
	var markMu sync.Mutex
	var wg sync.WaitGroup
	var failed atomic.Value
	ctx := context.Background()
	for range sustainWorkers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := sustainOp(ctx, cl); errors.Is(err, errForgotten) {
					forgotten.Add(1)
				} else if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				d := done.Add(1)
				if tenth := d * 10 / int64(n); d*10%int64(n) < 10 && tenth >= 1 && tenth <= 10 {
					markMu.Lock()
					if marks[tenth].IsZero() {
						marks[tenth] = time.Now()
					}
					markMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatal(err)
	}
	marks[10] = time.Now()
	for i := 1; i <= 10; i++ {
		if marks[i].IsZero() {
			marks[i] = marks[i-1]
		}
		tenths = append(tenths, marks[i].Sub(marks[i-1]))
	}
	return tenths, forgotten.Load(), rm
}

var errForgotten = errors.New("application already forgotten")

func sustainOp(ctx context.Context, cl *hadoopipc.Client) error {
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := cl.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return fmt.Errorf("getNewApplication: %w", err)
	}
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("sustain"), Queue: proto.String("default"),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
	}}
	if err := cl.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return fmt.Errorf("submitApplication: %w", err)
	}
	rr := &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}
	if err := cl.Call(ctx, "getApplicationReport", rr, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
		var re *hadoopipc.RemoteError
		if errors.As(err, &re) && re.Class == hadoopipc.ClassApplicationNotFound {
			// Rejected (beyond MaxApplications) and already forgotten: at
			// thousands of rejections a second the last MaxCompletedApps
			// turn over in a fraction of a second, as on a real RM.
			return errForgotten
		}
		return fmt.Errorf("getApplicationReport: %w", err)
	}
	return nil
}

func BenchmarkSustainedSubmit(b *testing.B) {
	tenths, forgot, rm := sustain(b, DefaultConfig(), max(b.N, 100))
	per := float64(max(b.N, 100)) / 10
	first, last := per/tenths[0].Seconds(), per/tenths[9].Seconds()
	rates := make([]string, len(tenths))
	for i, d := range tenths {
		rates[i] = fmt.Sprintf("%.0f", per/d.Seconds())
	}
	b.Logf("ops/s per tenth of %d ops: %s", max(b.N, 100), strings.Join(rates, " "))
	b.ReportMetric(first, "first-ops/s")
	b.ReportMetric(last, "last-ops/s")
	b.ReportMetric(last/first, "last/first")
	b.ReportMetric(float64(forgot), "reports-forgotten")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	c := rm.core()
	c.mu.Lock()
	b.ReportMetric(float64(len(c.apps)), "apps-held")
	c.mu.Unlock()
}

// TestSustainedSubmitSmall runs the benchmark body briefly (benchmarks are
// not run by go test) with a small application limit, so the rejection path
// is taken too, and checks what the RM holds afterwards.
func TestSustainedSubmitSmall(t *testing.T) {
	cfg := DefaultConfig()
	// Enough completed ones that a rejected application's own report
	// (asked right after the submission) finds it.
	cfg.MaxApplications, cfg.MaxCompletedApps = 50, 100
	_, _, rm := sustain(t, cfg, 300)
	c := rm.core()
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.queueByName["default"]; q.size() > 50 {
		t.Errorf("%d live applications, limit 50", q.size())
	}
	if len(c.apps) > 50+100 || len(c.completed) > 100 || len(c.appOrder) > 2*(50+100) {
		t.Errorf("holding %d applications (%d completed, %d listed), want at most 50 live + 100 completed", len(c.apps), len(c.completed), len(c.appOrder))
	}
}
