package simrmtest

import (
	"context"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

func TestStartNGivesDistinctClusters(t *testing.T) {
	rms := StartN(t, 2, nil)
	if rms[0].Epoch() == rms[1].Epoch() {
		t.Fatalf("equal epochs %d", rms[0].Epoch())
	}
	for i, rm := range rms {
		info, err := rmrest.NewClient(rm.Addrs().Web).GetClusterInfo(context.Background())
		if err != nil || info.HAState != "ACTIVE" {
			t.Fatalf("rm %d: %+v %v", i, info, err)
		}
	}
	active, standby := StartHA(t, "ha", nil)
	if active.Standby() || !standby.Standby() {
		t.Fatal("wrong HA roles")
	}
	if !WaitFor(time.Second, func() bool { return true }) {
		t.Fatal("WaitFor on a true condition")
	}
}
