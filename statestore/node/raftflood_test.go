package node

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/security"
)

// silentFlood holds perTarget silent TCP connections to each target from
// srcIP, as an attacker without a certificate would: it sends nothing and
// reopens every connection the server closes (after pause).
type silentFlood struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	dials  atomic.Int64
}

func startSilentFlood(targets []string, srcIP string, perTarget int, pause time.Duration) *silentFlood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &silentFlood{cancel: cancel, conns: map[net.Conn]bool{}}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(srcIP)}, Timeout: time.Second}
	for _, target := range targets {
		for range perTarget {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				buf := make([]byte, 1)
				for ctx.Err() == nil {
					c, err := d.DialContext(ctx, "tcp", target)
					if err != nil { // the replica is down: try again shortly
						select {
						case <-ctx.Done():
						case <-time.After(10 * time.Millisecond):
						}
						continue
					}
					f.dials.Add(1)
					f.mu.Lock()
					f.conns[c] = true
					f.mu.Unlock()
					if ctx.Err() != nil {
						c.Close()
					}
					_, _ = c.Read(buf) // until the server closes it
					c.Close()
					f.mu.Lock()
					delete(f.conns, c)
					f.mu.Unlock()
					if pause > 0 {
						select {
						case <-ctx.Done():
						case <-time.After(pause):
						}
					}
				}
			}()
		}
	}
	return f
}

func (f *silentFlood) stop() {
	f.cancel()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// floodResult is one run of the leader-kill-under-flood scenario.
type floodResult struct {
	election, rejoin time.Duration // -1: not within the limit
	evicted          float64       // handshakes evicted on the survivors
}

// runRaftFlood starts three TLS replicas (1 s heartbeat and election
// timeouts, the defaults), floods every Raft port with perReplica silent
// connections from srcIP, kills the leader (Close: no hand-over), and
// measures how long the survivors take to elect a leader; then restarts
// the killed replica, flood still running, and measures until it follows
// the leader and has applied what the leader had. Each wait gives up
// after limit.
func runRaftFlood(t testing.TB, lim *security.HandshakeLimits, srcIP string, perReplica int, limit time.Duration) floodResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*limit+time.Minute)
	defer cancel()
	p := newPKI(t)
	ids := []string{"r1", "r2", "r3"}
	cfgs := map[string]Config{}
	var peers, raftAddrs []string
	regs := map[string]*prometheus.Registry{}
	for _, id := range ids {
		cfg := tlsConfig(t, p, id)
		cfg.HeartbeatTimeout, cfg.ElectionTimeout = config.Duration(time.Second), config.Duration(time.Second)
		cfg.Bootstrap = true
		cfg.raftLimits = lim
		regs[id] = prometheus.NewRegistry()
		cfg.Registerer = regs[id]
		cfgs[id] = cfg
		peers = append(peers, id+"="+cfg.RaftAddress)
		raftAddrs = append(raftAddrs, cfg.RaftAddress)
	}
	nodes := map[string]*Node{}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	for _, id := range ids {
		cfg := cfgs[id]
		cfg.Peers = peers
		cfgs[id] = cfg
		n, err := Start(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
	}
	leaderOf := func(among []string) string {
		for _, id := range among {
			if n := nodes[id]; n != nil && n.Store.IsLeader() {
				return id
			}
		}
		return ""
	}
	waitFor := func(cond func() bool) time.Duration {
		start := time.Now()
		for !cond() {
			if time.Since(start) > limit {
				return -1
			}
			time.Sleep(10 * time.Millisecond)
		}
		return time.Since(start)
	}
	if waitFor(func() bool { return leaderOf(ids) != "" }) < 0 {
		t.Fatal("no leader before the flood")
	}
	// Every replica has learned the configuration (the peer pool).
	time.Sleep(3 * time.Second)

	flood := startSilentFlood(raftAddrs, srcIP, perReplica, 0)
	defer flood.stop()
	if waitFor(func() bool { return flood.dials.Load() >= int64(len(ids)*perReplica) }) < 0 {
		t.Fatal("the flood did not connect")
	}

	old := leaderOf(ids)
	nodes[old].Close()
	delete(nodes, old)
	var survivors []string
	for _, id := range ids {
		if id != old {
			survivors = append(survivors, id)
		}
	}
	var res floodResult
	res.election = waitFor(func() bool { return leaderOf(survivors) != "" })

	n, err := Start(ctx, cfgs[old])
	if err != nil {
		t.Fatal(err)
	}
	nodes[old] = n
	if res.election >= 0 {
		target := nodes[leaderOf(survivors)].Store.AppliedIndex()
		res.rejoin = waitFor(func() bool {
			id, _ := n.Store.Leader()
			return id != "" && id != old && n.Store.AppliedIndex() >= target
		})
	} else {
		res.rejoin = -1
	}
	for _, id := range survivors {
		res.evicted += counterSum(t, regs[id], "yarnfed_statestore_raft_handshakes_total", "result", "evicted")
	}
	return res
}

// counterSum adds the samples of name whose label key has value.
func counterSum(t testing.TB, g prometheus.Gatherer, name, key, value string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, key, value) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func labelIs(m *dto.Metric, key, value string) bool {
	if key == "" {
		return true
	}
	for _, l := range m.GetLabel() {
		if l.GetName() == key && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestRaftHandshakeFloodKeepsElections: 70 silent TCP connections per
// replica, reopened as soon as they are closed, from a replica's own IP
// (the worst case: the peer pool does not help) and from another one.
// After the leader is killed the survivors still elect a leader, and the
// killed replica, restarted, rejoins, both within 15 s. Before the gate
// (64 handshakes, newcomers closed, 10 s deadline) the survivors stayed
// leaderless for the whole flood.
func TestRaftHandshakeFloodKeepsElections(t *testing.T) {
	for _, src := range []string{"127.0.0.1", "127.0.0.2"} {
		t.Run(src, func(t *testing.T) {
			if src != "127.0.0.1" && !canBind(src) {
				t.Fatalf("cannot bind %s (loopback /8 expected on Linux)", src)
			}
			res := runRaftFlood(t, nil, src, 70, 15*time.Second)
			t.Logf("flood from %s: election %v, rejoin %v, evicted %v", src, res.election, res.rejoin, res.evicted)
			if res.election < 0 {
				t.Fatal("no leader within 15 s of the leader's death under the flood")
			}
			if res.rejoin < 0 {
				t.Fatal("the restarted replica did not rejoin within 15 s under the flood")
			}
		})
	}
}

func canBind(ip string) bool {
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// BenchmarkRaftHandshakeFlood measures the variants statestore/DESIGN.md
// compares (one run each; election and rejoin seconds, -1 = not within
// 60 s):
//
//	go test -run XXX -bench RaftHandshakeFlood -benchtime 1x ./statestore/node
func BenchmarkRaftHandshakeFlood(b *testing.B) {
	old := security.HandshakeLimits{MaxPending: 64, MaxPendingPerAddr: 1 << 20, MaxPendingPerPeer: 1 << 20, HelloTimeout: 10 * time.Second, HandshakeTimeout: 10 * time.Second, RefuseNew: true, NoPeerPool: true}
	deadline := old
	deadline.HelloTimeout, deadline.HandshakeTimeout = 2*time.Second, 5*time.Second
	evict := old
	evict.RefuseNew = false
	pool := old
	pool.NoPeerPool = false
	pool.MaxPendingPerAddr, pool.MaxPendingPerPeer = 8, 16
	def := security.DefaultHandshakeLimits()
	variants := []struct {
		name string
		lim  security.HandshakeLimits
	}{{"before", old}, {"deadline_2s_5s", deadline}, {"evict_oldest", evict}, {"peer_pool_per_addr_refuse", pool}, {"default", def}}
	b.Run("no_flood", func(b *testing.B) {
		res := runRaftFlood(b, nil, "127.0.0.1", 0, 60*time.Second)
		b.ReportMetric(secs(res.election), "election_s")
		b.ReportMetric(secs(res.rejoin), "rejoin_s")
	})
	for _, src := range []string{"127.0.0.1", "127.0.0.2"} {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/from_%s", v.name, strings.ReplaceAll(src, ".", "_")), func(b *testing.B) {
				lim := v.lim
				res := runRaftFlood(b, &lim, src, 70, 60*time.Second)
				b.ReportMetric(secs(res.election), "election_s")
				b.ReportMetric(secs(res.rejoin), "rejoin_s")
				b.ReportMetric(res.evicted, "evicted")
			})
		}
	}
}

func secs(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Seconds()
}
