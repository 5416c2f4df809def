// Package leakcheck is the goroutine-leak check every package whose
// production code starts goroutines runs after its tests (TestMain), with
// the few goroutines that third-party code starts and cannot stop.
package leakcheck

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// processWide are goroutines started once per process by dependencies,
// with no way to stop them.
var processWide = []goleak.Option{
	// gokrb5's service.GetReplayCache: a cleaner that sleeps in a loop
	// (named after VerifyAPREQ where the compiler inlines it, as with -race).
	goleak.IgnoreAnyFunction("github.com/jcmturner/gokrb5/v8/service.GetReplayCache.func1.1"),
	goleak.IgnoreAnyFunction("github.com/jcmturner/gokrb5/v8/service.VerifyAPREQ.GetReplayCache.func1.1"),
	// hashicorp/raft never answers an Apply future that was still queued
	// (applyCh, or committed but not yet handed to the FSM) when it shut
	// down: Apply futures, unlike the FSM's and configuration's, carry no
	// ShutdownCh. The state store's waiter for such a future, at most
	// maxInflight (1) per closed Store, stays blocked in its Error; the
	// callers of the proposals it carried stopped waiting when Close closed
	// the store (ErrUnknownOutcome: the command may be in the log).
	goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*deferError).Error"),
}

// Main runs the tests, then after (the package's shared fixtures torn
// down), and fails the run if a goroutine outlives them. extra adds a
// package's own justified ignores.
func Main(m *testing.M, after func(), extra ...goleak.Option) {
	code := m.Run()
	if after != nil {
		after()
	}
	if code == 0 {
		if err := goleak.Find(append(append([]goleak.Option(nil), processWide...), extra...)...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
