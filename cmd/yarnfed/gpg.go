package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
)

// newGPGCmd is `yarnfed gpg`: the Global Policy Generator.
func newGPGCmd() *cobra.Command {
	cfg := gpg.DefaultConfig()
	var (
		configFile string
		storeAddrs = "127.0.0.1:9090"
		logLevel   = "info"
	)
	cmd := &cobra.Command{
		Use:   "gpg",
		Short: "Run the Global Policy Generator (liveness, safe app-home cleaner, queue weights; web on 8069)",
		Long: `The GPG keeps the federation tidy and its weights current; routers and AMRMProxies keep working
without it. Run two or more for availability: one acts at a time (a lease in the state store), the
others stand by and take over within the lease TTL.

Each round (every --interval, and a debounce (1s) after a capacity change or membership event):
  liveness   usable sub-clusters with a heartbeat older than --subcluster-expiry become SC_LOST;
  generator  router and AMRMProxy weights per queue from headroom (capacity policy, default) or
             Hadoop's LoadBasedGlobalPolicy; written only when a weight moves more than
             --threshold, by at most --max-step per round; pinned queues are never touched
             (yarnfedctl policy pin); --read-only logs instead of writing;
  cleaner    every --cleaner-interval: deletes application homes no RM knows, only when every
             registered RM answered completely (--dry-run logs instead).

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags. The JSON
"kubernetes" section names co-location clusters whose Koordinator batch capacity becomes each
sub-cluster's published capacity and weight input.
Endpoints on the web port: /healthz, /readyz, /prom (Prometheus), /gpg/v1/status.`,
		Example: `  yarnfed gpg --store 10.0.0.1:9090,10.0.0.2:9090,10.0.0.3:9090
  yarnfed gpg --config gpg.json --read-only --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if configFile != "" {
				// The file sits under the flags: re-apply flags the user set.
				fileCfg := gpg.DefaultConfig()
				if err := gpg.LoadConfigFile(configFile, &fileCfg); err != nil {
					return err
				}
				overlayGPGFlags(cmd.Flags(), &fileCfg, &cfg)
				cfg = fileCfg
			}
			sc, err := newStoreClient(storeAddrs, log)
			if err != nil {
				return err
			}
			defer sc.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Store = sc
			cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
			ctx, cancel := context.WithCancel(cmd.Context())
			src, waitSources, err := newCapacitySource(ctx, cfg, log)
			defer func() { cancel(); waitSources() }()
			if err != nil {
				return err
			}
			g, err := gpg.New(cfg, src)
			if err != nil {
				return err
			}
			defer g.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "gpg %s: web %v, store %s, policy %s, read-only %v, cleaner dry-run %v\n",
				cfg.ID, g.WebAddr(), storeAddrs, cfg.Generator.Policy, cfg.Generator.ReadOnly, cfg.Cleaner.DryRun)
			return g.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "JSON config file (see gpg.Config's json tags)")
	f.StringVar(&storeAddrs, "store", storeAddrs, "state store gRPC addresses, comma-separated (any replica)")
	f.StringVar(&logLevel, "log-level", logLevel, "debug, info, warn or error")
	for _, b := range gpgFlags(&cfg) {
		b.bind(f)
	}
	return cmd
}

// gpgFlag binds one flag to a field and can copy that field between
// configs, so the file/flag precedence needs no second list.
type gpgFlag struct {
	bind func(*pflag.FlagSet)
	name string
	copy func(dst, src *gpg.Config)
}

func gpgFlags(cfg *gpg.Config) []gpgFlag {
	return []gpgFlag{
		{func(f *pflag.FlagSet) { f.StringVar(&cfg.ID, "id", cfg.ID, "lease holder name of this GPG") }, "id",
			func(d, s *gpg.Config) { d.ID = s.ID }},
		{func(f *pflag.FlagSet) {
			f.StringVar(&cfg.WebAddress, "web-address", cfg.WebAddress, "web listen address (yarn.federation.gpg.webapp.address); empty disables")
		}, "web-address", func(d, s *gpg.Config) { d.WebAddress = s.WebAddress }},
		{func(f *pflag.FlagSet) { f.Var(&cfg.Interval, "interval", "period of a full round") }, "interval",
			func(d, s *gpg.Config) { d.Interval = s.Interval }},
		{func(f *pflag.FlagSet) {
			f.Var(&cfg.LeaseTTL, "lease-ttl", "lease time to live: a dead GPG is replaced within it")
		}, "lease-ttl",
			func(d, s *gpg.Config) { d.LeaseTTL = s.LeaseTTL }},
		{func(f *pflag.FlagSet) {
			f.Var(&cfg.Liveness.Expiry, "subcluster-expiry", "heartbeat age that makes a sub-cluster SC_LOST (yarn.federation.gpg.subcluster.heartbeat.expiration-ms)")
		}, "subcluster-expiry", func(d, s *gpg.Config) { d.Liveness.Expiry = s.Liveness.Expiry }},
		{func(f *pflag.FlagSet) {
			f.StringVar(&cfg.Generator.Policy, "policy", cfg.Generator.Policy, "global policy: capacity or load-based (Hadoop LoadBasedGlobalPolicy)")
		}, "policy", func(d, s *gpg.Config) { d.Generator.Policy = s.Generator.Policy }},
		{func(f *pflag.FlagSet) {
			f.BoolVar(&cfg.Generator.ReadOnly, "read-only", cfg.Generator.ReadOnly, "compute and log weights, write none (yarn.federation.gpg.policy.generator.readonly)")
		}, "read-only", func(d, s *gpg.Config) { d.Generator.ReadOnly = s.Generator.ReadOnly }},
		{func(f *pflag.FlagSet) {
			f.Float64Var(&cfg.Generator.Threshold, "threshold", cfg.Generator.Threshold, "rewrite a queue only when more than this share of new applications would go elsewhere")
		}, "threshold", func(d, s *gpg.Config) { d.Generator.Threshold = s.Generator.Threshold }},
		{func(f *pflag.FlagSet) {
			f.Float64Var(&cfg.Generator.MaxStep, "max-step", cfg.Generator.MaxStep, "largest share of new applications one round may redirect")
		}, "max-step", func(d, s *gpg.Config) { d.Generator.MaxStep = s.Generator.MaxStep }},
		{func(f *pflag.FlagSet) {
			f.BoolVar(&cfg.Cleaner.DryRun, "dry-run", cfg.Cleaner.DryRun, "cleaner logs what it would delete and deletes nothing")
		}, "dry-run", func(d, s *gpg.Config) { d.Cleaner.DryRun = s.Cleaner.DryRun }},
		{func(f *pflag.FlagSet) {
			f.Var(&cfg.Cleaner.Interval, "cleaner-interval", "period of the application-home cleaner")
		}, "cleaner-interval",
			func(d, s *gpg.Config) { d.Cleaner.Interval = s.Cleaner.Interval }},
		{func(f *pflag.FlagSet) {
			f.Var(&cfg.Cleaner.Grace, "cleaner-grace", "application homes younger than this are never deleted")
		}, "cleaner-grace", func(d, s *gpg.Config) { d.Cleaner.Grace = s.Cleaner.Grace }},
		{func(f *pflag.FlagSet) {
			f.Var(&cfg.Cleaner.MinRMUptime, "cleaner-min-rm-uptime", "no deletion while an RM has been up for less (it may still be recovering applications)")
		}, "cleaner-min-rm-uptime", func(d, s *gpg.Config) { d.Cleaner.MinRMUptime = s.Cleaner.MinRMUptime }},
		{func(f *pflag.FlagSet) {
			f.IntVar(&cfg.Cleaner.MaxPerRound, "cleaner-max-per-round", cfg.Cleaner.MaxPerRound, "most application homes deleted per round")
		}, "cleaner-max-per-round", func(d, s *gpg.Config) { d.Cleaner.MaxPerRound = s.Cleaner.MaxPerRound }},
	}
}

// overlayGPGFlags copies explicitly set flags from flagCfg onto fileCfg:
// defaults < file < flags.
func overlayGPGFlags(fs *pflag.FlagSet, fileCfg, flagCfg *gpg.Config) {
	for _, b := range gpgFlags(flagCfg) {
		if fs.Changed(b.name) {
			b.copy(fileCfg, flagCfg)
		}
	}
}

// kubeWorkers is the number of goroutines applying node changes per
// Kubernetes cluster: a sync reads recorded facts under the source's mutex,
// so more workers would mostly wait.
const kubeWorkers = 2

// newCapacitySource starts one gpg/kube Source per configured Kubernetes
// cluster (informers on Nodes and Pods, until ctx ends) and merges them
// into the one capacity.Source the GPG reads. With no cluster configured
// it returns nil (weights from the RMs' own figures). wait blocks until
// every started source has stopped; call it after ctx ends.
func newCapacitySource(ctx context.Context, cfg gpg.Config, log *slog.Logger) (src capacity.Source, wait func(), err error) {
	wait = func() {}
	if len(cfg.Kubernetes) == 0 {
		return nil, wait, nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// client-go logs through klog (reflector retries, throttling); route it
	// into the role's logger instead of klog's own stderr format.
	klog.SetSlogLogger(log.With("component", "client-go"))
	var srcs []*kube.Source
	for _, k := range cfg.Kubernetes {
		k.Logger, k.Registerer = log, cfg.Registerer
		s, err := kube.New(k)
		if err != nil {
			return nil, wait, fmt.Errorf("gpg config: %w", err)
		}
		srcs = append(srcs, s)
	}
	var wg sync.WaitGroup
	all := make([]capacity.Source, len(srcs))
	for i, s := range srcs {
		all[i] = s
		name := cfg.Kubernetes[i].Name
		wg.Go(func() {
			if err := s.Run(ctx, kubeWorkers); err != nil && ctx.Err() == nil {
				log.Error("kubernetes capacity source stopped", "kubernetes_cluster", name, "err", err)
			}
		})
	}
	log.Info("watching Kubernetes clusters for batch capacity", "clusters", len(srcs))
	return capacity.Merge(ctx, all...), wg.Wait, nil
}
