package testpoll

import (
	"sync/atomic"
	"testing"
	"time"
)

// fakeTB records Fatalf instead of stopping the goroutine.
type fakeTB struct {
	testing.TB
	failed atomic.Bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed.Store(true)
}

// TestWithin: a condition that comes true ends the wait without failing;
// one that never does fails the test once the bound passes.
func TestWithin(t *testing.T) {
	var n atomic.Int32
	ok := &fakeTB{TB: t}
	Within(ok, time.Minute, "three checks", func() bool { return n.Add(1) >= 3 })
	if ok.failed.Load() || n.Load() != 3 {
		t.Fatalf("failed=%v after %d checks, want a pass after 3", ok.failed.Load(), n.Load())
	}
	never := &fakeTB{TB: t}
	done := false
	Within(never, 20*time.Millisecond, "never", func() bool {
		if never.failed.Load() {
			done = true // the fake's Fatalf returns; stop the loop
		}
		return done
	})
	if !never.failed.Load() {
		t.Fatal("a condition that never holds did not fail the test")
	}
}
