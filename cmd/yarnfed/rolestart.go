package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
)

// roleStart is what every server role begins with: its configuration
// (defaults, --config, flags, Validate), its logger and a metrics registry
// carrying the Go and process collectors. Signals are handled once, in
// main: a role's command context ends on SIGINT or SIGTERM.
type roleStart[T any] struct {
	role T
	log  *slog.Logger
	reg  *prometheus.Registry
}

// loggedRole is a role configuration with roleLog.
type loggedRole interface {
	logger() (*slog.Logger, error)
}

// startRole loads l's configuration and builds the logger and registry.
func startRole[T loggedRole](l *config.Loader[T]) (roleStart[T], error) {
	var s roleStart[T]
	var err error
	if s.role, err = l.Load(); err != nil {
		return s, err
	}
	if s.log, err = s.role.logger(); err != nil {
		return s, err
	}
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return s, nil
}

// runRole starts the role and runs run with it.
func runRole[T loggedRole](l *config.Loader[T], run func(roleStart[T]) error) error {
	s, err := startRole(l)
	if err != nil {
		return err
	}
	return run(s)
}

// storeRole is a role configuration with roleLog and storeConn.
type storeRole interface {
	loggedRole
	client(*slog.Logger, prometheus.Registerer) (*client.Client, error)
}

// runStoreRole starts the role with its state store client (certificate
// reloads reported on the role's registry), runs run, and closes the
// client when run returns.
func runStoreRole[T storeRole](l *config.Loader[T], run func(roleStart[T], *client.Client) error) error {
	s, err := startRole(l)
	if err != nil {
		return err
	}
	sc, err := s.role.client(s.log, s.reg)
	if err != nil {
		return err
	}
	defer sc.Close()
	return run(s, sc)
}
