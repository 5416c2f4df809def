// Package bench measures the state store on this machine against a
// ZooKeeper ensemble (Hadoop's production store) under the same workload:
// application-home inserts (Hadoop's addApplicationHomeSubCluster) at
// rising concurrency, then linearizable and stale reads. `yarnfed bench
// statestore` runs it.
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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/yarnfed/yarnfed/internal/procstat"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/security"
	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Config configures a run.
type Config struct {
	// Addrs points at a running cluster instead of starting three
	// replicas on loopback.
	Addrs []string
	// TLS is the client transport to the running cluster at Addrs (mutual
	// TLS, as every store client role); nil is plaintext. The replicas
	// the benchmark starts itself are plaintext on loopback.
	TLS *tls.Config
	// Dir holds the replicas' and ZooKeeper's data (default: a temp dir,
	// removed afterwards).
	Dir string
	// Duration of each measurement (default 3s).
	Duration time.Duration
	// Concurrency levels for inserts (default 1, 8, 64, 256).
	Concurrency []int
	// ReadConcurrency for the get measurements (default 64; negative
	// skips them).
	ReadConcurrency int
	// Conns is the number of client instances (each one gRPC or
	// ZooKeeper connection, like one router process) the concurrent
	// callers share (default 2, as in a federation with two routers):
	// routers are few, requests many.
	Conns int
	// Executable, when set, runs each replica as its own process
	// (`Executable statestore ...`), as in production and like the
	// ZooKeeper servers; otherwise all three run inside this process.
	Executable string
	// FSMSync also fsyncs the FSM database per batch (the Raft log is
	// always fsynced).
	FSMSync bool
	// UnsafeNoSync skips the Raft log fsync: only to show what fsync
	// costs; the table says so.
	UnsafeNoSync bool
	// RaftLogStore is the replicas' Raft log store ("wal", "bolt"; empty:
	// the store's default). The table names the one used.
	RaftLogStore string
	// ZooKeeper compares against a 3-server ensemble started from
	// ZKClasspath with Java (Debian's zookeeper package).
	ZooKeeper   bool
	Java        string
	ZKClasspath string
	// Etcd compares against a 3-member etcd cluster, each member its own
	// process, started from EtcdBinary (default: see FindEtcd).
	Etcd       bool
	EtcdBinary string
	// Rows application homes are inserted into every system before
	// anything is measured (ids not used by the measured inserts).
	Rows int
	// RunID is the cluster-timestamp part of every application id this run
	// writes (default: now in ms), so runs against a running cluster never
	// reuse an earlier run's ids.
	RunID  int64
	Logger *slog.Logger
}

// DefaultConfig returns the configuration `yarnfed bench statestore` uses.
func DefaultConfig() Config {
	return Config{
		Duration:        3 * time.Second,
		Concurrency:     []int{1, 8, 64, 256},
		ReadConcurrency: 64,
		Conns:           2,
		ZooKeeper:       true,
		Java:            "java",
		ZKClasspath:     "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
	}
}

// target is one system under test.
type target interface {
	insert(ctx context.Context, conn int, appID string) error
	get(ctx context.Context, conn int, appID string, stale bool) error
	// serverCPU is CPU time used so far by server processes outside this
	// one (ZooKeeper's JVMs); in-process replicas count as our own.
	serverCPU() time.Duration
	// serverRSS is the resident memory of the server processes (0 when
	// they run in this process or elsewhere).
	serverRSS() int64
	close()
}

// Result is one measured row.
type Result struct {
	Ops      int
	Errors   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	// Attempts is how many operations were started (ids used).
	Attempts int64
	// CPU is the CPU time of clients and servers together: on a shared
	// machine it is steadier than ops/s, and 2 cores / (CPU per op)
	// bounds throughput on an idle one.
	CPU time.Duration
}

// CPUPerOp is the CPU cost of one operation.
func (r Result) CPUPerOp() time.Duration {
	if r.Ops == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Ops)
}

func selfCPU() time.Duration { return procstat.Self() }

// PerSecond is the throughput.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// measure runs op from c goroutines for d.
func measure(ctx context.Context, t target, c, conns int, d time.Duration, op func(ctx context.Context, conn int, seq int64) error) Result {
	r, _ := measureLat(ctx, t, c, conns, d, op)
	return r
}

// measureLat is measure that also returns every latency, sorted.
func measureLat(ctx context.Context, t target, c, conns int, d time.Duration, op func(ctx context.Context, conn int, seq int64) error) (Result, []time.Duration) {
	cpu0 := selfCPU() + t.serverCPU()
	var (
		wg   sync.WaitGroup
		seq  atomic.Int64
		errs atomic.Int64
		lats = make([][]time.Duration, c)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	stopAt := start.Add(d)
	for g := 0; g < c; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				t0 := time.Now()
				if err := op(ctx, g%conns, seq.Add(1)); err != nil {
					errs.Add(1)
					continue
				}
				lats[g] = append(lats[g], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	r := Result{Ops: len(all), Errors: int(errs.Load()), Elapsed: elapsed, Attempts: seq.Load(), CPU: selfCPU() + t.serverCPU() - cpu0}
	if len(all) > 0 {
		r.P50 = all[len(all)/2]
		r.P99 = all[len(all)*99/100]
	}
	return r, all
}

// Run starts the systems, measures, and prints the table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) error {
	if err := store.ValidLogStore(cfg.RaftLogStore); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	def := DefaultConfig()
	if cfg.Duration <= 0 {
		cfg.Duration = def.Duration
	}
	if len(cfg.Concurrency) == 0 {
		cfg.Concurrency = def.Concurrency
	}
	if cfg.ReadConcurrency == 0 {
		cfg.ReadConcurrency = def.ReadConcurrency
	}
	if cfg.Conns <= 0 {
		cfg.Conns = def.Conns
	}
	cleanup, err := scratchDir(&cfg.Dir, "yarnfed-bench-statestore-")
	if err != nil {
		return err
	}
	defer cleanup()

	if cfg.RunID == 0 {
		cfg.RunID = time.Now().UnixMilli()
	}
	type system struct {
		name  string
		start func() (target, error)
	}
	systems := []system{{"yarnfed", func() (target, error) { return startYarnfed(ctx, cfg) }}}
	if cfg.ZooKeeper {
		systems = append(systems, system{"zookeeper", func() (target, error) { return startZooKeeper(ctx, cfg) }})
	}
	if cfg.Etcd {
		systems = append(systems, system{"etcd", func() (target, error) { return startEtcd(ctx, cfg) }})
	}
	type row struct {
		workload string
		clients  int
		res      map[string]Result
	}
	var rows []*row
	find := func(wl string, c int) *row {
		for _, r := range rows {
			if r.workload == wl && r.clients == c {
				return r
			}
		}
		r := &row{workload: wl, clients: c, res: map[string]Result{}}
		rows = append(rows, r)
		return r
	}
	loadBefore := procstat.LoadAvg()
	fmt.Fprintf(w, "# %s at start; application ids application_%d_*\n", loadBefore, cfg.RunID)
	rss := map[string]int64{}
	for _, sys := range systems {
		fmt.Fprintf(w, "# starting %s...\n", sys.name)
		t, err := sys.start()
		if err != nil {
			return fmt.Errorf("%s: %w", sys.name, err)
		}
		maxSeq := int64(0)
		if cfg.Rows > 0 {
			t0 := time.Now()
			if err := preload(ctx, t, cfg, cfg.Rows); err != nil {
				t.close()
				return fmt.Errorf("%s: preload: %w", sys.name, err)
			}
			maxSeq = int64(cfg.Rows)
			fmt.Fprintf(w, "# %s: preloaded %d rows in %v\n", sys.name, cfg.Rows, time.Since(t0).Round(time.Millisecond))
		}
		for _, c := range cfg.Concurrency {
			base := maxSeq
			r := measure(ctx, t, c, cfg.Conns, cfg.Duration, func(ctx context.Context, conn int, seq int64) error {
				return t.insert(ctx, conn, appID(cfg.RunID, base+seq))
			})
			maxSeq = base + r.Attempts
			find("app-home insert", c).res[sys.name] = r
			fmt.Fprintf(w, "# %s insert c=%d: %.0f/s, %v CPU/op\n", sys.name, c, r.PerSecond(), r.CPUPerOp())
		}
		inserted := maxSeq // every id up to here was inserted (failed inserts are counted as errors above)
		for _, stale := range []bool{false, true} {
			if cfg.ReadConcurrency < 0 {
				break
			}
			wl := "get (linearizable)"
			if stale {
				wl = "get (stale)"
			}
			r := measure(ctx, t, cfg.ReadConcurrency, cfg.Conns, cfg.Duration, func(ctx context.Context, conn int, seq int64) error {
				return t.get(ctx, conn, appID(cfg.RunID, 1+seq%max(inserted, 1)), stale)
			})
			find(wl, cfg.ReadConcurrency).res[sys.name] = r
			fmt.Fprintf(w, "# %s %s: %.0f/s, %v CPU/op\n", sys.name, wl, r.PerSecond(), r.CPUPerOp())
		}
		rss[sys.name] = t.serverRSS()
		t.close()
	}

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	sync := "Raft log fsync on"
	if cfg.UnsafeNoSync {
		sync = "UNSAFE: Raft log fsync OFF"
	}
	if cfg.FSMSync {
		sync += ", FSM fsync on"
	}
	logStore := cfg.RaftLogStore
	switch {
	case logStore == "" && cfg.UnsafeNoSync:
		logStore = store.LogStoreBolt // the only one that can skip fsync
	case logStore == "":
		logStore = store.DefaultLogStore
	}
	sync += ", Raft log store " + logStore
	where := "in this process"
	transport := "plaintext gRPC"
	switch {
	case len(cfg.Addrs) > 0:
		where = "already running at " + strings.Join(cfg.Addrs, ",")
		if cfg.TLS != nil {
			transport = "mutual TLS"
		}
		sync = "durability as that cluster is configured"
	case cfg.Executable != "":
		where = "as separate processes"
	}
	fmt.Fprintf(w, "\nstate store benchmark: yarnfed 3 replicas on loopback %s (%s, %s)", where, sync, transport)
	if cfg.ZooKeeper {
		fmt.Fprint(w, "; zookeeper 3 servers, separate JVMs (forceSync=yes)")
	}
	if cfg.Etcd {
		fmt.Fprint(w, "; etcd 3 members, separate processes (WAL fsync), insert = Txn(If CreateRevision==0 Then Put Else Get)")
	}
	fmt.Fprintf(w, "\n%s per cell, %d rows preloaded, callers spread over %d client instances (one connection each); CPU/op = client+server CPU\n", cfg.Duration, cfg.Rows, cfg.Conns)
	fmt.Fprintf(w, "%s at start, %s at end (2 cores shared: ratios in one run mean more than absolute numbers)\n", loadBefore, procstat.LoadAvg())
	header := "workload\tclients\t"
	for _, sys := range systems {
		header += sys.name + " ops/s\tp50\tp99\tCPU/op\terrors\t"
	}
	for _, sys := range systems[1:] {
		header += "yarnfed/" + sys.name + "\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		line := fmt.Sprintf("%s\t%d\t", r.workload, r.clients)
		for _, sys := range systems {
			x, ok := r.res[sys.name]
			if !ok {
				line += "-\t-\t-\t-\t-\t"
				continue
			}
			line += fmt.Sprintf("%.0f\t%s\t%s\t%s\t%d\t", x.PerSecond(), ms(x.P50), ms(x.P99), us(x.CPUPerOp()), x.Errors)
		}
		y := r.res["yarnfed"]
		for _, sys := range systems[1:] {
			if p := r.res[sys.name]; p.PerSecond() > 0 {
				line += fmt.Sprintf("%.2fx\t", y.PerSecond()/p.PerSecond())
			} else {
				line += "-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sys := range systems {
		if v := rss[sys.name]; v > 0 {
			fmt.Fprintf(w, "%s servers' RSS at the end: %d MiB (3 processes)\n", sys.name, v>>20)
		}
	}
	return nil
}

// preload inserts rows application homes (ids 1..rows of this run) with 64
// callers, so the measured inserts run against a store that is not empty.
func preload(ctx context.Context, t target, cfg Config, rows int) error {
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(rows) || ctx.Err() != nil {
					return
				}
				if err := t.insert(ctx, g%cfg.Conns, appID(cfg.RunID, i)); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("row %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fus", float64(d)/float64(time.Microsecond)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// appID is the i'th application id of run (a cluster timestamp): ids of
// one run never collide with an earlier run's.
func appID(run, i int64) string { return fmt.Sprintf("application_%d_%08d", run, i) }

// ---- yarnfed ----

type yarnfedTarget struct {
	nodes   []*node.Node
	procs   []*exec.Cmd
	clients []*client.Client
	// stale readers start at different replicas: stale reads are what
	// followers are for.
	stale []*client.Client
}

// FreeAddr is a loopback address with a port free a moment ago, for a
// process the bench starts to listen on (router/bench uses it too).
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startYarnfed(ctx context.Context, cfg Config) (target, error) {
	t := &yarnfedTarget{}
	addrs := cfg.Addrs
	if len(addrs) == 0 && cfg.Executable != "" {
		var err error
		if addrs, err = t.startProcs(ctx, cfg); err != nil {
			t.close()
			return nil, err
		}
	}
	if len(addrs) == 0 {
		var peers []string
		var cfgs []node.Config
		for i := 0; i < 3; i++ {
			raftAddr, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			nc := node.DefaultConfig()
			nc.NodeID = fmt.Sprintf("bench%d", i)
			nc.DataDir = filepath.Join(cfg.Dir, nc.NodeID)
			nc.GRPCAddress, nc.RaftAddress, nc.HTTPAddress = "127.0.0.1:0", raftAddr, ""
			nc.Bootstrap, nc.FSMSync, nc.NoSync, nc.RaftLogStore = true, cfg.FSMSync, cfg.UnsafeNoSync, cfg.RaftLogStore
			nc.Logger = cfg.Logger
			nc.Insecure = true // loopback benchmark
			peers = append(peers, nc.NodeID+"="+raftAddr)
			cfgs = append(cfgs, nc)
		}
		for _, nc := range cfgs {
			nc.Peers = peers
			n, err := node.Start(ctx, nc)
			if err != nil {
				t.close()
				return nil, err
			}
			t.nodes = append(t.nodes, n)
		}
		// Wait for a leader that every replica knows, then put it first:
		// routers would reach it after their first forwarded call anyway.
		deadline := time.Now().Add(30 * time.Second)
		for {
			leader := -1
			for i, n := range t.nodes {
				if n.Store.IsLeader() {
					leader = i
				}
			}
			ready := leader >= 0
			for _, n := range t.nodes {
				if _, a := n.Store.Leader(); a == "" {
					ready = false
				}
			}
			if ready {
				addrs = []string{t.nodes[leader].GRPCAddr()}
				for i, n := range t.nodes {
					if i != leader {
						addrs = append(addrs, n.GRPCAddr())
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.close()
				return nil, errors.New("no leader within 30s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var tc *tls.Config
	if len(cfg.Addrs) > 0 {
		tc = cfg.TLS
	}
	for i := 0; i < max(cfg.Conns, 1); i++ {
		c, err := client.New(client.Config{Addrs: addrs, DisableCache: true, Logger: cfg.Logger, TLS: tc})
		if err != nil {
			t.close()
			return nil, err
		}
		t.clients = append(t.clients, c)
		rot := append(append([]string{}, addrs[i%len(addrs):]...), addrs[:i%len(addrs)]...)
		if c, err = client.New(client.Config{Addrs: rot, DisableCache: true, Logger: cfg.Logger, TLS: tc}); err != nil {
			t.close()
			return nil, err
		}
		t.stale = append(t.stale, c)
	}
	return t, nil
}

// startProcs starts three `statestore` processes and returns their gRPC
// addresses, leader first.
func (t *yarnfedTarget) startProcs(ctx context.Context, cfg Config) ([]string, error) {
	r, err := StartReplicas(ctx, cfg.Executable, cfg.Dir, ReplicaOptions{FSMSync: cfg.FSMSync, UnsafeNoSync: cfg.UnsafeNoSync, RaftLogStore: cfg.RaftLogStore})
	if r != nil {
		t.procs = r.Procs
	}
	if err != nil {
		return nil, err
	}
	return r.Addrs, nil
}

// ReplicaOptions shape StartReplicas' processes.
type ReplicaOptions struct {
	FSMSync, UnsafeNoSync bool
	// RaftLogStore is passed as --raft-log-store when set.
	RaftLogStore string
	// PKIDir, when set, holds `yarnfed certs` output with parties bench0,
	// bench1, bench2 (replica) and bench-admin (admin): the replicas then
	// run mutual TLS, as deployed, instead of --insecure.
	PKIDir string
	// ExtraArgs are appended to every replica's command line.
	ExtraArgs []string
	// HTTP gives every replica an HTTP port (/metrics), in Replicas.HTTP.
	HTTP bool
}

// TLSInfo is party's certificate files in a `yarnfed certs` directory.
func TLSInfo(pkiDir, party string) security.TLSInfo {
	d := filepath.Join(pkiDir, party)
	return security.TLSInfo{CertFile: filepath.Join(d, "cert.crt"), KeyFile: filepath.Join(d, "cert.key"), CAFile: filepath.Join(d, "ca.crt")}
}

// Replicas is a 3-replica state store, each replica a `yarnfed statestore`
// process on loopback (plaintext gRPC with --insecure, or mutual TLS),
// Raft log fsync on.
type Replicas struct {
	// Addrs are the gRPC addresses, leader first.
	Addrs []string
	// Procs[i] is replica bench<i>, GRPC[i] its gRPC address, Dirs[i] its
	// data directory.
	Procs []*exec.Cmd
	GRPC  []string
	Dirs  []string
	// HTTP[i] is replica i's /metrics address (ReplicaOptions.HTTP).
	HTTP []string
	exe  string
	args [][]string
	logs []string
}

// startInGroup starts cmd in a process group of its own (so a kill takes
// its children too), its output appended to logf.
func startInGroup(cmd *exec.Cmd, logf *os.File) error {
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// scratchDir points *dir at a new temporary directory (named after
// prefix) when it is empty; cleanup removes the directory it made.
func scratchDir(dir *string, prefix string) (cleanup func(), err error) {
	if *dir != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	*dir = d
	return func() { os.RemoveAll(d) }, nil
}

// Start (re)starts replica i with the command line it was first started
// with, its output appended to its log; it returns at once.
func (r *Replicas) Start(i int) error {
	logf, err := os.OpenFile(r.logs[i], os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.exe, r.args[i]...)
	err = startInGroup(cmd, logf)
	logf.Close() // the child holds its own descriptor
	if err != nil {
		return err
	}
	if i < len(r.Procs) {
		r.Procs[i] = cmd
	} else {
		r.Procs = append(r.Procs, cmd)
	}
	return nil
}

// Stop sends sig to replica i and waits for it to exit (SIGKILL is a
// crash, SIGTERM an orderly shutdown).
func (r *Replicas) Stop(i int, sig syscall.Signal) {
	if p := r.Procs[i]; p.Process != nil {
		p.Process.Signal(sig)
		p.Wait()
		p.Process = nil
	}
}

// Close stops the replicas (SIGTERM, then waits).
func (r *Replicas) Close() {
	for _, p := range r.Procs {
		if p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
	}
}

// StartReplicas starts three `exe statestore` processes with their data
// and logs under dir and returns once every replica knows the leader. On
// error the returned Replicas (if any) holds what was started.
func StartReplicas(ctx context.Context, exe, dir string, opt ReplicaOptions) (*Replicas, error) {
	r := &Replicas{exe: exe}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return r, err
	}
	var probeTLS *tls.Config
	if opt.PKIDir != "" {
		var err error
		if probeTLS, err = (security.ClientFlags{TLS: TLSInfo(opt.PKIDir, "bench-admin")}).TLSConfig(nil); err != nil {
			return r, err
		}
	}
	var raftAddrs, grpcAddrs, peers []string
	for i := 0; i < 3; i++ {
		ra, err := FreeAddr()
		if err != nil {
			return r, err
		}
		g, err := FreeAddr()
		if err != nil {
			return r, err
		}
		raftAddrs, grpcAddrs = append(raftAddrs, ra), append(grpcAddrs, g)
		peers = append(peers, fmt.Sprintf("bench%d=%s", i, ra))
	}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("bench%d", i)
		httpAddr := ""
		if opt.HTTP {
			var err error
			if httpAddr, err = FreeAddr(); err != nil {
				return r, err
			}
			r.HTTP = append(r.HTTP, httpAddr)
		}
		args := []string{"statestore", "--node-id", id, "--bootstrap", "--peers", strings.Join(peers, ","),
			"--data-dir", filepath.Join(dir, id), "--grpc-address", grpcAddrs[i], "--raft-address", raftAddrs[i],
			"--http-address", httpAddr, "--log-level", "warn"}
		if opt.PKIDir != "" {
			ti := TLSInfo(opt.PKIDir, id)
			args = append(args, "--tls-cert", ti.CertFile, "--tls-key", ti.KeyFile, "--tls-ca", ti.CAFile)
		} else {
			args = append(args, "--insecure")
		}
		if opt.FSMSync {
			args = append(args, "--fsm-sync")
		}
		if opt.UnsafeNoSync {
			args = append(args, "--unsafe-no-sync")
		}
		if opt.RaftLogStore != "" {
			args = append(args, "--raft-log-store", opt.RaftLogStore)
		}
		args = append(args, opt.ExtraArgs...)
		r.args, r.logs = append(r.args, args), append(r.logs, filepath.Join(dir, id+".log"))
		r.GRPC, r.Dirs = append(r.GRPC, grpcAddrs[i]), append(r.Dirs, filepath.Join(dir, id))
		if err := os.Remove(r.logs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r, err
		}
		if err := r.Start(i); err != nil {
			return r, err
		}
	}
	// Ready when every replica knows the leader's address.
	deadline := time.Now().Add(storeReadyTimeout)
	var notReady string
	for {
		leader, ready := "", true
		for _, a := range grpcAddrs {
			c, err := client.New(client.Config{Addrs: []string{a}, DisableCache: true, DisableBatching: true, RetryTimeout: time.Second, TLS: probeTLS})
			if err != nil {
				return r, err
			}
			st, err := c.Status(ctx)
			c.Close()
			if err != nil || st.GetLeaderGrpcAddress() == "" {
				notReady = fmt.Sprintf("%s: no leader known (%v)", a, err)
				ready = false
				break
			}
			leader = st.GetLeaderGrpcAddress()
		}
		if ready {
			r.Addrs = []string{leader}
			for _, a := range grpcAddrs {
				if a != leader {
					r.Addrs = append(r.Addrs, a)
				}
			}
			return r, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return r, fmt.Errorf("statestore processes not ready within %v, last %s (logs in %s)", storeReadyTimeout, notReady, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// storeReadyTimeout bounds the wait for the replicas to start and agree on
// a leader. 30 s was too short for three TLS replicas at load 18 (a
// cold CI run's router bench smoke, 2026-11-28); a bench that has to wait
// longer measures a loaded machine anyway, and the load is printed.
const storeReadyTimeout = 90 * time.Second

// insert is what the router does for a submission: insert-if-absent, and
// after an answer of unknown outcome (the client does not resend those)
// insert again as a new call, which finds the row if the first one stored
// it. The bench counts it as one operation, as a submission is one.
func (t *yarnfedTarget) insert(ctx context.Context, conn int, id string) error {
	h := &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}
	_, _, err := t.clients[conn].AddApplicationHome(ctx, h)
	for try := 1; try < 4 && errors.Is(err, client.ErrUnknownOutcome) && ctx.Err() == nil; try++ {
		_, _, err = t.clients[conn].AddApplicationHome(ctx, h)
	}
	return err
}

func (t *yarnfedTarget) get(ctx context.Context, conn int, id string, stale bool) error {
	if stale {
		_, err := t.stale[conn].GetApplicationHome(ctx, id, false, client.Stale())
		return err
	}
	_, err := t.clients[conn].GetApplicationHome(ctx, id, false)
	return err
}

func (t *yarnfedTarget) serverCPU() time.Duration { return procCPU(t.procs) }

func (t *yarnfedTarget) serverRSS() int64 { return procRSS(t.procs) }

func (t *yarnfedTarget) close() {
	for _, c := range append(t.clients, t.stale...) {
		c.Close()
	}
	for _, n := range t.nodes {
		n.Close()
	}
	for _, p := range t.procs {
		if p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
	}
}
