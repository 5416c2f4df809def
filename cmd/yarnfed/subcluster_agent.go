package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// newSubclusterAgentCmd is `yarnfed subcluster-agent`: keeps a stock RM (or
// RM HA pair) registered and heartbeating in the state store.
func newSubclusterAgentCmd() *cobra.Command {
	cfg := agentRoleDefaults()
	var loader *config.Loader[agentRole]
	cmd := &cobra.Command{
		Use:   "subcluster-agent",
		Short: "Register a stock ResourceManager (or HA pair) as a federation sub-cluster and heartbeat it",
		Long: `Stock RMs do not write to the yarnfed state store. Run one agent per sub-cluster, beside its
RM(s): it probes each RM's REST API (/ws/v1/cluster/info for the HA state, /ws/v1/cluster/metrics
for the capability), registers the active RM's addresses, heartbeats, re-registers at once on an
HA failover, and marks the sub-cluster SC_UNHEALTHY while no RM is active.

--rm takes a bare host (Hadoop's default ports 8032/8030/8033/8088) or
clientrm=host:port,amrm=host:port,admin=host:port,web=host:port; repeat it for each RM of an HA pair.
In a config file, "rms" is a list of such strings or of {"clientrm", "amrm", "admin", "web"} objects.

Kerberized RMs: --kerberos-principal and --kerberos-keytab (file: "kerberos": {"principal",
"keytab", "krb5_conf", "rm_http_principal"}) make the agent log in and call the REST API with
SPNEGO, as HTTP/<RM web host> unless --rm-http-principal says otherwise.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.`,
		Example: `  yarnfed subcluster-agent --subcluster-id SC-1 --rm rm1.example.com --rm rm2.example.com --store 10.0.0.1:9090 \
      --store-tls-cert pki/SC-1/cert.crt --store-tls-key pki/SC-1/cert.key --store-tls-ca pki/SC-1/ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStoreRole(loader, func(s roleStart[agentRole], sc *client.Client) error {
				role, reg := s.role, s.reg
				cfg, metricsAddr := role.Config, role.MetricsAddress
				cfg.Store = subclusteragent.NewClientStore(sc)
				cfg.Logger, cfg.Registerer = s.log, reg
				if metricsAddr != "" {
					ln, err := net.Listen("tcp", metricsAddr)
					if err != nil {
						return fmt.Errorf("--metrics-address: %w", err)
					}
					mux := http.NewServeMux()
					mux.Handle("GET /prom", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
					mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
					srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
					go func() { _ = srv.Serve(ln) }()
					defer srv.Close()
				}
				a, err := subclusteragent.New(cfg)
				if err != nil {
					return err
				}
				defer a.Close()
				fmt.Fprintf(cmd.OutOrStdout(), "subcluster-agent: %s, %d RM(s), store %s\n", cfg.SubClusterID, len(cfg.RMs), role.addrs())
				return a.Run(cmd.Context())
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, agentRoleDefaults)
	f.StringVar(&cfg.SubClusterID, "subcluster-id", cfg.SubClusterID, "sub-cluster id (required), e.g. SC-1")
	f.Var(&cfg.RMs, "rm", "an RM of the sub-cluster (repeat for HA)")
	cfg.storeConn.bindFlags(f)
	cfg.roleLog.bindFlags(f)
	f.StringVar(&cfg.MetricsAddress, "metrics-address", cfg.MetricsAddress, "serve /prom and /healthz here (empty: off)")
	f.Var(&cfg.ProbeInterval, "probe-interval", "how often each RM is probed (failover detection time)")
	f.Var(&cfg.ProbeTimeout, "probe-timeout", "timeout of one probe")
	f.Var(&cfg.HeartbeatInterval, "heartbeat-interval", "re-send an unchanged state this often")
	cfg.Kerberos.BindFlags(f, "agent", false)
	loader.DocumentKeys()
	return cmd
}

// agentRole is `yarnfed subcluster-agent`'s configuration:
// subclusteragent.Config's keys at the top level of the file, plus the
// metrics address, the store connection and log level.
type agentRole struct {
	subclusteragent.Config
	MetricsAddress string `json:"metrics_address"`
	storeConn
	roleLog
}

func agentRoleDefaults() agentRole {
	return agentRole{Config: subclusteragent.DefaultConfig(), storeConn: defaultStoreConn(), roleLog: defaultRoleLog()}
}

// Validate checks the role's own settings and the Kerberos login's (before
// any connection is made); subclusteragent.New validates the rest once the
// store is wired in.
func (r *agentRole) Validate() error {
	return errors.Join(r.roleLog.validate(), r.storeConn.validate(), r.Kerberos.Validate(false))
}
