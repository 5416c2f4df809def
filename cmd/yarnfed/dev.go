package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/node"
	"github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// devConfig is what `yarnfed dev` runs: everything on loopback in one
// process, so a newcomer sees a working federation with one command.
type devConfig struct {
	SubClusters   int
	DataDir       string // "" = a temporary directory removed on exit
	StoreAddr     string
	RouterAddr    string
	RouterWebAddr string
	// RouterAdminAddr serves `yarn routeradmin` and `yarn rmadmin`
	// (yarn.router.rmadmin.address); empty turns the admin port off.
	RouterAdminAddr string
	// GPG runs a Global Policy Generator (no Kubernetes) that manages the
	// analytics queue's weights; GPGWebAddr serves its status ("" = none).
	GPG          bool
	GPGWebAddr   string
	Demo         bool
	DemoApps     int // 0 = until interrupted
	DemoInterval time.Duration
	LogLevel     string
	// ready, if set, receives the running federation once it serves (tests).
	ready func(*devFederation)
}

func defaultDevConfig() devConfig {
	return devConfig{
		SubClusters:   3,
		StoreAddr:     "127.0.0.1:9090",
		RouterAddr:    "127.0.0.1:8050",
		RouterWebAddr: "127.0.0.1:8089",
		// Hadoop's port, on loopback as every dev port.
		RouterAdminAddr: "127.0.0.1:8052",
		GPG:             true,
		GPGWebAddr:      "127.0.0.1:8069",
		DemoInterval:    500 * time.Millisecond,
		LogLevel:        "warn",
	}
}

// newDevCmd is `yarnfed dev`: the embedded federation (the main job).
func newDevCmd() *cobra.Command {
	cfg := defaultDevConfig()
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a whole federation on loopback: state store, simulated RMs with agents, router",
		Long: `dev starts, in this one process and on loopback only: a single-replica Raft state store, N
sub-clusters each run by simrm (a SIMULATED ResourceManager; the last one is an HA pair) with a
sub-cluster agent registering and heartbeating it, and a router serving ApplicationClientProtocol
and the RM REST API, one AMRMProxy per sub-cluster (as if beside one of its NodeManagers), and a
Global Policy Generator. Queues get federation policies so routing decisions are visible: the GPG
keeps analytics' weights following each sub-cluster's headroom; etl is pinned (the GPG leaves it). It prints every endpoint
and copy-paste examples; --demo first runs one application whose AM, through the AMRMProxy, gets
containers from every sub-cluster, then drives a stream of submissions through the router and
prints, live, where each application landed and which policy put it there.`,
		Example: `  yarnfed dev
  yarnfed dev --demo
  yarnfed dev --demo --demo-apps 30 --subclusters 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.SubClusters, "subclusters", cfg.SubClusters, "number of simulated sub-clusters (2-9)")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "state store directory kept across runs (default: a temporary one, removed on exit)")
	f.StringVar(&cfg.StoreAddr, "store-address", cfg.StoreAddr, "state store gRPC address")
	f.StringVar(&cfg.RouterAddr, "router-address", cfg.RouterAddr, "router ApplicationClientProtocol address (yarn.resourcemanager.address for clients)")
	f.StringVar(&cfg.RouterWebAddr, "router-web-address", cfg.RouterWebAddr, "router RM REST API address")
	f.StringVar(&cfg.RouterAdminAddr, "router-admin-address", cfg.RouterAdminAddr, "router admin address for yarn routeradmin and yarn rmadmin (yarn.router.rmadmin.address); empty disables")
	f.BoolVar(&cfg.GPG, "gpg", cfg.GPG, "run a Global Policy Generator (weights of the analytics queue from headroom)")
	f.StringVar(&cfg.GPGWebAddr, "gpg-web-address", cfg.GPGWebAddr, "GPG status and metrics address (empty disables)")
	f.BoolVar(&cfg.Demo, "demo", cfg.Demo, "submit applications continuously and show where they land and why")
	f.IntVar(&cfg.DemoApps, "demo-apps", cfg.DemoApps, "with --demo: stop after this many applications (0 = until interrupted)")
	f.DurationVar(&cfg.DemoInterval, "demo-interval", cfg.DemoInterval, "with --demo: pause between submissions")
	f.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error (logs go to stderr)")
	return cmd
}

// devFederation is the running embedded federation.
type devFederation struct {
	store   *node.Node
	sc      *client.Client
	rms     map[string][]*simrm.RM // sub-cluster id -> RMs (HA pair: active first)
	ids     []string
	router  *router.Router
	gpg     *gpg.GPG // nil without --gpg
	confDir string
	// proxies: one AMRMProxy per sub-cluster, as if beside one of its
	// NodeManagers.
	proxies map[string]*amrmproxy.Proxy
}

// devQueues are the simulated queues; devPolicies gives each a stored
// federation policy, so the demo shows three routing behaviours.
const devQueues = "default:50,analytics:30,etl:20"

func devPolicies(ids []string) []string {
	// default: homes by equal weights and AMRM asks split across the
	// sub-clusters by the same weights (WeightedLocality, headroomAlpha 0):
	// an AM asking for N containers gets N in all, spread out. Hadoop's
	// default (UniformBroadcast) would send every ask to every
	// sub-cluster, so N asked gives N from each. analytics: weighted
	// random, the first sub-cluster favoured; etl: priority, always the
	// last sub-cluster while it is routable.
	n := len(ids)
	equal := make([]int, n)
	analytics := make([]int, n)
	priority := make([]int, n)
	for i := range ids {
		equal[i] = 100 / n
		analytics[i] = 50 / (n - 1)
		priority[i] = 100 * (i + 1) / (n * (n + 1) / 2)
	}
	analytics[0] = 50
	return []string{
		"WeightedLocality|default;" + percentWeights(ids, equal) + ";" + percentWeights(ids, equal) + ";0.0",
		"WeightedHome|analytics;" + percentWeights(ids, analytics) + ";" + percentWeights(ids, analytics) + ";1.0",
		"PriorityBroadcast|etl;" + percentWeights(ids, priority) + ";" + percentWeights(ids, priority) + ";1.0",
	}
}

// percentWeights writes whole percentages as a routeradmin weight list. The
// last sub-cluster takes what rounding left over, so the list sums to
// exactly 1 as Hadoop's format requires.
func percentWeights(ids []string, pct []int) string {
	rest := 100
	parts := make([]string, len(ids))
	for i, id := range ids {
		p := pct[i]
		if i == len(ids)-1 {
			p = rest
		}
		rest -= p
		parts[i] = fmt.Sprintf("%s:%.2f", id, float64(p)/100)
	}
	return strings.Join(parts, ",")
}

func runDev(ctx context.Context, cfg devConfig, out io.Writer) error {
	if cfg.SubClusters < 2 || cfg.SubClusters > 9 {
		return fmt.Errorf("--subclusters: %d, want 2 to 9", cfg.SubClusters)
	}
	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return err
	}
	dir := cfg.DataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "yarnfed-dev-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	fed, err := startDevFederation(ctx, cfg, dir, log)
	if err != nil {
		return err
	}
	defer fed.close()
	fed.printWelcome(out, cfg)
	if cfg.ready != nil {
		cfg.ready(fed)
	}

	errc := make(chan error, 1)
	go func() { errc <- fed.router.Run(ctx) }()
	for _, p := range fed.proxies {
		go func() { _ = p.Run(ctx) }()
	}
	gpgDone := make(chan struct{})
	if fed.gpg != nil {
		go func() { _ = fed.gpg.Run(ctx); close(gpgDone) }()
		defer func() { cancel(); <-gpgDone }()
	}
	if cfg.Demo {
		if err := runSpanDemo(ctx, fed, out); err != nil && ctx.Err() == nil {
			return fmt.Errorf("AMRMProxy demo: %w", err)
		}
		if err := runDemo(ctx, fed, cfg, out); err != nil && ctx.Err() == nil {
			return err
		}
		if cfg.DemoApps > 0 {
			cancel()
		}
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	fmt.Fprintln(out, "\nyarnfed dev: shutting down")
	cancel()
	return <-errc
}

func startDevFederation(ctx context.Context, cfg devConfig, dir string, log *slog.Logger) (f *devFederation, err error) {
	f = &devFederation{rms: map[string][]*simrm.RM{}, confDir: filepath.Join(dir, "conf")}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	reg := prometheus.NewRegistry()

	storeCfg := node.DefaultConfig()
	storeCfg.NodeID = "dev-store"
	storeCfg.DataDir = filepath.Join(dir, "statestore")
	storeCfg.GRPCAddress = cfg.StoreAddr
	storeCfg.RaftAddress = "127.0.0.1:0"
	storeCfg.HTTPAddress = ""
	storeCfg.Bootstrap = true
	// dev is one process on loopback: plaintext, said so in the log.
	storeCfg.Insecure = true
	storeCfg.Logger = log.With("component", "statestore")
	if f.store, err = node.Start(ctx, storeCfg); err != nil {
		return f, fmt.Errorf("state store: %w", err)
	}
	if err = f.store.Store.WaitLeader(ctx); err != nil {
		return f, fmt.Errorf("state store: %w", err)
	}
	if f.sc, err = client.New(client.Config{Addrs: []string{f.store.GRPCAddr()}, Logger: log}); err != nil {
		return f, err
	}

	queues, err := simrm.ParseQueues(devQueues)
	if err != nil {
		return f, err
	}
	for i := 1; i <= cfg.SubClusters; i++ {
		id := fmt.Sprintf("sc%d", i)
		rcfg := simrm.DefaultConfig()
		rcfg.ClusterID = id
		rcfg.ClientAddr, rcfg.SchedulerAddr, rcfg.AdminAddr, rcfg.WebAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
		rcfg.Nodes = 4 * i // unequal sizes make load-based views interesting
		rcfg.HostPrefix = id + "-node-"
		rcfg.Queues = queues
		rcfg.SimAM.ContainerRuntime = config.Duration(5 * time.Second)
		rcfg.Logger = log.With("component", "simrm", "subcluster", id)
		rm, err := simrm.New(rcfg)
		if err != nil {
			return f, err
		}
		if err := rm.Start(ctx); err != nil {
			return f, err
		}
		f.rms[id] = []*simrm.RM{rm}
		if i == cfg.SubClusters { // the last sub-cluster is an RM HA pair
			scfg := rcfg
			scfg.Logger = rcfg.Logger.With("ha", "standby")
			sb, err := simrm.NewStandby(rm, scfg)
			if err != nil {
				return f, err
			}
			if err := sb.Start(ctx); err != nil {
				return f, err
			}
			f.rms[id] = append(f.rms[id], sb)
		}
		f.ids = append(f.ids, id)

		acfg := subclusteragent.DefaultConfig()
		acfg.SubClusterID = id
		for _, r := range f.rms[id] {
			a := r.Addrs()
			acfg.RMs = append(acfg.RMs, subclusteragent.RMEndpoint{ClientRM: a.Client, AMRM: a.Scheduler, Admin: a.Admin, Web: a.Web})
		}
		acfg.Store = subclusteragent.NewClientStore(f.sc)
		acfg.Logger = log.With("component", "subcluster-agent")
		agent, err := subclusteragent.New(acfg)
		if err != nil {
			return f, err
		}
		go agent.Run(ctx)
	}

	if err := f.seedPolicies(ctx); err != nil {
		return f, err
	}

	rtCfg := router.DefaultConfig()
	rtCfg.ClientRMAddress = cfg.RouterAddr
	rtCfg.WebAddress = cfg.RouterWebAddr
	rtCfg.AdminAddress = cfg.RouterAdminAddr
	rtCfg.Store = router.NewClientStore(f.sc)
	rtCfg.Version = version
	rtCfg.Logger = log.With("component", "router")
	rtCfg.Registerer, rtCfg.Gatherer = reg, reg
	if f.router, err = router.New(rtCfg); err != nil {
		return f, err
	}
	if err := f.waitRoutable(ctx, 30*time.Second); err != nil {
		return f, err
	}
	if err := f.startProxies(ctx, dir, log); err != nil {
		return f, err
	}
	if cfg.GPG {
		// As `yarnfed gpg` runs it, without Kubernetes. It manages the
		// stored weighted queues that are not pinned (analytics), not "*":
		// the default queue's split is pinned, as the span demo shows it.
		gcfg := gpg.DefaultConfig()
		gcfg.ID, gcfg.WebAddress, gcfg.Store = "dev-gpg", cfg.GPGWebAddr, f.sc
		gcfg.Generator.ManageDefault = false
		// Reap UAMs whose home application ended, every 5 s (dev's RMs
		// are simulated and its GPG may kill there).
		gcfg.UAMReaper.Enabled, gcfg.UAMReaper.Interval = true, gpg.Duration(5*time.Second)
		gcfg.Logger = log.With("component", "gpg")
		greg := prometheus.NewRegistry()
		gcfg.Registerer, gcfg.Gatherer = greg, greg
		if f.gpg, err = gpg.New(gcfg, nil); err != nil {
			return f, fmt.Errorf("gpg: %w", err)
		}
	}
	return f, f.writeClientConf()
}

// startProxies opens one AMRMProxy per sub-cluster. In dev the simulated
// home RM lends its AMRMToken checker in place of the SASL relay a real
// deployment uses (see amrmproxy/DESIGN.md).
func (f *devFederation) startProxies(ctx context.Context, dir string, log *slog.Logger) error {
	f.proxies = map[string]*amrmproxy.Proxy{}
	for _, id := range f.ids {
		home := f.rms[id][0].AMRMSecrets()
		pcfg := amrmproxy.DefaultConfig()
		pcfg.SubClusterID, pcfg.AMRMAddress, pcfg.WebAddress = id, "127.0.0.1:0", ""
		pcfg.DataDir = filepath.Join(dir, "amrmproxy-"+id)
		pcfg.Store = amrmproxy.ClientStore{C: f.sc}
		pcfg.Secrets = home
		pcfg.Passwords = func(ident []byte) ([]byte, error) { pw, _, err := home.RetrievePassword(ident); return pw, err }
		pcfg.Logger = log.With("component", "amrmproxy", "subcluster", id)
		p, err := amrmproxy.Open(pcfg)
		if err != nil {
			return fmt.Errorf("amrmproxy %s: %w", id, err)
		}
		if err := p.RefreshNow(ctx); err != nil {
			p.Close()
			return fmt.Errorf("amrmproxy %s: %w", id, err)
		}
		f.proxies[id] = p
	}
	return nil
}

// seedPolicies stores the demo queue policies unless the store already has
// policies (a --data-dir kept from an earlier run, or edits by yarnfedctl).
func (f *devFederation) seedPolicies(ctx context.Context) error {
	have, err := f.sc.ListPolicies(ctx)
	if err != nil || len(have) > 0 {
		return err
	}
	cfgs, err := devPolicyConfigs(f.ids)
	if err != nil {
		return err
	}
	for _, pc := range cfgs {
		// etl's priorities and default's even split are an operator's
		// choice: pinned, so a GPG leaves them alone (yarnfedctl policy
		// unpin hands them over).
		pinned := pc.Queue == "etl" || pc.Queue == "default"
		if err := f.sc.SetPolicy(ctx, &storepb.PolicyConfiguration{Queue: pc.Queue, Type: pc.Type, Params: pc.Params, Pinned: pinned}); err != nil {
			return err
		}
	}
	return nil
}

// devPolicyConfigs turns devPolicies into stored configurations, in
// Hadoop's format, as `yarn routeradmin -policy -s` would save them.
func devPolicyConfigs(ids []string) ([]policies.PolicyConfig, error) {
	reg := policies.NewDefaultRegistry()
	var out []policies.PolicyConfig
	for _, p := range devPolicies(ids) {
		manager, spec, _ := strings.Cut(p, "|")
		qp, err := policies.ParsePolicySaveString(spec)
		if err != nil {
			return nil, fmt.Errorf("dev policy %q: %w", spec, err)
		}
		pc, err := reg.QueuePolicyConfig(qp, manager, policies.Env{})
		if err != nil {
			return nil, fmt.Errorf("dev policy %q: %w", spec, err)
		}
		out = append(out, pc)
	}
	return out, nil
}

// waitRoutable waits until every sub-cluster is registered RUNNING, so the
// first command a user pastes already sees the whole federation.
func (f *devFederation) waitRoutable(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		scs, err := f.sc.ListSubClusters(ctx, true)
		if err == nil && len(scs) == len(f.ids) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sub-clusters not all RUNNING after %v (have %d of %d): %w", limit, len(scs), len(f.ids), errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeClientConf writes a yarn-site.xml that points unmodified Hadoop
// clients at the router.
func (f *devFederation) writeClientConf() error {
	if err := os.MkdirAll(f.confDir, 0o755); err != nil {
		return err
	}
	admin := ""
	if a := f.router.AdminAddr(); a != nil {
		// `yarn routeradmin` reads the first, `yarn rmadmin` the second:
		// both reach the router's admin port.
		admin = fmt.Sprintf(`  <property><name>yarn.router.rmadmin.address</name><value>%s</value></property>
  <property><name>yarn.resourcemanager.admin.address</name><value>%s</value></property>
`, a, a)
	}
	xml := fmt.Sprintf(`<?xml version="1.0"?>
<configuration>
  <property><name>yarn.resourcemanager.address</name><value>%s</value></property>
  <property><name>yarn.resourcemanager.webapp.address</name><value>%s</value></property>
%s</configuration>
`, f.router.ClientRMAddr(), f.router.WebAddr(), admin)
	return os.WriteFile(filepath.Join(f.confDir, "yarn-site.xml"), []byte(xml), 0o644)
}

func (f *devFederation) printWelcome(out io.Writer, cfg devConfig) {
	fmt.Fprintln(out, "yarnfed dev: a federation on loopback (simrm sub-clusters are SIMULATED ResourceManagers)")
	fmt.Fprintf(out, "  state store    grpc %s (single replica, data in %s)\n", f.store.GRPCAddr(), filepath.Dir(f.confDir))
	for _, id := range f.ids {
		for i, rm := range f.rms[id] {
			a := rm.Addrs()
			role := ""
			if len(f.rms[id]) > 1 {
				role = [...]string{" (HA active)", " (HA standby)"}[i]
			}
			fmt.Fprintf(out, "  %-5s simrm%-13s client %s  scheduler %s  web http://%s\n", id, role, a.Client, a.Scheduler, a.Web)
		}
	}
	fmt.Fprintf(out, "  router         client %s  web http://%s\n", f.router.ClientRMAddr(), f.router.WebAddr())
	if a := f.router.AdminAddr(); a != nil {
		fmt.Fprintf(out, "  router admin   %s (yarn routeradmin, yarn rmadmin; only the user dev runs as)\n", a)
	}
	if f.gpg != nil {
		web := "no web"
		if a := f.gpg.WebAddr(); a != nil {
			web = fmt.Sprintf("status http://%s/gpg/v1/status", a)
		}
		fmt.Fprintf(out, "  gpg            %s (sets analytics' weights from headroom; etl is pinned)\n", web)
	}
	for _, id := range f.ids {
		fmt.Fprintf(out, "  %-5s amrmproxy      scheduler address for AMs on a %s node: %s\n", id, id, f.proxies[id].AMRMAddr())
	}
	fmt.Fprintln(out, "\nQueue policies (edit with yarnfedctl; lookup is queue, then \"*\", then the default UniformBroadcast):")
	for _, q := range []string{"default", "analytics", "etl"} {
		fmt.Fprintf(out, "  %-10s %s\n", q, f.describePolicy(context.Background(), q))
	}
	fmt.Fprintf(out, `
Try it:
  open http://%[1]s/cluster                        # the web UI: federation, nodes, apps, policies
  curl -s http://%[1]s/ws/v1/cluster/metrics
  curl -s http://%[1]s/ws/v1/cluster/apps
  yarnfedctl --store-insecure --store %[2]s subcluster list
  HADOOP_CONF_DIR=%[3]s yarn application -list     # any Hadoop 3.x client, unmodified
Press Ctrl-C to stop.
`, f.router.WebAddr(), f.store.GRPCAddr(), f.confDir)
}

// describePolicy says which policy routes queue q, and with what weights.
func (f *devFederation) describePolicy(ctx context.Context, q string) string {
	pc, err := f.sc.PolicyFor(ctx, q)
	if err != nil || pc == nil {
		return "UniformBroadcast (default): uniformly random over active sub-clusters"
	}
	typ := pc.GetType()
	if i := strings.LastIndexByte(typ, '.'); i >= 0 {
		typ = typ[i+1:]
	}
	info, err := policies.ParseWeightedPolicyInfo(pc.GetParams())
	if err != nil || len(info.RouterWeights) == 0 {
		return typ
	}
	from := ""
	if pc.GetQueue() != q {
		from = fmt.Sprintf(" (from %q)", pc.GetQueue())
	}
	if pc.GetPinned() {
		from += " (pinned)"
	}
	ws := append([]policies.Weight(nil), info.RouterWeights...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	return fmt.Sprintf("%s%s, router weights %s", strings.TrimSuffix(typ, "PolicyManager"), from, policies.FormatWeightString(ws))
}

func (f *devFederation) close() {
	if f.gpg != nil {
		_ = f.gpg.Close() // the web listener, when Run never ran
	}
	for _, p := range f.proxies {
		p.Close()
	}
	if f.router != nil {
		f.router.Close()
	}
	for _, rms := range f.rms {
		for i := len(rms) - 1; i >= 0; i-- {
			rms[i].Close()
		}
	}
	if f.sc != nil {
		f.sc.Close()
	}
	if f.store != nil {
		f.store.Close()
	}
}

// devTally counts where each queue's applications landed.
type devTally struct {
	mu     sync.Mutex
	counts map[string]map[string]int
}

// add counts one landing and returns the queue's running share of sc.
func (t *devTally) add(queue, sc string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]map[string]int{}
	}
	if t.counts[queue] == nil {
		t.counts[queue] = map[string]int{}
	}
	t.counts[queue][sc]++
	total := 0
	for _, n := range t.counts[queue] {
		total += n
	}
	return fmt.Sprintf("%s now has %d of %d %s apps", sc, t.counts[queue][sc], total, queue)
}

func (t *devTally) summary(ids []string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var lines []string
	for _, q := range []string{"default", "analytics", "etl"} {
		c := t.counts[q]
		total := 0
		for _, n := range c {
			total += n
		}
		if total == 0 {
			continue
		}
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s %3.0f%%", id, 100*float64(c[id])/float64(total)))
		}
		lines = append(lines, fmt.Sprintf("  %-10s %3d apps: %s", q, total, strings.Join(parts, "  ")))
	}
	return lines
}
