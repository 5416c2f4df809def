package hadoopipc

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// production code here starts goroutines (connections, workers, relays),
// and each must end with the Close, Stop or context that owns it.
func TestMain(m *testing.M) {
	code := m.Run()
	fuzzServer.Close() // shared by the fuzz targets; ends its call workers
	if code == 0 {
		err := goleak.Find(
			// gokrb5's service.GetReplayCache starts, once per process, a
			// cleaner that sleeps in a loop and cannot be stopped.
			goleak.IgnoreAnyFunction("github.com/jcmturner/gokrb5/v8/service.GetReplayCache.func1.1"),
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
