package router_test

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// adminFed is a fed whose router also serves the admin port, with fake RM
// admin endpoints and "admin" as the only administrator.
type adminFed struct {
	*routertest.Fed
	admins map[router.SubClusterID]*routertest.AdminRM
}

func newAdminFed(t *testing.T, n int) *adminFed {
	t.Helper()
	a := &adminFed{admins: map[router.SubClusterID]*routertest.AdminRM{}}
	var fakes []*routertest.AdminRM
	for i := 1; i <= n; i++ {
		id := router.SubClusterID("SC-" + string(rune('0'+i)))
		a.admins[id] = routertest.NewAdminRM(id)
		fakes = append(fakes, a.admins[id])
	}
	a.Fed = routertest.NewFed(t, n, func(c *router.Config) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.AdminListener, c.AdminACL, c.AdminDial = ln, "admin admins", routertest.AdminDialer(fakes...)
	})
	return a
}

// as dials the admin port as user (SIMPLE auth), one try per call.
func (a *adminFed) as(user string) *hadoopipc.Client {
	a.T.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{a.Router.AdminAddr().String()},
		Protocol: hadoopipc.ProtocolRMAdmin, User: user, FailoverAttempts: 1})
	if err != nil {
		a.T.Fatal(err)
	}
	a.T.Cleanup(func() { _ = c.Close() })
	return c
}

func TestAdminEveryMethodServed(t *testing.T) {
	a := newAdminFed(t, 1)
	sd := yarnpb.File_resourcemanager_administration_protocol_proto.Services().Get(0)
	c := a.as("admin")
	for i := 0; i < sd.Methods().Len(); i++ {
		m := sd.Methods().Get(i)
		req, resp := newOf(m.Input()), newOf(m.Output())
		if proto.CheckInitialized(req) != nil {
			continue // required fields: covered by the calls below
		}
		if err := c.Call(routertest.Ctx(t), string(m.Name()), req, resp); routertest.RemoteClass(err) == hadoopipc.ClassNoSuchMethod {
			t.Errorf("%s: not served: %v", m.Name(), err)
		}
	}
	// The admin port serves only the admin protocol.
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{a.Router.AdminAddr().String()},
		Protocol: hadoopipc.ProtocolApplicationClient, User: "admin", FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	if routertest.RemoteClass(err) != hadoopipc.ClassNoSuchProtocol {
		t.Fatalf("ApplicationClientProtocol on the admin port: %v", err)
	}
}

func weight(queue, router, amrm, alpha string) *yarnpb.FederationQueueWeightProto {
	return &yarnpb.FederationQueueWeightProto{Queue: proto.String(queue), RouterWeight: proto.String(router),
		AmrmWeight: proto.String(amrm), HeadRoomAlpha: proto.String(alpha)}
}

// TestAdminACL: only administrators change anything; reads are open.
func TestAdminACL(t *testing.T) {
	a := newAdminFed(t, 2)
	mallory := a.as("mallory")
	save := &yarnpb.SaveFederationQueuePolicyRequestProto{Queue: proto.String("root.a"),
		FederationQueueWeight: weight("root.a", "SC-1:1.0", "SC-1:1.0", "1.0")}
	for name, call := range map[string]func() error{
		"saveFederationQueuePolicy": func() error {
			return mallory.Call(routertest.Ctx(t), "saveFederationQueuePolicy", save, &yarnpb.SaveFederationQueuePolicyResponseProto{})
		},
		"refreshQueues": func() error {
			return mallory.Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{})
		},
		"deregisterSubCluster": func() error {
			return mallory.Call(routertest.Ctx(t), "deregisterSubCluster", &yarnpb.DeregisterSubClusterRequestProto{SubClusterId: proto.String("SC-1")}, &yarnpb.DeregisterSubClusterResponseProto{})
		},
	} {
		if err := call(); routertest.RemoteClass(err) != hadoopipc.ClassAccessControl {
			t.Errorf("%s as a non-admin: %v, want AccessControlException", name, err)
		}
	}
	if _, ok := a.Store.Policy("root.a"); ok {
		t.Fatal("a non-admin's policy was stored")
	}
	if n := a.admins["SC-1"].Calls("refreshQueues"); n != 0 {
		t.Fatal("a non-admin's refreshQueues reached an RM")
	}
	// Reads are open to everyone.
	if err := mallory.Call(routertest.Ctx(t), "getFederationSubClusters", &yarnpb.GetSubClustersRequestProto{}, &yarnpb.GetSubClustersResponseProto{}); err != nil {
		t.Fatalf("getFederationSubClusters as a non-admin: %v", err)
	}
	if err := a.as("admin").Call(routertest.Ctx(t), "saveFederationQueuePolicy", save, &yarnpb.SaveFederationQueuePolicyResponseProto{}); err != nil {
		t.Fatalf("save as admin: %v", err)
	}
}

// TestAdminQueuePolicies: routeradmin's save, batch save, paged list and
// delete, with the stored bytes exactly those yarnfedctl stores.
func TestAdminQueuePolicies(t *testing.T) {
	a := newAdminFed(t, 2)
	c := a.as("admin")
	if err := c.Call(routertest.Ctx(t), "saveFederationQueuePolicy", &yarnpb.SaveFederationQueuePolicyRequestProto{Queue: proto.String("root.a"),
		FederationQueueWeight: weight("root.a", "SC-1:0.7,SC-2:0.3", "SC-1:0.6,SC-2:0.4", "1.0")}, &yarnpb.SaveFederationQueuePolicyResponseProto{}); err != nil {
		t.Fatal(err)
	}
	// What `yarnfedctl policy save -s` stores for the same string.
	q, err := policies.ParsePolicySaveString("root.a;SC-1:0.7,SC-2:0.3;SC-1:0.6,SC-2:0.4;1.0")
	if err != nil {
		t.Fatal(err)
	}
	want, err := policies.NewDefaultRegistry().QueuePolicyConfig(q, "WeightedLocality", policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := a.Store.Policy("root.a")
	if !ok || got.Type != want.Type || !bytes.Equal(got.Params, want.Params) {
		t.Fatalf("stored %s %s, want %s %s", got.Type, got.Params, want.Type, want.Params)
	}

	// Batch: a bad entry refuses the lot.
	bad := &yarnpb.BatchSaveFederationQueuePoliciesRequestProto{FederationQueueWeights: []*yarnpb.FederationQueueWeightProto{
		weight("root.b", "SC-1:1.0", "SC-1:1.0", "1.0"), weight("root.c", "SC-1:0.5", "SC-1:1.0", "1.0")}}
	if err := c.Call(routertest.Ctx(t), "batchSaveFederationQueuePolicies", bad, &yarnpb.BatchSaveFederationQueuePoliciesResponseProto{}); err == nil {
		t.Fatal("weights summing to 0.5 accepted")
	}
	if _, ok := a.Store.Policy("root.b"); ok {
		t.Fatal("a refused batch wrote root.b")
	}
	// Stock routeradmin sends Hadoop's default manager, which ignores weights.
	uniform := &yarnpb.SaveFederationQueuePolicyRequestProto{Queue: proto.String("root.u"),
		FederationQueueWeight:  weight("root.u", "SC-1:1.0", "SC-1:1.0", "1.0"),
		PolicyManagerClassName: proto.String("org.apache.hadoop.yarn.server.federation.policies.manager.UniformBroadcastPolicyManager")}
	if err := c.Call(routertest.Ctx(t), "saveFederationQueuePolicy", uniform, &yarnpb.SaveFederationQueuePolicyResponseProto{}); err == nil ||
		!strings.Contains(err.Error(), "yarn.federation.policy-manager") {
		t.Fatalf("weights under UniformBroadcast: %v", err)
	}
	batch := &yarnpb.BatchSaveFederationQueuePoliciesRequestProto{}
	for _, qn := range []string{"root.b", "root.c", "root.d", "root.e"} {
		w := weight(qn, "SC-1:0.5,SC-2:0.5", "SC-1:0.5,SC-2:0.5", "0.5")
		w.PolicyManagerClassName = proto.String("org.apache.hadoop.yarn.server.federation.policies.manager.PriorityBroadcastPolicyManager")
		batch.FederationQueueWeights = append(batch.FederationQueueWeights, w)
	}
	if err := c.Call(routertest.Ctx(t), "batchSaveFederationQueuePolicies", batch, &yarnpb.BatchSaveFederationQueuePoliciesResponseProto{}); err != nil {
		t.Fatal(err)
	}

	list := func(req *yarnpb.QueryFederationQueuePoliciesRequestProto) (*yarnpb.QueryFederationQueuePoliciesResponseProto, error) {
		resp := &yarnpb.QueryFederationQueuePoliciesResponseProto{}
		err := a.as("mallory").Call(routertest.Ctx(t), "listFederationQueuePolicies", req, resp)
		return resp, err
	}
	queues := func(r *yarnpb.QueryFederationQueuePoliciesResponseProto) []string {
		var out []string
		for _, w := range r.GetFederationQueueWeights() {
			out = append(out, w.GetQueue())
		}
		return out
	}
	r, err := list(&yarnpb.QueryFederationQueuePoliciesRequestProto{PageSize: proto.Int32(2), CurrentPage: proto.Int32(3)})
	if err != nil || r.GetTotalSize() != 5 || r.GetTotalPage() != 3 || !slices.Equal(queues(r), []string{"root.e"}) {
		t.Fatalf("page 3 of 2: %v %v", r, err)
	}
	r, err = list(&yarnpb.QueryFederationQueuePoliciesRequestProto{PageSize: proto.Int32(2), CurrentPage: proto.Int32(1), Queue: proto.String("root.a")})
	if err != nil || !slices.Equal(queues(r), []string{"root.a"}) || r.GetFederationQueueWeights()[0].GetRouterWeight() == "" ||
		!strings.HasSuffix(r.GetFederationQueueWeights()[0].GetPolicyManagerClassName(), "WeightedLocalityPolicyManager") {
		t.Fatalf("queue filter: %v %v", r, err)
	}
	r, err = list(&yarnpb.QueryFederationQueuePoliciesRequestProto{PageSize: proto.Int32(10), CurrentPage: proto.Int32(1), Queues: []string{"root.d", "root.b", "root.x"}})
	if err != nil || !slices.Equal(queues(r), []string{"root.b", "root.d"}) {
		t.Fatalf("queues filter: %v %v", r, err)
	}
	for _, bad := range []*yarnpb.QueryFederationQueuePoliciesRequestProto{
		{PageSize: proto.Int32(0), CurrentPage: proto.Int32(1)},
		{PageSize: proto.Int32(2), CurrentPage: proto.Int32(0)},
		{PageSize: proto.Int32(2), CurrentPage: proto.Int32(9)},
	} {
		if _, err := list(bad); routertest.RemoteClass(err) != hadoopipc.ClassYarnException {
			t.Errorf("list %v: %v, want YarnException", bad, err)
		}
	}

	if err := c.Call(routertest.Ctx(t), "deleteFederationPoliciesByQueues", &yarnpb.DeleteFederationQueuePoliciesRequestProto{Queues: []string{"root.a", "root.b"}},
		&yarnpb.DeleteFederationQueuePoliciesResponseProto{}); err != nil {
		t.Fatal(err)
	}
	r, err = list(&yarnpb.QueryFederationQueuePoliciesRequestProto{PageSize: proto.Int32(10), CurrentPage: proto.Int32(1)})
	if err != nil || !slices.Equal(queues(r), []string{"root.c", "root.d", "root.e"}) {
		t.Fatalf("after delete: %v %v", r, err)
	}
}

// TestAdminRMCallsFanOut: RM admin calls go to every active sub-cluster,
// or to the one named by sub_cluster_id; node-level calls need the id.
func TestAdminRMCallsFanOut(t *testing.T) {
	a := newAdminFed(t, 2)
	c := a.as("admin")
	if err := c.Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if a.admins["SC-1"].Calls("refreshQueues") != 1 || a.admins["SC-2"].Calls("refreshQueues") != 1 {
		t.Fatal("refreshQueues did not reach every sub-cluster")
	}
	if err := c.Call(routertest.Ctx(t), "refreshNodes", &yarnpb.RefreshNodesRequestProto{SubClusterId: proto.String("SC-2")}, &yarnpb.RefreshNodesResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if a.admins["SC-1"].Calls("refreshNodes") != 0 || a.admins["SC-2"].Calls("refreshNodes") != 1 {
		t.Fatal("refreshNodes for SC-2 went elsewhere")
	}
	if err := c.Call(routertest.Ctx(t), "refreshNodes", &yarnpb.RefreshNodesRequestProto{SubClusterId: proto.String("SC-9")}, &yarnpb.RefreshNodesResponseProto{}); err == nil {
		t.Fatal("refreshNodes for an unknown sub-cluster succeeded")
	}
	if err := c.Call(routertest.Ctx(t), "updateNodeResource", &yarnpb.UpdateNodeResourceRequestProto{}, &yarnpb.UpdateNodeResourceResponseProto{}); err == nil {
		t.Fatal("updateNodeResource without a sub-cluster id was fanned out")
	}
	a.admins["SC-1"].Groups, a.admins["SC-2"].Groups = []string{"a", "b"}, []string{"b", "c"}
	g := &yarnpb.GetGroupsForUserResponseProto{}
	if err := c.Call(routertest.Ctx(t), "getGroupsForUser", &yarnpb.GetGroupsForUserRequestProto{User: proto.String("u")}, g); err != nil ||
		!slices.Equal(g.GetGroups(), []string{"a", "b", "c"}) && !slices.Equal(g.GetGroups(), []string{"b", "c", "a"}) {
		t.Fatalf("groups %v %v", g.GetGroups(), err)
	}
	a.admins["SC-2"].Fail = hadoopipc.Errorf(hadoopipc.ClassYarnException, "boom")
	err := c.Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{})
	if err == nil || !strings.Contains(err.Error(), "SC-2") {
		t.Fatalf("a failing sub-cluster: %v, want an error naming SC-2", err)
	}
	// A named sub-cluster that is not active is refused, as Hadoop's router
	// does, and its RM is not called.
	a.Store.SetState("SC-1", router.StateLost)
	routertest.Poll(t, "the router sees SC-1 lost", func() bool {
		return c.Call(routertest.Ctx(t), "refreshNodes", &yarnpb.RefreshNodesRequestProto{SubClusterId: proto.String("SC-1")}, &yarnpb.RefreshNodesResponseProto{}) != nil
	})
	calls := a.admins["SC-1"].Calls("refreshNodes")
	err = c.Call(routertest.Ctx(t), "refreshNodes", &yarnpb.RefreshNodesRequestProto{SubClusterId: proto.String("SC-1")}, &yarnpb.RefreshNodesResponseProto{})
	if err == nil || !strings.Contains(err.Error(), "subClusterId = SC-1 is not an active subCluster.") || a.admins["SC-1"].Calls("refreshNodes") != calls {
		t.Fatalf("refreshNodes for a lost SC-1: %v, want refused without calling it", err)
	}
}

// TestAdminDeregisterAndList: deregisterSubCluster by id and by expired
// heartbeat, getFederationSubClusters, deleteFederationApplication.
func TestAdminDeregisterAndList(t *testing.T) {
	a := newAdminFed(t, 3)
	old := time.Now().Add(-time.Hour)
	a.Store.Put(router.SubClusterInfo{ID: "SC-3", ClientRMServiceAddress: "fake-SC-3:8032", State: router.StateRunning, LastHeartbeat: old})
	c := a.as("admin")
	resp := &yarnpb.DeregisterSubClusterResponseProto{}
	if err := c.Call(routertest.Ctx(t), "deregisterSubCluster", &yarnpb.DeregisterSubClusterRequestProto{SubClusterId: proto.String("SC-1")}, resp); err != nil {
		t.Fatal(err)
	}
	if d := resp.GetDeregisterSubClusters(); len(d) != 1 || d[0].GetDeregisterState() != "SUCCESS" || d[0].GetSubClusterState() != "SC_LOST" {
		t.Fatalf("deregister SC-1: %v", resp)
	}
	resp = &yarnpb.DeregisterSubClusterResponseProto{}
	if err := c.Call(routertest.Ctx(t), "deregisterSubCluster", &yarnpb.DeregisterSubClusterRequestProto{}, resp); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range resp.GetDeregisterSubClusters() {
		got[d.GetSubClusterId()] = d.GetDeregisterState()
	}
	if got["SC-2"] != "NONE" || got["SC-3"] != "SUCCESS" || len(got) != 2 {
		t.Fatalf("expired deregistration: %v", resp)
	}
	subs := &yarnpb.GetSubClustersResponseProto{}
	if err := c.Call(routertest.Ctx(t), "getFederationSubClusters", &yarnpb.GetSubClustersRequestProto{}, subs); err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range subs.GetSubClusters() {
		states = append(states, s.GetSubClusterId()+"="+s.GetSubClusterState())
	}
	if !slices.Equal(states, []string{"SC-1=SC_LOST", "SC-2=SC_RUNNING", "SC-3=SC_LOST"}) || subs.GetSubClusters()[0].GetLastHeartBeatTime() == "" {
		t.Fatalf("sub-clusters %v", states)
	}

	id := a.NewApp(a.Client)
	if err := a.Submit(a.Client, id); err != nil {
		t.Fatal(err)
	}
	app := yarnid.AppIDString(id)
	if err := c.Call(routertest.Ctx(t), "deleteFederationApplication", &yarnpb.DeleteFederationApplicationRequestProto{Application: proto.String(app)},
		&yarnpb.DeleteFederationApplicationResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Store.Homes()[app]; ok {
		t.Fatal("home row still stored")
	}
}

// TestAdminOverTheWire: the fanned-out RM admin calls dial each
// sub-cluster's RM admin address with Hadoop IPC (a simulated RM here).
func TestAdminOverTheWire(t *testing.T) {
	rm := routertest.StartSim(t, "SC-1", 1_700_000_000_000)
	f := &routertest.Fed{T: t, Store: routertest.NewStore(), RMs: map[router.SubClusterID]*routertest.RM{}}
	a := rm.Addrs()
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: a.Client, RMAdminServiceAddress: a.Admin,
		RMWebServiceAddress: a.Web, State: router.StateRunning})
	f.Router = f.NewRouter(func(c *router.Config) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.Dial = nil // real Hadoop IPC to the RM
		c.AdminListener, c.AdminACL = ln, "admin"
	}, routertest.NewRM("unused", 1))
	ad := &adminFed{Fed: f}
	if err := ad.as("admin").Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{}); err != nil {
		t.Fatalf("refreshQueues through the router to a simulated RM: %v", err)
	}
	// A sub-cluster whose admin address is not listening fails the call,
	// naming it: the call really goes over the wire.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	_ = dead.Close()
	f.Store.Put(router.SubClusterInfo{ID: "SC-1", ClientRMServiceAddress: a.Client, RMAdminServiceAddress: deadAddr,
		RMWebServiceAddress: a.Web, State: router.StateRunning})
	routertest.Poll(t, "refreshQueues to a dead admin address fails", func() bool {
		err := ad.as("admin").Call(routertest.Ctx(t), "refreshQueues", &yarnpb.RefreshQueuesRequestProto{}, &yarnpb.RefreshQueuesResponseProto{})
		return err != nil && strings.Contains(err.Error(), "SC-1")
	})
}
