// Package storetest runs in-process state store clusters for tests: real
// stores, real gRPC servers on loopback, Raft over raft's in-memory
// transport so tests can cut links.
package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/grpc"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/server"
	"github.com/yarnfed/yarnfed/statestore/store"
)

// Node is one replica.
type Node struct {
	ID    string
	Dir   string
	Addr  string // gRPC
	Store *store.Store

	raftAddr raft.ServerAddress
	lis      net.Listener // bound at creation, so no other process takes the port
	trans    *raft.InmemTransport
	srv      *server.Server
	grpc     *grpc.Server
	running  bool
}

// Cluster is a set of replicas bootstrapped together.
type Cluster struct {
	t      testing.TB
	Nodes  []*Node
	tweak  func(*store.Config)
	mu     sync.Mutex
	cut    map[[2]int]bool
	closed bool
}

// Option changes every node's store config.
type Option func(*store.Config)

// NewCluster starts n replicas with short Raft timeouts and waits for a
// leader. Everything is torn down by t.Cleanup.
func NewCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, cut: map[[2]int]bool{}, tweak: func(cfg *store.Config) {
		for _, o := range opts {
			o(cfg)
		}
	}}
	var peers []store.Peer
	for i := 0; i < n; i++ {
		nd := &Node{ID: fmt.Sprintf("node%d", i), Dir: filepath.Join(t.TempDir(), fmt.Sprint(i)), raftAddr: raft.ServerAddress(fmt.Sprintf("raft-%d", i))}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nd.Addr, nd.lis = lis.Addr().String(), lis
		c.Nodes = append(c.Nodes, nd)
		peers = append(peers, store.Peer{ID: nd.ID, RaftAddr: string(nd.raftAddr)})
	}
	for i := range c.Nodes {
		c.start(i, peers)
	}
	t.Cleanup(c.Close)
	c.WaitLeader()
	return c
}

func (c *Cluster) start(i int, peers []store.Peer) {
	c.t.Helper()
	nd := c.Nodes[i]
	_, nd.trans = raft.NewInmemTransportWithTimeout(nd.raftAddr, 200*time.Millisecond)
	cfg := store.Config{
		NodeID: nd.ID, Dir: nd.Dir, Transport: nd.trans, GRPCAddr: nd.Addr,
		Bootstrap: peers != nil, Peers: peers,
		HeartbeatTimeout: 150 * time.Millisecond, ElectionTimeout: 150 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
		ApplyTimeout: 5 * time.Second,
		// Empty (the store's default) unless the suite is run against one
		// log store on purpose.
		LogStore: os.Getenv("YARNFED_TEST_RAFT_LOG_STORE"),
	}
	c.tweak(&cfg)
	st, err := store.Open(cfg)
	if err != nil {
		c.t.Fatalf("open %s: %v", nd.ID, err)
	}
	nd.Store = st
	lis := nd.lis
	nd.lis = nil
	// After a restart, rebind the port this node had.
	for try := 0; lis == nil; try++ {
		if lis, err = net.Listen("tcp", nd.Addr); err == nil || try == 50 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("listen %s: %v", nd.Addr, err)
	}
	nd.srv = server.New(server.Config{Store: st, ProgressEvery: 100 * time.Millisecond})
	nd.grpc = grpc.NewServer()
	nd.srv.Register(nd.grpc)
	go nd.grpc.Serve(lis)
	nd.running = true
	c.relink()
}

// relink connects every pair of running nodes that is not cut.
func (c *Cluster) relink() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.Nodes {
		if !a.running {
			continue
		}
		a.trans.DisconnectAll()
		for j, b := range c.Nodes {
			if i != j && b.running && !c.cut[[2]int{i, j}] {
				a.trans.Connect(b.raftAddr, b.trans)
			}
		}
	}
}

// Leader returns the index of the node that is leader now, or -1.
func (c *Cluster) Leader() int {
	for i, nd := range c.Nodes {
		if nd.running && nd.Store.IsLeader() {
			return i
		}
	}
	return -1
}

// WaitLeader waits until exactly one running node leads and every running
// node knows its gRPC address, and returns its index.
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	var l int
	Poll(c.t, 20*time.Second, func() bool {
		l = c.Leader()
		if l < 0 {
			return false
		}
		for _, nd := range c.Nodes {
			if nd.running && !c.isolated(nd) {
				if id, addr := nd.Store.Leader(); id != c.Nodes[l].ID || addr == "" {
					return false
				}
			}
		}
		return true
	})
	return l
}

func (c *Cluster) isolated(nd *Node) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.cut {
		if v && c.Nodes[k[0]] == nd {
			return true
		}
	}
	return false
}

// Stop shuts a node down (its files stay).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	nd := c.Nodes[i]
	if !nd.running {
		return
	}
	nd.running = false
	nd.grpc.Stop()
	nd.srv.Close()
	if err := nd.Store.Close(); err != nil {
		c.t.Logf("close %s: %v", nd.ID, err)
	}
	c.relink()
}

// Restart starts a stopped node again from its directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.start(i, nil)
}

// Partition cuts the given nodes off from the rest (both directions).
func (c *Cluster) Partition(minority ...int) {
	in := map[int]bool{}
	for _, i := range minority {
		in[i] = true
	}
	c.mu.Lock()
	for i := range c.Nodes {
		for j := range c.Nodes {
			if in[i] != in[j] {
				c.cut[[2]int{i, j}] = true
			}
		}
	}
	c.mu.Unlock()
	c.relink()
}

// Heal restores every link.
func (c *Cluster) Heal() {
	c.mu.Lock()
	c.cut = map[[2]int]bool{}
	c.mu.Unlock()
	c.relink()
}

// Addrs returns the gRPC addresses of all nodes.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, nd := range c.Nodes {
		out = append(out, nd.Addr)
	}
	return out
}

// Client returns a client for the given nodes (all when none are named),
// closed at cleanup.
func (c *Cluster) Client(nodes ...int) *client.Client {
	c.t.Helper()
	addrs := c.Addrs()
	if len(nodes) > 0 {
		addrs = nil
		for _, i := range nodes {
			addrs = append(addrs, c.Nodes[i].Addr)
		}
	}
	cl, err := client.New(client.Config{Addrs: addrs, RetryTimeout: 20 * time.Second, CallTimeout: 2 * time.Second, WatchSilence: time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// Close stops every node.
func (c *Cluster) Close() {
	if c.closed {
		return
	}
	c.closed = true
	for i := range c.Nodes {
		c.Stop(i)
	}
}

// Poll calls cond until it is true or timeout passes.
func Poll(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met within %v", timeout)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
