package kubebatch

import (
	"errors"
	"testing"
)

// FuzzDecodeOriginBatch: the origin annotation is written by whoever may
// patch Nodes; any string must decode to a non-negative amount or to
// ErrBadOrigin, without panicking, and a decoded amount must survive
// encode -> decode unchanged.
//
// It lives here, beside the decoder, not in gpg/kube or kuberm (which call
// it): fuzzing instruments every package the test binary links, and
// gpg/kube's tests link client-go and an API server's test harness, whose
// instrumented build took 846 s of a cold CI run at load 10-12; this
// package links k8s.io/api and apimachinery only.
func FuzzDecodeOriginBatch(f *testing.F) {
	origin := func(cpu, mem string) string {
		return `{"resources":{"kubernetes.io/batch-cpu":"` + cpu + `","kubernetes.io/batch-memory":"` + mem + `"}}`
	}
	for _, s := range []string{
		origin("60646", "245976973438"), // the REFERENCE §6 example node
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
