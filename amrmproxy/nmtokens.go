package amrmproxy

import (
	"net"
	"sort"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	storepb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// NM tokens of secondaries (see DESIGN.md, "NM tokens of secondaries").
//
// An RM sends an attempt the NM token of a node once: with the first
// container it allocates there (Hadoop's NMTokenSecretManagerInRM keeps
// the set of nodes per attempt; it forgets it on a master-key roll, a node
// reconnecting, or, for a re-registering keep-containers attempt, only when
// containers are handed over). A UAM is one attempt on its RM for the
// application's whole life, while the AM attempts it serves come and go, so
// a later AM attempt would get containers on nodes whose token only an
// earlier one received. The proxy therefore keeps, per UAM, the latest
// token per node (nmTokenSet, in the UAM's registry row and local state)
// and hands an AM attempt a node's token with the first container of that
// node it gives the attempt, unless the RM's own answer carried it.

// maxNMTokensPerUAM bounds the tokens kept per UAM: the store refuses
// more in one row.
const maxNMTokensPerUAM = storepb.MaxUAMNMTokens

// nodeKey names a node as Hadoop's NodeId does (host:port).
func nodeKey(n *yarnpb.NodeIdProto) string {
	return net.JoinHostPort(n.GetHost(), strconv.Itoa(int(n.GetPort())))
}

// usableNMToken: names a node and holds a token, and fits in a registry
// row. Anything else is not kept (it could not be stored, and no NM
// would take it).
func usableNMToken(t *yarnpb.NMTokenProto) bool {
	return t.GetNodeId().GetHost() != "" && t.GetNodeId().Port != nil && t.GetToken() != nil &&
		proto.Size(t) <= storepb.MaxUAMNMTokenBytes
}

// nmTokenSet is the latest NM token per node of one UAM. Not safe for
// concurrent use (the uamConn's mu guards it).
type nmTokenSet struct {
	byNode map[string]nmTokenEntry
	seq    uint64
}

type nmTokenEntry struct {
	t   *yarnpb.NMTokenProto
	seq uint64 // when it was stored: the oldest goes first beyond the bound
}

// put stores t as the token of its node, replacing an older one (an RM
// always sends a token made with its current key: the latest received is
// the one to use). changed says whether anything differs now; dropped
// counts tokens pushed out beyond maxNMTokensPerUAM.
func (s *nmTokenSet) put(t *yarnpb.NMTokenProto) (changed bool, dropped int) {
	if !usableNMToken(t) {
		return false, 0
	}
	k := nodeKey(t.GetNodeId())
	if old, ok := s.byNode[k]; ok && proto.Equal(old.t, t) {
		return false, 0
	}
	if s.byNode == nil {
		s.byNode = map[string]nmTokenEntry{}
	}
	s.seq++
	s.byNode[k] = nmTokenEntry{t: proto.Clone(t).(*yarnpb.NMTokenProto), seq: s.seq}
	for len(s.byNode) > maxNMTokensPerUAM {
		oldest, at := "", uint64(0)
		for n, e := range s.byNode {
			if oldest == "" || e.seq < at {
				oldest, at = n, e.seq
			}
		}
		delete(s.byNode, oldest)
		dropped++
	}
	return true, dropped
}

// putAll stores every token of ts in order.
func (s *nmTokenSet) putAll(ts []*yarnpb.NMTokenProto) (changed bool, dropped int) {
	for _, t := range ts {
		c, d := s.put(t)
		changed = changed || c
		dropped += d
	}
	return changed, dropped
}

// get is the token of node n (nil: none).
func (s *nmTokenSet) get(n *yarnpb.NodeIdProto) *yarnpb.NMTokenProto {
	return s.byNode[nodeKey(n)].t
}

// list returns the tokens, oldest first (so that loading them again keeps
// the order in which they would be pushed out).
func (s *nmTokenSet) list() []*yarnpb.NMTokenProto {
	es := make([]nmTokenEntry, 0, len(s.byNode))
	for _, e := range s.byNode {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].seq < es[j].seq })
	out := make([]*yarnpb.NMTokenProto, len(es))
	for i, e := range es {
		out[i] = e.t
	}
	return out
}

// marshalNMTokens serializes ts for a registry row or the local state.
func marshalNMTokens(ts []*yarnpb.NMTokenProto) [][]byte {
	if len(ts) == 0 {
		return nil
	}
	out := make([][]byte, len(ts))
	for i, t := range ts {
		out[i] = mustMarshal(t)
	}
	return out
}

// unmarshalNMTokens decodes stored tokens; bad counts those that do not
// decode (skipped).
func unmarshalNMTokens(bs [][]byte) (ts []*yarnpb.NMTokenProto, bad int) {
	for _, b := range bs {
		t := &yarnpb.NMTokenProto{}
		if err := proto.Unmarshal(b, t); err != nil || !usableNMToken(t) {
			bad++
			continue
		}
		ts = append(ts, t)
	}
	return ts, bad
}

// mergeNMTokens combines the tokens of two sources of one UAM (a registry
// row and an attempt this proxy held): for a node both know, the token of
// the later AM attempt wins (it heard from the RM last; a tie goes to
// first). Returned oldest first.
func mergeNMTokens(first []*yarnpb.NMTokenProto, firstAttempt int32, second []*yarnpb.NMTokenProto, secondAttempt int32) []*yarnpb.NMTokenProto {
	older, newer := second, first
	if secondAttempt > firstAttempt {
		older, newer = first, second
	}
	var s nmTokenSet
	s.putAll(older)
	s.putAll(newer)
	return s.list()
}

// learnNMTokens keeps the tokens the secondary sent this UAM. It reports
// whether the set changed (the caller saves it).
func (u *uamConn) learnNMTokens(ts []*yarnpb.NMTokenProto) bool {
	if len(ts) == 0 {
		return false
	}
	u.mu.Lock()
	changed, dropped := u.nm.putAll(ts)
	if changed {
		u.nmGen++
	}
	u.mu.Unlock()
	if dropped > 0 {
		p := u.a.p
		p.metrics.nmTokensDropped.WithLabelValues(u.sc).Add(float64(dropped))
		p.log.Warn("UAM holds NM tokens for more nodes than a registry row keeps; the oldest are dropped", "attempt", u.a.id,
			"subcluster", u.sc, "dropped", dropped, "limit", maxNMTokensPerUAM)
	}
	return changed
}

// nmTokenFor is the UAM's token of node n (nil: none).
func (u *uamConn) nmTokenFor(n *yarnpb.NodeIdProto) *yarnpb.NMTokenProto {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.nm.get(n)
}

// givenKey names a node of a sub-cluster in attempt.nmGiven.
func givenKey(sc string, n *yarnpb.NodeIdProto) string { return sc + "\x00" + nodeKey(n) }

// nmTokenToGive returns the token the AM needs with container c of
// secondary sc, or nil: the attempt was given that node's token already
// (by the RM's own answer or by the proxy), or none is known. Called from
// merge with a.mu held.
func (a *attempt) nmTokenToGive(sc string, c *yarnpb.ContainerProto) *yarnpb.NMTokenProto {
	k := givenKey(sc, c.GetNodeId())
	if a.nmGiven[k] {
		return nil
	}
	u := a.uams[sc]
	var t *yarnpb.NMTokenProto
	if u != nil {
		t = u.nmTokenFor(c.GetNodeId())
	}
	if t == nil {
		a.p.metrics.nmTokensMissing.WithLabelValues(sc).Inc()
		a.p.log.Warn("no NM token known for the node of a secondary's container; the AM may not be able to start it", "attempt", a.id,
			"subcluster", sc, "node", nodeKey(c.GetNodeId()), "container", keyOf(c.GetId()).String())
		return nil
	}
	a.nmGiven[k] = true
	a.p.metrics.nmTokensGiven.WithLabelValues(sc).Inc()
	return t
}
