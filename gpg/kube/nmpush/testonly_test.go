package nmpush

import (
	"context"
	"testing"

	"k8s.io/utils/clock"

	"github.com/yarnfed/yarnfed/gpg/kube"
)

// StaticRMs is a fixed RMs for these tests.
type StaticRMs map[string][]string

// AdminAddresses returns the map itself.
func (s StaticRMs) AdminAddresses(context.Context) (map[string][]string, error) { return s, nil }

// DefaultConfig is a Config with the defaults (Koordinator's 10% / 300 s).
func DefaultConfig() Config {
	return Config{PushConfig: kube.DefaultPushConfig()}
}

// testConfig is the defaults pushing as user yarn to rms, on clk.
func testConfig(rms StaticRMs, clk clock.WithTicker) Config {
	cfg := DefaultConfig()
	cfg.RMs, cfg.User, cfg.Clock = rms, "yarn", clk
	return cfg
}

// mustNew is New, failing the test on an error, closed when it ends.
func mustNew(t *testing.T, cfg Config, src NodeSource) *Pusher {
	t.Helper()
	p, err := New(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
