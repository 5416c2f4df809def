// Package bench measures what the router costs: submitApplication and
// getApplicationReport throughput and latency through the router versus
// straight to the same simulated RM, in one run (`yarnfed bench router`).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// Config shapes a run.
type Config struct {
	// Duration is the measured time per target, split into Rounds
	// alternating between direct and router so RM-side drift (a growing app
	// table) hits both equally.
	Duration time.Duration
	Rounds   int
	// Concurrency is the number of client goroutines (one YARN client
	// connection shared by all, as a Java YarnClient shares one per user).
	Concurrency int
	// Store is the router's state store; nil uses an in-memory one (then
	// the numbers leave out store latency on submissions).
	Store router.StateStore
	// RMLatency is added by simrm to every call (its fault injection), to
	// model a real RM's service time (a real submitApplication writes the
	// RM's own state store). 0 measures pure overhead on a CPU-bound RM.
	RMLatency time.Duration
	Logger    *slog.Logger
}

// DefaultConfig is a short run fit for a laptop.
func DefaultConfig() Config {
	return Config{Duration: 10 * time.Second, Rounds: 4, Concurrency: 16}
}

type target struct {
	name     string
	client   *hadoopipc.Client
	submit   []time.Duration
	report   []time.Duration
	ops      int64
	elapsed  time.Duration
	failures int64
}

// Run starts one simrm and one router in front of it on loopback, drives
// both with the same workload and writes a table; the last line is the
// throughput ratio router/direct.
func Run(ctx context.Context, cfg Config, w io.Writer) error {
	if cfg.Duration <= 0 || cfg.Concurrency <= 0 || cfg.Rounds <= 0 {
		return errors.New("bench: duration, rounds and concurrency must be > 0")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rmCfg := simrm.TestConfig()
	rmCfg.ClusterID = "SC-1"
	rmCfg.Logger = log
	// Enough simulated nodes that applications finish as fast as they are
	// submitted: with 4 nodes (32 AMs at a time) a backlog of tens of
	// thousands built up during the run, and the bench measured the
	// simulator's queue, not the router.
	rmCfg.Nodes = 64
	rmCfg.SimAM.Containers = 0
	rmCfg.Faults.Latency = config.Duration(cfg.RMLatency)
	rm, err := simrm.New(rmCfg)
	if err != nil {
		return err
	}
	if err := rm.Start(ctx); err != nil {
		return err
	}
	defer rm.Close()
	addrs := rm.Addrs()

	store := cfg.Store
	if store == nil {
		mem := routertest.NewStore()
		store = mem
		mem.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: addrs.Client, AMRMServiceAddress: addrs.Scheduler,
			RMAdminServiceAddress: addrs.Admin, RMWebServiceAddress: addrs.Web, State: router.StateRunning})
	}
	rcfg := router.DefaultConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rcfg.ClientListener, rcfg.WebAddress, rcfg.Store, rcfg.Logger = ln, "", store, log
	rt, err := router.New(rcfg)
	if err != nil {
		return err
	}
	rctx, stop := context.WithCancel(ctx)
	var rwg sync.WaitGroup
	rwg.Go(func() { _ = rt.Run(rctx) })
	defer func() { stop(); rwg.Wait() }()

	mk := func(name, addr string) (*target, error) {
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench"})
		return &target{name: name, client: c}, err
	}
	direct, err := mk("direct", addrs.Client)
	if err != nil {
		return err
	}
	defer direct.client.Close()
	via, err := mk("router", rt.ClientRMAddr().String())
	if err != nil {
		return err
	}
	defer via.client.Close()

	// Warm up connections, caches and the JIT-less Go runtime alike.
	for _, t := range []*target{direct, via} {
		if err := t.round(ctx, cfg.Concurrency, 300*time.Millisecond, true); err != nil {
			return fmt.Errorf("warm-up %s: %w", t.name, err)
		}
	}
	per := cfg.Duration / time.Duration(cfg.Rounds)
	for range cfg.Rounds {
		for _, t := range []*target{direct, via} {
			if err := t.round(ctx, cfg.Concurrency, per, false); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
	}

	if direct.ops == 0 || via.ops == 0 {
		return fmt.Errorf("bench: no operation completed in %v (direct %d, router %d); use a longer --duration", cfg.Duration, direct.ops, via.ops)
	}
	fmt.Fprintf(w, "router bench: %d clients, %v per target, simrm on loopback (added RM latency %v), store %T\n", cfg.Concurrency, cfg.Duration, cfg.RMLatency, store)
	fmt.Fprintf(w, "%-8s %12s %10s %10s %10s %10s %8s\n", "target", "ops/s", "submit50", "submit99", "report50", "report99", "errors")
	for _, t := range []*target{direct, via} {
		fmt.Fprintf(w, "%-8s %12.0f %10s %10s %10s %10s %8d\n", t.name, t.rate(),
			pct(t.submit, 50), pct(t.submit, 99), pct(t.report, 50), pct(t.report, 99), t.failures)
	}
	fmt.Fprintf(w, "added p99: submit %s, report %s\n",
		pct(via.submit, 99)-pct(direct.submit, 99), pct(via.report, 99)-pct(direct.report, 99))
	fmt.Fprintf(w, "ratio router/direct throughput: %.3f\n", via.rate()/direct.rate())
	return nil
}

// round runs the workload for d: each iteration gets a new application id,
// submits it, and reads its report; an op is one submit or one report.
func (t *target) round(ctx context.Context, workers int, d time.Duration, warm bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var ops, fails atomic.Int64
	subs := make([][]time.Duration, workers)
	reps := make([][]time.Duration, workers)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				na := &yarnpb.GetNewApplicationResponseProto{}
				if err := t.client.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
					ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("bench"), Queue: proto.String("default"),
					Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
					AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
				}}
				s := time.Now()
				if err := t.client.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				subs[i] = append(subs[i], time.Since(s))
				s = time.Now()
				rr := &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}
				if err := t.client.Call(ctx, "getApplicationReport", rr, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				reps[i] = append(reps[i], time.Since(s))
				ops.Add(2)
			}
		})
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok && ops.Load() == 0 {
		return e // every call failed: the target is broken, not slow
	}
	if warm {
		return nil
	}
	t.elapsed += time.Since(start)
	t.ops += ops.Load()
	t.failures += fails.Load()
	for i := range workers {
		t.submit = append(t.submit, subs[i]...)
		t.report = append(t.report, reps[i]...)
	}
	return nil
}

func (t *target) rate() float64 { return float64(t.ops) / t.elapsed.Seconds() }

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(time.Microsecond)
}
