package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/uam"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/policies"
)

// fakeAMRMSecrets stands in for the SASL relay in tests: it knows the
// AMRMTokens the test's simulated RMs issued (the test registers each one)
// and verifies AM logins with them. Production relays the login instead.
type fakeAMRMSecrets struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (f *fakeAMRMSecrets) add(t *commonpb.TokenProto) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string][]byte{}
	}
	f.m[string(t.GetIdentifier())] = t.GetPassword()
}

func (f *fakeAMRMSecrets) password(id []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pw, ok := f.m[string(id)]
	if !ok {
		return nil, errors.New("fake: unknown AMRMToken")
	}
	return pw, nil
}

func (f *fakeAMRMSecrets) RetrievePassword(id []byte) ([]byte, string, error) {
	pw, err := f.password(id)
	if err != nil {
		return nil, "", err
	}
	at, _, err := ParseAMRMTokenIdentifier(id)
	if err != nil {
		return nil, "", err
	}
	return pw, at.String(), nil
}

// fakeStore is an in-memory Store (membership rows and queue policies) for
// tests; the real statestore client is wired in cmd/yarnfed's tests.
type fakeStore struct {
	mu       sync.Mutex
	rows     map[string]SubCluster
	policies map[string]policies.PolicyConfig
	// submissions are the contexts a router stored beside homes.
	submissions map[string]*yarnpb.ApplicationSubmissionContextProto
}

func (s *fakeStore) Submission(_ context.Context, appID string) (*yarnpb.ApplicationSubmissionContextProto, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.submissions[appID], nil
}

func (s *fakeStore) SubClusters(context.Context) ([]SubCluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SubCluster, 0, len(s.rows))
	for _, r := range s.rows {
		out = append(out, r)
	}
	return out, nil
}

func (s *fakeStore) PolicyConfig(_ context.Context, queue string) (policies.PolicyConfig, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[queue]
	return p, ok, nil
}

func (s *fakeStore) set(sc SubCluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[sc.ID] = sc
}

// fed is a test federation: an in-memory store, n simulated RMs
// SC-1..SC-n (SC-1 is the proxy's home), and the proxy.
type fed struct {
	t       testing.TB
	rms     map[string]*simrm.RM
	ids     []string
	store   *fakeStore
	secrets *fakeAMRMSecrets
	dir     string
	proxy   *Proxy
	cancel  context.CancelFunc
	done    chan error
	mutate  func(*Config)
	// oldEpochs maps epochs of restarted RMs to their sub-cluster.
	oldEpochs map[int64]string
	registry  *fakeUAMRegistry // nil: proxies run without a UAM registry
}

func newFed(t testing.TB, n int, policyType string, params []byte, mutate func(*Config)) *fed {
	return newFedRMs(t, n, policyType, params, mutate, nil, nil)
}

// newFedRMs is newFed with a hook on each RM's config and a UAM registry
// (nil: none) for every proxy.
func newFedRMs(t testing.TB, n int, policyType string, params []byte, mutate func(*Config), rmMutate func(id string, c *simrm.Config), reg *fakeUAMRegistry) *fed {
	t.Helper()
	f := &fed{t: t, rms: map[string]*simrm.RM{}, secrets: &fakeAMRMSecrets{}, dir: t.TempDir(), mutate: mutate, registry: reg}
	f.store = &fakeStore{rows: map[string]SubCluster{}, policies: map[string]policies.PolicyConfig{}}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("SC-%d", i)
		rm := simrmtest.Start(t, id, func(c *simrm.Config) {
			c.HostPrefix = fmt.Sprintf("sc%d-node-", i)
			c.Nodes = 4
			if rmMutate != nil {
				rmMutate(id, c)
			}
		})
		f.rms[id] = rm
		f.ids = append(f.ids, id)
		f.register(id, rm)
	}
	if policyType != "" {
		f.store.policies["default"] = policies.PolicyConfig{Queue: "default", Type: policyType, Params: params}
	}
	f.start()
	return f
}

func (f *fed) register(id string, rm *simrm.RM) {
	f.t.Helper()
	a := rm.Addrs()
	f.store.set(SubCluster{ID: id, AMRMServiceAddress: a.Scheduler, ClientRMServiceAddress: a.Client, State: policies.StateRunning,
		LastHeartbeat: time.Now(), Capability: `{"clusterMetrics":{"availableMB":32768,"activeNodes":4}}`})
}

func (f *fed) start() {
	f.t.Helper()
	p, cancel, done := f.open(f.dir)
	f.proxy, f.cancel, f.done = p, cancel, done
	f.t.Cleanup(f.stop)
}

// open starts a proxy of this federation on data dir dir (the home is
// SC-1; a second proxy models another NodeManager host of SC-1).
func (f *fed) open(dir string) (*Proxy, context.CancelFunc, chan error) {
	f.t.Helper()
	cfg := DefaultConfig()
	cfg.SubClusterID = "SC-1"
	cfg.AMRMAddress, cfg.WebAddress = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.Store = f.store
	if f.registry != nil {
		cfg.Registry = f.registry
	}
	cfg.Secrets = f.secrets
	cfg.Passwords = f.secrets.password
	cfg.SecondaryWait = Duration(2 * time.Second)
	cfg.MembershipRefresh = Duration(50 * time.Millisecond)
	reg := prometheus.NewRegistry()
	cfg.Registerer, cfg.Gatherer = reg, reg
	if f.mutate != nil {
		f.mutate(&cfg)
	}
	p, err := Open(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := p.RefreshNow(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, cancel, done
}

// secondProxy starts another proxy of the federation (its own data dir),
// stopped at the end of the test.
func (f *fed) secondProxy() *Proxy {
	f.t.Helper()
	p, cancel, done := f.open(f.t.TempDir())
	f.t.Cleanup(func() { cancel(); <-done })
	return p
}

func (f *fed) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
	f.cancel = nil
}

func (f *fed) restart() {
	f.stop()
	f.start()
}

// newApp submits an application to the home as user and returns its
// AMRMToken: the test AM is an unmanaged AM on the home, which gets its
// token the way a real AM does not, but holds the same kind of token.
func (f *fed) newApp(user string) (*yarnpb.ApplicationIdProto, *commonpb.TokenProto) {
	f.t.Helper()
	c, id := f.newAppAtHome(user)
	defer c.Close()
	tok, err := uam.Launch(context.Background(), c, uam.Spec{App: id, Queue: "default", Name: "test-am", Timeout: 10 * time.Second})
	if err != nil {
		f.t.Fatal(err)
	}
	f.secrets.add(tok)
	return id, tok
}

// newAppAtHome asks the home RM (SC-1) for a new application id as user,
// over a ClientRM connection the caller closes.
func (f *fed) newAppAtHome(user string) (*hadoopipc.Client, *yarnpb.ApplicationIdProto) {
	f.t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.rms["SC-1"].Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: user})
	if err != nil {
		f.t.Fatal(err)
	}
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := c.Call(context.Background(), "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		c.Close()
		f.t.Fatal(err)
	}
	return c, na.ApplicationId
}

// testAM drives the proxy as Hadoop's AMRMClient does: it keeps the full
// ask table, and on ApplicationMasterNotRegisteredException re-registers,
// restarts its responseId at 0 and re-sends every ask.
type testAM struct {
	t          testing.TB
	c          *hadoopipc.Client
	reg        *yarnpb.RegisterApplicationMasterRequestProto
	responseID int32
	asks       map[askKey]*yarnpb.ResourceRequestProto
	resendAll  bool
	got        map[containerKey]*yarnpb.ContainerProto
	completed  map[containerKey]*yarnpb.ContainerStatusProto
	nmTokens   map[string]bool
	reRegs     int
	last       *yarnpb.AllocateResponseProto
	// mapReduce: take NM tokens from allocate answers only, as MapReduce's
	// AM (RMContainerAllocator) does, not from the register answer's
	// nm_tokens_from_previous_attempts as AMRMClient does.
	mapReduce bool
}

func (f *fed) newAM(tok *commonpb.TokenProto) *testAM {
	f.t.Helper()
	return f.newAMAt(f.proxy, tok)
}

// newAMAt is an AM pointed at proxy p.
func (f *fed) newAMAt(p *Proxy, tok *commonpb.TokenProto) *testAM {
	f.t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{p.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster,
		Token: tok, FailoverAttempts: 20, FailoverBackoff: 20 * time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return &testAM{t: f.t, c: c, reg: &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("am-host"), RpcPort: proto.Int32(1234), TrackingUrl: proto.String("")},
		asks: map[askKey]*yarnpb.ResourceRequestProto{}, got: map[containerKey]*yarnpb.ContainerProto{}, completed: map[containerKey]*yarnpb.ContainerStatusProto{}, nmTokens: map[string]bool{}}
}

func (am *testAM) register() (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	resp := &yarnpb.RegisterApplicationMasterResponseProto{}
	err := am.c.Call(context.Background(), "registerApplicationMaster", am.reg, resp)
	return resp, err
}

func (am *testAM) mustRegister() *yarnpb.RegisterApplicationMasterResponseProto {
	am.t.Helper()
	r, err := am.register()
	if err != nil {
		am.t.Fatal(err)
	}
	// As AMRMClient: the previous attempts' NM tokens go into the cache.
	for _, n := range r.GetNmTokensFromPreviousAttempts() {
		if !am.mapReduce {
			am.nmTokens[n.GetNodeId().GetHost()] = true
		}
	}
	return r
}

func ask(name string, n int32, mem int64, allocID int64) *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String(name),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(mem), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
		RelaxLocality: proto.Bool(true), AllocationRequestId: proto.Int64(allocID)}
}

// rawAllocate sends one allocate with an explicit responseId.
// loseAnswerWhere heartbeats until an answer satisfies want and drops that
// answer (the AM never sees it), keeping the responseId of those before;
// the test fails with missing if none does within 15 s.
func (am *testAM) loseAnswerWhere(missing string, want func(*yarnpb.AllocateResponseProto) bool) {
	am.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := am.rawAllocate(am.responseID, nil, nil)
		if err != nil {
			am.t.Fatal(err)
		}
		if want(resp) {
			return
		}
		am.responseID = resp.GetResponseId()
		if time.Now().After(deadline) {
			am.t.Fatal(missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (am *testAM) rawAllocate(id int32, asks []*yarnpb.ResourceRequestProto, rel []*yarnpb.ContainerIdProto) (*yarnpb.AllocateResponseProto, error) {
	resp := &yarnpb.AllocateResponseProto{}
	err := am.c.Call(context.Background(), "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(id), Ask: asks, Release: rel, Progress: proto.Float32(0.1)}, resp)
	return resp, err
}

// heartbeat is one AMRMClient heartbeat carrying asks (added to the table)
// and releases.
func (am *testAM) heartbeat(asks []*yarnpb.ResourceRequestProto, rel []*yarnpb.ContainerIdProto) *yarnpb.AllocateResponseProto {
	am.t.Helper()
	for _, a := range asks {
		am.asks[keyOfAsk(a)] = a
	}
	send := asks
	if am.resendAll {
		send = nil
		for _, a := range am.asks {
			send = append(send, a)
		}
		am.resendAll = false
	}
	resp, err := am.rawAllocate(am.responseID, send, rel)
	if remoteClass(err) == hadoopipc.ClassApplicationMasterNotRegistered {
		am.reRegs++
		am.mustRegister()
		am.responseID = 0
		am.resendAll = true
		return am.heartbeat(nil, rel)
	}
	if err != nil {
		am.t.Fatalf("allocate: %v", err)
	}
	am.responseID = resp.GetResponseId()
	for _, c := range resp.AllocatedContainers {
		k := keyOf(c.GetId())
		if _, dup := am.got[k]; dup {
			am.t.Fatalf("container %v delivered twice", k)
		}
		am.got[k] = c
		// As AMRMClient's table: an allocated container satisfies one
		// outstanding ask of its allocation id.
		for key, a := range am.asks {
			if key.allocID == c.GetAllocationRequestId() && key.name == "*" && a.GetNumContainers() > 0 {
				cp := proto.Clone(a).(*yarnpb.ResourceRequestProto)
				cp.NumContainers = proto.Int32(a.GetNumContainers() - 1)
				am.asks[key] = cp
			}
		}
	}
	for _, s := range resp.CompletedContainerStatuses {
		// An RM reports a completion once; an AM counting completions
		// (distributed shell) would count a second report twice.
		k := keyOf(s.GetContainerId())
		if _, dup := am.completed[k]; dup {
			am.t.Fatalf("completion of container %v reported twice", k)
		}
		am.completed[k] = s
	}
	for _, n := range resp.NmTokens {
		am.nmTokens[n.GetNodeId().GetHost()] = true
	}
	am.last = resp
	return resp
}

// until heartbeats until cond holds (or fails the test after 15 s).
func (am *testAM) until(what string, cond func() bool) {
	am.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			am.t.Fatalf("timed out waiting for %s (got %d containers)", what, len(am.got))
		}
		am.heartbeat(nil, nil)
		time.Sleep(10 * time.Millisecond)
	}
}

func (am *testAM) finish() (*yarnpb.FinishApplicationMasterResponseProto, error) {
	resp := &yarnpb.FinishApplicationMasterResponseProto{}
	err := am.c.Call(context.Background(), "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum(), Diagnostics: proto.String("")}, resp)
	return resp, err
}

// bySC counts the AM's live containers per sub-cluster, telling them apart
// by the epoch each RM stamps into its container ids.
func (f *fed) bySC(am *testAM) map[string]int {
	out := map[string]int{}
	for _, c := range am.got {
		if am.completed[keyOf(c.GetId())] != nil {
			continue
		}
		out[f.owner(c.GetId())]++
	}
	return out
}

func (f *fed) owner(c *yarnpb.ContainerIdProto) string {
	epoch := c.GetId() >> 40
	for id, rm := range f.rms {
		if rm.Epoch() == epoch {
			return id
		}
	}
	if id, ok := f.oldEpochs[epoch]; ok {
		return id
	}
	return "?"
}

// restartRM restarts sub-cluster id's RM keeping its state (work-preserving
// recovery: AMs must register again). Its epoch changes, so the old one is
// remembered for owner().
func (f *fed) restartRM(id string) {
	f.t.Helper()
	rm := f.rms[id]
	if f.oldEpochs == nil {
		f.oldEpochs = map[int64]string{}
	}
	f.oldEpochs[rm.Epoch()] = id
	if err := rm.Restart(context.Background(), true); err != nil {
		f.t.Fatal(err)
	}
}

// rmContainers lists the containers app holds on RM sc (via its client
// protocol), running ones only.
func (f *fed) rmApp(sc string, app *yarnpb.ApplicationIdProto) *yarnpb.ApplicationReportProto {
	f.t.Helper()
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.rms[sc].Addrs().Client}, Protocol: hadoopipc.ProtocolApplicationClient, User: "yarnfed"})
	if err != nil {
		f.t.Fatal(err)
	}
	defer c.Close()
	resp := &yarnpb.GetApplicationReportResponseProto{}
	if err := c.Call(context.Background(), "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: app}, resp); err != nil {
		return nil
	}
	return resp.ApplicationReport
}
