// Package logtest holds what tests use to read what a component writes
// (logs, a command's output) from its own goroutines.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a log sink (an io.Writer for slog handlers) that goroutines
// may write while a test reads it. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
