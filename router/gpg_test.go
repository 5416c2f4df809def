package router_test

import (
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
	"github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestStaleHeartbeatTakesNoNewWork: a sub-cluster whose agent died still
// says RUNNING (no GPG marked it lost), but its heartbeat is older than
// subcluster_heartbeat_expiry: new applications avoid it, while per-app
// calls still reach the applications already homed there.
func TestStaleHeartbeatTakesNoNewWork(t *testing.T) {
	cases := []struct {
		name      string
		expiry    time.Duration
		wantStale bool // SC-1 gets no new work
	}{
		{"expiry on", 3 * time.Minute, true},
		{"expiry off", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := routertest.NewFed(t, 2, func(c *router.Config) { c.SubClusterHeartbeatExpiry = router.Duration(tc.expiry) })
			// An application homed in SC-1 while it was healthy.
			var old *yarnpb.ApplicationIdProto
			for old == nil {
				id := f.NewApp(f.Client)
				if err := f.Submit(f.Client, id); err != nil {
					t.Fatal(err)
				}
				if f.Store.Homes()[yarnid.AppIDString(id)] == "SC-1" {
					old = id
				}
			}
			// SC-1's agent goes silent 10 minutes ago; the row stays RUNNING.
			f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning,
				LastHeartbeat: time.Now().Add(-10 * time.Minute)})
			routertest.Poll(t, "the stale row in the router's view", func() bool {
				sc, _ := f.Router.Member("SC-1")
				return time.Since(sc.LastHeartbeat) > 5*time.Minute
			})
			toSC1 := 0
			for range 30 {
				id := f.NewApp(f.Client)
				if err := f.Submit(f.Client, id); err != nil {
					t.Fatal(err)
				}
				if f.Store.Homes()[yarnid.AppIDString(id)] == "SC-1" {
					toSC1++
				}
			}
			if tc.wantStale && toSC1 != 0 {
				t.Fatalf("%d of 30 new applications went to the sub-cluster with a stale heartbeat", toSC1)
			}
			if !tc.wantStale && toSC1 == 0 {
				t.Fatal("with the rule off, uniform routing never chose SC-1 in 30 tries")
			}
			// The existing application is still reachable at its home.
			if rep, err := f.Report(f.Client, old); err != nil || rep.GetApplicationId().GetId() != old.GetId() {
				t.Fatalf("report of an app homed in the stale sub-cluster: %v", err)
			}
		})
	}
}

// TestPublishedCapacityNarrowsLoadBased: a sub-cluster whose RM reports
// plenty of memory but whose published (Kubernetes batch) capacity is
// nearly used up loses the LoadBased choice while the figure is fresh.
func TestPublishedCapacityNarrowsLoadBased(t *testing.T) {
	reg := policies.NewRegistry()
	if err := policies.RegisterDefaults(reg); err != nil {
		t.Fatal(err)
	}
	if err := reg.RegisterManager("LoadBasedTest", "test.LoadBasedTestPolicyManager", "LoadBased", "Broadcast", true); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		published time.Time
		want      router.SubClusterID
	}{
		{"fresh published capacity wins", time.Now(), "SC-2"},
		{"stale published capacity ignored", time.Now().Add(-time.Hour), "SC-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := routertest.NewFed(t, 2, func(c *router.Config) {
				c.Policies = &router.PoliciesFactory{Registry: reg, PublishedTTL: 5 * time.Minute}
			})
			// RM view: SC-1 has 100 GB free, SC-2 50 GB. Published: SC-1's
			// nodes can really give YARN 10 GB (8 GB of it allocated).
			f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: "fake-SC-1:8032", State: router.StateRunning,
				Capability: `{"clusterMetrics":{"availableMB":100000,"allocatedMB":8000,"totalMB":108000}}`,
				Published:  &router.PublishedCapacity{MemoryMB: 10000, VCores: 10, PublishedAt: tc.published}})
			f.Store.Put(router.SubClusterInfo{ID: "SC-2", ClientRMServiceAddress: "fake-SC-2:8032", State: router.StateRunning,
				Capability: `{"clusterMetrics":{"availableMB":50000,"allocatedMB":0,"totalMB":50000}}`})
			f.Store.SetPolicy(router.PolicyConfiguration{Queue: "*", Type: "test.LoadBasedTestPolicyManager",
				Params: []byte(`{"routerPolicyWeights":{"entry":[{"key":{"id":"SC-1"},"value":"1.0"},{"key":{"id":"SC-2"},"value":"1.0"}]},"headroomAlpha":"1.0"}`)})
			routertest.Poll(t, "membership with capabilities", func() bool {
				a, _ := f.Router.Member("SC-1")
				b, _ := f.Router.Member("SC-2")
				return a.Published != nil && b.Capability != ""
			})
			id := f.NewApp(f.Client)
			if err := f.Submit(f.Client, id); err != nil {
				t.Fatal(err)
			}
			if h := f.Store.Homes()[yarnid.AppIDString(id)]; h != tc.want {
				t.Fatalf("LoadBased chose %s, want %s", h, tc.want)
			}
		})
	}
}

// TestClientStoreReadsPublishedCapacity: the production store adapter
// carries the GPG's published capacity (and nothing when none is stored).
func TestClientStoreReadsPublishedCapacity(t *testing.T) {
	row := &storepb.SubClusterInfo{SubClusterId: "SC-1", State: storepb.SubClusterState_SC_RUNNING,
		PublishedCapacity: &storepb.PublishedCapacity{MemoryMb: 4096, Vcores: 4, Nodes: 2, ObservedMs: 1000, PublishedMs: 2000}}
	got := router.FromPB(row)
	if p := got.Published; p == nil || p.MemoryMB != 4096 || p.VCores != 4 || p.Nodes != 2 || !p.PublishedAt.Equal(time.UnixMilli(2000)) || !p.ObservedAt.Equal(time.UnixMilli(1000)) {
		t.Fatalf("published %+v", got.Published)
	}
	row.PublishedCapacity = nil
	if router.FromPB(row).Published != nil {
		t.Fatal("a row without published capacity got one")
	}
}
