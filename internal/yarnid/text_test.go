package yarnid_test

import (
	"fmt"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

func FuzzParseAppID(f *testing.F) {
	for _, s := range []string{"application_1700000000000_0001", "application_1_12345", "application__1", "app_1_1", "application_-1_1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := yarnid.ParseAppIDProto(s)
		if err != nil {
			return
		}
		// Round trip through Hadoop's text form.
		again, err := yarnid.ParseAppIDProto(yarnid.AppIDString(id))
		if err != nil || again.GetId() != id.GetId() || again.GetClusterTimestamp() != id.GetClusterTimestamp() {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, id, yarnid.AppIDString(id), again, err)
		}
	})
}

// AppIDString's hand-rolled padding matches Hadoop's format
// (application_%d_%04d) for every width, zero and negatives.
func TestAppIDStringMatchesFormat(t *testing.T) {
	for _, ts := range []int64{0, 1, 1700000000000, -5} {
		for _, seq := range []int32{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 123456, math.MaxInt32, -1, -12345, math.MinInt32} {
			id := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(ts), Id: proto.Int32(seq)}
			if got, want := yarnid.AppIDString(id), fmt.Sprintf("application_%d_%04d", ts, seq); got != want {
				t.Errorf("AppIDString(%d, %d) = %q, want %q", ts, seq, got, want)
			}
		}
	}
}
