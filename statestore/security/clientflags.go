package security

import (
	"crypto/tls"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// ClientFlags is how every role that talks to the state store (router,
// amrmproxy, gpg, subcluster-agent, yarnfedctl) configures its transport:
// --store-tls-cert/--store-tls-key/--store-tls-ca, or --store-insecure.
type ClientFlags struct {
	TLS      TLSInfo `json:"store_tls"`
	Insecure bool    `json:"store_insecure"`
}

// BindFlags defines the flags on f.
func (c *ClientFlags) BindFlags(f *pflag.FlagSet) {
	c.TLS.BindFlags(f, "store-", "client")
	f.BoolVar(&c.Insecure, "store-insecure", c.Insecure, "talk to the state store in plaintext without a certificate (development only; logs a warning)")
}

// TLSConfig returns the client tls.Config, or nil for plaintext (after
// logging the warning). A certificate reload that fails is logged on log.
func (c ClientFlags) TLSConfig(log *slog.Logger) (*tls.Config, error) {
	return c.ObservedTLSConfig(log, nil)
}

// ObservedTLSConfig is TLSConfig that also counts failed certificate
// reloads on reg (yarnfed_statestore_client_tls_reload_failures_total and
// yarnfed_statestore_client_tls_reload_failing; nil reg: log only).
func (c ClientFlags) ObservedTLSConfig(log *slog.Logger, reg prometheus.Registerer) (*tls.Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	use, err := CheckMode(c.TLS, c.Insecure, ClientMode, log)
	if err != nil || !use {
		return nil, err
	}
	r, err := NewReloader(c.TLS)
	if err != nil {
		return nil, err
	}
	if err := r.Observe(log, reg, "yarnfed_statestore_client"); err != nil {
		return nil, err
	}
	return r.ClientConfig(), nil
}
