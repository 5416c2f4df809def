package amrmproxy

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	storepb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// An RM sends an attempt a node's NM token once, and a UAM stays attempt
// 1 on its secondary while AM attempts come and go. AM attempt 2 (here an
// AM that reads NM tokens from allocate answers only, as MapReduce's does)
// must still hold a token for the node of every SC-2 container it gets:
//   - live containers at the re-attach: the RM mints their nodes' tokens
//     in the UAM's re-register answer and counts them as sent; MapReduce
//     never reads that answer's tokens (found by e2e
//     TestMapReduceAMFailureThroughProxies: "No NMToken sent for ...");
//   - no live container: the RM keeps the UAM's node set and sends nothing
//     at all; only the earlier attempt's proxy ever saw those tokens.
//
// SC-2 has one node, so every SC-2 container of attempt 2 lands on a node
// the UAM already holds a token for. The tokens come from the UAM registry
// row (another proxy), the superseded attempt (the same proxy), or the
// local state (the same proxy, restarted in between).
func TestNMTokensReachEveryAttempt(t *testing.T) {
	for _, tc := range []struct {
		name                            string
		keep, live, sameProxy, registry bool
		restart                         bool // the proxy restarts before attempt 1 fails
	}{
		{"live SC-2 containers, no keep-containers, another proxy", false, true, false, true, false},
		{"no live SC-2 container, another proxy", false, false, false, true, false},
		{"live SC-2 containers, keep-containers, another proxy", true, true, false, true, false},
		{"no live SC-2 container, the same proxy, no registry", false, false, true, false, false},
		{"no live SC-2 container, the same proxy restarted, no registry", false, false, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, reg := reattachFed(t, tc.registry, func(id string, c *simrm.Config) {
				if id == "SC-2" {
					c.Nodes = 1
				}
			})
			app, am1 := f.attemptOneOnSC2(tc.keep, true)
			var sc2 []*yarnpb.ContainerIdProto
			for _, c := range am1.got {
				if f.owner(c.GetId()) == "SC-2" {
					if !am1.nmTokens[c.GetNodeId().GetHost()] {
						t.Fatalf("attempt 1 got no NM token for SC-2 node %s", c.GetNodeId().GetHost())
					}
					sc2 = append(sc2, c.GetId())
				}
			}
			if reg != nil {
				if row := reg.row(appKey(app), "SC-2"); len(row.GetNmTokens()) != 1 {
					t.Fatalf("registry row holds %d NM tokens, want the one of SC-2's node", len(row.GetNmTokens()))
				}
			}
			if !tc.live {
				am1.heartbeat(nil, sc2)
				poll(t, "attempt 1's SC-2 containers released", func() bool {
					am1.heartbeat(nil, nil)
					return f.rmContainerDone(t, "SC-2", app, sc2[0]) && f.rmContainerDone(t, "SC-2", app, sc2[1])
				})
			}
			if tc.restart {
				f.restart()
			}
			f.failAttemptOne(app)
			p2 := f.proxy
			if !tc.sameProxy {
				p2 = f.secondProxy()
			}
			am2 := f.newAMAt(p2, f.amToken(app, 2))
			am2.mapReduce = true
			am2.mustRegister()
			am2.heartbeat([]*yarnpb.ResourceRequestProto{ask("*", 2, 1024, 1)}, nil)
			am2.until("two new containers on SC-2", func() bool { return f.bySC(am2)["SC-2"] == 2 })
			for _, c := range am2.got {
				if f.owner(c.GetId()) == "SC-2" && !am2.nmTokens[c.GetNodeId().GetHost()] {
					t.Fatalf("attempt 2 got SC-2 container %v on %s without an NM token for that node: it could not start it", c.GetId(), c.GetNodeId().GetHost())
				}
			}
			if reg != nil {
				// The row still holds the node's token (the re-attach wrote
				// it for this proxy and attempt), and heartbeats that bring
				// no new token write nothing.
				if row := reg.row(appKey(app), "SC-2"); len(row.GetNmTokens()) != 1 || row.GetAmAttemptId() != attemptOf(app, 2).String() {
					t.Fatalf("registry row after the re-attach: %d NM tokens, attempt %s", len(row.GetNmTokens()), row.GetAmAttemptId())
				}
				puts := reg.putCount()
				for i := 0; i < 5; i++ {
					am2.heartbeat(nil, nil)
				}
				if n := reg.putCount() - puts; n != 0 {
					t.Fatalf("%d registry writes in 5 heartbeats without a new NM token", n)
				}
			}
			if given, missing := counterValue(p2.metrics.nmTokensGiven.WithLabelValues("SC-2")), counterValue(p2.metrics.nmTokensMissing.WithLabelValues("SC-2")); given != 1 || missing != 0 {
				t.Fatalf("nm_tokens_given_total %v (want 1: one node, once per attempt), nm_tokens_missing_total %v", given, missing)
			}
			if r, err := am2.finish(); err != nil || !r.GetIsUnregistered() {
				t.Fatalf("finish: %v %v", r, err)
			}
		})
	}
}

func testNMToken(host string, port int32, password string) *yarnpb.NMTokenProto {
	return &yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)},
		Token: &commonpb.TokenProto{Identifier: []byte("id-" + host), Password: []byte(password), Kind: proto.String("NMToken"),
			Service: proto.String(fmt.Sprintf("%s:%d", host, port))}}
}

// The per-UAM token set: the latest token per node (host and port) wins,
// an identical one changes nothing (no write), tokens a registry row could
// not hold are not kept, the oldest go beyond the row's bound, and of two
// sources the later AM attempt's token wins.
func TestNMTokenSet(t *testing.T) {
	var s nmTokenSet
	if c, _ := s.put(testNMToken("n1", 1, "a")); !c {
		t.Fatal("first token: no change")
	}
	if c, _ := s.put(testNMToken("n1", 1, "a")); c {
		t.Fatal("the same token again counted as a change")
	}
	if c, _ := s.put(testNMToken("n1", 1, "b")); !c || string(s.get(testNMToken("n1", 1, "").GetNodeId()).GetToken().GetPassword()) != "b" {
		t.Fatal("a newer token did not replace the old one")
	}
	s.put(testNMToken("n1", 2, "c"))
	if len(s.list()) != 2 {
		t.Fatalf("host:port names a node: %d tokens", len(s.list()))
	}
	big := testNMToken("n9", 1, string(make([]byte, storepb.MaxUAMNMTokenBytes)))
	noNode := testNMToken("", 1, "x")
	if c, _ := s.putAll([]*yarnpb.NMTokenProto{big, noNode}); c || len(s.list()) != 2 {
		t.Fatal("kept a token a registry row refuses")
	}

	var b nmTokenSet
	dropped := 0
	for i := 0; i <= maxNMTokensPerUAM; i++ {
		_, d := b.put(testNMToken(fmt.Sprintf("h%d", i), 1, "p"))
		dropped += d
	}
	if dropped != 1 || len(b.list()) != maxNMTokensPerUAM || b.get(testNMToken("h0", 1, "").GetNodeId()) != nil {
		t.Fatalf("beyond the bound: dropped %d, kept %d, oldest kept %v", dropped, len(b.list()), b.get(testNMToken("h0", 1, "").GetNodeId()) != nil)
	}
	if got := b.list()[0].GetNodeId().GetHost(); got != "h1" {
		t.Fatalf("list is not oldest first: %s", got)
	}

	older := []*yarnpb.NMTokenProto{testNMToken("n1", 1, "old"), testNMToken("n2", 1, "only-old")}
	newer := []*yarnpb.NMTokenProto{testNMToken("n1", 1, "new")}
	for _, m := range [][]*yarnpb.NMTokenProto{mergeNMTokens(older, 1, newer, 2), mergeNMTokens(newer, 2, older, 1)} {
		var got nmTokenSet
		got.putAll(m)
		if len(m) != 2 || string(got.get(older[0].GetNodeId()).GetToken().GetPassword()) != "new" || got.get(older[1].GetNodeId()) == nil {
			t.Fatalf("merge: %v", m)
		}
	}
}
