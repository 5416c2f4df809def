package bench

// `yarnfed bench federation`: the router at the scale federation exists for.
// For each N in FedConfig.SubClusters it starts N simrm sub-clusters in this
// process (each with NodesPerSubCluster simulated nodes and AppsPerSubCluster
// running applications), a fresh 3-replica state store (three `yarnfed
// statestore` processes, Raft log fsync on) and R `yarnfed router` processes
// over it, drives a mix of the calls clients and UIs make through the routers
// (round-robin), and prints one row per call type and N, so the rows of one
// call type are its curve against N. Then it measures policy propagation: the
// time from a policy write (the store call `yarnfedctl policy save` makes)
// until every router routes a submission by it.
//
// This lives in router/bench, the router's harness that already starts
// stores and router processes (internal/layout: a bench harness may import
// its component and statestore/bench).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/procstat"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	ssbench "github.com/yarnfed/yarnfed/statestore/bench"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// FedConfig shapes `bench federation`.
type FedConfig struct {
	// SubClusters lists the federation sizes measured, one full run each
	// (fresh store, routers and sub-clusters), printed as curves.
	SubClusters []int
	// Routers is the number of `yarnfed router` processes (clients call
	// them round-robin).
	Routers int
	// NodesPerSubCluster simulated NodeManagers per simrm.
	NodesPerSubCluster int
	// AppsPerSubCluster running applications submitted to each RM directly
	// before the measurement (users and tags spread over them), so list
	// calls carry a population that grows with N.
	AppsPerSubCluster int
	// Duration of the measured mix per N, after Warmup.
	Duration time.Duration
	Warmup   time.Duration
	// Concurrency is the number of client goroutines running the mix.
	Concurrency int
	// MinCalls: the measurement goes on past Duration (up to 10 times it)
	// until every call type has this many successful calls, so the
	// rarest types of the mix have points on their curves even where the
	// largest fan-outs take seconds.
	MinCalls int
	// SoloCalls is how many calls of each type one client makes alone,
	// after the mix, on the otherwise idle federation: each call type's
	// own cost against N, without the queueing of the mix (0 skips).
	SoloCalls int
	// LostChanges is the number of sub-clusters marked LOST (one at a
	// time, restored after) whose exclusion by every router is timed (0
	// skips it).
	LostChanges int
	// PolicyChanges is the number of policy writes whose propagation to
	// every router is timed (0 skips it).
	PolicyChanges int
	// Executable is the yarnfed binary the store replicas and routers run.
	Executable string
	// Dir holds the processes' data and logs (default: a temp dir).
	Dir    string
	Logger *slog.Logger
}

// DefaultFedConfig is the curve: 10, 30, 100 sub-clusters.
func DefaultFedConfig() FedConfig {
	return FedConfig{SubClusters: []int{10, 30, 100}, Routers: 1, NodesPerSubCluster: 2000, AppsPerSubCluster: 50,
		Duration: 20 * time.Second, Warmup: 2 * time.Second, Concurrency: 16, MinCalls: 3, SoloCalls: 5, PolicyChanges: 100, LostChanges: 50}
}

// callType is one kind of client call in the mix.
type callType struct {
	name   string
	weight int
	// fanout: the router asks every sub-cluster.
	fanout bool
}

// fedMix is the call mix: per 100 calls, what clients (yarn CLI, YarnClient,
// schedulers' pollers, dashboards, browsers) send. Reports and submissions
// dominate; list and metrics calls are what dashboards and `yarn top` poll.
var fedMix = []callType{
	{name: "submit", weight: 12},               // getNewApplication + submitApplication
	{name: "getApplicationReport", weight: 32}, // a client polling its app
	{name: "kill", weight: 10},                 // forceKillApplication of an app this client submitted
	{name: "getApplications(states)", weight: 6, fanout: true},
	{name: "getApplications(user)", weight: 6, fanout: true},
	{name: "getApplications(tags)", weight: 6, fanout: true},
	{name: "getClusterMetrics", weight: 12, fanout: true},
	{name: "getClusterNodes", weight: 2, fanout: true},
	{name: "REST /apps?states=RUNNING", weight: 6, fanout: true},
	{name: "REST /nodes", weight: 1, fanout: true},
	{name: "REST /metrics", weight: 4, fanout: true},
	{name: "UI /cluster/apps", weight: 3, fanout: true},
}

// preload users and tags: the filters pick one of each.
var (
	fedUsers = []string{"alice", "bob", "carol"}
	fedTags  = []string{"team-a", "team-b", "team-c", "team-d"}
)

// callStats is one call type at one N.
type callStats struct {
	lat      []time.Duration
	errors   int64
	firstErr error
	// largest answer (bytes: protobuf size or HTTP body) and its latency.
	maxBytes int
	maxLat   time.Duration
}

// fedRun is one N's measurement.
type fedRun struct {
	n         int
	elapsed   time.Duration
	calls     map[string]*callStats
	cpu       time.Duration // all routers, over the measured window
	benchCPU  time.Duration // this process (simrms and clients), same window
	storeCPU  time.Duration // the three replicas, same window
	solo      map[string]*callStats
	rssCur    int64 // largest router's
	rssPeak   int64
	loadavg   string
	nodes     int // total nodes the routers reported (getClusterMetrics)
	prop      []time.Duration
	write     []time.Duration
	stale     int // probe submissions that still went by the old policy
	lostProp  []time.Duration
	lostStale int
	lostErr   error
	propErr   error
}

// RunFederation runs every N in cfg.SubClusters and prints the curves.
func RunFederation(ctx context.Context, cfg FedConfig, w io.Writer) error {
	if len(cfg.SubClusters) == 0 || cfg.Routers <= 0 || cfg.Concurrency <= 0 || cfg.Duration <= 0 || cfg.NodesPerSubCluster <= 0 || cfg.AppsPerSubCluster < 0 {
		return errors.New("bench federation: sub-clusters, routers, concurrency, duration and nodes per sub-cluster must be > 0")
	}
	for _, n := range cfg.SubClusters {
		if n < 2 {
			return fmt.Errorf("bench federation: %d sub-clusters: at least 2 (policy propagation moves a queue between two)", n)
		}
	}
	if cfg.NodesPerSubCluster > 99999 {
		return errors.New("bench federation: at most 99,999 nodes per sub-cluster (simrm's host names)")
	}
	if cfg.Executable == "" {
		return errors.New("bench federation: Executable (the yarnfed binary) is needed to start the store and the routers")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "yarnfed-bench-federation-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	fmt.Fprintf(w, "# %s at start\n", procstat.LoadAvg())
	fmt.Fprintf(w, "federation bench: %d router process(es) over a 3-replica state store (separate `yarnfed statestore` processes, Raft log fsync on, plaintext gRPC on loopback);\n", cfg.Routers)
	fmt.Fprintf(w, "simrm sub-clusters in the bench process, %d nodes and %d running apps (preloaded) each; %d client goroutines, calls round-robin over the routers, %v measured per N after %v warm-up (longer, up to 10x, until every call type has %d calls)\n",
		cfg.NodesPerSubCluster, cfg.AppsPerSubCluster, cfg.Concurrency, cfg.Duration, cfg.Warmup, cfg.MinCalls)
	var mix []string
	for _, c := range fedMix {
		mix = append(mix, fmt.Sprintf("%s %d%%", c.name, c.weight))
	}
	fmt.Fprintf(w, "mix: %s\n", strings.Join(mix, ", "))
	var runs []*fedRun
	for _, n := range cfg.SubClusters {
		fmt.Fprintf(w, "# N=%d: starting...\n", n)
		r, err := runFederationN(ctx, cfg, n, w)
		if err != nil {
			return fmt.Errorf("at N=%d: %w", n, err)
		}
		runs = append(runs, r)
	}
	printFedCurves(w, cfg, runs)
	return checkFedRuns(runs)
}

// checkFedRuns fails a run in which a call type failed or has no
// successful call at some N (its curve would be missing a point), or the
// policy propagation failed.
func checkFedRuns(runs []*fedRun) error {
	var errs []error
	for _, r := range runs {
		for _, c := range fedMix {
			if s := r.calls[c.name]; s != nil && s.errors > 0 {
				errs = append(errs, fmt.Errorf("at N=%d: %d %s calls failed, first: %w", r.n, s.errors, c.name, s.firstErr))
			} else if s == nil || len(s.lat) == 0 {
				errs = append(errs, fmt.Errorf("at N=%d: no successful %s call: the curve is missing a point", r.n, c.name))
			}
		}
		for name, st := range r.solo {
			if st.errors > 0 {
				errs = append(errs, fmt.Errorf("at N=%d: %d solo %s calls failed, first: %w", r.n, st.errors, name, st.firstErr))
			}
		}
		if r.propErr != nil {
			errs = append(errs, fmt.Errorf("at N=%d: policy propagation: %w", r.n, r.propErr))
		}
		if r.lostErr != nil {
			errs = append(errs, fmt.Errorf("at N=%d: LOST propagation: %w", r.n, r.lostErr))
		}
	}
	return errors.Join(errs...)
}

// fedEnv is the running federation of one N.
type fedEnv struct {
	cfg     FedConfig
	n       int
	rms     []*simrm.RM
	direct  []*hadoopipc.Client // per sub-cluster, user "bench"
	store   *client.Client
	routers []*exec.Cmd
	ipc     []*hadoopipc.Client // per router, user "bench"
	web     []string            // per router, http://host:port
	http    *http.Client
	rr      atomic.Uint64
	workers []*worker
	// hbMu orders the heartbeats and the LOST measurement's writes; lost
	// is the sub-cluster marked LOST (-1: none), which gets no heartbeat.
	hbMu sync.Mutex
	lost int
}

func fedSCID(i int) string { return fmt.Sprintf("fed-SC-%d", i+1) }

func runFederationN(ctx context.Context, cfg FedConfig, n int, w io.Writer) (*fedRun, error) {
	ctx, cancel := context.WithCancel(ctx)
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("n%d", n))
	e := &fedEnv{cfg: cfg, n: n, lost: -1, http: &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency}}}
	var hbWG sync.WaitGroup
	var reps *ssbench.Replicas
	defer func() {
		cancel()
		hbWG.Wait()
		e.close() // routers before the store they read
		if reps != nil {
			reps.Close()
		}
	}()

	t0 := time.Now()
	for i := range n {
		rc := simrm.TestConfig()
		rc.ClusterID, rc.Logger = fedSCID(i), cfg.Logger
		rc.Nodes, rc.Racks = cfg.NodesPerSubCluster, max(1, cfg.NodesPerSubCluster/40)
		rc.HostPrefix = fmt.Sprintf("sc%d-node-", i+1) // distinct node ids across the federation
		// Applications run until killed: one container besides the AM, for an hour.
		rc.SimAM.Containers = 1
		rc.SimAM.ContainerRuntime = config.Duration(time.Hour)
		rc.SimAM.Heartbeat = config.Duration(time.Second)
		// A NodeManager heartbeat of 100 ms (Hadoop's is 1 s): fast enough
		// that an application is running soon after it is submitted.
		rc.TickInterval = config.Duration(100 * time.Millisecond)
		rm, err := simrm.New(rc)
		if err != nil {
			return nil, err
		}
		if err := rm.Start(ctx); err != nil {
			return nil, err
		}
		e.rms = append(e.rms, rm)
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench"})
		if err != nil {
			return nil, err
		}
		e.direct = append(e.direct, c)
	}
	if err := e.preload(ctx); err != nil {
		return nil, fmt.Errorf("preload: %w", err)
	}
	fmt.Fprintf(w, "# N=%d: %d sub-clusters with %d nodes and %d apps each up in %v\n", n, n, cfg.NodesPerSubCluster, cfg.AppsPerSubCluster, time.Since(t0).Round(time.Millisecond))

	reps, err := ssbench.StartReplicas(ctx, cfg.Executable, filepath.Join(dir, "store"), ssbench.ReplicaOptions{})
	if err != nil {
		return nil, fmt.Errorf("state store: %w", err)
	}
	if e.store, err = client.New(client.Config{Addrs: reps.Addrs, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	for i, rm := range e.rms {
		a := rm.Addrs()
		info := &pb.SubClusterInfo{SubClusterId: fedSCID(i), ClientRmServiceAddress: a.Client, AmrmServiceAddress: a.Scheduler,
			RmAdminServiceAddress: a.Admin, RmWebServiceAddress: a.Web, State: pb.SubClusterState_SC_RUNNING,
			LastHeartbeatMs: time.Now().UnixMilli(), LastStartTimeMs: time.Now().UnixMilli(), Capability: "{}"}
		if err := e.store.RegisterSubCluster(ctx, info); err != nil {
			return nil, fmt.Errorf("register %s: %w", fedSCID(i), err)
		}
	}
	hbWG.Go(func() { e.heartbeat(ctx) })

	for i := range cfg.Routers {
		if err := e.startRouter(ctx, dir, i, reps.Addrs); err != nil {
			return nil, err
		}
	}
	// Every router must see all N sub-clusters before the clock starts.
	want := int32(n * cfg.NodesPerSubCluster)
	for i, c := range e.ipc {
		deadline := time.Now().Add(60 * time.Second)
		for {
			m := &yarnpb.GetClusterMetricsResponseProto{}
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Call(cctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m)
			ccancel()
			if err == nil && m.GetClusterMetrics().GetNumNodeManagers() == want {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fmt.Errorf("router %d does not report %d nodes within 60 s (last: %d, %v)", i, want, m.GetClusterMetrics().GetNumNodeManagers(), err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	res := &fedRun{n: n, nodes: int(want)}
	fmt.Fprintf(w, "# N=%d: %d router(s) serving all %d nodes; warm-up %v, then %v measured\n", n, cfg.Routers, want, cfg.Warmup, cfg.Duration)
	if cfg.Warmup > 0 {
		if _, _, err := e.mix(ctx, cfg.Warmup); err != nil {
			return nil, err
		}
	}
	cpu0, self0, store0 := e.routerCPU(), procstat.Self(), storeCPU(reps)
	res.loadavg = procstat.LoadAvg()
	if res.calls, res.elapsed, err = e.mix(ctx, cfg.Duration); err != nil {
		return nil, err
	}
	res.cpu, res.benchCPU, res.storeCPU = e.routerCPU()-cpu0, procstat.Self()-self0, storeCPU(reps)-store0
	for _, p := range e.routers {
		cur, peak := procstat.RSS(p.Process.Pid)
		res.rssCur, res.rssPeak = max(res.rssCur, cur), max(res.rssPeak, peak)
	}
	if cfg.SoloCalls > 0 {
		if res.solo, err = e.soloCalls(ctx, cfg.SoloCalls); err != nil {
			return nil, err
		}
	}
	if cfg.PolicyChanges > 0 {
		res.propErr = e.propagation(ctx, cfg.PolicyChanges, res)
	}
	if cfg.LostChanges > 0 && res.propErr == nil {
		res.lostErr = e.lostPropagation(ctx, cfg.LostChanges, res)
	}
	fmt.Fprintf(w, "# N=%d done: mix measured over %v (%s)\n", n, res.elapsed.Round(time.Millisecond), procstat.LoadAvg())
	return res, nil
}

func (e *fedEnv) close() {
	for _, c := range e.ipc {
		c.Close()
	}
	for _, p := range e.routers {
		stopProc(p)
	}
	if e.store != nil {
		e.store.Close()
	}
	for _, c := range e.direct {
		c.Close()
	}
	for _, rm := range e.rms {
		rm.Close()
	}
}

// heartbeat keeps every sub-cluster RUNNING, as its agent would.
func (e *fedEnv) heartbeat(ctx context.Context) {
	tk := time.NewTicker(5 * time.Second)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			for i := range e.rms {
				e.hbMu.Lock()
				if i != e.lost {
					_ = e.store.Heartbeat(ctx, fedSCID(i), pb.SubClusterState_SC_RUNNING, "{}")
				}
				e.hbMu.Unlock()
			}
		}
	}
}

func (e *fedEnv) startRouter(ctx context.Context, dir string, i int, storeAddrs []string) error {
	addr, err := ssbench.FreeAddr()
	if err != nil {
		return err
	}
	webAddr, err := ssbench.FreeAddr()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("router%d.log", i)))
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(e.cfg.Executable, "router", "--store", strings.Join(storeAddrs, ","), "--store-insecure",
		"--clientrm-address", addr, "--web-address", webAddr, "--admin-address", "", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	e.routers = append(e.routers, cmd)
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench",
		MaxFrameBytes: 1 << 30}) // the whole federation's node list is one reply
	if err != nil {
		return err
	}
	e.ipc = append(e.ipc, c)
	e.web = append(e.web, "http://"+webAddr)
	if _, err := waitServing(ctx, c, time.Now(), 30*time.Second); err != nil {
		return fmt.Errorf("router %d (log %s): %w", i, logf.Name(), err)
	}
	return nil
}

func storeCPU(reps *ssbench.Replicas) time.Duration {
	var d time.Duration
	for _, p := range reps.Procs {
		if p.Process != nil {
			d += procstat.CPU(p.Process.Pid)
		}
	}
	return d
}

// soloCalls makes k calls of each type, one at a time, from one client.
func (e *fedEnv) soloCalls(ctx context.Context, k int) (map[string]*callStats, error) {
	wk := &worker{rng: rand.New(rand.NewPCG(7, 25))}
	if _, err := e.call(ctx, wk, "submit"); err != nil { // something to report on and kill
		return nil, fmt.Errorf("solo submit: %w", err)
	}
	out := map[string]*callStats{}
	for _, c := range fedMix {
		st := &callStats{}
		out[c.name] = st
		for range k {
			if c.name == "kill" || c.name == "getApplicationReport" {
				if _, err := e.call(ctx, wk, "submit"); err != nil {
					return nil, fmt.Errorf("solo submit: %w", err)
				}
			}
			cctx, cancel := context.WithTimeout(ctx, fedCallTimeout)
			s := time.Now()
			size, err := e.call(cctx, wk, c.name)
			lat := time.Since(s)
			cancel()
			if err != nil {
				st.errors++
				if st.firstErr == nil {
					st.firstErr = err
				}
				continue
			}
			st.lat = append(st.lat, lat)
			if size > st.maxBytes {
				st.maxBytes, st.maxLat = size, lat
			}
		}
	}
	return out, nil
}

func (e *fedEnv) routerCPU() time.Duration {
	var d time.Duration
	for _, p := range e.routers {
		d += procstat.CPU(p.Process.Pid)
	}
	return d
}

// preload submits AppsPerSubCluster applications to every RM directly,
// users and tags spread, and waits until they all run.
func (e *fedEnv) preload(ctx context.Context) error {
	clients := map[string][]*hadoopipc.Client{}
	defer func() {
		for _, cs := range clients {
			for _, c := range cs {
				c.Close()
			}
		}
	}()
	for _, u := range fedUsers {
		for _, rm := range e.rms {
			c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: u})
			if err != nil {
				return err
			}
			clients[u] = append(clients[u], c)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(e.rms))
	sem := make(chan struct{}, 8)
	for i := range e.rms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for k := range e.cfg.AppsPerSubCluster {
				c := clients[fedUsers[k%len(fedUsers)]][i]
				if _, err := submitApp(ctx, c, "preload", []string{fedTags[k%len(fedTags)]}); err != nil {
					errs[i] = fmt.Errorf("%s: %w", fedSCID(i), err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// submitApp runs getNewApplication + submitApplication on c and returns
// the application id.
func submitApp(ctx context.Context, c *hadoopipc.Client, name string, tags []string) (*yarnpb.ApplicationIdProto, error) {
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return nil, err
	}
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(name), Queue: proto.String("default"),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
		ApplicationTags: tags,
	}}
	if err := c.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return nil, err
	}
	return na.GetApplicationId(), nil
}

// worker is one client goroutine's own state: where it is in the
// schedule and the apps it submitted (kept from the warm-up on).
type worker struct {
	rng  *rand.Rand
	pos  int
	apps []*yarnpb.ApplicationIdProto
}

// fedCallTimeout bounds one call of the mix; a call still running when
// the measured time ends is waited for (up to this) and counted, so the
// slowest calls are not cut out of the percentiles.
const fedCallTimeout = 3 * time.Minute

// fedSchedule is the mix as a cycle of call types, each as often as its
// weight, interleaved by a fixed shuffle: every worker (starting at its
// own offset) makes every call type within one cycle, so even a short
// run measures each one, in the mix's exact proportions.
func fedSchedule() []string {
	var s []string
	for _, c := range fedMix {
		for range c.weight {
			s = append(s, c.name)
		}
	}
	rng := rand.New(rand.NewPCG(25, 25))
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// mix runs the call mix: each worker starts calls for d (and on, up to
// 10 d, until every call type has MinCalls successful calls), and the
// calls in flight at the end are waited for. It returns each call type's
// stats and the time until the last call ended.
func (e *fedEnv) mix(ctx context.Context, d time.Duration) (map[string]*callStats, time.Duration, error) {
	sched := fedSchedule()
	if e.workers == nil {
		for i := range e.cfg.Concurrency {
			e.workers = append(e.workers, &worker{rng: rand.New(rand.NewPCG(uint64(i), 25)), pos: i * len(sched) / e.cfg.Concurrency})
		}
	}
	start := time.Now()
	end, hardEnd := start.Add(d), start.Add(10*d)
	done := map[string]*atomic.Int64{}
	for _, c := range fedMix {
		done[c.name] = &atomic.Int64{}
	}
	more := func() bool {
		now := time.Now()
		if now.Before(end) {
			return true
		}
		if now.After(hardEnd) {
			return false
		}
		for _, n := range done {
			if n.Load() < int64(e.cfg.MinCalls) {
				return true
			}
		}
		return false
	}
	per := make([]map[string]*callStats, e.cfg.Concurrency)
	var wg sync.WaitGroup
	for i, wk := range e.workers {
		per[i] = map[string]*callStats{}
		wg.Go(func() {
			for more() && ctx.Err() == nil {
				name := sched[wk.pos%len(sched)]
				wk.pos++
				if (name == "kill" || name == "getApplicationReport") && len(wk.apps) == 0 {
					name = "submit" // nothing of ours yet: submit first
				}
				cctx, cancel := context.WithTimeout(ctx, fedCallTimeout)
				s := time.Now()
				size, err := e.call(cctx, wk, name)
				lat := time.Since(s)
				cancel()
				if ctx.Err() != nil {
					return // the bench is being stopped
				}
				st := per[i][name]
				if st == nil {
					st = &callStats{}
					per[i][name] = st
				}
				if err != nil {
					st.errors++
					if st.firstErr == nil {
						st.firstErr = err
					}
					continue
				}
				st.lat = append(st.lat, lat)
				done[name].Add(1)
				if size > st.maxBytes {
					st.maxBytes, st.maxLat = size, lat
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	out := map[string]*callStats{}
	for _, m := range per {
		for name, st := range m {
			o := out[name]
			if o == nil {
				o = &callStats{}
				out[name] = o
			}
			o.lat = append(o.lat, st.lat...)
			o.errors += st.errors
			if o.firstErr == nil {
				o.firstErr = st.firstErr
			}
			if st.maxBytes > o.maxBytes {
				o.maxBytes, o.maxLat = st.maxBytes, st.maxLat
			}
		}
	}
	return out, elapsed, ctx.Err()
}

// next picks the next router, round-robin over all clients' calls.
func (e *fedEnv) next() int { return int(e.rr.Add(1) % uint64(len(e.ipc))) }

// call makes one call of type name and returns its answer's size.
func (e *fedEnv) call(ctx context.Context, wk *worker, name string) (int, error) {
	r := e.next()
	c := e.ipc[r]
	switch name {
	case "submit":
		id, err := submitApp(ctx, c, "fedbench", []string{"fedbench"})
		if err != nil {
			return 0, err
		}
		wk.apps = append(wk.apps, id)
		return 0, nil
	case "getApplicationReport":
		id := wk.apps[len(wk.apps)-1-wk.rng.IntN(min(len(wk.apps), 8))] // one of its recent apps
		resp := &yarnpb.GetApplicationReportResponseProto{}
		err := c.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp)
		if err == nil && !proto.Equal(resp.GetApplicationReport().GetApplicationId(), id) {
			err = fmt.Errorf("report of %s names %s", yarnid.AppIDString(id), yarnid.AppIDString(resp.GetApplicationReport().GetApplicationId()))
		}
		return proto.Size(resp), err
	case "kill":
		id := wk.apps[0]
		wk.apps = wk.apps[1:]
		resp := &yarnpb.KillApplicationResponseProto{}
		return proto.Size(resp), c.Call(ctx, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, resp)
	case "getApplications(states)":
		return e.apps(ctx, c, &yarnpb.GetApplicationsRequestProto{ApplicationStates: []yarnpb.YarnApplicationStateProto{
			yarnpb.YarnApplicationStateProto_SUBMITTED, yarnpb.YarnApplicationStateProto_ACCEPTED, yarnpb.YarnApplicationStateProto_RUNNING}}, e.n*e.cfg.AppsPerSubCluster)
	case "getApplications(user)":
		u := wk.rng.IntN(len(fedUsers))
		return e.apps(ctx, c, &yarnpb.GetApplicationsRequestProto{Users: []string{fedUsers[u]}}, e.n*countOf(e.cfg.AppsPerSubCluster, len(fedUsers), u))
	case "getApplications(tags)":
		t := wk.rng.IntN(len(fedTags))
		return e.apps(ctx, c, &yarnpb.GetApplicationsRequestProto{ApplicationTags: []string{fedTags[t]}}, e.n*countOf(e.cfg.AppsPerSubCluster, len(fedTags), t))
	case "getClusterMetrics":
		resp := &yarnpb.GetClusterMetricsResponseProto{}
		if err := c.Call(ctx, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp); err != nil {
			return 0, err
		}
		if got := int(resp.GetClusterMetrics().GetNumNodeManagers()); got != e.n*e.cfg.NodesPerSubCluster {
			return 0, fmt.Errorf("getClusterMetrics: %d node managers, want %d", got, e.n*e.cfg.NodesPerSubCluster)
		}
		return proto.Size(resp), nil
	case "getClusterNodes":
		resp := &yarnpb.GetClusterNodesResponseProto{}
		if err := c.Call(ctx, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, resp); err != nil {
			return 0, err
		}
		if got := len(resp.GetNodeReports()); got != e.n*e.cfg.NodesPerSubCluster {
			return 0, fmt.Errorf("getClusterNodes: %d nodes, want %d", got, e.n*e.cfg.NodesPerSubCluster)
		}
		return proto.Size(resp), nil
	case "REST /apps?states=RUNNING":
		return e.get(ctx, r, "/ws/v1/cluster/apps?states=RUNNING", `"apps"`)
	case "REST /nodes":
		return e.get(ctx, r, "/ws/v1/cluster/nodes", `"nodes"`)
	case "REST /metrics":
		return e.get(ctx, r, "/ws/v1/cluster/metrics", fmt.Sprintf(`"totalNodes":%d`, e.n*e.cfg.NodesPerSubCluster))
	case "UI /cluster/apps":
		return e.get(ctx, r, "/cluster/apps", "<table")
	}
	return 0, fmt.Errorf("unknown call type %q", name)
}

// countOf is how many of n preloaded items (assigned round-robin over k
// values) have value i.
func countOf(n, k, i int) int { return n/k + map[bool]int{true: 1, false: 0}[i < n%k] }

// apps calls getApplications and checks the preloaded apps are all there
// (at least atLeast: the bench's own submissions may add more).
func (e *fedEnv) apps(ctx context.Context, c *hadoopipc.Client, req *yarnpb.GetApplicationsRequestProto, atLeast int) (int, error) {
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := c.Call(ctx, "getApplications", req, resp); err != nil {
		return 0, err
	}
	if got := len(resp.GetApplications()); got < atLeast {
		return 0, fmt.Errorf("getApplications %v: %d applications, want at least %d", req, got, atLeast)
	}
	return proto.Size(resp), nil
}

// get fetches path from router r's web port and checks the answer is 200
// and contains want.
func (e *fedEnv) get(ctx context.Context, r int, path, want string) (int, error) {
	u := e.web[r] + path
	if strings.Contains(u, "?") {
		u += "&user.name=bench"
	} else {
		u += "?user.name=bench"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if strings.HasPrefix(path, "/ws/") {
		req.Header.Set("Accept", "application/json")
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return len(body), fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	if !strings.Contains(string(body), want) {
		return len(body), fmt.Errorf("GET %s: answer lacks %s: %.200s", path, want, body)
	}
	return len(body), nil
}

// propagation writes changes policies for queue "default", each sending
// everything to the next sub-cluster (WeightedLocality, weight 1 on it, as
// `yarnfedctl policy save -s "default;SC:1.0;SC:1.0;1.0"` stores it), and
// times, per change, until a submission through every router lands there.
func (e *fedEnv) propagation(ctx context.Context, changes int, res *fedRun) error {
	set := func(sc int) error {
		return e.setPolicy(ctx, policies.Weight{ID: policies.SubClusterID(fedSCID(sc)), Value: 1})
	}
	// Start from a known policy so the first change is a change.
	if err := set(0); err != nil {
		return err
	}
	if err := e.waitRouted(ctx, 0, time.Now(), nil); err != nil {
		return fmt.Errorf("initial policy: %w", err)
	}
	for i := 1; i <= changes; i++ {
		sc := i % e.n
		t0 := time.Now()
		if err := set(sc); err != nil {
			return err
		}
		res.write = append(res.write, time.Since(t0))
		if err := e.waitRouted(ctx, sc, t0, res); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
	}
	return nil
}

// setPolicy stores queue default's policy with the given router and AMRM
// weights (WeightedLocality), as `yarnfedctl policy save` does.
func (e *fedEnv) setPolicy(ctx context.Context, ws ...policies.Weight) error {
	q := policies.QueuePolicy{Queue: "default", Info: policies.WeightedPolicyInfo{RouterWeights: ws, AMRMWeights: ws, HeadroomAlpha: 1}}
	pc, err := policies.NewDefaultRegistry().QueuePolicyConfig(q, "WeightedLocality", policies.Env{})
	if err != nil {
		return err
	}
	return e.store.SetPolicy(ctx, &pb.PolicyConfiguration{Queue: pc.Queue, Type: pc.Type, Params: pc.Params})
}

// lostPropagation marks sub-clusters LOST, one per change, and times until
// every router stops routing to it. Each change: queue default's weights
// are 1 on A and 0.0001 on B (a submission lands on B once in 10,001
// while A is routable), every router is seen routing to A, then A's row is
// written LOST (the state a GPG or an operator writes; its heartbeats are
// held back) and the clock runs until a probe through every router lands
// on B. A is then heartbeated RUNNING again.
func (e *fedEnv) lostPropagation(ctx context.Context, changes int, res *fedRun) error {
	for i := 1; i <= changes; i++ {
		a, b := i%e.n, (i+1)%e.n
		if err := e.setPolicy(ctx, policies.Weight{ID: policies.SubClusterID(fedSCID(a)), Value: 1},
			policies.Weight{ID: policies.SubClusterID(fedSCID(b)), Value: 0.0001}); err != nil {
			return err
		}
		if err := e.waitRouted(ctx, a, time.Now(), nil); err != nil {
			return fmt.Errorf("change %d, before: %w", i, err)
		}
		e.hbMu.Lock()
		e.lost = a
		t0 := time.Now()
		err := e.store.Heartbeat(ctx, fedSCID(a), pb.SubClusterState_SC_LOST, "{}")
		e.hbMu.Unlock()
		if err != nil {
			return err
		}
		var got fedRun
		err = e.waitRouted(ctx, b, t0, &got)
		res.lostProp = append(res.lostProp, got.prop...)
		res.lostStale += got.stale
		e.hbMu.Lock()
		herr := e.store.Heartbeat(ctx, fedSCID(a), pb.SubClusterState_SC_RUNNING, "{}")
		e.lost = -1
		e.hbMu.Unlock()
		if err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		if herr != nil {
			return herr
		}
	}
	return nil
}

// waitRouted submits through every router, in parallel, until one
// submission per router lands on sub-cluster sc; it records the time from
// t0 until the last router did.
func (e *fedEnv) waitRouted(ctx context.Context, sc int, t0 time.Time, res *fedRun) error {
	var wg sync.WaitGroup
	errs := make([]error, len(e.ipc))
	stale := make([]int, len(e.ipc))
	for r, c := range e.ipc {
		wg.Go(func() {
			deadline := t0.Add(30 * time.Second)
			for {
				id, err := submitApp(ctx, c, "fedbench-policy", nil)
				if err != nil {
					errs[r] = fmt.Errorf("router %d: %w", r, err)
					return
				}
				rep := &yarnpb.GetApplicationReportResponseProto{}
				if e.direct[sc].Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, rep) == nil {
					return
				}
				stale[r]++
				if time.Now().After(deadline) {
					errs[r] = fmt.Errorf("router %d: still not routing to %s after 30 s", r, fedSCID(sc))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if res != nil {
		res.prop = append(res.prop, time.Since(t0))
		for _, s := range stale {
			res.stale += s
		}
	}
	return nil
}

func printFedCurves(w io.Writer, cfg FedConfig, runs []*fedRun) {
	fmt.Fprintf(w, "\ncurves against N (sub-clusters), %d router(s), %d nodes and %d preloaded apps per sub-cluster, %d clients\n", cfg.Routers, cfg.NodesPerSubCluster, cfg.AppsPerSubCluster, cfg.Concurrency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "call\tfan-out\tN\tcalls\tops/s\tp50\tp99\terrors\tlargest answer\tits time\tp99/p99(N0)\t")
	for _, c := range fedMix {
		var base time.Duration
		for i, r := range runs {
			s := r.calls[c.name]
			if s == nil {
				s = &callStats{}
			}
			p99 := pct(s.lat, 99)
			if i == 0 {
				base = p99
			}
			ratio := "-"
			if base > 0 {
				ratio = fmt.Sprintf("%.1fx", float64(p99)/float64(base))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%d\t%s\t%s\t%s\t\n", c.name, map[bool]string{true: "yes", false: "no"}[c.fanout], r.n, len(s.lat), float64(len(s.lat))/r.elapsed.Seconds(),
				ms(pct(s.lat, 50)), ms(p99), s.errors, bytesStr(s.maxBytes), ms(s.maxLat), ratio)
		}
	}
	tw.Flush()

	fmt.Fprintf(w, "\nrouters against N (CPU: all %d router processes over the measured window; RSS: the largest router's)\n", cfg.Routers)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "N\tnodes\tcalls/s\trouter CPU (cores)\tCPU/call\tRSS\tRSS peak\tsimrms+clients CPU\tstore CPU\tlargest answer\tload average at start\t")
	for _, r := range runs {
		calls := 0
		var big *callStats
		bigName := ""
		for name, s := range r.calls {
			calls += len(s.lat)
			if big == nil || s.maxBytes > big.maxBytes {
				big, bigName = s, name
			}
		}
		perCall := "-"
		if calls > 0 {
			perCall = fmt.Sprintf("%.0fus", float64(r.cpu.Microseconds())/float64(calls))
		}
		largest := "-"
		if big != nil {
			largest = fmt.Sprintf("%s %s in %s", bigName, bytesStr(big.maxBytes), ms(big.maxLat))
		}
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.2f\t%s\t%d MiB\t%d MiB\t%.2f\t%.2f\t%s\t%s\t\n", r.n, r.nodes, float64(calls)/r.elapsed.Seconds(),
			r.cpu.Seconds()/r.elapsed.Seconds(), perCall, r.rssCur>>20, r.rssPeak>>20, r.benchCPU.Seconds()/r.elapsed.Seconds(),
			r.storeCPU.Seconds()/r.elapsed.Seconds(), largest, strings.TrimPrefix(r.loadavg, "load average "))
	}
	tw.Flush()

	if cfg.SoloCalls > 0 {
		fmt.Fprintf(w, "\nsolo: %d calls of each type, one at a time from one client, after the mix (each call type's own cost, without the mix's queueing)\n", cfg.SoloCalls)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "call\t")
		for _, r := range runs {
			fmt.Fprintf(tw, "N=%d p50\tmax\tanswer\t", r.n)
		}
		fmt.Fprintln(tw, "p50/p50(N0)\t")
		for _, c := range fedMix {
			fmt.Fprintf(tw, "%s\t", c.name)
			var base, last time.Duration
			for i, r := range runs {
				s := r.solo[c.name]
				if s == nil {
					s = &callStats{}
				}
				mx := slices.Max(append([]time.Duration{0}, s.lat...))
				if i == 0 {
					base = pct(s.lat, 50)
				}
				last = pct(s.lat, 50)
				fmt.Fprintf(tw, "%s\t%s\t%s\t", ms(pct(s.lat, 50)), ms(mx), bytesStr(s.maxBytes))
			}
			if base > 0 {
				fmt.Fprintf(tw, "%.1fx\t\n", float64(last)/float64(base))
			} else {
				fmt.Fprint(tw, "-\t\n")
			}
		}
		tw.Flush()
	}
	if cfg.PolicyChanges > 0 {
		fmt.Fprintf(w, "\npolicy propagation: %d changes of queue default's policy (SetPolicy, as `yarnfedctl policy save`), each until a submission through every one of the %d router(s) lands on the new sub-cluster\n", cfg.PolicyChanges, cfg.Routers)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "N\tchanges\tp50\tp99\tmax\twrite p50\twrite p99\tstale probes\t")
		for _, r := range runs {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t\n", r.n, len(r.prop), ms(pct(r.prop, 50)), ms(pct(r.prop, 99)), ms(slices.Max(append([]time.Duration{0}, r.prop...))),
				ms(pct(r.write, 50)), ms(pct(r.write, 99)), r.stale)
		}
		tw.Flush()
		fmt.Fprintln(w, "(time from the start of the policy write; a probe is getNewApplication + submitApplication through a router, checked on the sub-cluster's RM; stale probes went by the old policy)")
	}
	if cfg.LostChanges > 0 {
		fmt.Fprintf(w, "\nLOST propagation: %d sub-clusters written LOST one at a time (the one queue default weighs 1, another 0.0001), each until a submission through every one of the %d router(s) lands on the other\n", cfg.LostChanges, cfg.Routers)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "N\tchanges\tp50\tp99\tmax\tstale probes\t")
		for _, r := range runs {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%d\t\n", r.n, len(r.lostProp), ms(pct(r.lostProp, 50)), ms(pct(r.lostProp, 99)),
				ms(slices.Max(append([]time.Duration{0}, r.lostProp...))), r.lostStale)
		}
		tw.Flush()
		fmt.Fprintln(w, "(time from the start of the LOST write; stale probes still went to the LOST sub-cluster)")
	}
	fmt.Fprintf(w, "%s at end (2 shared cores: loaded numbers)\n", procstat.LoadAvg())
}

func bytesStr(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%d B", n)
}
