package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/gpg"
	"github.com/yarnfed/yarnfed/gpg/capacity"
)

// newGPGCmd is `yarnfed gpg`: the Global Policy Generator.
func newGPGCmd() *cobra.Command {
	cfg := gpg.DefaultConfig()
	var (
		configFile string
		store      *storeFlags
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
			sc, err := store.client(log)
			if err != nil {
				return err
			}
			defer sc.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Store = sc
			cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
			src, err := newCapacitySource(cmd.Context(), cfg, log)
			if err != nil {
				return err
			}
			g, err := gpg.New(cfg, src)
			if err != nil {
				return err
			}
			defer g.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "gpg %s: web %v, store %s, policy %s, read-only %v, cleaner dry-run %v\n",
				cfg.ID, g.WebAddr(), store.addrs, cfg.Generator.Policy, cfg.Generator.ReadOnly, cfg.Cleaner.DryRun)
			return g.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "JSON config file (see gpg.Config's json tags)")
	store = bindStoreFlags(f)
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

// newCapacitySource builds the capacity source of cfg.Kubernetes, running
// until ctx ends. The Kubernetes source (package gpg/kube) is wired in here
// when it lands, e.g.
//
//	return kube.NewSource(ctx, cfg.Kubernetes, log) // starts informers, returns a capacity.Source
//
// Until then a configured Kubernetes section is an error rather than
// silently ignored.
func newCapacitySource(ctx context.Context, cfg gpg.Config, log *slog.Logger) (capacity.Source, error) {
	if len(cfg.Kubernetes) == 0 {
		return nil, nil
	}
	return nil, fmt.Errorf("gpg config: kubernetes: this build has no Kubernetes capacity source (gpg/kube) yet")
}
