package amrmproxy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/sony/gobreaker/v2"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/amrmproxy/state"
	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmbreaker"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/policies"
)

// unitProxy is a Proxy with what merge and the breakers need, and no RMs.
func unitProxy(t *testing.T) *Proxy {
	t.Helper()
	st, err := state.Open(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := DefaultConfig()
	p := &Proxy{cfg: cfg, log: log, audit: log, state: st, metrics: m,
		members: newMembership(&fakeStore{rows: map[string]SubCluster{}, policies: map[string]policies.PolicyConfig{}}, log)}
	p.brk = newBreakers(cfg.Breaker, func(sc string, to gobreaker.State) { m.breaker.WithLabelValues(sc).Set(rmbreaker.StateValue(to)) })
	return p
}

func res(mb int64, vcores int32) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(vcores)}
}

// Headroom (and node count) is the sum over the home and the secondaries
// that answer, memory and vcores both: a timed-out secondary's last known
// headroom is not offered to the AM.
func TestHeadroomSumsMemoryAndVCoresOfLiveSubClustersOnly(t *testing.T) {
	p := unitProxy(t)
	a := newAttempt(p, AttemptID{ClusterTimestamp: 1, App: 1, Attempt: 1}, "SC-1")
	silent := newUAMConn(a, "SC-2")
	close(silent.ready)
	silent.unansweredSince = time.Now().Add(-2 * p.cfg.SubClusterTimeout.D())
	live := newUAMConn(a, "SC-3")
	close(live.ready)
	a.uams["SC-2"], a.uams["SC-3"] = silent, live
	a.headroom["SC-2"], a.nodes["SC-2"] = res(8192, 8), 4
	a.headroom["SC-3"], a.nodes["SC-3"] = res(2048, 3), 2
	out := a.merge(&yarnpb.AllocateResponseProto{Limit: res(1024, 1), NumClusterNodes: proto.Int32(1)}, 1)
	if got := out.GetLimit(); got.GetMemory() != 3072 || got.GetVirtualCores() != 4 {
		t.Fatalf("headroom %d MB %d vcores, want 3072 MB 4 vcores (home + SC-3; SC-2 timed out)", got.GetMemory(), got.GetVirtualCores())
	}
	if got := out.GetNumClusterNodes(); got != 3 {
		t.Fatalf("nodes %d, want 3", got)
	}
}

// probeHome wraps a HomeConnector so a test can look at the federation at
// the moment the home RM is asked to finish.
type probeHome struct {
	HomeConnector
	beforeFinish func()
}

func (h *probeHome) HomeRM(ctx context.Context, at AttemptID, home SubCluster) (AMRM, error) {
	rm, err := h.HomeConnector.HomeRM(ctx, at, home)
	if err != nil {
		return nil, err
	}
	return probedAMRM{rm, h.beforeFinish}, nil
}

type probedAMRM struct {
	AMRM
	before func()
}

func (r probedAMRM) Finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	r.before()
	return r.AMRM.Finish(ctx, req)
}

// finish unregisters the UAMs before the home: once the home application
// is final its RM kills the AM, and a UAM still registered would be left
// for the RM's liveness expiry.
func TestUAMsUnregisterBeforeTheHomeFinishes(t *testing.T) {
	var mu sync.Mutex
	var f *fed
	var app *yarnpb.ApplicationIdProto
	var atHomeFinish []yarnpb.YarnApplicationStateProto
	probe := &probeHome{beforeFinish: func() {
		mu.Lock()
		defer mu.Unlock()
		atHomeFinish = append(atHomeFinish, f.rmApp("SC-2", app).GetYarnApplicationState())
	}}
	f = newFed(t, 2, "", nil, func(c *Config) {
		c.SecondaryWait = Duration(100 * time.Millisecond)
		probe.HomeConnector = &TokenHomeConnector{Passwords: c.Passwords, DialTimeout: c.DialTimeout.D()}
		c.Home = probe
	})
	var am *testAM
	mu.Lock()
	app, _, am, _ = spanTwo(t, f)
	mu.Unlock()
	if r, err := am.finish(); err != nil || !r.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(atHomeFinish) != 1 || atHomeFinish[0] != yarnpb.YarnApplicationStateProto_FINISHED {
		t.Fatalf("the UAM on SC-2 was %v when the home was asked to finish, want FINISHED", atHomeFinish)
	}
}

// A login an RM refuses (a proxy-user rule refusing one submitter) does
// not open that sub-cluster's breaker, which would take it away from every
// AM on the proxy; an RM that does not answer does.
func TestRefusedLoginDoesNotOpenTheSubClustersBreaker(t *testing.T) {
	p := unitProxy(t)
	refused := &hadoopipc.RemoteError{Fatal: true, Code: commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED,
		Class: "org.apache.hadoop.security.authorize.AuthorizationException", Message: "User: amrmproxy is not allowed to impersonate mallory"}
	for i := 0; i < 10; i++ {
		if err := p.brk.do("SC-2", func() error { return refused }); !errors.As(err, new(*hadoopipc.RemoteError)) {
			t.Fatalf("call %d: %v, want the RM's refusal", i, err)
		}
	}
	if p.brk.open("SC-2") {
		t.Fatal("refused logins opened SC-2's breaker")
	}
	for i := 0; i < int(p.cfg.Breaker.ConsecutiveFailures); i++ {
		_ = p.brk.do("SC-2", func() error { return errors.New("dial tcp: connection refused") })
	}
	if !p.brk.open("SC-2") {
		t.Fatal("an unreachable RM did not open the breaker")
	}
	g := &dto.Metric{}
	_ = p.metrics.breaker.WithLabelValues("SC-2").Write(g)
	if v := g.GetGauge().GetValue(); v != 2 {
		t.Fatalf("breaker_state{SC-2} = %v, want 2 (open)", v)
	}
	if err := p.brk.do("SC-2", func() error { return nil }); !errors.Is(err, ErrSubClusterUnavailable) {
		t.Fatalf("call behind an open breaker: %v", err)
	}
}

// An allocate after finish names the attempt the way the RM does.
func TestAllocateAfterFinishNamesTheAttempt(t *testing.T) {
	f := newFed(t, 1, "", nil, nil)
	app, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	if r, err := am.finish(); err != nil || !r.GetIsUnregistered() {
		t.Fatalf("finish: %v %v", r, err)
	}
	_, err := am.rawAllocate(am.responseID, nil, nil)
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != hadoopipc.ClassApplicationAttemptNotFound {
		t.Fatalf("allocate after finish: %v", err)
	}
	want := "Application attempt " + attemptOf(app, 1).String() + " doesn't exist in ApplicationMasterService cache."
	if re.Message != want {
		t.Fatalf("message %q, want %q", re.Message, want)
	}
	_, err = am.register()
	if !errors.As(err, &re) || re.Message != "Application doesn't exist in cache "+attemptOf(app, 1).String() {
		t.Fatalf("register after finish: %v", err)
	}
	if strings.Contains(err.Error(), "finished:") {
		t.Fatalf("an error text where the id goes: %v", err)
	}
}
