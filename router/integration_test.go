package router_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"slices"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// fakeAgent stands in for the sub-cluster agent (a separate component the
// router may not import): it registers the RM the test made active, as the
// agent does after its probe round (the agent's own HA probing is tested in
// subclusteragent and, agent and router together, in cmd/yarnfed).
type fakeAgent struct {
	s   *routertest.Store
	id  string
	rms []*simrm.RM
}

// step registers the first RM of the pair that reports itself active.
func (a fakeAgent) step(t *testing.T) {
	t.Helper()
	for _, rm := range a.rms {
		if rm.Standby() {
			continue
		}
		ad := rm.Addrs()
		a.s.Put(router.SubClusterInfo{ID: router.SubClusterID(a.id), ClientRMServiceAddress: ad.Client,
			AMRMServiceAddress: ad.Scheduler, RMAdminServiceAddress: ad.Admin, RMWebServiceAddress: ad.Web,
			State: router.StateRunning, LastStartTime: time.Now(),
			Capability: `{"clusterMetrics":{}}`, LastHeartbeat: time.Now()})
		return
	}
	t.Fatalf("fake agent %s: no active RM", a.id)
}

// TestIntegrationSimRMs: two simulated sub-clusters (SC-1 an HA pair) with
// their agents, the router, and a YARN client over Hadoop IPC. Apps land,
// are listed, reported and killed through the router, and SC-1's failover
// is followed without failed calls.
func TestIntegrationSimRMs(t *testing.T) {
	sc1a := routertest.StartSim(t, "SC-1", 1_700_000_000_000)
	standbyCfg := simrm.TestConfig()
	sc1b, err := simrm.NewStandby(sc1a, standbyCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc1b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc1b.Close() })
	sc2 := routertest.StartSim(t, "SC-2", 1_700_000_000_001)

	store := routertest.NewStore()
	agents := []fakeAgent{{store, "SC-1", []*simrm.RM{sc1a, sc1b}}, {store, "SC-2", []*simrm.RM{sc2}}}
	for _, a := range agents {
		a.step(t)
	}

	cfg := router.DefaultConfig()
	cfg.WebAddress, cfg.Store, cfg.Logger = "", store, routertest.Logger(t)
	cfg.MembershipRefresh = router.Duration(20 * time.Millisecond)
	rt := routertest.StartRouter(t, cfg)

	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rt.ClientRMAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &routertest.Fed{T: t, Store: store}

	submitN := func(n int) []*yarnpb.ApplicationIdProto {
		var ids []*yarnpb.ApplicationIdProto
		for range n {
			id := f.NewApp(c)
			if err := f.Submit(c, id); err != nil {
				t.Fatalf("submit: %v", err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	// The uniform policy picks at random: with 40 apps, all on one of two
	// sub-clusters has odds 2^-39 (with 12 it failed about once in 2,000 runs).
	const apps = 40
	ids := submitN(apps)
	homes := map[router.SubClusterID]int{}
	for _, id := range ids {
		rep, err := f.Report(c, id)
		if err != nil {
			t.Fatalf("report: %v", err)
		}
		home := store.Homes()[yarnid.AppIDString(id)]
		homes[home]++
		if rep.GetApplicationId().GetClusterTimestamp() != id.GetClusterTimestamp() {
			t.Fatal("report of another app")
		}
	}
	if len(homes) != 2 {
		t.Fatalf("uniform policy used only %v", homes)
	}
	list := &yarnpb.GetApplicationsResponseProto{}
	if err := c.Call(routertest.Ctx(t), "getApplications", &yarnpb.GetApplicationsRequestProto{}, list); err != nil || len(list.GetApplications()) != apps {
		t.Fatalf("getApplications: %d apps, %v", len(list.GetApplications()), err)
	}
	m := &yarnpb.GetClusterMetricsResponseProto{}
	if err := c.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, m); err != nil ||
		m.GetClusterMetrics().GetNumNodeManagers() != int32(2*simrm.TestConfig().Nodes) {
		t.Fatalf("metrics %v %v", m, err)
	}

	// REST documents come from the home RMs' own REST APIs (all fields).
	f.Router = rt
	code, b := f.Do("GET", "/ws/v1/cluster/apps/"+yarnid.AppIDString(ids[0]), "", "", "")
	var one rmrest.AppResponse
	if code != 200 || json.Unmarshal(b, &one) != nil || one.App.Timeouts == nil {
		t.Fatalf("GET app via router: %d %s", code, b)
	}
	code, b = f.Do("GET", "/ws/v1/cluster/apps", "", "", "")
	var all rmrest.AppsResponse
	if code != 200 || json.Unmarshal(b, &all) != nil || len(all.Apps.App) != apps || all.Apps.App[0].Timeouts == nil {
		t.Fatalf("GET apps via router: %d, %d apps", code, len(all.Apps.App))
	}
	routertest.Poll(t, "attempt launched", func() bool {
		code, b := f.Do("GET", "/ws/v1/cluster/apps/"+yarnid.AppIDString(ids[0])+"/appattempts", "", "", "")
		var atts rmrest.AppAttemptsResponse
		return code == 200 && json.Unmarshal(b, &atts) == nil && len(atts.AppAttempts.AppAttempt) == 1
	})
	code, b = f.Do("GET", "/ws/v1/cluster/nodes", "application/xml", "", "")
	var nodes rmrest.Nodes
	if code != 200 || xml.Unmarshal(b, &nodes) != nil || len(nodes.Node) != 2*simrm.TestConfig().Nodes {
		t.Fatalf("GET nodes via router: %d, %d nodes", code, len(nodes.Node))
	}

	// SC-1 fails over; its agent registers the new active RM.
	sc1a.TransitionToStandby()
	sc1b.TransitionToActive()
	for _, a := range agents {
		a.step(t)
	}
	routertest.Poll(t, "router follows SC-1's new RM", func() bool {
		scs, _ := store.GetSubClusters(context.Background(), true)
		return slices.ContainsFunc(scs, func(sc router.SubClusterInfo) bool {
			return sc.ID == "SC-1" && sc.ClientRMServiceAddress == sc1b.Addrs().Client
		})
	})
	for _, id := range ids {
		if _, err := f.Report(c, id); err != nil {
			t.Fatalf("report after failover: %v", err)
		}
	}
	submitN(6)
	kill := &yarnpb.KillApplicationResponseProto{}
	if err := c.Call(routertest.Ctx(t), "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: ids[0]}, kill); err != nil {
		t.Fatalf("kill: %v", err)
	}
	routertest.Poll(t, "killed", func() bool {
		rep, err := f.Report(c, ids[0])
		return err == nil && rep.GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_KILLED
	})
}
