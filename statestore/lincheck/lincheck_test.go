package lincheck

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// op builds an operation of client c over [call, ret] (ret < 0: pending).
func op(c int, call, ret int64, in Input, out Output) porcupine.Operation {
	if ret < 0 {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: in, Output: out}
}

var (
	ins  = func(k, v string) Input { return Input{Kind: InsertHome, Key: k, Value: v} }
	get  = func(k string) Input { return Input{Kind: GetHome, Key: k} }
	upd  = func(k, v string) Input { return Input{Kind: UpdateHome, Key: k, Value: v} }
	del  = func(k string) Input { return Input{Kind: DeleteHome, Key: k} }
	setP = func(q, v string) Input { return Input{Kind: SetPolicy, Key: q, Value: v} }
	getP = func(q string) Input { return Input{Kind: GetPolicy, Key: q} }

	val     = func(v string) Output { return Output{Value: v} }
	ok      = Output{}
	missing = Output{NotFound: true}
	unknown = Output{Unknown: true}
)

// TestCheckerVerdicts: histories that are linearizable pass, and each kind
// of anomaly the store must never show is reported (the checker can fail).
func TestCheckerVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"sequential life of a home", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, 3, ins("a", "SC-2"), val("SC-1")), // insert-if-absent answers the stored home
			op(0, 4, 5, get("a"), val("SC-1")),
			op(0, 6, 7, upd("a", "SC-3"), ok),
			op(0, 8, 9, get("a"), val("SC-3")),
			op(0, 10, 11, del("a"), ok),
			op(0, 12, 13, get("a"), missing),
			op(0, 14, 15, del("a"), missing),
			op(0, 16, 17, upd("a", "SC-4"), missing),
		}, true},
		{"concurrent inserts: one wins, both answer the winner", []porcupine.Operation{
			op(0, 0, 10, ins("a", "SC-1"), val("SC-2")),
			op(1, 1, 9, ins("a", "SC-2"), val("SC-2")),
		}, true},
		{"stale read after an acknowledged update", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, 3, upd("a", "SC-2"), ok),
			op(1, 4, 5, get("a"), val("SC-1")),
		}, false},
		{"two inserts both claim to have won", []porcupine.Operation{
			op(0, 0, 10, ins("a", "SC-1"), val("SC-1")),
			op(1, 1, 9, ins("a", "SC-2"), val("SC-2")),
		}, false},
		{"acknowledged insert lost", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(1, 2, 3, get("a"), missing),
		}, false},
		{"reads go back in time", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, 20, upd("a", "SC-2"), ok),
			op(1, 3, 4, get("a"), val("SC-2")),
			op(2, 5, 6, get("a"), val("SC-1")),
		}, false},
		{"unknown write that took effect", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, -1, upd("a", "SC-2"), unknown),
			op(1, 5, 6, get("a"), val("SC-2")),
			op(1, 7, 8, get("a"), val("SC-2")),
		}, true},
		{"unknown write that never did", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, -1, del("a"), unknown),
			op(1, 5, 6, get("a"), val("SC-1")),
		}, true},
		{"unknown write that took effect, then was undone", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(0, 2, -1, upd("a", "SC-2"), unknown),
			op(1, 5, 6, get("a"), val("SC-2")),
			op(1, 7, 8, get("a"), val("SC-1")),
		}, false},
		{"unknown write cannot explain a read before its call", []porcupine.Operation{
			op(0, 0, 1, ins("a", "SC-1"), val("SC-1")),
			op(1, 2, 3, get("a"), val("SC-2")),
			op(0, 4, -1, upd("a", "SC-2"), unknown),
		}, false},
		{"policies per queue are independent registers", []porcupine.Operation{
			op(0, 0, 1, setP("q1", `{"w":1}`), ok),
			op(1, 2, 3, getP("q2"), missing),
			op(1, 4, 5, getP("q1"), val(`{"w":1}`)),
			op(0, 6, 7, setP("q1", `{"w":2}`), ok),
			op(1, 8, 9, getP("q1"), val(`{"w":2}`)),
		}, true},
		{"stale policy read", []porcupine.Operation{
			op(0, 0, 1, setP("q1", `{"w":1}`), ok),
			op(0, 2, 3, setP("q1", `{"w":2}`), ok),
			op(1, 4, 5, getP("q1"), val(`{"w":1}`)),
		}, false},
		{"a queue and an application with the same name do not mix", []porcupine.Operation{
			op(0, 0, 1, setP("x", `{}`), ok),
			op(1, 2, 3, get("x"), missing),
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.ops, 10*time.Second, "")
			if got := err == nil; got != tc.want {
				t.Fatalf("linearizable = %v (%v), want %v", got, err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrNotLinearizable) {
				t.Fatalf("error %v, want ErrNotLinearizable", err)
			}
		})
	}
}

// TestRecorderAndVisualization: a history recorded through the Recorder
// (unknown reads dropped, unknown writes pending) is checked, and a
// violation leaves porcupine's HTML visualization behind.
func TestRecorderAndVisualization(t *testing.T) {
	r := NewRecorder()
	r.Invoke(0, ins("a", "SC-1")).Return(val("SC-1"))
	r.Invoke(1, get("a")).Unknown()           // dropped
	r.Invoke(1, upd("a", "SC-9")).Unknown()   // pending
	r.Invoke(2, del("b")).Failed()            // dropped
	r.Invoke(1, get("a")).Return(val("SC-9")) // the pending update took effect
	if ok, unk, dropped := r.Stats(); ok != 2 || unk != 1 || dropped != 2 {
		t.Fatalf("stats %d ok, %d unknown, %d dropped", ok, unk, dropped)
	}
	dir := t.TempDir()
	if err := Check(r.Operations(), 10*time.Second, dir); err != nil {
		t.Fatalf("linearizable history refused: %v", err)
	}
	r.Invoke(2, get("a")).Return(val("SC-1")) // stale: after SC-9 was seen
	err := Check(r.Operations(), 10*time.Second, dir)
	if !errors.Is(err, ErrNotLinearizable) {
		t.Fatalf("stale read accepted: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "lincheck-*.html"))
	if len(files) != 1 || !strings.Contains(err.Error(), files[0]) {
		t.Fatalf("visualization files %v, error %v", files, err)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), "get(a)") || !strings.Contains(string(b), "SC-9") {
		t.Fatalf("visualization does not describe the operations (%d bytes)", len(b))
	}
}
