package amrmproxy

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/policies"
)

// membership caches the store's sub-cluster rows and a policies snapshot
// of them, refreshed by a loop, never on the allocate path. An RM HA
// failover shows up as a new address in a row (the sub-cluster agent
// reports it); connections follow the row.
type membership struct {
	store Store
	log   *slog.Logger

	mu     sync.RWMutex
	rows   map[string]SubCluster
	snap   *policies.Snapshot
	loaded bool
	err    error
}

func newMembership(s Store, log *slog.Logger) *membership {
	return &membership{store: s, log: log, rows: map[string]SubCluster{}, snap: policies.NewSnapshot(nil)}
}

func (m *membership) refresh(ctx context.Context) error {
	list, err := m.store.SubClusters(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.err = err
		return err
	}
	rows := make(map[string]SubCluster, len(list))
	scs := make([]policies.SubCluster, 0, len(list))
	for _, sc := range list {
		rows[sc.ID] = sc
		capa, _ := policies.ParseCapability([]byte(sc.Capability)) // missing -> zero, as Hadoop
		scs = append(scs, policies.SubCluster{ID: policies.SubClusterID(sc.ID), State: sc.State, Capability: capa, LastHeartbeat: sc.LastHeartbeat})
	}
	m.rows, m.snap, m.loaded, m.err = rows, policies.NewSnapshot(scs), true, nil
	return nil
}

func (m *membership) get(id string) (SubCluster, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	sc, ok := m.rows[id]
	return sc, ok
}

func (m *membership) snapshot() *policies.Snapshot {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.snap
}

func (m *membership) all() []SubCluster {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SubCluster, 0, len(m.rows))
	for _, sc := range m.rows {
		out = append(out, sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (m *membership) ready() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.loaded
}

// nodeLearner builds the node -> sub-cluster map LocalityMulticast needs
// from every active sub-cluster's RM (getClusterNodes), when no
// machine-list file is configured: the RMs know their nodes, so the map
// follows node additions without an operator editing a file.
type nodeLearner struct {
	ml   *policies.MachineList
	dial func(addrs []string, user string) (*hadoopipc.Client, error) // Proxy.clientRM
	log  *slog.Logger

	mu      sync.Mutex
	clients map[string]nodeClient
}

type nodeClient struct {
	addr string
	c    Caller
	cl   func() error
}

func (n *nodeLearner) learn(ctx context.Context, scs []SubCluster) {
	var entries []policies.Machine
	for _, sc := range scs {
		if !sc.State.Active() || sc.ClientRMServiceAddress == "" {
			continue
		}
		c, err := n.client(sc)
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp := &yarnpb.GetClusterNodesResponseProto{}
		err = c.Call(cctx, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, resp)
		cancel()
		if err != nil {
			n.log.Debug("node list unavailable", "subcluster", sc.ID, "err", err)
			continue
		}
		for _, nr := range resp.GetNodeReports() {
			entries = append(entries, policies.Machine{Node: nr.GetNodeId().GetHost(), SubCluster: policies.SubClusterID(sc.ID),
				Rack: strings.TrimPrefix(nr.GetRackName(), "/")})
			// Asks name racks with or without the leading slash.
			entries = append(entries, policies.Machine{Node: nr.GetNodeId().GetHost(), SubCluster: policies.SubClusterID(sc.ID), Rack: nr.GetRackName()})
		}
	}
	if len(entries) > 0 {
		n.ml.Set(entries)
	}
}

func (n *nodeLearner) client(sc SubCluster) (Caller, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if nc, ok := n.clients[sc.ID]; ok && nc.addr == sc.ClientRMServiceAddress {
		return nc.c, nil
	} else if ok {
		_ = nc.cl()
	}
	addrs := hostport.SplitList(sc.ClientRMServiceAddress)
	c, err := n.dial(addrs, "") // as the proxy itself
	if err != nil {
		return nil, err
	}
	if n.clients == nil {
		n.clients = map[string]nodeClient{}
	}
	n.clients[sc.ID] = nodeClient{addr: sc.ClientRMServiceAddress, c: c, cl: c.Close}
	return c, nil
}

func (n *nodeLearner) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, nc := range n.clients {
		_ = nc.cl()
		delete(n.clients, k)
	}
}
