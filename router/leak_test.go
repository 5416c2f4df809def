package router

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/yarnfed/yarnfed/internal/leakcheck"
)

// TestMain fails the package's tests if a goroutine the production code
// started outlives them (see internal/leakcheck). Ignored: the purge
// goroutine of each Router's home cache (golang-lru/v2 expirable, see
// homecache.go), which v2.0.7 gives no way to stop.
func TestMain(m *testing.M) {
	leakcheck.Main(m, nil, goleak.IgnoreAnyFunction("github.com/hashicorp/golang-lru/v2/expirable.NewLRU[...].func1"))
}
