package amrmproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fakeLossyLink is a fake network path in front of an RM's port: it
// forwards both ways until dropAnswers is set, then swallows what the RM
// sends back. The RM has acted on the call; the proxy never hears its
// answer, as when the proxy is killed while the answer is on its way.
type fakeLossyLink struct {
	ln          net.Listener
	target      string
	dropAnswers atomic.Bool
	dropped     atomic.Int64 // bytes swallowed

	mu    sync.Mutex
	conns []net.Conn
}

func newFakeLossyLink(t *testing.T, target string) *fakeLossyLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLossyLink{ln: ln, target: target}
	go l.serve()
	t.Cleanup(l.close)
	return l
}

func (l *fakeLossyLink) addr() string { return l.ln.Addr().String() }

func (l *fakeLossyLink) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		d, err := net.Dial("tcp", l.target)
		if err != nil {
			c.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, c, d)
		l.mu.Unlock()
		go func() { _, _ = io.Copy(d, c); d.Close() }()
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := d.Read(buf)
				if n > 0 {
					if l.dropAnswers.Load() {
						l.dropped.Add(int64(n))
					} else if _, werr := c.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			c.Close()
		}()
	}
}

func (l *fakeLossyLink) close() {
	l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// sameAMAt is am, with all it knows, reconnected to the current proxy (a
// restarted proxy listens on a new port).
func (f *fed) sameAMAt(am *testAM, tok *commonpb.TokenProto) *testAM {
	f.t.Helper()
	am.c.Close()
	n := f.newAM(tok)
	n.got, n.completed, n.asks, n.responseID, n.nmTokens, n.mapReduce, n.reRegs = am.got, am.completed, am.asks, am.responseID, am.nmTokens, am.mapReduce, am.reRegs
	return n
}

// rmContainerIDs lists the containers sc's RM holds for attempt 1 of app.
func (f *fed) rmContainerIDs(t *testing.T, sc string, app *yarnpb.ApplicationIdProto) []*yarnpb.ContainerIdProto {
	t.Helper()
	var out []*yarnpb.ContainerIdProto
	for _, r := range f.rmContainers(t, sc, app) {
		out = append(out, r.GetContainerId())
	}
	return out
}

// The proxy is killed after an RM acted on its allocate, with the answer
// on its way: the first containers on a node and that node's NM token,
// which the RM counts as sent and never sends to the attempt again (the
// recorded e2e TestAMRMProxyRestart failure: the SC-2 RM logged "output
// error" for the UAM's allocate as the proxy died; after the restart the
// three containers SC-2 allocated on that node came without a token, the AM
// could not start them and the distributed shell FAILED).
//
// After the restart the proxy fetches that answer again (an allocate with
// the id before the one the RM expects returns the RM's last answer
// unchanged), so the AM gets the lost containers (no leak until the RM's
// allocation expiry) and every container it gets, then or later on that
// node, comes with the node's token. Both legs: the UAM on the secondary
// and the home, each RM with one node.
func TestRestartFetchesTheAnswerLostInFlight(t *testing.T) {
	for _, lossy := range []string{"SC-2", "SC-1"} {
		t.Run(lossy, func(t *testing.T) {
			reg := newFakeUAMRegistry()
			f := newFedRMs(t, 2, weightedLocality, weights(lossy), func(c *Config) {
				c.SecondaryWait = Duration(100 * time.Millisecond)
				c.CallTimeout = Duration(3 * time.Second)
			}, func(_ string, c *simrm.Config) { c.Nodes = 1 }, reg)
			link := newFakeLossyLink(t, f.rms[lossy].Addrs().Scheduler)
			row, _ := f.proxy.members.get(lossy)
			row.AMRMServiceAddress = link.addr()
			f.store.set(row)
			if err := f.proxy.RefreshNow(context.Background()); err != nil {
				t.Fatal(err)
			}
			app, tok := f.newApp("alice")
			am := f.newAM(tok)
			am.mapReduce = true // NM tokens from allocate answers only
			am.mustRegister()
			// The RM's answer to the allocate carrying the asks never holds
			// containers (it schedules afterwards), so the next allocate's
			// answer is the one with the first containers and the token.
			am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
			var lost []*yarnpb.ContainerIdProto
			poll(t, lossy+" allocated both containers", func() bool {
				lost = f.rmContainerIDs(t, lossy, app)
				return len(lost) == 2
			})
			if len(am.got) != 0 {
				t.Fatalf("the AM has containers before the lost answer: %v", am.got)
			}
			link.dropAnswers.Store(true)
			if lossy == "SC-1" {
				// The AM's call waits on the home, whose answer never comes:
				// a second connection of the same AM makes it and is cut off
				// by the kill below.
				other := f.newAM(tok)
				go func() { _, _ = other.rawAllocate(am.responseID, nil, nil) }()
			} else {
				am.heartbeat(nil, nil) // its UAM heartbeat's answer is lost
			}
			poll(t, "the RM's answer swallowed", func() bool { return link.dropped.Load() > 0 })

			f.stop() // killed: what it never received is not on disk
			link.dropAnswers.Store(false)
			f.start()
			am = f.sameAMAt(am, tok)

			am.until("two containers from "+lossy, func() bool { return f.bySC(am)[lossy] >= 2 })
			for _, c := range am.got {
				if !am.nmTokens[c.GetNodeId().GetHost()] {
					t.Fatalf("container %s on %s came without the node's NM token: the AM cannot start it", keyOf(c.GetId()), c.GetNodeId().GetHost())
				}
			}
			am.until("the containers of the lost answer", func() bool {
				for _, id := range lost {
					if am.got[keyOf(id)] == nil {
						return false
					}
				}
				return true
			})
			if am.reRegs != 1 {
				t.Fatalf("re-registrations %d, want 1 (the restart)", am.reRegs)
			}
			if n := counterValue(f.proxy.metrics.nmTokensMissing.WithLabelValues("SC-2")); n != 0 {
				t.Fatalf("nm_tokens_missing_total{SC-2} = %v", n)
			}
			if lossy == "SC-2" {
				// The token recovered is saved like any other: a later AM
				// attempt finds it in the registry row.
				if row := reg.row(appKey(app), "SC-2"); len(row.GetNmTokens()) != 1 {
					t.Fatalf("registry row holds %d NM tokens after the restart, want SC-2's node's", len(row.GetNmTokens()))
				}
			}
			if r, err := am.finish(); err != nil || !r.GetIsUnregistered() {
				t.Fatalf("finish: %v %v", r, err)
			}
		})
	}
}

// An answer that brings a node's NM token is not handed to the AM until
// the token is saved (on disk and in the registry row): with the registry
// failing, the SC-2 containers wait, the UAM keeps heartbeating its RM with
// resends of that answer (alive there, its sequence unmoved), and a proxy
// killed meanwhile fetches the same answer again after its restart. Once
// the save succeeds the containers reach the AM with the token, and the
// row holds it; with the AM silent, the membership tick saves it.
func TestAnswerWithNewNMTokensWaitsForTheirSave(t *testing.T) {
	for _, tc := range []struct {
		name          string
		crash, silent bool
	}{
		{"save recovers", false, false},
		{"proxy killed while holding", true, false},
		// The save is retried on the membership tick too: the row gets
		// the token while the AM sends nothing (had it died, a later
		// attempt on another proxy would need it).
		{"AM silent", false, true},
	} {
		crash := tc.crash
		t.Run(tc.name, func(t *testing.T) {
			reg := newFakeUAMRegistry()
			f := newFedRMs(t, 2, weightedLocality, weights("SC-2"), func(c *Config) {
				c.SecondaryWait = Duration(100 * time.Millisecond)
			}, func(_ string, c *simrm.Config) { c.Nodes = 1 }, reg)
			app, tok := f.newApp("alice")
			am := f.newAM(tok)
			am.mapReduce = true
			am.mustRegister()
			am.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 0)}, nil)
			poll(t, "the UAM up", func() bool { r := reg.row(appKey(app), "SC-2"); return r != nil && r.GetRegistered() })
			var first []*yarnpb.ContainerIdProto
			poll(t, "SC-2 allocated both containers", func() bool {
				first = f.rmContainerIDs(t, "SC-2", app)
				return len(first) == 2
			})
			reg.setFailPut(errors.New("fake: store unavailable"))
			a := f.proxyAttempt(t)
			a.mu.Lock()
			u := a.uams["SC-2"]
			a.mu.Unlock()
			poll(t, "SC-2's answer with the containers and the token", func() bool {
				am.heartbeat(nil, nil)
				u.mu.Lock()
				defer u.mu.Unlock()
				return len(u.held) > 0 || f.bySC(am)["SC-2"] > 0
			})
			for i := 0; i < 3; i++ {
				am.heartbeat(nil, nil)
			}
			if n := f.bySC(am)["SC-2"]; n != 0 {
				t.Fatalf("the AM got %d SC-2 containers whose node's NM token is not saved", n)
			}
			if crash {
				f.stop()
			}
			reg.setFailPut(nil)
			if tc.silent {
				poll(t, "the NM token in the registry row, the AM silent", func() bool {
					return len(reg.row(appKey(app), "SC-2").GetNmTokens()) == 1
				})
			}
			if crash {
				f.start()
				am = f.sameAMAt(am, tok)
			}
			// Exactly the held ones: had the UAM moved on while holding, a
			// restarted proxy could fetch only the last answer, and these
			// two would be lost (the AM's re-sent asks would get others).
			am.until("both SC-2 containers", func() bool { return f.bySC(am)["SC-2"] == 2 })
			for _, id := range first {
				if am.got[keyOf(id)] == nil {
					t.Fatalf("SC-2 container %s of the held answer never reached the AM (got %v)", keyOf(id), f.bySC(am))
				}
			}
			for _, c := range am.got {
				if !am.nmTokens[c.GetNodeId().GetHost()] {
					t.Fatalf("container %s on %s came without the node's NM token", keyOf(c.GetId()), c.GetNodeId().GetHost())
				}
			}
			if row := reg.row(appKey(app), "SC-2"); len(row.GetNmTokens()) != 1 {
				t.Fatalf("registry row holds %d NM tokens, want SC-2's node's", len(row.GetNmTokens()))
			}
		})
	}
}

// fakeRulesRM is a fake ApplicationMasterProtocol with Hadoop 3.4's
// responseId rules only (ApplicationMasterService.allocate): the id before
// the last gets the last answer back, any other but the last is refused
// naming the id expected. failReplays fails that many resend calls.
type fakeRulesRM struct {
	last        *yarnpb.AllocateResponseProto
	failReplays int
	sent        []int32
}

func (f *fakeRulesRM) Register(context.Context, *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	f.last = &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0), AllocatedContainers: f.last.GetAllocatedContainers()}
	return &yarnpb.RegisterApplicationMasterResponseProto{}, nil
}

func (f *fakeRulesRM) Allocate(_ context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	f.sent = append(f.sent, req.GetResponseId())
	if nextResponseID(req.GetResponseId()) == f.last.GetResponseId() {
		if f.failReplays > 0 {
			f.failReplays--
			return nil, errors.New("fake: connection reset")
		}
		return f.last, nil
	}
	if req.GetResponseId() != f.last.GetResponseId() {
		return nil, hadoopipc.Errorf(hadoopipc.ClassInvalidApplicationMasterRequest,
			"Invalid responseId in AllocateRequest from application attempt: x, expect responseId to be %d, but get %d", f.last.GetResponseId(), req.GetResponseId())
	}
	f.last = &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(nextResponseID(f.last.GetResponseId()))}
	return f.last, nil
}

func (f *fakeRulesRM) Finish(context.Context, *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
}

// The relayer's recovery: a relayer marked replayLost fetches the RM's
// last answer once, even when that fetch fails the first time (it probes
// again rather than skip it); one not marked, or whose RM expects id 0
// (nothing allocated since the registration: after a re-register Hadoop's
// RM keeps an older answer's content under id 0), replays nothing.
func TestRelayerReplaysTheLastAnswerOnce(t *testing.T) {
	lostAnswer := func() *yarnpb.AllocateResponseProto {
		return &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(3), AllocatedContainers: []*yarnpb.ContainerProto{{Id: &yarnpb.ContainerIdProto{Id: proto.Int64(7)}}}}
	}
	ctx := context.Background()

	rm := &fakeRulesRM{last: lostAnswer(), failReplays: 1}
	r := newRelayer(rm, false)
	r.replayLost()
	if _, replayed, err := r.allocate(ctx, &yarnpb.AllocateRequestProto{}); err == nil || replayed != nil {
		t.Fatalf("failed fetch: %v %v", replayed, err)
	}
	resp, replayed, err := r.allocate(ctx, &yarnpb.AllocateRequestProto{})
	if err != nil || replayed.GetResponseId() != 3 || len(replayed.GetAllocatedContainers()) != 1 || resp.GetResponseId() != 4 {
		t.Fatalf("second call: replayed %v, answer %v, %v (sent %v)", replayed, resp, err, rm.sent)
	}
	if _, replayed, err := r.allocate(ctx, &yarnpb.AllocateRequestProto{}); err != nil || replayed != nil {
		t.Fatalf("replayed twice: %v %v", replayed, err)
	}

	rm = &fakeRulesRM{last: lostAnswer()}
	r = newRelayer(rm, false) // not recovering: probe only
	if resp, replayed, err := r.allocate(ctx, &yarnpb.AllocateRequestProto{}); err != nil || replayed != nil || resp.GetResponseId() != 4 {
		t.Fatalf("without replayLost: replayed %v, answer %v, %v", replayed, resp, err)
	}

	rm = &fakeRulesRM{last: lostAnswer()}
	if _, err := rm.Register(ctx, nil); err != nil { // re-registered: id 0, older content
		t.Fatal(err)
	}
	r = newRelayer(rm, false)
	r.replayLost()
	if resp, replayed, err := r.allocate(ctx, &yarnpb.AllocateRequestProto{}); err != nil || replayed != nil || resp.GetResponseId() != 1 {
		t.Fatalf("after a re-register: replayed %v, answer %v, %v", replayed, resp, err)
	}
}

// What of a fetched-again answer reaches merge: the completion of a
// container the proxy no longer holds was delivered before (distributed
// shell counts completions: a second one would count twice), a container
// allocated and completed in that same answer is dropped whole, and what
// is still live or new passes with the NM tokens (container 1: live here,
// so the AM had its allocation; its completion is news). Containers already
// recorded are dropped by merge itself (TestLostSecondaryContainersAreAbortedOnce).
func TestTrimReplay(t *testing.T) {
	cid := func(n int64) *yarnpb.ContainerIdProto { return &yarnpb.ContainerIdProto{Id: proto.Int64(n)} }
	done := func(n int64) *yarnpb.ContainerStatusProto { return &yarnpb.ContainerStatusProto{ContainerId: cid(n)} }
	a := newAttempt(nil, AttemptID{}, "SC-1")
	a.containers[keyOf(cid(1))] = "SC-2" // live here
	r := &yarnpb.AllocateResponseProto{
		AllocatedContainers:        []*yarnpb.ContainerProto{{Id: cid(1)}, {Id: cid(3)}, {Id: cid(4)}},
		CompletedContainerStatuses: []*yarnpb.ContainerStatusProto{done(1), done(2), done(4)},
		NmTokens:                   []*yarnpb.NMTokenProto{testNMToken("n1", 1, "p")},
		Preempt:                    &yarnpb.PreemptionMessageProto{},
	}
	got := a.trimReplay(r)
	var alloc, compl []int64
	for _, c := range got.GetAllocatedContainers() {
		alloc = append(alloc, c.GetId().GetId())
	}
	for _, s := range got.GetCompletedContainerStatuses() {
		compl = append(compl, s.GetContainerId().GetId())
	}
	if len(alloc) != 1 || alloc[0] != 3 || len(compl) != 1 || compl[0] != 1 || len(got.GetNmTokens()) != 1 || got.Preempt != nil {
		t.Fatalf("trimmed: allocated %v, completed %v, %d NM tokens, preempt %v", alloc, compl, len(got.GetNmTokens()), got.Preempt)
	}
}
