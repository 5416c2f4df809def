// Package bench measures the router against calling the RM directly and,
// optionally, against Apache Hadoop's own Java Router, in one run over the
// same simulated sub-clusters (`yarnfed bench router`). One op is what a
// client does to run an application: getNewApplication +
// submitApplication + getApplicationReport.
//
// By default the router is a `yarnfed router` process over a real
// 3-replica state store (three `yarnfed statestore` processes, Raft log
// fsync on), so every submission pays the store write it pays in
// production; an in-memory store exists only behind InMemoryStore, and the
// table says so.
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
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
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
	ssbench "github.com/yarnfed/yarnfed/statestore/bench"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Config shapes a run.
type Config struct {
	// Duration is the measured time per target and concurrency, split into
	// Rounds alternating between the targets so drift (a growing RM app
	// table, a busy neighbour) hits all of them alike.
	Duration time.Duration
	Rounds   int
	// Concurrency lists the client counts measured (goroutines sharing one
	// YARN client connection per target and RM, as a Java YarnClient
	// shares one per user).
	Concurrency []int
	// SubClusters is the number of simrm sub-clusters started in this
	// process (the routers spread submissions over them; direct clients
	// are spread over them too).
	SubClusters int
	// RMLatency is added by simrm to every call, to model a real RM's
	// service time. 0 measures pure overhead on a CPU-bound RM.
	RMLatency time.Duration

	// Executable is the yarnfed binary the store replicas and the router
	// run from (`statestore`, `router` roles). Required unless
	// InMemoryStore, or both StoreAddrs and RouterAddr, are set.
	Executable string
	// InMemoryStore runs the router in this process over an in-memory
	// store (routertest's fake): the numbers then leave out the Raft
	// write every real submission pays.
	InMemoryStore bool
	// StoreAddrs points at a running state store (plaintext gRPC) instead
	// of starting three replicas; the sub-clusters are registered there as
	// bench-SC-N.
	StoreAddrs []string
	// StoreTLS runs the started store with mutual TLS (certificates from
	// `yarnfed certs`), the router and the bench as its clients, as
	// deployed; default plaintext (--insecure), like the peer's ZooKeeper.
	StoreTLS bool
	// RouterAddr measures a running router (its clientrm address) instead
	// of starting one; it must read the store at StoreAddrs.
	RouterAddr string
	// Dir holds the processes' data and logs (default: a temp dir).
	Dir string

	// Peer "hadoop" also measures Apache Hadoop's Router (Java, from
	// Maven Central) over a 3-server ZooKeeper ensemble in front of the
	// same sub-clusters.
	Peer string
	// HadoopDir is the Maven module with the Router dependency and our
	// helper (bench/hadooprouter); Java and ZKClasspath as in the store
	// bench; HadoopHeap is the Router JVM's -Xmx.
	HadoopDir   string
	Java        string
	ZKClasspath string
	HadoopHeap  string
	// JavaClient also drives every target with Hadoop's own YarnClient
	// (one JVM, one YarnClient per thread).
	JavaClient bool

	Logger *slog.Logger
}

// DefaultConfig is a short run.
func DefaultConfig() Config {
	return Config{
		Duration: 10 * time.Second, Rounds: 4, Concurrency: []int{16}, SubClusters: 2,
		HadoopDir: "bench/hadooprouter", Java: "java",
		ZKClasspath: "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar", HadoopHeap: "1g",
	}
}

// target is one thing clients call: the RMs directly, or a router.
type target struct {
	name string
	// clients[i] serves worker i%len(clients).
	clients []*hadoopipc.Client
	// addr is the address(es, comma-separated) a Java client uses.
	addr string
	// proc is the router's process when we know it (CPU, RSS).
	pid       int
	coldStart time.Duration
	note      string
}

// result is one target at one concurrency.
type result struct {
	lat []time.Duration
	// calls are the latencies of each call of the op (getNewApplication,
	// submitApplication, getApplicationReport): where an op's time goes.
	calls    [3][]time.Duration
	ops      int64
	errors   int64
	elapsed  time.Duration
	cpu      time.Duration
	firstErr error
}

func (r *result) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ops) / r.elapsed.Seconds()
}

// Run starts the sub-clusters, store, routers and peers, drives them and
// writes the tables to w.
func Run(ctx context.Context, cfg Config, w io.Writer) error {
	if cfg.Duration <= 0 || cfg.Rounds <= 0 || len(cfg.Concurrency) == 0 || cfg.SubClusters <= 0 {
		return errors.New("bench: duration, rounds, concurrency and sub-clusters must be > 0")
	}
	for _, c := range cfg.Concurrency {
		if c <= 0 {
			return errors.New("bench: concurrency must be > 0")
		}
	}
	if cfg.RouterAddr != "" && len(cfg.StoreAddrs) == 0 {
		return errors.New("bench: --router needs --store: the sub-clusters are registered in the store that router reads")
	}
	if cfg.StoreTLS && (cfg.InMemoryStore || len(cfg.StoreAddrs) > 0) {
		return errors.New("bench: --store-tls applies to the store this bench starts")
	}
	if cfg.InMemoryStore && (cfg.RouterAddr != "" || len(cfg.StoreAddrs) > 0) {
		return errors.New("bench: the in-memory store runs a router in this process; it does not combine with --router/--store")
	}
	if !cfg.InMemoryStore && cfg.Executable == "" && (cfg.RouterAddr == "" || len(cfg.StoreAddrs) == 0) {
		return errors.New("bench: Executable (the yarnfed binary) is needed to start the store and the router")
	}
	if cfg.Peer != "" && cfg.Peer != "hadoop" {
		return fmt.Errorf("bench: unknown peer %q (only \"hadoop\")", cfg.Peer)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "yarnfed-bench-router-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	loadStart := procstat.LoadAvg()
	fmt.Fprintf(w, "# %s at start\n", loadStart)

	// Sub-clusters: simrms in this process, shared by every target.
	var rms []simrm.Addrs
	for i := 1; i <= cfg.SubClusters; i++ {
		rmCfg := simrm.TestConfig()
		rmCfg.ClusterID = fmt.Sprintf("bench-SC-%d", i)
		rmCfg.Logger = log
		// Enough simulated nodes that applications finish as fast as they
		// are submitted, and no containers beyond the AM: the bench
		// measures the path to the RM, not the simulator's queue.
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
		rms = append(rms, rm.Addrs())
	}
	scID := func(i int) string { return fmt.Sprintf("bench-SC-%d", i+1) }

	var targets []*target
	mkClients := func(addrs ...string) ([]*hadoopipc.Client, error) {
		var out []*hadoopipc.Client
		for _, a := range addrs {
			c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{a}, Protocol: hadoopipc.ProtocolApplicationClient, User: "bench"})
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	var rmClientAddrs []string
	for _, a := range rms {
		rmClientAddrs = append(rmClientAddrs, a.Client)
	}
	direct := &target{name: "direct", addr: strings.Join(rmClientAddrs, ","), note: fmt.Sprintf("%d simrm, callers spread over them", len(rms))}
	var err error
	if direct.clients, err = mkClients(rmClientAddrs...); err != nil {
		return err
	}
	targets = append(targets, direct)
	defer func() {
		for _, t := range targets {
			for _, c := range t.clients {
				c.Close()
			}
		}
	}()

	// yarnfed's router and its store.
	storeDesc := ""
	yf := &target{name: "yarnfed"}
	switch {
	case cfg.InMemoryStore:
		storeDesc = "IN-MEMORY store (routertest fake): no Raft write per submission, router in this process (its CPU and RSS are not separable)"
		mem := routertest.NewStore()
		for i, a := range rms {
			mem.Put(router.SubClusterInfo{ID: router.SubClusterID(scID(i)), ClientRMServiceAddress: a.Client, AMRMServiceAddress: a.Scheduler,
				RMAdminServiceAddress: a.Admin, RMWebServiceAddress: a.Web, State: router.StateRunning})
		}
		rcfg := router.DefaultConfig()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		rcfg.ClientListener, rcfg.WebAddress, rcfg.Store, rcfg.Logger = ln, "", mem, log
		t0 := time.Now()
		rt, err := router.New(rcfg)
		if err != nil {
			return err
		}
		rctx, stop := context.WithCancel(ctx)
		var rwg sync.WaitGroup
		rwg.Go(func() { _ = rt.Run(rctx) })
		defer func() { stop(); rwg.Wait() }()
		yf.addr = rt.ClientRMAddr().String()
		if yf.clients, err = mkClients(yf.addr); err != nil {
			return err
		}
		if yf.coldStart, err = waitServing(ctx, yf.clients[0], t0, 30*time.Second); err != nil {
			return fmt.Errorf("in-process router: %w", err)
		}
	default:
		storeAddrs := cfg.StoreAddrs
		var opt ssbench.ReplicaOptions
		var benchTLS *tls.Config
		routerStoreArgs := []string{"--store-insecure"}
		if cfg.StoreTLS {
			opt.PKIDir = filepath.Join(cfg.Dir, "pki")
			out, err := exec.Command(cfg.Executable, "certs", "--dir", opt.PKIDir, "bench0=replica", "bench1=replica", "bench2=replica",
				"bench-admin=admin", "bench-router=router").CombinedOutput()
			if err != nil {
				return fmt.Errorf("yarnfed certs: %w\n%s", err, out)
			}
			if benchTLS, err = (security.ClientFlags{TLS: ssbench.TLSInfo(opt.PKIDir, "bench-admin")}).TLSConfig(log); err != nil {
				return err
			}
			ti := ssbench.TLSInfo(opt.PKIDir, "bench-router")
			routerStoreArgs = []string{"--store-tls-cert", ti.CertFile, "--store-tls-key", ti.KeyFile, "--store-tls-ca", ti.CAFile}
		}
		if len(storeAddrs) == 0 {
			reps, err := ssbench.StartReplicas(ctx, cfg.Executable, cfg.Dir, opt)
			if reps != nil {
				defer reps.Close()
			}
			if err != nil {
				return fmt.Errorf("state store: %w", err)
			}
			storeAddrs = reps.Addrs
			storeDesc = "3-replica state store, separate `yarnfed statestore` processes, Raft log fsync on, plaintext gRPC (--insecure, loopback)"
			if cfg.StoreTLS {
				storeDesc = "3-replica state store, separate `yarnfed statestore` processes, Raft log fsync on, mutual TLS 1.3 (`yarnfed certs`)"
			}
		} else {
			storeDesc = "running state store at " + strings.Join(storeAddrs, ",") + " (plaintext gRPC)"
		}
		sc, err := client.New(client.Config{Addrs: storeAddrs, Logger: log, TLS: benchTLS})
		if err != nil {
			return err
		}
		defer sc.Close()
		for i, a := range rms {
			info := &pb.SubClusterInfo{SubClusterId: scID(i), ClientRmServiceAddress: a.Client, AmrmServiceAddress: a.Scheduler,
				RmAdminServiceAddress: a.Admin, RmWebServiceAddress: a.Web, State: pb.SubClusterState_SC_RUNNING,
				LastHeartbeatMs: time.Now().UnixMilli(), LastStartTimeMs: time.Now().UnixMilli(), Capability: "{}"}
			if err := sc.RegisterSubCluster(ctx, info); err != nil {
				return fmt.Errorf("register %s: %w", scID(i), err)
			}
		}
		// Heartbeat as a sub-cluster agent would, so no router expires them.
		hbCtx, hbStop := context.WithCancel(ctx)
		var hbWG sync.WaitGroup
		hbWG.Go(func() {
			tk := time.NewTicker(5 * time.Second)
			defer tk.Stop()
			for {
				select {
				case <-hbCtx.Done():
					return
				case <-tk.C:
					for i := range rms {
						_ = sc.Heartbeat(hbCtx, scID(i), pb.SubClusterState_SC_RUNNING, "{}")
					}
				}
			}
		})
		defer func() {
			hbStop()
			hbWG.Wait()
			if len(cfg.StoreAddrs) > 0 { // leave a running store as we found it, but for the rows
				for i := range rms {
					_ = sc.Heartbeat(context.Background(), scID(i), pb.SubClusterState_SC_UNREGISTERED, "{}")
				}
			}
		}()
		if cfg.RouterAddr != "" {
			yf.note = "running router at " + cfg.RouterAddr
			yf.addr = cfg.RouterAddr
			if yf.clients, err = mkClients(cfg.RouterAddr); err != nil {
				return err
			}
			if _, err := waitServing(ctx, yf.clients[0], time.Now(), 30*time.Second); err != nil {
				return fmt.Errorf("router %s: %w", cfg.RouterAddr, err)
			}
		} else {
			addr, err := ssbench.FreeAddr()
			if err != nil {
				return err
			}
			logf, err := os.Create(filepath.Join(cfg.Dir, "router.log"))
			if err != nil {
				return err
			}
			defer logf.Close()
			cmd := exec.Command(cfg.Executable, append(append([]string{"router", "--store", strings.Join(storeAddrs, ",")}, routerStoreArgs...),
				"--clientrm-address", addr, "--web-address", "", "--admin-address", "", "--log-level", "warn")...)
			cmd.Stdout, cmd.Stderr = logf, logf
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				return err
			}
			defer stopProc(cmd)
			yf.pid = cmd.Process.Pid
			yf.note = "`yarnfed router` process"
			yf.addr = addr
			if yf.clients, err = mkClients(addr); err != nil {
				return err
			}
			if yf.coldStart, err = waitServing(ctx, yf.clients[0], t0, 30*time.Second); err != nil {
				return fmt.Errorf("yarnfed router (log %s): %w", logf.Name(), err)
			}
		}
	}
	targets = append(targets, yf)

	var hp *hadoopPeer
	if cfg.Peer == "hadoop" {
		fmt.Fprintln(w, "# starting the Hadoop peer (Maven classpath, ZooKeeper ensemble, Router JVM)...")
		hp, err = startHadoop(ctx, cfg, rms, scID)
		if hp != nil {
			defer hp.close()
		}
		if err != nil {
			return fmt.Errorf("hadoop peer: %w", err)
		}
		ht := &target{name: "hadoop", addr: hp.addr, pid: hp.router.Process.Pid, coldStart: hp.coldStart,
			note: "Hadoop " + hadoopVersion + " Router JVM (-Xmx" + cfg.HadoopHeap + ") over a 3-server ZooKeeper"}
		if ht.clients, err = mkClients(hp.addr); err != nil {
			return err
		}
		targets = append(targets, ht)
	}

	fmt.Fprintf(w, "\nrouter benchmark: 1 op = getNewApplication + submitApplication + getApplicationReport; Go client (one connection per target and RM); %d simrm sub-clusters in the bench process (added RM latency %v)\n", len(rms), cfg.RMLatency)
	fmt.Fprintf(w, "state store under the yarnfed router: %s\n", storeDesc)
	for _, t := range targets {
		if t.note != "" {
			fmt.Fprintf(w, "  %s: %s\n", t.name, t.note)
		}
	}
	for _, c := range cfg.Concurrency {
		res := map[string]*result{}
		for _, t := range targets {
			res[t.name] = &result{}
			// Warm up connections, caches and the JVM's JIT.
			warm := 300 * time.Millisecond
			if t.name == "hadoop" {
				warm = 3 * time.Second
			}
			if err := t.round(ctx, c, warm, &result{}); err != nil {
				return fmt.Errorf("warm-up %s: %w", t.name, err)
			}
		}
		per := cfg.Duration / time.Duration(cfg.Rounds)
		for range cfg.Rounds {
			for _, t := range targets {
				if err := t.round(ctx, c, per, res[t.name]); err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
			}
		}
		printTable(w, fmt.Sprintf("%d clients, %v per target (Go client)", c, cfg.Duration), targets, res)
	}
	if cfg.JavaClient {
		if err := runJavaClient(ctx, cfg, w, targets, hp); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%s at start, %s at end (2 shared cores: compare ratios within one run)\n", loadStart, procstat.LoadAvg())
	return nil
}

func printTable(w io.Writer, title string, targets []*target, res map[string]*result) {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tops/s\tp50\tp99\terrors\trouter CPU/op\trouter RSS (peak)\tcold start\tp50 new/submit/report\t")
	for _, t := range targets {
		r := res[t.name]
		cpu, rss, cold := "-", "-", "-"
		if t.pid > 0 && r.ops > 0 {
			cpu = fmt.Sprintf("%.0fus", float64(r.cpu)/float64(r.ops)/1e3)
			cur, peak := procstat.RSS(t.pid)
			rss = fmt.Sprintf("%d MiB (%d)", cur>>20, peak>>20)
		}
		if t.coldStart > 0 {
			cold = t.coldStart.Round(time.Millisecond).String()
		}
		split := fmt.Sprintf("%.2f/%.2f/%.2fms", msf(pct(r.calls[0], 50)), msf(pct(r.calls[1], 50)), msf(pct(r.calls[2], 50)))
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", t.name, r.rate(), ms(pct(r.lat, 50)), ms(pct(r.lat, 99)), r.errors, cpu, rss, cold, split)
	}
	tw.Flush()
	d := res["direct"].rate()
	y := res["yarnfed"].rate()
	line := fmt.Sprintf("ratio ops/s: yarnfed/direct %.2fx", y/d)
	if h, ok := res["hadoop"]; ok && h.rate() > 0 {
		line += fmt.Sprintf(", hadoop/direct %.2fx, yarnfed/hadoop %.2fx", h.rate()/d, y/h.rate())
	}
	fmt.Fprintln(w, line)
	if e := firstError(res); e != "" {
		fmt.Fprintln(w, "first error:", e)
	}
}

func firstError(res map[string]*result) string {
	for name, r := range res {
		if r.firstErr != nil {
			return name + ": " + r.firstErr.Error()
		}
	}
	return ""
}

// waitServing polls until one getNewApplication succeeds through c and
// returns the time since t0: the target's cold start.
func waitServing(ctx context.Context, c *hadoopipc.Client, t0 time.Time, limit time.Duration) (time.Duration, error) {
	deadline := t0.Add(limit)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Call(cctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
		cancel()
		if err == nil {
			return time.Since(t0), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("not serving getNewApplication within %v: %w", limit, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// round runs the workload for d with workers goroutines and adds to r.
func (t *target) round(ctx context.Context, workers int, d time.Duration, r *result) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	cpu0 := time.Duration(0)
	if t.pid > 0 {
		cpu0 = procstat.CPU(t.pid)
	}
	start := time.Now()
	var ops, fails atomic.Int64
	lats := make([][]time.Duration, workers)
	calls := make([][3][]time.Duration, workers)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range workers {
		c := t.clients[i%len(t.clients)]
		wg.Go(func() {
			for ctx.Err() == nil {
				s := time.Now()
				d, err := op(ctx, c)
				if err != nil {
					if ctx.Err() == nil {
						fails.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
					continue
				}
				lats[i] = append(lats[i], time.Since(s))
				for k := range d {
					calls[i][k] = append(calls[i][k], d[k])
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	if e, ok := firstErr.Load().(error); ok && ops.Load() == 0 {
		return e // every call failed: the target is broken, not slow
	}
	r.elapsed += time.Since(start)
	if t.pid > 0 {
		r.cpu += procstat.CPU(t.pid) - cpu0
	}
	r.ops += ops.Load()
	r.errors += fails.Load()
	if e, ok := firstErr.Load().(error); ok && r.firstErr == nil {
		r.firstErr = e
	}
	for i, l := range lats {
		r.lat = append(r.lat, l...)
		for k := range calls[i] {
			r.calls[k] = append(r.calls[k], calls[i][k]...)
		}
	}
	return nil
}

// op is one application's worth of client calls; it returns each call's
// latency.
func op(ctx context.Context, c *hadoopipc.Client) (d [3]time.Duration, err error) {
	t0 := time.Now()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(ctx, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return d, err
	}
	t1 := time.Now()
	req := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String("bench"), Queue: proto.String("default"),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
	}}
	if err := c.Call(ctx, "submitApplication", req, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return d, err
	}
	t2 := time.Now()
	rr := &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}
	if err := c.Call(ctx, "getApplicationReport", rr, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
		return d, err
	}
	return [3]time.Duration{t1.Sub(t0), t2.Sub(t1), time.Since(t2)}, nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func stopProc(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
}
