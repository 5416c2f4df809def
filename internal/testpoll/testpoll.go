// Package testpoll is the tests' one poll helper: wait for a condition
// instead of sleeping a fixed time into a test's logic (no timing
// assertions; the bound only turns a hang into a failure). Tests alone
// call it: deadcode lists it because router/routertest, linked into the
// bench binary, re-exports Poll.
package testpoll

import (
	"testing"
	"time"
)

// Timeout bounds Poll: generous, since correctness, not speed, is under
// test.
const Timeout = 10 * time.Second

// Poll waits until cond holds, failing the test after Timeout.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within waits until cond holds, failing the test after timeout; cond is
// checked every 5 ms.
func Within(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
