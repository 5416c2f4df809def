package store

import (
	"errors"
	"strings"
	"testing"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestCapabilityBounded: a heartbeat or registration whose capability is
// over the limit is refused as ErrInvalidArgument, at exactly one byte
// over; at the limit it is accepted. The row is replicated and pushed to
// every watcher on each heartbeat, so an agent must not grow it at will
// (node's TestHeartbeatCapabilityBounded checks the same over TLS, slowly).
func TestCapabilityBounded(t *testing.T) {
	capOf := func(n int) string { // valid JSON of exactly n bytes
		return `{"x":"` + strings.Repeat("a", n-8) + `"}`
	}
	small := DefaultLimits()
	small.MaxCapabilityBytes = 100
	for _, l := range []Limits{small, DefaultLimits()} {
		max := l.MaxCapabilityBytes
		if got := len(capOf(max)); got != max {
			t.Fatalf("capOf(%d) is %d bytes", max, got)
		}
		hb := func(c string) error {
			return l.ValidateHeartbeat(&pb.HeartbeatRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING, Capability: c})
		}
		reg := func(c string) error {
			return l.ValidateSubClusterInfo(&pb.SubClusterInfo{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING,
				AmrmServiceAddress: "rm:8030", ClientRmServiceAddress: "rm:8032", RmAdminServiceAddress: "rm:8033", RmWebServiceAddress: "rm:8088", Capability: c})
		}
		for name, validate := range map[string]func(string) error{"heartbeat": hb, "register": reg} {
			if err := validate(capOf(max)); err != nil {
				t.Errorf("%s with a %d-byte capability (the limit): %v", name, max, err)
			}
			if err := validate(capOf(max + 1)); !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s with a %d-byte capability (limit %d): %v, want ErrInvalidArgument", name, max+1, max, err)
			}
		}
	}
}
