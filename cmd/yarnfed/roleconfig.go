package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// Every role builds its configuration with internal/config.Loader:
// defaults, then --config FILE (JSON; unknown keys are errors), then the
// flags the user set, then Validate. A role's config type embeds its
// component's Config (whose keys stay at the top level of the file) and
// the pieces below, which every role shares.

// roleLog is the log level of every role: --log-level, file key log_level.
type roleLog struct {
	LogLevel string `json:"log_level"`
}

func defaultRoleLog() roleLog { return roleLog{LogLevel: "info"} }

func (r *roleLog) bindFlags(f *pflag.FlagSet) {
	f.StringVar(&r.LogLevel, "log-level", r.LogLevel, "debug, info, warn or error")
}

func (r roleLog) validate() error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(r.LogLevel)); err != nil {
		return fmt.Errorf("log_level: %w", err)
	}
	return nil
}

func (r roleLog) logger() (*slog.Logger, error) { return newLogger(r.LogLevel) }

// newLogger builds a role's text logger on stderr.
func newLogger(level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// storeConn is how a role that talks to the state store (router,
// amrmproxy, gpg, subcluster-agent) reaches it: --store (file key "store",
// a list of addresses) and the transport of security.ClientFlags
// (--store-tls-cert/-key/-ca: "store_tls": {"cert_file", "key_file",
// "ca_file"}; --store-insecure: "store_insecure").
type storeConn struct {
	// Store is a config.List: a repeated --store replaces the list, as it
	// did when the flag was a plain string.
	Store config.List `json:"store"`
	security.ClientFlags
}

func defaultStoreConn() storeConn { return storeConn{Store: config.List{"127.0.0.1:9090"}} }

func (s *storeConn) bindFlags(f *pflag.FlagSet) {
	f.Var(&s.Store, "store", "state store gRPC addresses, comma-separated (any replica)")
	s.ClientFlags.BindFlags(f)
}

// addrs is the address list without blanks.
func (s storeConn) addrs() []string {
	var list []string
	for _, a := range s.Store {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	return list
}

// validate checks what can be checked before dialling: an address, and a
// transport (mutual TLS files, or the explicit insecure switch).
func (s storeConn) validate() error {
	var errs []error
	if len(s.addrs()) == 0 {
		errs = append(errs, errors.New("store: no address"))
	}
	if _, err := security.CheckMode(s.TLS, s.Insecure, security.ClientMode, slog.New(slog.DiscardHandler)); err != nil {
		errs = append(errs, err) // names its own flags and keys
	}
	return errors.Join(errs...)
}

// client connects to the state store replicas (any replica works; the
// client moves on when one is down), with mutual TLS when configured.
func (s storeConn) client(log *slog.Logger, reg prometheus.Registerer) (*client.Client, error) {
	list := s.addrs()
	if len(list) == 0 {
		return nil, fmt.Errorf("--store: no address")
	}
	tc, err := s.ObservedTLSConfig(log, reg)
	if errors.Is(err, security.ErrPlaintext) {
		return nil, err // names its own flags
	}
	if err != nil {
		return nil, fmt.Errorf("--store-tls: %w", err)
	}
	c, err := client.New(client.Config{Addrs: list, Logger: log, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", strings.Join(list, ","), err)
	}
	return c, nil
}
