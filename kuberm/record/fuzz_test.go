package record

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// FuzzDecodeRecord: a Secret's record annotation can be edited by anyone
// with write access to Secrets in the namespace; any string must decode to
// a valid record or to ErrBad, and a decoded record must survive
// encode -> decode unchanged.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(Encode(&App{User: "u", Queue: "default", MaxAttempts: 2, MemoryMB: 1024, VCores: 1, Tags: []string{"a"}}))
	f.Add(Encode(&App{MaxAttempts: 1, State: 8, FinalStatus: 3, Diagnostics: "killed"}))
	for _, s := range []string{``, `{}`, `null`, `[]`, `{"maxAttempts":1,"memoryMB":-1}`, `{"maxAttempts":1,"state":99}`,
		`{"maxAttempts":1} {}`, `{"maxAttempts":1,"extra":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Decode(s)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("error %v does not wrap ErrBad", err)
			}
			return
		}
		if r.MaxAttempts < 1 || r.MemoryMB < 0 || r.VCores < 0 || len(r.Tags) > MaxTags {
			t.Fatalf("accepted an invalid record %+v", r)
		}
		again, err := Decode(Encode(&r))
		if err != nil {
			t.Fatalf("re-decode of %+v: %v", r, err)
		}
		if Encode(&again) != Encode(&r) {
			t.Fatalf("round trip changed %+v into %+v", r, again)
		}
	})
}

// FuzzDecodeSubmission: the stored submission bytes decode to a context
// with an application id or fail with ErrBad, never panic.
func FuzzDecodeSubmission(f *testing.F) {
	good, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:   &yarnpb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1)},
		ApplicationName: proto.String("a"),
	})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := DecodeSubmission(b)
		if err != nil {
			if !errors.Is(err, ErrBad) {
				t.Fatalf("error %v does not wrap ErrBad", err)
			}
			return
		}
		if sc.ApplicationId == nil {
			t.Fatal("accepted a submission without an application id")
		}
	})
}
