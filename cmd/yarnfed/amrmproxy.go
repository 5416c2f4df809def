package main

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/amrmproxy"
)

// newAMRMProxyCmd is `yarnfed amrmproxy`: the per-node AMRMProxy.
func newAMRMProxyCmd() *cobra.Command {
	cfg := amrmproxy.DefaultConfig()
	var (
		configFile string
		store      *storeFlags
		logLevel   = "info"
	)
	cmd := &cobra.Command{
		Use:   "amrmproxy",
		Short: "Run the AMRMProxy beside a NodeManager (ApplicationMasterProtocol on 8049)",
		Long: `The AMRMProxy lets an unmodified ApplicationMaster use every sub-cluster of the federation. Run
one per NodeManager host and point the AMs' yarn.resourcemanager.scheduler.address at it (Hadoop's
yarn.nodemanager.amrmproxy.address, 8049). --subcluster-id is the sub-cluster of this NodeManager:
the home of every AM on the host; its RM's scheduler address comes from the state store.

AMs log in with the AMRMToken their RM issued; the proxy relays that DIGEST-MD5 login to the home RM
(it never holds the RM's master key), so only hadoop.rpc.protection=authentication can be served.
Asks are split with the queue's AMRM policy from the store; a secondary sub-cluster gets an unmanaged
AM with the same ApplicationId. Per-attempt state lives in --data-dir, so a restart loses nothing.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.
Endpoints on the web port: /healthz, /readyz, /prom (Prometheus).`,
		Example: `  yarnfed amrmproxy --store 10.0.0.1:9090,10.0.0.2:9090 --subcluster-id SC-1 --data-dir /var/lib/yarnfed/amrmproxy \
      --store-tls-cert pki/nm-1/cert.crt --store-tls-key pki/nm-1/cert.key --store-tls-ca pki/nm-1/ca.crt
  yarnfed amrmproxy --config amrmproxy.json --amrm-address 0.0.0.0:8049 --store-tls-cert ...   # as above`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if cfg, err = amrmproxyConfigWithFile(cmd.Flags(), cfg, configFile); err != nil {
				return err
			}
			sc, err := store.client(log)
			if err != nil {
				return err
			}
			defer sc.Close()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Store = amrmproxy.ClientStore{C: sc}
			cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
			p, err := amrmproxy.Open(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "amrmproxy: home %s, amrm %s, web %s, store %s, data %s\n",
				cfg.SubClusterID, p.AMRMAddr(), p.WebAddr(), store.addrs, cfg.DataDir)
			return p.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "JSON config file (see amrmproxy.Config's json tags)")
	store = bindStoreFlags(f)
	f.StringVar(&logLevel, "log-level", logLevel, "debug, info, warn or error")
	bindAMRMProxyFlags(f, &cfg)
	return cmd
}

// bindAMRMProxyFlags is the one list of config flags (also used to
// re-apply set flags over a config file).
func bindAMRMProxyFlags(f *pflag.FlagSet, cfg *amrmproxy.Config) {
	f.StringVar(&cfg.SubClusterID, "subcluster-id", cfg.SubClusterID, "sub-cluster of this NodeManager host (the home of its AMs)")
	f.StringVar(&cfg.AMRMAddress, "amrm-address", cfg.AMRMAddress, "ApplicationMasterProtocol listen address (yarn.nodemanager.amrmproxy.address)")
	f.StringVar(&cfg.WebAddress, "web-address", cfg.WebAddress, "/healthz, /readyz, /prom listen address; empty disables")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the per-attempt state (survives restarts)")
	f.StringVar(&cfg.RPCProtection, "rpc-protection", cfg.RPCProtection, "hadoop.rpc.protection of the cluster (only authentication can be served)")
	f.StringVar(&cfg.MachineList, "machine-list", cfg.MachineList, "yarn.federation.machine-list file (node,subcluster,rack); default: learn nodes from the RMs")
	f.StringVar(&cfg.DefaultPolicy, "default-policy", cfg.DefaultPolicy, "policy manager when the store has none for the queue or *")
	f.BoolVar(&cfg.NoSync, "no-sync", cfg.NoSync, "do not fsync state writes (faster, may forget containers on a machine crash)")
	f.Var(amrmDuration{&cfg.SubClusterTimeout}, "subcluster-timeout", "a secondary silent this long is left out of splitting and headroom")
	f.Var(amrmDuration{&cfg.FinishWait}, "finish-wait", "longest a finish call waits for (and retries) the UAMs' unregisters before answering isUnregistered=false")
	f.Var(amrmDuration{&cfg.SecondaryWait}, "secondary-wait", "longest an AM heartbeat waits for the secondaries after the home answered")
	f.Var(amrmDuration{&cfg.CallTimeout}, "call-timeout", "timeout of one call to one RM")
	f.Var(amrmDuration{&cfg.MembershipRefresh}, "membership-refresh", "membership poll period")
	f.Var(amrmDuration{&cfg.AttemptExpiry}, "attempt-expiry", "forget an attempt whose AM has not called for this long")
}

// amrmDuration lets an amrmproxy.Duration be a flag.
type amrmDuration struct{ d *amrmproxy.Duration }

func (f amrmDuration) String() string {
	if f.d == nil {
		return ""
	}
	return time.Duration(*f.d).String()
}
func (f amrmDuration) Set(s string) error { return f.d.UnmarshalJSON([]byte(`"` + s + `"`)) }
func (f amrmDuration) Type() string       { return "duration" }

// amrmproxyConfigWithFile puts the config file under the flags: defaults,
// then the file, then every flag the user set (re-applied by name through
// the same flag list).
func amrmproxyConfigWithFile(flags *pflag.FlagSet, flagCfg amrmproxy.Config, configFile string) (amrmproxy.Config, error) {
	if configFile == "" {
		return flagCfg, nil
	}
	fileCfg := amrmproxy.DefaultConfig()
	if err := amrmproxy.LoadConfigFile(configFile, &fileCfg); err != nil {
		return flagCfg, err
	}
	again := pflag.NewFlagSet("again", pflag.ContinueOnError)
	bindAMRMProxyFlags(again, &fileCfg)
	var ferr error
	flags.Visit(func(f *pflag.Flag) {
		if again.Lookup(f.Name) != nil && ferr == nil {
			ferr = again.Set(f.Name, f.Value.String())
		}
	})
	return fileCfg, ferr
}
