package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/policies"
)

// fakeSnapPolicy is a fake policies.RouterPolicy that keeps the snapshot
// it was given and picks the first active sub-cluster (the embedded
// interface is nil: only the methods below are called).
type fakeSnapPolicy struct {
	policies.RouterPolicy
	snap *policies.Snapshot
}

func (f *fakeSnapPolicy) Type() string { return "fake" }

func (f *fakeSnapPolicy) HomeSubCluster(_ context.Context, snap *policies.Snapshot, _ *policies.AppSubmission, _ []policies.SubClusterID) (policies.SubClusterID, error) {
	f.snap = snap
	return snap.Active()[0], nil
}

func capabilityJSON(availableMB int) string {
	return fmt.Sprintf(`{"clusterMetrics":{"availableMB":%d,"allocatedMB":1024,"totalMB":%d,"availableVirtualCores":100,"allocatedVirtualCores":4,"totalVirtualCores":104,"activeNodes":1000,"appsPending":3,"appsRunning":37}}`, availableMB, availableMB+1024)
}

// TestSnapshotReparsesOnlyChangedCapabilities: when one of N candidates
// heartbeats with a new capability, the next snapshot parses that one
// document and takes the others' parses from the last snapshot (it used
// to parse all N, 2.7 ms per submission at N = 100), and the policy sees
// the new figures.
func TestSnapshotReparsesOnlyChangedCapabilities(t *testing.T) {
	parses := 0
	fake := &fakeSnapPolicy{}
	a := &policyAdapter{p: fake, now: time.Now, parse: func(b []byte) (policies.Capability, error) {
		parses++
		return policies.ParseCapability(b)
	}}
	t0 := time.Now()
	cands := make([]SubClusterInfo, 100)
	for i := range cands {
		cands[i] = SubClusterInfo{ID: SubClusterID(fmt.Sprintf("SC-%03d", i)), State: StateRunning, LastHeartbeat: t0, Capability: capabilityJSON(1000 + i)}
	}
	sub := AppSubmission{AppID: "application_1_0001", Queue: "default"}
	if _, err := a.SelectHome(context.Background(), sub, cands); err != nil {
		t.Fatal(err)
	}
	if parses != 100 {
		t.Fatalf("first snapshot: %d parses, want 100", parses)
	}
	cands[7].LastHeartbeat, cands[7].Capability = t0.Add(time.Second), capabilityJSON(5)
	if _, err := a.SelectHome(context.Background(), sub, cands); err != nil {
		t.Fatal(err)
	}
	if parses != 101 {
		t.Fatalf("after one capability changed: %d parses in all, want 101", parses)
	}
	if sc, _ := fake.snap.Get("SC-007"); sc.Capability.AvailableMB != 5 {
		t.Fatalf("changed capability not in the snapshot: %+v", sc.Capability)
	}
	if sc, _ := fake.snap.Get("SC-008"); sc.Capability.AvailableMB != 1008 {
		t.Fatalf("unchanged capability lost: %+v", sc.Capability)
	}
	// Unchanged candidates: the same snapshot, nothing parsed.
	if _, err := a.SelectHome(context.Background(), sub, cands); err != nil || parses != 101 {
		t.Fatalf("unchanged candidates: %d parses, %v", parses, err)
	}
}

// BenchmarkSelectHome: one submission's policy step at N candidates with
// 1 KiB capability documents, one of them heartbeating (new heartbeat and
// capability) before each call when changing is set, as at N = 100 with
// 5 s heartbeats and a few submissions a second.
func BenchmarkSelectHome(b *testing.B) {
	capa := `{"clusterMetrics":{"appsSubmitted":120,"appsCompleted":80,"appsPending":3,"appsRunning":37,"appsFailed":0,"appsKilled":0,"reservedMB":0,"availableMB":%d,"allocatedMB":212000,"pendingMB":4096,"reservedVirtualCores":0,"availableVirtualCores":3100,"allocatedVirtualCores":900,"pendingVirtualCores":4,"containersAllocated":400,"containersReserved":0,"containersPending":2,"totalMB":1024000,"totalVirtualCores":4000,"totalNodes":1000,"lostNodes":0,"unhealthyNodes":0,"decommissioningNodes":0,"decommissionedNodes":0,"rebootedNodes":0,"activeNodes":1000,"shutdownNodes":0}}`
	for _, n := range []int{10, 100} {
		for _, changing := range []bool{false, true} {
			b.Run(fmt.Sprintf("N=%d/changing=%v", n, changing), func(b *testing.B) {
				var ws []policies.Weight
				cands := make([]SubClusterInfo, n)
				for i := range cands {
					cands[i] = SubClusterInfo{ID: SubClusterID(fmt.Sprintf("SC-%d", i)), State: StateRunning, LastHeartbeat: time.Now(), Capability: fmt.Sprintf(capa, 812000+i)}
					ws = append(ws, policies.Weight{ID: policies.SubClusterID(cands[i].ID), Value: 1})
				}
				q := policies.QueuePolicy{Queue: "default", Info: policies.WeightedPolicyInfo{RouterWeights: ws, AMRMWeights: ws, HeadroomAlpha: 1}}
				pc, err := policies.NewDefaultRegistry().QueuePolicyConfig(q, "WeightedLocality", policies.Env{})
				if err != nil {
					b.Fatal(err)
				}
				p, err := (&PoliciesFactory{Registry: policies.NewDefaultRegistry()}).RouterPolicy(PolicyConfiguration{Queue: pc.Queue, Type: pc.Type, Params: pc.Params})
				if err != nil {
					b.Fatal(err)
				}
				sub := AppSubmission{AppID: "application_1_0001", Queue: "default"}
				for i := 0; b.Loop(); i++ {
					if changing {
						sc := &cands[i%n]
						sc.LastHeartbeat, sc.Capability = sc.LastHeartbeat.Add(time.Millisecond), fmt.Sprintf(capa, 812000+i)
					}
					if _, err := p.SelectHome(context.Background(), sub, cands); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
