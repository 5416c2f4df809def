package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// storeFlags are the state store client options every role that talks to
// the store shares (router, amrmproxy, gpg, subcluster-agent): --store and
// the transport flags of security.ClientFlags, bound in one place.
type storeFlags struct {
	addrs string
	sec   security.ClientFlags
}

func bindStoreFlags(f *pflag.FlagSet) *storeFlags {
	s := &storeFlags{addrs: "127.0.0.1:9090"}
	f.StringVar(&s.addrs, "store", s.addrs, "state store gRPC addresses, comma-separated (any replica)")
	s.sec.BindFlags(f)
	return s
}

// client connects to the state store replicas (any replica works; the
// client moves on when one is down), with mutual TLS when configured.
func (s *storeFlags) client(log *slog.Logger) (*client.Client, error) {
	var list []string
	for _, a := range strings.Split(s.addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("--store: no address")
	}
	tc, err := s.sec.TLSConfig(log)
	if errors.Is(err, security.ErrPlaintext) {
		return nil, err // names its own flags
	}
	if err != nil {
		return nil, fmt.Errorf("--store-tls: %w", err)
	}
	c, err := client.New(client.Config{Addrs: list, Logger: log, TLS: tc})
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", s.addrs, err)
	}
	return c, nil
}
