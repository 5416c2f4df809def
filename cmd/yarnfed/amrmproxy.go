package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
)

// newAMRMProxyCmd is `yarnfed amrmproxy`: the per-node AMRMProxy.
func newAMRMProxyCmd() *cobra.Command {
	cfg := amrmproxyRoleDefaults()
	var loader *config.Loader[amrmproxyRole]
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
			return runStoreRole(loader, func(s roleStart[amrmproxyRole], sc *client.Client) error {
				role, log, reg := s.role, s.log, s.reg
				cfg := role.Config
				cfg.Store = amrmproxy.ClientStore{C: sc}
				cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
				p, err := amrmproxy.Open(cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "amrmproxy: home %s, amrm %s, web %s, store %s, data %s\n",
					cfg.SubClusterID, p.AMRMAddr(), p.WebAddr(), role.addrs(), cfg.DataDir)
				return p.Run(cmd.Context())
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, amrmproxyRoleDefaults)
	cfg.storeConn.bindFlags(f)
	cfg.roleLog.bindFlags(f)
	f.StringVar(&cfg.SubClusterID, "subcluster-id", cfg.SubClusterID, "sub-cluster of this NodeManager host (the home of its AMs)")
	f.StringVar(&cfg.AMRMAddress, "amrm-address", cfg.AMRMAddress, "ApplicationMasterProtocol listen address (yarn.nodemanager.amrmproxy.address)")
	f.StringVar(&cfg.WebAddress, "web-address", cfg.WebAddress, "/healthz, /readyz, /prom listen address; empty disables")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the per-attempt state (survives restarts)")
	f.StringVar(&cfg.RPCProtection, "rpc-protection", cfg.RPCProtection, "hadoop.rpc.protection of the cluster (only authentication can be served)")
	f.StringVar(&cfg.MachineList, "machine-list", cfg.MachineList, "yarn.federation.machine-list file (node,subcluster,rack); default: learn nodes from the RMs")
	f.StringVar(&cfg.DefaultPolicy, "default-policy", cfg.DefaultPolicy, "policy manager when the store has none for the queue or *")
	f.BoolVar(&cfg.NoSync, "no-sync", cfg.NoSync, "do not fsync state writes (faster, may forget containers on a machine crash)")
	f.Var(&cfg.SubClusterTimeout, "subcluster-timeout", "a secondary silent this long is left out of splitting and headroom")
	f.Var(&cfg.FinishWait, "finish-wait", "longest a finish call waits for (and retries) the UAMs' unregisters before answering isUnregistered=false")
	f.Var(&cfg.SecondaryWait, "secondary-wait", "longest an AM heartbeat waits for the secondaries after the home answered")
	f.Var(&cfg.CallTimeout, "call-timeout", "timeout of one call to one RM")
	f.Var(&cfg.MembershipRefresh, "membership-refresh", "membership poll period")
	f.Var(&cfg.AttemptExpiry, "attempt-expiry", "forget an attempt whose AM has not called for this long")
	f.Var(&cfg.SilentAM, "silent-am", "check the home's application report when an AM has been silent this long; end the attempt (and its UAMs if the application is over)")
	f.StringVar(&cfg.ProxyID, "proxy-id", cfg.ProxyID, "this proxy's name in the UAM registry (default host:amrm-port)")
	cfg.Kerberos.BindFlags(f, "AMRMProxy", true)
	loader.DocumentKeys()
	return cmd
}

// amrmproxyRole is `yarnfed amrmproxy`'s configuration: amrmproxy.Config's
// keys at the top level of the file, plus the store connection and log
// level.
type amrmproxyRole struct {
	amrmproxy.Config
	storeConn
	roleLog
}

func amrmproxyRoleDefaults() amrmproxyRole {
	return amrmproxyRole{Config: amrmproxy.DefaultConfig(), storeConn: defaultStoreConn(), roleLog: defaultRoleLog()}
}

// Validate checks the role's own settings; amrmproxy.Open validates the
// rest once the store is wired in.
func (r *amrmproxyRole) Validate() error {
	return errors.Join(r.roleLog.validate(), r.storeConn.validate(), r.Kerberos.Validate(true))
}
