package lincheck

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Recorder collects a history from concurrent clients. Timestamps are
// nanoseconds on the monotonic clock since the recorder was made.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// counts
	ok, unknown, dropped int
}

// NewRecorder starts an empty history.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

// Call is one invoked operation; finish it with exactly one of Return,
// Unknown or Failed.
type Call struct {
	r      *Recorder
	client int
	in     Input
	call   int64
}

// Invoke records the invocation time of in by client (a small integer:
// porcupine's visualization draws one row per client).
func (r *Recorder) Invoke(client int, in Input) *Call {
	return &Call{r: r, client: client, in: in, call: r.now()}
}

// Return records a definite answer.
func (c *Call) Return(out Output) {
	ret := c.r.now()
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.ops = append(c.r.ops, porcupine.Operation{ClientId: c.client, Input: c.in, Call: c.call, Output: out, Return: ret})
	c.r.ok++
}

// Unknown records an operation whose outcome the client cannot know. A
// write stays pending to the end of the history (it may take effect at any
// time after its invocation, or never); a read is dropped, since it
// changed nothing and answered nothing.
func (c *Call) Unknown() {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	if !c.in.Kind.write() {
		c.r.dropped++
		return
	}
	c.r.ops = append(c.r.ops, porcupine.Operation{ClientId: c.client, Input: c.in, Call: c.call, Output: Output{Unknown: true}, Return: math.MaxInt64})
	c.r.unknown++
}

// Failed records an operation the store refused without applying it (the
// client knows it had no effect): it is left out of the history.
func (c *Call) Failed() {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.dropped++
}

// Stats returns how many operations have a definite answer, how many
// writes have an unknown outcome, and how many were left out.
func (r *Recorder) Stats() (ok, unknown, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.unknown, r.dropped
}

// Operations returns a copy of the history.
func (r *Recorder) Operations() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// ErrNotLinearizable is returned by Check for a history with no
// linearization.
var ErrNotLinearizable = errors.New("lincheck: history is not linearizable")

// ErrCheckTimeout is returned when the checker gave up before deciding.
var ErrCheckTimeout = errors.New("lincheck: checker timed out")

// Check checks ops against Model within timeout (0: no limit). On a
// violation (or a timeout) it writes porcupine's HTML visualization of the
// history to dir (when not empty) and names the file in the error.
func Check(ops []porcupine.Operation, timeout time.Duration, dir string) error {
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	var err error
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Illegal:
		err = ErrNotLinearizable
	default:
		err = ErrCheckTimeout
	}
	if dir == "" {
		return err
	}
	if mkErr := os.MkdirAll(dir, 0o755); mkErr != nil {
		return fmt.Errorf("%w (visualization not written: %v)", err, mkErr)
	}
	path := filepath.Join(dir, fmt.Sprintf("lincheck-%s.html", time.Now().UTC().Format("20060102T150405.000000000")))
	if vErr := porcupine.VisualizePath(Model, info, path); vErr != nil {
		return fmt.Errorf("%w (visualization not written: %v)", err, vErr)
	}
	return fmt.Errorf("%w: visualization in %s", err, path)
}
