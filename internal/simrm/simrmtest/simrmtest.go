// Package simrmtest starts simulated ResourceManagers for other packages'
// tests: on loopback port 0, with fast ticks, stopped by t.Cleanup.
package simrmtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/simrm"
)

// Start runs one simulated RM named clusterID. mutate, if not nil, adjusts
// the configuration (simrm.TestConfig) before start.
func Start(t testing.TB, clusterID string, mutate func(*simrm.Config)) *simrm.RM {
	t.Helper()
	cfg := simrm.TestConfig()
	cfg.ClusterID = clusterID
	if mutate != nil {
		mutate(&cfg)
	}
	rm, err := simrm.New(cfg)
	if err != nil {
		t.Fatalf("simrmtest: %v", err)
	}
	if err := rm.Start(context.Background()); err != nil {
		t.Fatalf("simrmtest: %v", err)
	}
	t.Cleanup(func() { rm.Close() })
	return rm
}

// StartN runs n simulated RMs named sc1..scN: the sub-clusters of a test
// federation. Their epochs differ (derived from the names), so container
// ids never collide across them.
func StartN(t testing.TB, n int, mutate func(*simrm.Config)) []*simrm.RM {
	t.Helper()
	out := make([]*simrm.RM, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, Start(t, fmt.Sprintf("sc%d", i), mutate))
	}
	return out
}

// StartHA runs an HA pair sharing one state: the first is active, the
// second standby (it answers StandbyException until TransitionToActive).
func StartHA(t testing.TB, clusterID string, mutate func(*simrm.Config)) (active, standby *simrm.RM) {
	t.Helper()
	active = Start(t, clusterID, mutate)
	sb, err := simrm.NewStandby(active, simrm.TestConfig())
	if err != nil {
		t.Fatalf("simrmtest: %v", err)
	}
	if err := sb.Start(context.Background()); err != nil {
		t.Fatalf("simrmtest: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return active, sb
}

// WaitFor polls cond every few milliseconds until it holds or timeout
// passes; it reports whether cond held.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
