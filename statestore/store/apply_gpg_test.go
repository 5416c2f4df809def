package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// fsmHarness applies encoded commands straight to an FSM with chosen
// leader-stamped times: encode -> Apply -> assert, no Raft, no clock.
type fsmHarness struct {
	t     *testing.T
	f     *fsm
	index uint64
}

func newFSMHarness(t *testing.T) *fsmHarness {
	t.Helper()
	f, _, err := openFSM(t.TempDir()+"/fsm.db", true, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.close() })
	return &fsmHarness{t: t, f: f}
}

func (h *fsmHarness) apply(typ CommandType, m proto.Message) (proto.Message, error) {
	h.t.Helper()
	data, err := EncodeCommand(typ, m)
	if err != nil {
		h.t.Fatal(err)
	}
	h.index++
	r := h.f.ApplyBatch([]*raft.Log{{Index: h.index, Type: raft.LogCommand, Data: data}})[0].(*result)
	return r.resp, r.err
}

func (h *fsmHarness) acquire(holder string, ttl, now int64) *pb.AcquireLeaseResponse {
	h.t.Helper()
	r, err := h.apply(CmdAcquireLease, &pb.AcquireLeaseCommand{Request: &pb.AcquireLeaseRequest{Name: "gpg", Holder: holder, TtlMs: ttl}, NowMs: now})
	if err != nil {
		h.t.Fatal(err)
	}
	return r.(*pb.AcquireLeaseResponse)
}

func TestLeaseApply(t *testing.T) {
	h := newFSMHarness(t)
	steps := []struct {
		name       string
		holder     string
		now        int64
		wantOK     bool
		wantHolder string
		wantEpoch  uint64
	}{
		{"first acquire", "a", 1000, true, "a", 1},
		{"renew keeps epoch", "a", 1500, true, "a", 1},
		{"other holder refused while held", "b", 2000, false, "a", 1},
		{"other holder at expiry takes over", "b", 2500, true, "b", 2},
		{"old holder refused", "a", 2600, false, "b", 2},
		{"same holder after its own expiry gets a new epoch", "b", 10_000, true, "b", 3},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			r := h.acquire(st.holder, 1000, st.now)
			if r.GetAcquired() != st.wantOK || r.GetLease().GetHolder() != st.wantHolder || r.GetLease().GetEpoch() != st.wantEpoch {
				t.Fatalf("got acquired=%v %v", r.GetAcquired(), r.GetLease())
			}
		})
	}
	// Release by a stale epoch is a no-op; by the holder frees the lease.
	if _, err := h.apply(CmdReleaseLease, &pb.ReleaseLeaseCommand{Request: &pb.ReleaseLeaseRequest{Name: "gpg", Holder: "b", Epoch: 2}, NowMs: 10_100}); err != nil {
		t.Fatal(err)
	}
	if r := h.acquire("a", 1000, 10_200); r.GetAcquired() {
		t.Fatal("stale-epoch release freed the lease")
	}
	if _, err := h.apply(CmdReleaseLease, &pb.ReleaseLeaseCommand{Request: &pb.ReleaseLeaseRequest{Name: "gpg", Holder: "b", Epoch: 3}, NowMs: 10_300}); err != nil {
		t.Fatal(err)
	}
	if r := h.acquire("a", 1000, 10_301); !r.GetAcquired() || r.GetLease().GetEpoch() != 4 {
		t.Fatalf("after release: %v", r)
	}
}

func TestFencedWritesApply(t *testing.T) {
	h := newFSMHarness(t)
	if _, err := h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc("SC-1", pb.SubClusterState_SC_RUNNING), NowMs: 100}); err != nil {
		t.Fatal(err)
	}
	h.acquire("a", 1000, 1000) // epoch 1 until 2000
	pol := func(q string) []*pb.PolicyConfiguration {
		return []*pb.PolicyConfiguration{{Queue: q, Type: "T", Params: []byte(`{}`)}}
	}
	cases := []struct {
		name      string
		fence     *pb.Fence
		now       int64
		wantFence bool
	}{
		{"no fence", nil, 1100, false},
		{"holder and epoch match", &pb.Fence{Lease: "gpg", Holder: "a", Epoch: 1}, 1100, false},
		{"wrong holder", &pb.Fence{Lease: "gpg", Holder: "b", Epoch: 1}, 1100, true},
		{"old epoch", &pb.Fence{Lease: "gpg", Holder: "a", Epoch: 0}, 1100, true},
		{"expired", &pb.Fence{Lease: "gpg", Holder: "a", Epoch: 1}, 2000, true},
		{"unknown lease", &pb.Fence{Lease: "other", Holder: "a", Epoch: 1}, 1100, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writes := []struct {
				typ CommandType
				m   proto.Message
			}{
				{CmdSetPolicies, &pb.SetPoliciesCommand{Request: &pb.SetPoliciesRequest{Policies: pol("q-" + tc.name), Fence: tc.fence}, NowMs: tc.now}},
				{CmdPublishCapacity, &pb.PublishCapacityCommand{Request: &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{{SubClusterId: "SC-1", MemoryMb: 7}}, Fence: tc.fence}, NowMs: tc.now}},
				{CmdMarkSubClustersLost, &pb.MarkSubClustersLostCommand{Request: &pb.MarkSubClustersLostRequest{SubClusterIds: []string{"nobody"}, HeartbeatBeforeMs: 1, Fence: tc.fence}, NowMs: tc.now}},
				{CmdDeleteApplicationHomes, &pb.DeleteApplicationHomesCommand{Request: &pb.DeleteApplicationHomesRequest{ApplicationIds: []string{"nothing"}, CreatedBeforeMs: 1, Fence: tc.fence}, NowMs: tc.now}},
			}
			for _, w := range writes {
				_, err := h.apply(w.typ, w.m)
				if got := errors.Is(err, ErrFenced); got != tc.wantFence {
					t.Fatalf("command %d: err %v, want fenced=%v", w.typ, err, tc.wantFence)
				}
			}
			_, err := h.f.getPolicy("q-" + tc.name)
			if written := err == nil; written == tc.wantFence {
				t.Fatalf("policy written=%v with fenced=%v", written, tc.wantFence)
			}
		})
	}
}

func TestSetPoliciesSkipsPinned(t *testing.T) {
	h := newFSMHarness(t)
	if _, err := h.apply(CmdSetPolicy, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "pinned", Type: "T", Params: []byte(`{"a":1}`), Pinned: true}}); err != nil {
		t.Fatal(err)
	}
	r, err := h.apply(CmdSetPolicies, &pb.SetPoliciesCommand{Request: &pb.SetPoliciesRequest{SkipPinned: true, Policies: []*pb.PolicyConfiguration{
		{Queue: "pinned", Type: "T", Params: []byte(`{"a":2}`)}, {Queue: "free", Type: "T", Params: []byte(`{"a":3}`)},
	}}, NowMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*pb.SetPoliciesResponse)
	if !slices.Equal(resp.GetWritten(), []string{"free"}) || !slices.Equal(resp.GetSkippedPinned(), []string{"pinned"}) {
		t.Fatalf("response %v", resp)
	}
	p, _ := h.f.getPolicy("pinned")
	if string(p.GetParams()) != `{"a":1}` || !p.GetPinned() {
		t.Fatalf("pinned policy changed: %v", p)
	}
}

func TestPublishedCapacitySurvivesHeartbeatAndRegister(t *testing.T) {
	h := newFSMHarness(t)
	must := func(_ proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc("SC-1", pb.SubClusterState_SC_RUNNING), NowMs: 100}))
	r, err := h.apply(CmdPublishCapacity, &pb.PublishCapacityCommand{Request: &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{
		{SubClusterId: "SC-1", MemoryMb: 4096, Vcores: 8, Nodes: 3, ObservedMs: 150}, {SubClusterId: "SC-404", MemoryMb: 1},
	}}, NowMs: 200})
	if err != nil || !slices.Equal(r.(*pb.PublishCapacityResponse).GetUnknown(), []string{"SC-404"}) {
		t.Fatalf("publish: %v %v", r, err)
	}
	must(h.apply(CmdHeartbeat, &pb.HeartbeatCommand{Request: &pb.HeartbeatRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_RUNNING, Capability: `{"clusterMetrics":{"availableMB":1}}`}, NowMs: 300}))
	info := sc("SC-1", pb.SubClusterState_SC_RUNNING)
	info.PublishedCapacity = &pb.PublishedCapacity{MemoryMb: 1} // an RM may not set it
	must(h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: info, NowMs: 400}))
	got, err := h.f.getSubCluster("SC-1")
	if err != nil {
		t.Fatal(err)
	}
	want := &pb.PublishedCapacity{MemoryMb: 4096, Vcores: 8, Nodes: 3, ObservedMs: 150, PublishedMs: 200}
	if !proto.Equal(got.GetPublishedCapacity(), want) || got.GetLastHeartbeatMs() != 400 {
		t.Fatalf("got %v, want published %v", got, want)
	}
}

func TestMarkLostAndDeleteHomesAreConditional(t *testing.T) {
	h := newFSMHarness(t)
	must := func(_ proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range []pb.SubClusterState{pb.SubClusterState_SC_RUNNING, pb.SubClusterState_SC_UNHEALTHY, pb.SubClusterState_SC_DECOMMISSIONED, pb.SubClusterState_SC_RUNNING} {
		must(h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc([]string{"old", "sick", "gone", "fresh"}[i], st), NowMs: int64(100 + i*1000)}))
	}
	r, err := h.apply(CmdMarkSubClustersLost, &pb.MarkSubClustersLostCommand{Request: &pb.MarkSubClustersLostRequest{
		SubClusterIds: []string{"old", "sick", "gone", "fresh", "unknown"}, HeartbeatBeforeMs: 2500,
	}, NowMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*pb.MarkSubClustersLostResponse).GetMarked(); !slices.Equal(got, []string{"old", "sick"}) {
		t.Fatalf("marked %v, want [old sick]", got)
	}
	old, _ := h.f.getSubCluster("old")
	if old.GetState() != pb.SubClusterState_SC_LOST || old.GetLastHeartbeatMs() != 100 {
		t.Fatalf("old: %v", old)
	}

	must(h.apply(CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: "app_old", HomeSubClusterId: "old"}, NowMs: 1000}))
	must(h.apply(CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: "app_new", HomeSubClusterId: "old"}, NowMs: 3000}))
	r, err = h.apply(CmdDeleteApplicationHomes, &pb.DeleteApplicationHomesCommand{Request: &pb.DeleteApplicationHomesRequest{
		ApplicationIds: []string{"app_old", "app_new", "app_missing"}, CreatedBeforeMs: 2000,
	}, NowMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	d := r.(*pb.DeleteApplicationHomesResponse)
	if !slices.Equal(d.GetDeleted(), []string{"app_old"}) || !slices.Equal(d.GetKept(), []string{"app_new", "app_missing"}) {
		t.Fatalf("delete: %v", d)
	}
	if _, err := h.f.getApp("app_new", false); err != nil {
		t.Fatalf("young home deleted: %v", err)
	}
}

// TestSetPoliciesCarriesCapacities: a GPG round (policies + published
// capacities) is one entry; a fenced-out round writes neither.
func TestSetPoliciesCarriesCapacities(t *testing.T) {
	h := newFSMHarness(t)
	if _, err := h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc("SC-1", pb.SubClusterState_SC_RUNNING), NowMs: 1}); err != nil {
		t.Fatal(err)
	}
	h.acquire("a", 1000, 10)
	round := func(epoch uint64, mem int64) error {
		_, err := h.apply(CmdSetPolicies, &pb.SetPoliciesCommand{Request: &pb.SetPoliciesRequest{
			Policies:   []*pb.PolicyConfiguration{{Queue: "*", Type: "T", Params: []byte(fmt.Sprintf(`{"m":%d}`, mem))}},
			Capacities: []*pb.PublishCapacityRequest_Item{{SubClusterId: "SC-1", MemoryMb: mem}, {SubClusterId: "SC-9"}},
			Fence:      &pb.Fence{Lease: "gpg", Holder: "a", Epoch: epoch},
		}, NowMs: 20})
		return err
	}
	if err := round(1, 111); err != nil {
		t.Fatal(err)
	}
	if err := round(7, 222); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale epoch: %v", err)
	}
	info, _ := h.f.getSubCluster("SC-1")
	p, _ := h.f.getPolicy("*")
	if info.GetPublishedCapacity().GetMemoryMb() != 111 || string(p.GetParams()) != `{"m":111}` {
		t.Fatalf("after rounds: capacity %v, policy %s", info.GetPublishedCapacity(), p.GetParams())
	}
}
