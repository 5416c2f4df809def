// Package bench measures what the AMRMProxy costs (`yarnfed bench
// amrmproxy`): allocate heartbeats through the proxy versus straight to the
// same simulated RM with one sub-cluster, and, with three sub-clusters of
// different service times, the proxy's fan-out latency versus the slowest
// RM alone. One run, one table, the ratio last.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/policies"
)

// Config shapes a run.
type Config struct {
	// Duration is the measured time per target, split into Rounds
	// alternating between direct and proxy.
	Duration time.Duration
	Rounds   int
	// AMs is the number of concurrent application masters (each heartbeats
	// back to back; an AM has one heartbeat in flight, as AMRMClient).
	AMs int
	// FanoutLatency is the service time of the three RMs of the fan-out
	// part (the last is the slowest); empty skips the fan-out part.
	FanoutLatency []time.Duration
	Logger        *slog.Logger
}

// DefaultConfig is a short run fit for a laptop.
func DefaultConfig() Config {
	// Two AMs (one per core of the 2-core reference machine) measure
	// latency below saturation; --ams 8 shows the proxy under load.
	return Config{Duration: 6 * time.Second, Rounds: 3, AMs: 2,
		FanoutLatency: []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond}}
}

// staticStore is the membership of the bench's RMs and no stored policy
// (every queue gets the default, UniformBroadcast: every ask to every
// sub-cluster, every heartbeat to every UAM).
type staticStore struct{ rows []amrmproxy.SubCluster }

func (s staticStore) SubClusters(context.Context) ([]amrmproxy.SubCluster, error) { return s.rows, nil }
func (staticStore) PolicyConfig(context.Context, string) (policies.PolicyConfig, bool, error) {
	return policies.PolicyConfig{}, false, nil
}

// fed is the RMs and the proxy of one part.
type fed struct {
	rms   []*simrm.RM
	proxy *amrmproxy.Proxy
	stop  func()
	dir   string
}

func startFed(ctx context.Context, n int, log *slog.Logger) (*fed, error) {
	f := &fed{}
	var rows []amrmproxy.SubCluster
	for i := 1; i <= n; i++ {
		cfg := simrm.TestConfig()
		cfg.ClusterID = fmt.Sprintf("SC-%d", i)
		cfg.HostPrefix = fmt.Sprintf("sc%d-node-", i)
		cfg.Logger = log
		rm, err := simrm.New(cfg)
		if err != nil {
			f.close()
			return nil, err
		}
		if err := rm.Start(ctx); err != nil {
			f.close()
			return nil, err
		}
		f.rms = append(f.rms, rm)
		a := rm.Addrs()
		rows = append(rows, amrmproxy.SubCluster{ID: cfg.ClusterID, AMRMServiceAddress: a.Scheduler, ClientRMServiceAddress: a.Client,
			State: policies.StateRunning, LastHeartbeat: time.Now()})
	}
	dir, err := os.MkdirTemp("", "yarnfed-bench-amrmproxy-")
	if err != nil {
		f.close()
		return nil, err
	}
	f.dir = dir
	home := f.rms[0].AMRMSecrets()
	pcfg := amrmproxy.DefaultConfig()
	pcfg.SubClusterID, pcfg.AMRMAddress, pcfg.WebAddress, pcfg.DataDir = "SC-1", "127.0.0.1:0", "", dir
	pcfg.Store, pcfg.Logger = staticStore{rows}, log
	// In-process, the simulated home RM lends its token verifier in place
	// of the SASL relay (see simrm.RM.AMRMSecrets).
	pcfg.Secrets = home
	pcfg.Passwords = func(id []byte) ([]byte, error) { pw, _, err := home.RetrievePassword(id); return pw, err }
	pcfg.SecondaryWait = amrmproxy.Duration(time.Second)
	p, err := amrmproxy.Open(pcfg)
	if err != nil {
		f.close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = p.Run(rctx); close(done) }()
	f.proxy, f.stop = p, func() { cancel(); <-done }
	return f, nil
}

func (f *fed) close() {
	if f.stop != nil {
		f.stop()
	}
	for _, rm := range f.rms {
		_ = rm.Close()
	}
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
}

// am is one application master: an unmanaged application on the home,
// heartbeating either the proxy or the RM directly.
type am struct {
	c          *hadoopipc.Client
	responseID int32
}

func newAM(ctx context.Context, home *simrm.RM, addr string, n int) (*am, error) {
	cc, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{home.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench"})
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := cc.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return nil, err
	}
	tok, err := uam.Launch(ctx, cc, uam.Spec{App: na.ApplicationId, Queue: "default", Name: fmt.Sprintf("bench-am-%d", n), Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	return dialAM(ctx, addr, tok)
}

func dialAM(ctx context.Context, addr string, tok *commonpb.TokenProto) (*am, error) {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok})
	if err != nil {
		return nil, err
	}
	if err := c.Call(ctx, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("bench"), RpcPort: proto.Int32(-1), TrackingUrl: proto.String("")},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		c.Close()
		return nil, err
	}
	return &am{c: c}, nil
}

// heartbeat is an AM heartbeat with nothing new to say, the common case:
// it measures the path, not the scheduler.
func (a *am) heartbeat(ctx context.Context) error {
	resp := &yarnpb.AllocateResponseProto{}
	if err := a.c.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.responseID), Progress: proto.Float32(0.5)}, resp); err != nil {
		return err
	}
	a.responseID = resp.GetResponseId()
	return nil
}

type result struct {
	name    string
	lat     []time.Duration
	elapsed time.Duration
	errs    int
}

func (r *result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
}

func (r *result) rate() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

// drive runs every AM's heartbeat loop for d.
func drive(ctx context.Context, ams []*am, d time.Duration, r *result) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, a := range ams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			errs := 0
			for time.Now().Before(deadline) && ctx.Err() == nil {
				s := time.Now()
				if err := a.heartbeat(ctx); err != nil {
					errs++
					continue
				}
				local = append(local, time.Since(s))
			}
			mu.Lock()
			r.lat = append(r.lat, local...)
			r.errs += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed += time.Since(start)
}

func makeAMs(ctx context.Context, home *simrm.RM, addr string, n int) ([]*am, error) {
	var out []*am
	for i := 0; i < n; i++ {
		a, err := newAM(ctx, home, addr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func closeAMs(ams []*am) {
	for _, a := range ams {
		a.c.Close()
	}
}

// compare alternates rounds between two sets of AMs.
func compare(ctx context.Context, cfg Config, a, b []*am, ra, rb *result) {
	per := cfg.Duration / time.Duration(cfg.Rounds)
	// Warm up connections and caches.
	drive(ctx, a, per/4, &result{})
	drive(ctx, b, per/4, &result{})
	for i := 0; i < cfg.Rounds; i++ {
		drive(ctx, a, per, ra)
		drive(ctx, b, per, rb)
	}
	slices.Sort(ra.lat)
	slices.Sort(rb.lat)
}

func row(w io.Writer, r *result) {
	fmt.Fprintf(w, "  %-34s %10.0f %9.3f %9.3f %9.3f %6d\n", r.name, r.rate(), ms(r.pct(0.5)), ms(r.pct(0.99)), ms(r.pct(0.999)), r.errs)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Run runs both parts and writes the table; the last line is the ratio.
func Run(ctx context.Context, cfg Config, w io.Writer) error {
	if cfg.Duration <= 0 || cfg.Rounds <= 0 || cfg.AMs <= 0 {
		return errors.New("bench: duration, rounds and AMs must be > 0")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fmt.Fprintf(w, "yarnfed bench amrmproxy: %d AMs heartbeating back to back (empty allocate), %v per target in %d rounds\n", cfg.AMs, cfg.Duration, cfg.Rounds)
	fmt.Fprintf(w, "  %-34s %10s %9s %9s %9s %6s\n", "target", "allocs/s", "p50 ms", "p99 ms", "p99.9 ms", "errors")

	// Part 1: one sub-cluster, proxy vs direct.
	f1, err := startFed(ctx, 1, log)
	if err != nil {
		return err
	}
	defer f1.close()
	direct, err := makeAMs(ctx, f1.rms[0], f1.rms[0].Addrs().Scheduler, cfg.AMs)
	if err != nil {
		return fmt.Errorf("direct AMs: %w", err)
	}
	defer closeAMs(direct)
	viaProxy, err := makeAMs(ctx, f1.rms[0], f1.proxy.AMRMAddr(), cfg.AMs)
	if err != nil {
		return fmt.Errorf("proxied AMs: %w", err)
	}
	defer closeAMs(viaProxy)
	rd, rp := &result{name: "direct to the RM"}, &result{name: "through the proxy (1 sub-cluster)"}
	compare(ctx, cfg, direct, viaProxy, rd, rp)
	row(w, rd)
	row(w, rp)
	added := rp.pct(0.99) - rd.pct(0.99)

	// Part 2: three sub-clusters with service times; the proxy fans every
	// heartbeat out to the home and two UAMs.
	var fan string
	if len(cfg.FanoutLatency) > 0 {
		f3, err := startFed(ctx, len(cfg.FanoutLatency), log)
		if err != nil {
			return err
		}
		defer f3.close()
		fanAMs, err := makeAMs(ctx, f3.rms[0], f3.proxy.AMRMAddr(), cfg.AMs)
		if err != nil {
			return fmt.Errorf("fan-out AMs: %w", err)
		}
		defer closeAMs(fanAMs)
		// One ask from each AM makes the proxy start a UAM on every
		// secondary (Broadcast); wait until every AM's UAMs answer.
		for _, a := range fanAMs {
			req := &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.responseID), Ask: []*yarnpb.ResourceRequestProto{{
				Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
				Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(0),
				RelaxLocality: proto.Bool(true)}}}
			resp := &yarnpb.AllocateResponseProto{}
			if err := a.c.Call(ctx, "allocate", req, resp); err != nil {
				return err
			}
			a.responseID = resp.GetResponseId()
		}
		want := 0
		for _, rm := range f3.rms {
			want += rm.Config().Nodes
		}
		for _, a := range fanAMs {
			deadline := time.Now().Add(30 * time.Second)
			for {
				resp := &yarnpb.AllocateResponseProto{}
				if err := a.c.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.responseID)}, resp); err != nil {
					return err
				}
				a.responseID = resp.GetResponseId()
				if int(resp.GetNumClusterNodes()) == want {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("fan-out: UAMs not up after 30 s (nodes %d of %d)", resp.GetNumClusterNodes(), want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		for i, rm := range f3.rms {
			rm.SetFaults(simrm.FaultConfig{Latency: config.Duration(cfg.FanoutLatency[i])})
		}
		slowest := f3.rms[len(f3.rms)-1]
		slowAMs, err := makeAMs(ctx, slowest, slowest.Addrs().Scheduler, cfg.AMs)
		if err != nil {
			return fmt.Errorf("slowest-RM AMs: %w", err)
		}
		defer closeAMs(slowAMs)
		rs := &result{name: fmt.Sprintf("direct to the slowest RM (%v)", cfg.FanoutLatency[len(cfg.FanoutLatency)-1])}
		rf := &result{name: fmt.Sprintf("through the proxy (%d sub-clusters)", len(cfg.FanoutLatency))}
		compare(ctx, cfg, slowAMs, fanAMs, rs, rf)
		row(w, rs)
		row(w, rf)
		fan = fmt.Sprintf("; fan-out p99 - slowest RM p99 %+.3f ms (target <= 1 ms)", ms(rf.pct(0.99)-rs.pct(0.99)))
	}
	fmt.Fprintf(w, "ratio proxy/direct allocs/s %.2f, added p99 %+.3f ms (target <= 0.5 ms)%s\n", rp.rate()/rd.rate(), ms(added), fan)
	return nil
}
