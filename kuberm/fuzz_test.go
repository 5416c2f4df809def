package kuberm

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
)

// FuzzDecodeRecord: a Secret's record annotation can be edited by anyone
// with write access to Secrets in the namespace; any string must decode to
// a valid record or to ErrBadRecord, and a decoded record must survive
// encode -> decode unchanged.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(&appRecord{User: "u", Queue: "default", MaxAttempts: 2, MemoryMB: 1024, VCores: 1, Tags: []string{"a"}}))
	f.Add(encodeRecord(&appRecord{MaxAttempts: 1, State: 8, FinalStatus: 3, Diagnostics: "killed"}))
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"maxAttempts":1,"memoryMB":-1}`, `{"maxAttempts":1,"state":99}`,
		`{"maxAttempts":1} {}`, `{"maxAttempts":1,"extra":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := decodeRecord(s)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if r.MaxAttempts < 1 || r.MemoryMB < 0 || r.VCores < 0 || len(r.Tags) > maxTags {
			t.Fatalf("accepted an invalid record %+v", r)
		}
		again, err := decodeRecord(encodeRecord(&r))
		if err != nil {
			t.Fatalf("re-decode of %+v: %v", r, err)
		}
		if encodeRecord(&again) != encodeRecord(&r) {
			t.Fatalf("round trip changed %+v into %+v", r, again)
		}
	})
}

// FuzzDecodeSubmission: the stored submission bytes decode to a context
// with an application id or fail with ErrBadRecord, never panic.
func FuzzDecodeSubmission(f *testing.F) {
	good, _ := proto.Marshal(submissionFor(yarnid.AppID{ClusterTimestamp: 1, ID: 1}, 1024, 1))
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := decodeSubmission(b)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		if sc.ApplicationId == nil {
			t.Fatal("accepted a submission without an application id")
		}
	})
}
