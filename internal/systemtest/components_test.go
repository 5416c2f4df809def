package systemtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// ---- state store ----

type storeNode struct {
	id                   string
	grpc, raft, httpAddr string
	dir                  string
	p                    *proc
}

type storeCluster struct {
	h     *harness
	nodes []*storeNode
}

// startStore starts n replicas, each with --bootstrap and the same
// --peers, and waits until all of them know the same leader.
// storeTransport returns a replica's extra flags plus --insecure unless
// they configure TLS: plaintext must be asked for (statestore/DESIGN.md
// "Security").
func storeTransport(extra []string) []string {
	if slices.Contains(extra, "--tls-cert") {
		return extra
	}
	return append(append([]string{}, extra...), "--insecure")
}

func (h *harness) startStore(n int, extra ...string) *storeCluster {
	h.t.Helper()
	sc := &storeCluster{h: h}
	h.launch(fmt.Sprintf("%d-replica state store", n), 3*n, 30*time.Second, func(ports []string) []*proc {
		sc.nodes = nil
		var peers []string
		for i := range n {
			nd := &storeNode{id: fmt.Sprintf("ss%d", i+1), grpc: ports[3*i], raft: ports[3*i+1], httpAddr: ports[3*i+2]}
			// A fresh dir per attempt: a half-bootstrapped replica from a
			// failed attempt must not keep old peers.
			nd.dir = dataDir(h, fmt.Sprintf("%s-%s", nd.id, strings.ReplaceAll(nd.raft, ":", "_")))
			sc.nodes = append(sc.nodes, nd)
			peers = append(peers, nd.id+"="+nd.raft)
		}
		var ps []*proc
		for _, nd := range sc.nodes {
			args := []string{"statestore", "--node-id", nd.id, "--data-dir", nd.dir,
				"--grpc-address", nd.grpc, "--raft-address", nd.raft, "--http-address", nd.httpAddr,
				"--bootstrap", "--peers", strings.Join(peers, ","),
				// Short timeouts keep the leader-kill test fast; not so short
				// that a busy 2-core machine flaps leaders.
				"--heartbeat-timeout", "500ms", "--election-timeout", "500ms"}
			nd.p = h.spawn("statestore-"+nd.id, append(args, storeTransport(extra)...)...)
			ps = append(ps, nd.p)
		}
		return ps
	}, sc.agreedLeader)
	return sc
}

func dataDir(h *harness, name string) string { return h.path("data/" + name) }

// readyz returns the leader a replica's /readyz reports ("" if not ready).
func (nd *storeNode) readyz() (leader string, detail string) {
	code, body, err := httpGet("http://" + nd.httpAddr + "/readyz")
	if err != nil {
		return "", fmt.Sprintf("%s: %v", nd.id, err)
	}
	if code != 200 {
		return "", fmt.Sprintf("%s: %d %s", nd.id, code, body)
	}
	for _, f := range strings.Fields(body) {
		if v, ok := strings.CutPrefix(f, "leader="); ok {
			return v, body
		}
	}
	return "", fmt.Sprintf("%s: no leader in %q", nd.id, body)
}

// agreedLeader reports whether every running replica is ready and names the
// same leader.
func (sc *storeCluster) agreedLeader() (bool, string) {
	leader := ""
	for _, nd := range sc.nodes {
		if dead, _ := nd.p.Exited(); dead {
			continue
		}
		l, detail := nd.readyz()
		if l == "" {
			return false, detail
		}
		if leader != "" && l != leader {
			return false, fmt.Sprintf("replicas disagree: %s and %s", leader, l)
		}
		leader = l
	}
	if leader == "" {
		return false, "no replica running"
	}
	// Right after a SIGKILL the survivors still name the dead leader
	// until their heartbeat timeout passes.
	for _, nd := range sc.nodes {
		if nd.id == leader {
			if dead, _ := nd.p.Exited(); dead {
				return false, "replicas still name the killed leader " + leader
			}
		}
	}
	return true, "leader " + leader
}

// leader waits until the running replicas agree on a leader and returns it.
func (sc *storeCluster) leader(t *testing.T) *storeNode {
	t.Helper()
	waitFor(t, 20*time.Second, "an agreed state store leader", sc.agreedLeader)
	for _, nd := range sc.nodes {
		if dead, _ := nd.p.Exited(); dead {
			continue
		}
		id, _ := nd.readyz()
		for _, l := range sc.nodes {
			if l.id == id {
				return l
			}
		}
		t.Fatalf("leader %q is not one of our replicas", id)
	}
	t.Fatal("no replica running")
	return nil
}

// addrsFirst lists every replica's gRPC address, first's first (clients
// start with the first address, and keep their watch stream there).
func (sc *storeCluster) addrsFirst(first *storeNode) string {
	a := []string{first.grpc}
	for _, nd := range sc.nodes {
		if nd != first {
			a = append(a, nd.grpc)
		}
	}
	return strings.Join(a, ",")
}

func (sc *storeCluster) addrs() string {
	var a []string
	for _, nd := range sc.nodes {
		a = append(a, nd.grpc)
	}
	return strings.Join(a, ",")
}

// client returns a state store client over the given replicas (all when
// none), without the watch cache so every read asks a replica.
func (sc *storeCluster) client(t *testing.T, nodes ...*storeNode) *client.Client {
	t.Helper()
	if len(nodes) == 0 {
		nodes = sc.nodes
	}
	var addrs []string
	for _, nd := range nodes {
		addrs = append(addrs, nd.grpc)
	}
	c, err := client.New(client.Config{Addrs: addrs, DisableCache: true, CallTimeout: 2 * time.Second, RetryTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// allHomes lists every application home, following pages.
func allHomes(ctx context.Context, c *client.Client, opts ...client.ReadOption) (map[string]string, error) {
	out := map[string]string{}
	var token []byte
	for {
		page, next, err := c.ListApplicationHomes(ctx, client.ListQuery{PageToken: token}, opts...)
		if err != nil {
			return nil, err
		}
		for _, h := range page {
			if _, dup := out[h.GetApplicationId()]; dup {
				return nil, fmt.Errorf("application %s listed twice", h.GetApplicationId())
			}
			out[h.GetApplicationId()] = h.GetHomeSubClusterId()
		}
		if len(next) == 0 {
			return out, nil
		}
		token = next
	}
}

// ---- simrm and its agent ----

type simRM struct {
	id                        string
	client, sched, admin, web string
	p                         *proc
	agent                     *proc
}

const simNodes = 4

// startSimRM starts `yarnfed simrm` with its four ports; ts must differ
// between sub-clusters (application ids embed it).
func (h *harness) startSimRM(id string, ts int64, extra ...string) *simRM {
	h.t.Helper()
	rm := &simRM{id: id}
	name := "simrm-" + id
	standby := slices.Contains(extra, "--standby")
	if standby {
		name += "-standby"
	}
	h.launch(name, 4, 20*time.Second, func(ports []string) []*proc {
		rm.client, rm.sched, rm.admin, rm.web = ports[0], ports[1], ports[2], ports[3]
		args := append([]string{"simrm", "--cluster-id", id, "--cluster-timestamp", fmt.Sprint(ts),
			"--client-address", rm.client, "--scheduler-address", rm.sched, "--admin-address", rm.admin, "--webapp-address", rm.web,
			"--nodes", fmt.Sprint(simNodes), "--sim-am-container-runtime", "1h", "--queues", "default:50,etl:50"}, extra...)
		rm.p = h.spawn(name, args...)
		return []*proc{rm.p}
	}, func() (bool, string) {
		code, body, err := httpGet("http://" + rm.web + "/ws/v1/cluster/info")
		// A standby serves /info (TestStandbyRMServesClusterInfo checks
		// that); a 503 StandbyException from one still proves it is up.
		up := code == 200 || (standby && code == 503 && strings.Contains(body, "StandbyException"))
		return err == nil && up, fmt.Sprintf("%d %s %v", code, body, err)
	})
	return rm
}

// startAgent starts the sub-cluster agent of rm and waits until the store
// shows the sub-cluster RUNNING at rm's address.
// More RMs (an HA pair) may follow; rm is the one expected active.
func (h *harness) startAgent(rm *simRM, st *storeCluster, standbys ...*simRM) {
	h.t.Helper()
	args := []string{"subcluster-agent", "--subcluster-id", rm.id, "--store", st.addrs(), "--store-insecure",
		"--probe-interval", "200ms", "--probe-timeout", "1s", "--heartbeat-interval", "1s"}
	for _, r := range append([]*simRM{rm}, standbys...) {
		args = append(args, "--rm", fmt.Sprintf("clientrm=%s,amrm=%s,admin=%s,web=%s", r.client, r.sched, r.admin, r.web))
	}
	rm.agent = h.spawn("agent-"+rm.id, args...)
	h.waitSubCluster(st, rm, pb.SubClusterState_SC_RUNNING)
}

// waitSubCluster waits until the store shows rm's sub-cluster in state.
func (h *harness) waitSubCluster(st *storeCluster, rm *simRM, state pb.SubClusterState) {
	h.t.Helper()
	c := st.client(h.t)
	waitFor(h.t, 20*time.Second, fmt.Sprintf("%s %v in the store", rm.id, state), func() (bool, string) {
		if rm.agent != nil {
			if dead, err := rm.agent.Exited(); dead {
				h.t.Fatalf("agent of %s exited: %v", rm.id, err)
			}
		}
		info, err := c.GetSubCluster(ctxT(h.t, 3*time.Second), rm.id)
		if err != nil {
			return false, err.Error()
		}
		return info.GetState() == state && info.GetClientRmServiceAddress() == rm.client,
			fmt.Sprintf("%s at %s, last heartbeat %s", info.GetState(), info.GetClientRmServiceAddress(), time.UnixMilli(info.GetLastHeartbeatMs()).Format(time.RFC3339Nano))
	})
}

// ---- router ----

type routerProc struct {
	name     string
	clientrm string
	web      string
	p        *proc
}

// startRouter starts `yarnfed router` over the store and waits for /readyz
// (membership read, a routable sub-cluster).
func (h *harness) startRouter(name string, st *storeCluster, extra ...string) *routerProc {
	h.t.Helper()
	r := &routerProc{name: name}
	h.launch("router "+name, 2, 20*time.Second, func(ports []string) []*proc {
		r.clientrm, r.web = ports[0], ports[1]
		args := append([]string{"router", "--store", st.addrs(), "--store-insecure", "--clientrm-address", r.clientrm, "--web-address", r.web, "--admin-address", "",
			"--membership-refresh", "200ms", "--failover-wait", "3s", "--call-timeout", "5s"}, extra...)
		r.p = h.spawn(name, args...)
		return []*proc{r.p}
	}, r.ready)
	return r
}

func (r *routerProc) ready() (bool, string) {
	code, body, err := httpGet("http://" + r.web + "/readyz")
	return err == nil && code == 200, fmt.Sprintf("%d %s %v", code, body, err)
}

// restartRouter SIGKILLs nothing: the caller killed it. It starts the same
// command line again (same ports) and waits for /readyz.
func (h *harness) restartRouter(r *routerProc) {
	h.t.Helper()
	h.restart(r.p)
	waitFor(h.t, 20*time.Second, r.name+" ready after restart", func() (bool, string) {
		if dead, err := r.p.Exited(); dead {
			h.t.Fatalf("%s exited after restart: %v", r.name, err)
		}
		return r.ready()
	})
}

// ---- YARN client ----

// yarnClient speaks ApplicationClientProtocol over Hadoop IPC, as a YARN
// client configured with addr as its RM would.
type yarnClient struct {
	t *testing.T
	c *hadoopipc.Client
}

func dialYARN(t *testing.T, addr string, opts ...func(*hadoopipc.ClientConfig)) *yarnClient {
	t.Helper()
	cfg := hadoopipc.ClientConfig{Addresses: []string{addr}, Protocol: hadoopipc.ProtocolApplicationClient,
		User: "alice", DialTimeout: 2 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := hadoopipc.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &yarnClient{t: t, c: c}
}

// noRetry makes every failure visible to the test: no retry of a call
// whose connection broke after it was sent, and no reconnect loop, so the
// test itself plays the retrying client.
func noRetry(c *hadoopipc.ClientConfig) {
	c.NoRetryAfterSend = true
	c.FailoverAttempts = 1
}

func (y *yarnClient) call(method string, req, resp proto.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return y.c.Call(ctx, method, req, resp)
}

func (y *yarnClient) newApp() (*yarnpb.ApplicationIdProto, error) {
	resp := &yarnpb.GetNewApplicationResponseProto{}
	if err := y.call("getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, resp); err != nil {
		return nil, err
	}
	return resp.GetApplicationId(), nil
}

func (y *yarnClient) submit(id *yarnpb.ApplicationIdProto) error {
	return y.submitTo(id, "default")
}

func (y *yarnClient) submitTo(id *yarnpb.ApplicationIdProto, queue string) error {
	return y.call("submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("systemtest"), Queue: proto.String(queue),
	}}, &yarnpb.SubmitApplicationResponseProto{})
}

func (y *yarnClient) report(id *yarnpb.ApplicationIdProto) (*yarnpb.ApplicationReportProto, error) {
	resp := &yarnpb.GetApplicationReportResponseProto{}
	err := y.call("getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, resp)
	return resp.GetApplicationReport(), err
}

// apps returns getApplications as id -> number of times listed.
func (y *yarnClient) apps() (map[string]int, error) {
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := y.call("getApplications", &yarnpb.GetApplicationsRequestProto{}, resp); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, a := range resp.GetApplications() {
		out[appID(a.GetApplicationId())]++
	}
	return out, nil
}

func (y *yarnClient) nodeManagers() (int32, error) {
	resp := &yarnpb.GetClusterMetricsResponseProto{}
	err := y.call("getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, resp)
	return resp.GetClusterMetrics().GetNumNodeManagers(), err
}

// submitNew gets a new application id and submits it, failing the test on
// error.
func (y *yarnClient) submitNew() *yarnpb.ApplicationIdProto {
	y.t.Helper()
	id, err := y.newApp()
	if err != nil {
		y.t.Fatalf("getNewApplication: %v", err)
	}
	if err := y.submit(id); err != nil {
		y.t.Fatalf("submitApplication %s: %v", appID(id), err)
	}
	return id
}

// appID is Hadoop's text form of an application id.
func appID(id *yarnpb.ApplicationIdProto) string {
	return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}
