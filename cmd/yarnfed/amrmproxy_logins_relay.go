//go:build ipcrelay

// Built with -tags ipcrelay until internal/hadoopipc has the token relay
// (branch ipcrelay); checked there: go test -tags ipcrelay ./cmd/yarnfed/.

package main

import (
	"context"

	"github.com/yarnfed/yarnfed/amrmproxy"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
)

// wireAMLogins relays each AM's DIGEST-MD5 login to the home RM (the
// design of record, amrmproxy/DESIGN.md): the proxy never holds the RM's
// key; the home RM's SUCCESS authenticates the AM, and the relayed
// connection carries the proxy's calls to the home for that AM.
func wireAMLogins(cfg *amrmproxy.Config) {
	cfg.Secrets = nil
	cfg.ConfigureServer = func(p *amrmproxy.Proxy, sc *hadoopipc.ServerConfig) {
		sc.Secrets = nil
		sc.TokenRelay = hadoopipc.NewDialingRelay(p.HomeAMRMAddress,
			hadoopipc.RelayConfig{Protocol: hadoopipc.ProtocolApplicationMaster})
		sc.RelayUser = amrmproxy.RelayUser
	}
	cfg.Home = amrmproxy.CallerHomeConnector{From: func(ctx context.Context) (amrmproxy.Caller, bool) {
		l, ok := hadoopipc.RelayedLoginFrom(ctx)
		return l, ok
	}}
}
