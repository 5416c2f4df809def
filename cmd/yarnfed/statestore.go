package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/node"
)

// shutdownTransferTimeout bounds the leadership hand-over on SIGTERM.
const shutdownTransferTimeout = 10 * time.Second

// newStatestoreCmd is `yarnfed statestore`: one replica of the
// Raft-replicated federation state store.
func newStatestoreCmd() *cobra.Command {
	cfg := statestoreRoleDefaults()
	var loader *config.Loader[statestoreRole]
	cmd := &cobra.Command{
		Use:   "statestore",
		Short: "Run a state store replica (gRPC on 9090, Raft on 9091, metrics/health on 9092)",
		Long: `The state store holds federation membership, application homes, queue policies, reservation
homes and delegation-token state, replicated with Raft. Routers, AMRMProxies and the GPG reach it
with statestore/client through any replica's gRPC address.

Start a single replica with --bootstrap. For three (or five) replicas, start each with --bootstrap and
the same --peers list, or bootstrap one and start the others with --join pointing at it.

Security: with --tls-cert/--tls-key/--tls-ca (a certificate with O=replica from the federation CA;
see 'yarnfed certs'), gRPC and Raft use mutual TLS and every RPC is authorized by the caller's
certificate roles (statestore/DESIGN.md "Security"). --insecure runs plaintext and unauthenticated
for a test or dev federation, with a warning. A replica given neither refuses to start.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.
HTTP endpoints: /metrics (Prometheus), /healthz (process up), /readyz (a leader is known).`,
		Example: `  yarnfed statestore --bootstrap --data-dir /tmp/ss --insecure
  yarnfed statestore --node-id ss1 --tls-cert pki/ss1/cert.crt --tls-key pki/ss1/cert.key --tls-ca pki/ss1/ca.crt \
      --bootstrap --peers ss1=10.0.0.1:9091,ss2=10.0.0.2:9091,ss3=10.0.0.3:9091 \
      --grpc-address 10.0.0.1:9090 --raft-address 10.0.0.1:9091 --http-address 10.0.0.1:9092
  yarnfed statestore --node-id ss4 --join 10.0.0.1:9090 --raft-address 10.0.0.4:9091 \
      --tls-cert pki/ss4/cert.crt --tls-key pki/ss4/cert.key --tls-ca pki/ss4/ca.crt`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRole(loader, func(s roleStart[statestoreRole]) error {
				cfg := s.role.Config
				cfg.Logger, cfg.Registerer, cfg.Gatherer = s.log, s.reg, s.reg
				n, err := node.Start(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "statestore %s: grpc %s, raft %s, http %s, data %s\n", cfg.NodeID, n.GRPCAddr(), cfg.RaftAddress, n.HTTPAddr(), cfg.DataDir)
				<-cmd.Context().Done()
				// A leader hands over first (Kubernetes: terminationGracePeriodSeconds
				// must exceed this bound; deploy/ gives it 30 s).
				ctx, cancel := context.WithTimeout(context.Background(), shutdownTransferTimeout)
				defer cancel()
				return n.Shutdown(ctx)
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, statestoreRoleDefaults)
	cfg.roleLog.bindFlags(f)
	node.BindFlags(f, &cfg.Config)
	loader.DocumentKeys()
	return cmd
}

// statestoreRole is `yarnfed statestore`'s configuration: node.Config's
// keys at the top level of the file, plus the log level.
type statestoreRole struct {
	node.Config
	roleLog
}

func statestoreRoleDefaults() statestoreRole {
	return statestoreRole{Config: node.DefaultConfig(), roleLog: defaultRoleLog()}
}

// Validate checks the whole replica configuration before anything starts.
func (r *statestoreRole) Validate() error {
	return errors.Join(r.roleLog.validate(), r.Config.Validate())
}
