package client

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// production code here starts goroutines, and each must end with the
// Close, Stop or context that owns it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
