package kube

import (
	"errors"
	"testing"
)

// FuzzDecodeOriginBatch: the origin annotation is written by whoever may
// patch Nodes; any string must decode to a non-negative amount or to
// ErrBadOrigin, without panicking, and a decoded amount must survive
// encode -> decode unchanged.
func FuzzDecodeOriginBatch(f *testing.F) {
	for _, s := range []string{
		refOrigin,
		origin("12k", "64Gi"),
		origin("1e3", "1Mi"),
		origin("1500m", "1.5"),
		origin("-1", "0"),
		`{"resources": {"kubernetes.io/batch-cpu": 1000,"kubernetes.io/batch-memory": 1024}}`,
		`{"resources":{"kubernetes.io/batch-memory":"9223372036854775807"}}`,
		`{"resources":{"kubernetes.io/batch-memory":"9223372036854775808"}}`,
		`{"resources":null}`,
		`{}`, `[]`, `null`, ``, `{"resources":{"kubernetes.io/batch-cpu":"1e999999"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeOriginBatch(s)
		if err != nil {
			if !errors.Is(err, ErrBadOrigin) {
				t.Fatalf("error %v does not wrap ErrBadOrigin", err)
			}
			if b != (Batch{}) {
				t.Fatalf("error with a non-zero amount %+v", b)
			}
			return
		}
		if b.MilliCPU < 0 || b.Memory < 0 {
			t.Fatalf("negative amount %+v from %q", b, s)
		}
		if y := b.YARN(); y.VCores < 0 || y.MemoryMB < 0 {
			t.Fatalf("negative YARN amount %+v", y)
		}
		again, err := DecodeOriginBatch(EncodeOriginBatch(b))
		if err != nil || again != b {
			t.Fatalf("round trip of %+v: %+v, %v", b, again, err)
		}
	})
}
