// Package configtest holds test helpers for configurations built with
// internal/config (kept out of the production package: no binary uses them).
package configtest

import (
	"fmt"
	"os"

	"github.com/yarnfed/yarnfed/internal/config"
)

// DecodeFile decodes a JSON config file over v with config.Decode, as a
// role's --config does.
func DecodeFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := config.Decode(b, v); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}
