package hadoopipc

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/leakcheck"
)

// TestMain fails the package's tests if a goroutine (connection, worker,
// relay) outlives them. The fuzz targets' shared server is closed first.
func TestMain(m *testing.M) {
	leakcheck.Main(m, func() { fuzzServer.Close() })
}
