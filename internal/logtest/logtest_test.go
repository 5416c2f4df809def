package logtest

import (
	"strings"
	"sync"
	"testing"
)

// TestBufferTakesConcurrentWrites: every line written from many goroutines
// is there, whole (run with -race, it also proves the writes are locked).
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if _, err := b.Write([]byte("line\n")); err != nil {
					t.Error(err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 800 {
		t.Fatalf("got %d lines, want 800", got)
	}
}
