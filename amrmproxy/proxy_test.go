package amrmproxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

func TestRegisterOnceDuplicateAndDifferentBody(t *testing.T) {
	f := newFed(t, 1, "", nil, nil)
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	first := am.mustRegister()
	if first.GetQueue() == "" {
		t.Fatalf("register response without queue: %v", first)
	}
	again := am.mustRegister() // the home RM would refuse a second register: this must be the cached answer
	if !proto.Equal(first, again) {
		t.Fatalf("duplicate register: got %v, want cached %v", again, first)
	}
	am.reg = &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("other-host"), RpcPort: proto.Int32(1), TrackingUrl: proto.String("")}
	if _, err := am.register(); remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
		t.Fatalf("register with a different body: %v, want InvalidApplicationMasterRequestException", err)
	}
}

func TestResponseIDRules(t *testing.T) {
	f := newFed(t, 1, "", nil, nil)
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	if _, err := am.rawAllocate(0, nil, nil); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Fatalf("allocate before register: %v", err)
	}
	am.mustRegister()
	r1, err := am.rawAllocate(0, []*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	if err != nil || r1.GetResponseId() != 1 {
		t.Fatalf("first allocate: %v %v", r1, err)
	}
	// A resend of the same id returns the last response unchanged.
	again, err := am.rawAllocate(0, nil, nil)
	if err != nil || !proto.Equal(again, r1) {
		t.Fatalf("resend: %v %v, want %v", again, err, r1)
	}
	// Any other id is refused, naming the expected one.
	_, err = am.rawAllocate(5, nil, nil)
	if n, ok := expectedResponseID(err); !ok || n != 1 {
		t.Fatalf("wrong id: %v (parsed %d %v)", err, n, ok)
	}
	r2, err := am.rawAllocate(1, nil, nil)
	if err != nil || r2.GetResponseId() != 2 {
		t.Fatalf("next allocate: %v %v", r2, err)
	}
}

func TestBroadcastSpansSubClustersAndMerges(t *testing.T) {
	f := newFed(t, 3, "", nil, nil) // default: UniformBroadcast
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
	am.until("2 containers from each of 3 sub-clusters", func() bool {
		by := f.bySC(am)
		return by["SC-1"] == 2 && by["SC-2"] == 2 && by["SC-3"] == 2
	})
	// UAMs run with the home's application id and the app's user.
	for _, sc := range []string{"SC-2", "SC-3"} {
		rep := f.rmApp(sc, app)
		if rep == nil || !rep.GetUnmanagedApplication() || rep.GetUser() != "alice" {
			t.Fatalf("%s: UAM report %v", sc, rep)
		}
	}
	// NM tokens of the secondaries' nodes reach the AM.
	for _, c := range am.got {
		if !am.nmTokens[c.GetNodeId().GetHost()] {
			t.Fatalf("no NM token for node %s of container %v", c.GetNodeId().GetHost(), c.GetId())
		}
	}
	// Headroom is summed: more than any one RM could offer.
	am.heartbeat(nil, nil)
	single := int64(4 * 8192)
	if got := am.last.GetLimit().GetMemory(); got <= single {
		t.Fatalf("headroom %d MB, want the sum over 3 sub-clusters (> %d)", got, single)
	}
	if n := am.last.GetNumClusterNodes(); n != 12 {
		t.Fatalf("numClusterNodes %d, want 12", n)
	}
	// A release goes to the sub-cluster owning the container.
	var victim *yarnpb.ContainerIdProto
	for _, c := range am.got {
		if f.owner(c.GetId()) == "SC-3" {
			victim = c.GetId()
			break
		}
	}
	am.heartbeat(nil, []*yarnpb.ContainerIdProto{victim})
	am.until("the released SC-3 container to complete", func() bool { return am.completed[keyOf(victim)] != nil })
	if n := f.rmApp("SC-3", app).GetAppResource_Usage().GetNumUsedContainers(); n != 1 {
		t.Fatalf("SC-3 still runs %d containers of the app, want 1", n)
	}
	if n := f.rmApp("SC-1", app).GetAppResource_Usage().GetNumUsedContainers(); n != 2 {
		t.Fatalf("home runs %d containers, want 2 (the release must not go there)", n)
	}
	resp, err := am.finish()
	if err != nil || !resp.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", resp, err)
	}
	for _, sc := range []string{"SC-1", "SC-2", "SC-3"} {
		if st := f.rmApp(sc, app).GetYarnApplicationState(); st != yarnpb.YarnApplicationStateProto_FINISHED {
			t.Fatalf("%s: app %v after finish", sc, st)
		}
	}
}

func TestCallsAfterFinishGetTheRMsAnswers(t *testing.T) {
	f := newFed(t, 1, "", nil, nil)
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat(nil, nil)
	if r, err := am.finish(); err != nil || !r.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", r, err)
	}
	if r, err := am.finish(); err != nil || !r.GetIsUnregistered() {
		t.Fatalf("retried finish: %v %v", r, err)
	}
	if _, err := am.rawAllocate(am.responseID, nil, nil); remoteClass(err) != hadoopipc.ClassApplicationAttemptNotFound {
		t.Fatalf("allocate after finish: %v", err)
	}
	if _, err := am.register(); remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
		t.Fatalf("register after finish: %v", err)
	}
}

func TestHomeRMDownIsRetriableForTheAM(t *testing.T) {
	f := newFed(t, 1, "", nil, func(c *Config) { c.DialTimeout = Duration(200 * time.Millisecond) })
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat(nil, nil)
	if err := f.rms["SC-1"].Crash(); err != nil {
		t.Fatal(err)
	}
	// A client that does not retry by itself, to see the class.
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.proxy.AMRMAddr()}, Protocol: hadoopipc.ProtocolApplicationMaster,
		Token: tok, FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	am.c = c
	// AMRMClient's retry policy retries RetriableException, as it retries
	// a dead connection to the RM itself; YarnException would fail the AM.
	if _, err := am.rawAllocate(am.responseID, nil, nil); remoteClass(err) != hadoopipc.ClassRetriable {
		t.Fatalf("allocate with the home RM down: %v, want RetriableException", err)
	}
}

func TestWebHealthReadinessAndMetrics(t *testing.T) {
	f := newFed(t, 2, "", nil, nil)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + f.proxy.WebAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d", code)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d %s", code, body)
	}
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("containers from both", func() bool { return len(f.bySC(am)) == 2 })
	_, body := get("/prom")
	for _, want := range []string{
		`yarnfed_amrmproxy_allocate_seconds_count`,
		`yarnfed_amrmproxy_rm_allocate_seconds_count{subcluster="SC-2"}`,
		`yarnfed_amrmproxy_containers_allocated_total{subcluster="SC-2"} 1`,
		`yarnfed_amrmproxy_uam_launches_total{result="ok",subcluster="SC-2"} 1`,
		`yarnfed_amrmproxy_uams 1`,
		`yarnfed_amrmproxy_attempts 1`,
		`yarnfed_amrmproxy_registers_total 1`,
		`yarnfed_amrmproxy_finishes_total 0`,
		`yarnfed_amrmproxy_resyncs_total 0`,
		`yarnfed_amrmproxy_recoveries_total 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/prom lacks %s", want)
		}
	}
	// Not ready when the home leaves the membership.
	f.store.mu.Lock()
	delete(f.store.rows, "SC-1")
	f.store.mu.Unlock()
	if err := f.proxy.RefreshNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "SC-1") {
		t.Fatalf("/readyz without the home: %d %s", code, body)
	}
}

func TestIdleAttemptsExpire(t *testing.T) {
	f := newFed(t, 2, "", nil, func(c *Config) { c.AttemptExpiry = Duration(time.Hour) })
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0)}, nil)
	am.until("containers from both", func() bool { return len(f.bySC(am)) == 2 })
	f.proxy.expire(time.Now()) // recent: kept
	if recs, _ := f.proxy.state.Load(); len(recs) != 1 {
		t.Fatalf("active attempt dropped: %d records", len(recs))
	}
	f.proxy.expire(time.Now().Add(2 * time.Hour))
	if recs, _ := f.proxy.state.Load(); len(recs) != 0 {
		t.Fatalf("idle attempt kept: %d records", len(recs))
	}
	if _, err := am.rawAllocate(am.responseID, nil, nil); remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Fatalf("allocate of an expired attempt: %v", err)
	}
}

func TestHomeAMRMAddressRotatesOverAnHAList(t *testing.T) {
	f := newFed(t, 1, "", nil, nil)
	row := f.store.rows["SC-1"]
	row.AMRMServiceAddress = "rm1:8030, rm2:8030"
	f.store.set(row)
	if err := f.proxy.RefreshNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 3; i++ {
		a, err := f.proxy.HomeAMRMAddress(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if strings.Join(got, " ") != "rm1:8030 rm2:8030 rm1:8030" {
		t.Fatalf("addresses %v", got)
	}
	if _, err := RelayUser([]byte("junk")); remoteClass(err) != hadoopipc.ClassInvalidToken {
		t.Fatalf("RelayUser of junk: %v", err)
	}
}
