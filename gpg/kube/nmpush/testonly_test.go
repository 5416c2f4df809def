package nmpush

import (
	"context"

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
