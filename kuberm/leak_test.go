package kuberm

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/leakcheck"
)

// TestMain fails the package's tests if a goroutine the production code
// started outlives them (internal/leakcheck).
func TestMain(m *testing.M) { leakcheck.Main(m, nil) }
