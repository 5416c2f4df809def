// Package node runs one state store replica as a process would: the Raft
// store, the gRPC server, and an HTTP listener for /metrics, /healthz and
// /readyz. `yarnfed statestore` and `yarnfed bench statestore` use it.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
	"github.com/yarnfed/yarnfed/statestore/server"
	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Config configures a replica process.
type Config struct {
	// NodeID is the replica's stable Raft id.
	NodeID string `json:"node_id"`
	// DataDir holds the Raft log, the FSM database and snapshots.
	DataDir string `json:"data_dir"`
	// GRPCAddress is where clients and other replicas connect;
	// GRPCAdvertise is what the others are told (default GRPCAddress).
	GRPCAddress   string `json:"grpc_address"`
	GRPCAdvertise string `json:"grpc_advertise"`
	// RaftAddress is the Raft TCP transport's listen address;
	// RaftAdvertise what peers dial (default RaftAddress).
	RaftAddress   string `json:"raft_address"`
	RaftAdvertise string `json:"raft_advertise"`
	// HTTPAddress serves /metrics, /healthz, /readyz; empty disables.
	HTTPAddress string `json:"http_address"`

	// Bootstrap forms a new cluster unless DataDir has state: alone, or
	// with Peers ("id=raft-host:port", the same list on every initial
	// member, this node included).
	Bootstrap bool     `json:"bootstrap"`
	Peers     []string `json:"peers"`
	// Join lists gRPC addresses of existing replicas to ask for admission
	// (any replica: the request is forwarded to the leader).
	Join     []string `json:"join"`
	NonVoter bool     `json:"non_voter"`

	// FSMSync fsyncs the FSM database per batch (see store.Config).
	FSMSync bool `json:"fsm_sync"`
	// NoSync skips fsync of the Raft log: unsafe, benchmarks only (bolt
	// log store only).
	NoSync bool `json:"unsafe_no_sync"`
	// RaftLogStore is the Raft log and stable store: "wal" (raft-wal) or
	// "bolt" (raft-boltdb). Empty: whatever DataDir already holds, else
	// store.DefaultLogStore. A value that differs from what DataDir holds
	// refuses to start (store.ErrLogStoreMismatch).
	RaftLogStore string `json:"raft_log_store"`

	// ParallelLeaderAppend: the leader writes its log in parallel with
	// replicating it (store.Config.ParallelLeaderAppend). Off by default.
	ParallelLeaderAppend bool `json:"parallel_leader_append"`

	HeartbeatTimeout config.Duration `json:"heartbeat_timeout"`
	ElectionTimeout  config.Duration `json:"election_timeout"`
	// CommitTimeout is how long the leader lets a follower go without an
	// AppendEntries while writes are quiet (Raft's CommitTimeout; it
	// waits 1-2x this). A follower learns that an entry committed only
	// from the next one, so a write followed by no other waits this long
	// to be applied there, and to reach the watchers it serves (their
	// membership and policy caches). A lone policy write reached a
	// follower's watcher after 79 / 103 ms (p50 / p99) at Raft's default
	// 50 ms, 18 / 23 ms at 10 ms, 10 / 15 ms at 5 ms; the empty appends
	// cost an idle 3-replica store 0.036, 0.095 and 0.185 cores on the
	// shared dev VM (statestore/DESIGN.md, Watch).
	CommitTimeout     config.Duration `json:"commit_timeout"`
	SnapshotInterval  config.Duration `json:"snapshot_interval"`
	SnapshotThreshold uint64          `json:"snapshot_threshold"`
	// TrailingLogs is how many log entries a snapshot leaves behind: a
	// follower further behind than this gets the snapshot instead.
	TrailingLogs uint64 `json:"trailing_logs"`
	// MaxContextBytes caps a stored application submission context.
	MaxContextBytes int `json:"max_context_bytes"`
	// MaxListApplications caps one page of application homes
	// (yarn.federation.state-store.max-applications).
	MaxListApplications int `json:"max_list_applications"`

	// TLS is the replica's certificate, key and trusted CA: mutual TLS on
	// gRPC and Raft. The certificate needs O=replica (and the server and
	// client auth key usages): it is presented to clients, to Raft peers,
	// and when forwarding to the leader.
	TLS security.TLSInfo `json:"tls"`
	// gRPC connection bounds: all connections, per client IP,
	// unauthenticated at once (beyond these the oldest unauthenticated
	// one is closed, else the newcomer), and the time a connection has to
	// finish its TLS handshake and HTTP/2 preface.
	GRPCMaxConns             int             `json:"grpc_max_conns"`
	GRPCMaxConnsPerAddr      int             `json:"grpc_max_conns_per_addr"`
	GRPCMaxPendingHandshakes int             `json:"grpc_max_pending_handshakes"`
	GRPCHandshakeTimeout     config.Duration `json:"grpc_handshake_timeout"`
	// Raft handshake bounds (security.HandshakeLimits): unauthenticated
	// connections to the Raft port. Zero: the defaults.
	RaftHelloTimeout         config.Duration `json:"raft_hello_timeout"`
	RaftHandshakeTimeout     config.Duration `json:"raft_handshake_timeout"`
	RaftMaxPendingHandshakes int             `json:"raft_max_pending_handshakes"`
	RaftMaxPendingPerAddr    int             `json:"raft_max_pending_handshakes_per_addr"`
	RaftMaxPendingPerPeer    int             `json:"raft_max_pending_handshakes_per_peer"`
	// Insecure runs plaintext and unauthenticated, with a warning (test and
	// dev federations only). With neither TLS nor Insecure, Start refuses.
	Insecure bool `json:"insecure"`

	Logger     *slog.Logger          `json:"-"`
	Registerer prometheus.Registerer `json:"-"`
	// raftLimits, when set, replaces the Raft handshake fields (tests
	// measure variants with the measurement switches).
	raftLimits *security.HandshakeLimits
	Gatherer   prometheus.Gatherer `json:"-"`
}

// DefaultConfig returns a single-replica configuration on loopback.
func DefaultConfig() Config {
	l := store.DefaultLimits()
	return Config{
		NodeID:              "statestore-0",
		DataDir:             "statestore-data",
		GRPCAddress:         "127.0.0.1:9090",
		RaftAddress:         "127.0.0.1:9091",
		HTTPAddress:         "127.0.0.1:9092",
		HeartbeatTimeout:    config.Duration(time.Second),
		ElectionTimeout:     config.Duration(time.Second),
		CommitTimeout:       config.Duration(10 * time.Millisecond),
		SnapshotInterval:    config.Duration(2 * time.Minute),
		SnapshotThreshold:   8192,
		MaxContextBytes:     l.MaxContextBytes,
		MaxListApplications: l.MaxListLimit,
	}.withHandshakeDefaults()
}

func (c Config) withHandshakeDefaults() Config {
	d := security.DefaultHandshakeLimits()
	c.RaftHelloTimeout = config.Duration(d.HelloTimeout)
	c.RaftHandshakeTimeout = config.Duration(d.HandshakeTimeout)
	c.RaftMaxPendingHandshakes = d.MaxPending
	c.RaftMaxPendingPerAddr = d.MaxPendingPerAddr
	c.RaftMaxPendingPerPeer = d.MaxPendingPerPeer
	c.GRPCMaxConns, c.GRPCMaxConnsPerAddr, c.GRPCMaxPendingHandshakes = 10000, 512, 256
	c.GRPCHandshakeTimeout = config.Duration(5 * time.Second)
	return c
}

func (c Config) grpcLimits() connLimits {
	return connLimits{maxConns: c.GRPCMaxConns, maxPerAddr: c.GRPCMaxConnsPerAddr, maxPending: c.GRPCMaxPendingHandshakes, handshakeTimeout: c.GRPCHandshakeTimeout.D()}
}

// raftHandshakeLimits are the configured Raft handshake bounds.
func (c Config) raftHandshakeLimits() security.HandshakeLimits {
	if c.raftLimits != nil {
		return *c.raftLimits
	}
	return security.HandshakeLimits{
		MaxPending: c.RaftMaxPendingHandshakes, MaxPendingPerAddr: c.RaftMaxPendingPerAddr, MaxPendingPerPeer: c.RaftMaxPendingPerPeer,
		HelloTimeout: c.RaftHelloTimeout.D(), HandshakeTimeout: c.RaftHandshakeTimeout.D(),
	}
}

// ParsePeers parses "id=host:port" entries.
func ParsePeers(list []string) ([]store.Peer, error) {
	var out []store.Peer
	seen := map[string]bool{}
	for _, p := range list {
		id, addr, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("peer %q: want id=host:port", p)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("peer %q: %w", p, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer id %q listed twice", id)
		}
		seen[id] = true
		out = append(out, store.Peer{ID: id, RaftAddr: addr})
	}
	return out, nil
}

// Validate reports the first problem with cfg.
func (c *Config) Validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("node_id is required")
	case c.DataDir == "":
		return errors.New("data_dir is required")
	case c.GRPCAddress == "":
		return errors.New("grpc_address is required")
	case c.RaftAddress == "":
		return errors.New("raft_address is required")
	case c.Bootstrap && len(c.Join) > 0:
		return errors.New("bootstrap and join are exclusive: bootstrap forms a new cluster, join enters an existing one")
	case c.MaxContextBytes <= 0 || c.MaxContextBytes > 4<<20:
		return fmt.Errorf("max_context_bytes %d outside 1..4MiB (gRPC messages are capped at 4 MiB)", c.MaxContextBytes)
	case c.MaxListApplications <= 0:
		return fmt.Errorf("max_list_applications %d must be positive", c.MaxListApplications)
	case c.NoSync && c.RaftLogStore == store.LogStoreWAL:
		return errors.New("unsafe_no_sync needs raft_log_store \"bolt\" (raft-wal always fsyncs)")
	case c.Insecure && !c.TLS.Empty():
		return errors.New("insecure and tls are exclusive")
	case c.GRPCMaxConns <= 0 || c.GRPCMaxConnsPerAddr <= 0 || c.GRPCMaxPendingHandshakes <= 0 || c.GRPCHandshakeTimeout <= 0:
		return errors.New("grpc_max_conns, grpc_max_conns_per_addr, grpc_max_pending_handshakes and grpc_handshake_timeout must be positive")
	case c.HeartbeatTimeout < config.Duration(5*time.Millisecond) || c.ElectionTimeout < config.Duration(5*time.Millisecond):
		return errors.New("heartbeat_timeout and election_timeout must be at least 5ms")
	case c.CommitTimeout < config.Duration(time.Millisecond):
		return errors.New("commit_timeout must be at least 1ms")
	}
	if err := store.ValidLogStore(c.RaftLogStore); err != nil {
		return err
	}
	for _, a := range []struct{ name, v string }{{"grpc_address", c.GRPCAddress}, {"raft_address", c.RaftAddress}, {"http_address", c.HTTPAddress}, {"grpc_advertise", c.GRPCAdvertise}, {"raft_advertise", c.RaftAdvertise}} {
		if a.v == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return fmt.Errorf("%s %q: %w", a.name, a.v, err)
		}
	}
	if c.Bootstrap && len(c.Peers) > 0 {
		peers, err := ParsePeers(c.Peers)
		if err != nil {
			return err
		}
		if n := len(peers); n%2 == 0 {
			return fmt.Errorf("bootstrap with %d voters: use an odd number (1, 3, 5) so a majority survives a failure", n)
		}
		self := false
		for _, p := range peers {
			self = self || p.ID == c.NodeID
		}
		if !self {
			return fmt.Errorf("peers must include this node (%s)", c.NodeID)
		}
	}
	return c.TLS.Validate()
}

// Node is a running replica.
type Node struct {
	cfg   Config
	Store *store.Store
	srv   *server.Server
	grpc  *grpc.Server
	tls   *security.Reloader // nil: plaintext
	lis   net.Listener
	guard *guardedListener
	http  *http.Server
	hlis  net.Listener
}

// setRaftTimings copies the Raft timings into the store's config.
func (c Config) setRaftTimings(s *store.Config) {
	s.HeartbeatTimeout, s.ElectionTimeout = time.Duration(c.HeartbeatTimeout), time.Duration(c.ElectionTimeout)
	s.LeaderLeaseTimeout = time.Duration(c.HeartbeatTimeout) / 2
	s.CommitTimeout = time.Duration(c.CommitTimeout)
	s.ParallelLeaderAppend = c.ParallelLeaderAppend
}

// Start opens the store and starts serving. The caller runs Wait or Close.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	peers, err := ParsePeers(cfg.Peers)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg}
	useTLS, err := security.CheckMode(cfg.TLS, cfg.Insecure, security.ServerMode, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if useTLS {
		if n.tls, err = security.NewReloader(cfg.TLS); err != nil {
			return nil, err
		}
		if err := n.tls.Observe(cfg.Logger, cfg.Registerer, "yarnfed_statestore"); err != nil {
			cfg.Logger.Warn("statestore: register metric", "error", err)
		}
	}
	if n.lis, err = net.Listen("tcp", cfg.GRPCAddress); err != nil {
		return nil, err
	}
	adv := cfg.GRPCAdvertise
	if adv == "" {
		adv = n.lis.Addr().String()
	}
	limits := store.DefaultLimits()
	limits.MaxContextBytes = cfg.MaxContextBytes
	limits.MaxListLimit = cfg.MaxListApplications
	scfg := store.Config{
		NodeID: cfg.NodeID, Dir: cfg.DataDir, RaftAddr: cfg.RaftAddress, RaftAdvertise: cfg.RaftAdvertise, GRPCAddr: adv,
		Bootstrap: cfg.Bootstrap, Peers: peers, NoSync: cfg.NoSync, FSMSync: cfg.FSMSync,
		LogStore:         cfg.RaftLogStore,
		SnapshotInterval: time.Duration(cfg.SnapshotInterval), SnapshotThreshold: cfg.SnapshotThreshold, TrailingLogs: cfg.TrailingLogs,
		Limits: limits, Logger: cfg.Logger, Registerer: cfg.Registerer, RaftTLS: n.tls, RaftHandshake: cfg.raftHandshakeLimits(),
	}
	cfg.setRaftTimings(&scfg)
	n.Store, err = store.Open(scfg)
	if err != nil {
		n.lis.Close()
		return nil, err
	}
	n.srv = server.New(server.Config{Store: n.Store, Logger: cfg.Logger, DialOptions: n.dialOptions()})
	n.grpc = newGRPCServer(cfg, n.tls)
	n.srv.Register(n.grpc)
	n.guard = newGuardedListener(n.lis, cfg.grpcLimits())
	if cfg.Registerer != nil {
		for _, c := range n.guard.collectors() {
			if err := cfg.Registerer.Register(c); err != nil {
				cfg.Logger.Warn("statestore: register metric", "error", err)
			}
		}
	}
	go n.grpc.Serve(n.guard)
	if cfg.HTTPAddress != "" {
		if n.hlis, err = net.Listen("tcp", cfg.HTTPAddress); err != nil {
			n.Close()
			return nil, err
		}
		n.http = &http.Server{Handler: n.handler(), ReadHeaderTimeout: 5 * time.Second}
		go n.http.Serve(n.hlis)
	}
	// A replica with Raft state is already a member: its log holds the
	// membership, and asking the --join targets again would make a restart
	// depend on them being up (a cluster whose seed died could not restart
	// another replica).
	if len(cfg.Join) > 0 && n.Store.HadState() {
		cfg.Logger.Info("statestore: data dir has Raft state; rejoining from the log, not via --join", "node", cfg.NodeID)
	} else if len(cfg.Join) > 0 {
		if err := n.join(ctx, adv); err != nil {
			n.Close()
			return nil, err
		}
	}
	cfg.Logger.Info("statestore replica started", "node", cfg.NodeID, "grpc", adv, "raft", cfg.RaftAddress, "http", cfg.HTTPAddress)
	return n, nil
}

// join asks the existing cluster to admit this node, retrying until the
// cluster has a leader or ctx ends.
func (n *Node) join(ctx context.Context, grpcAdv string) error {
	c, err := client.New(client.Config{Addrs: n.cfg.Join, DisableCache: true, RetryTimeout: time.Minute, Logger: n.cfg.Logger, DialOptions: n.dialOptions()})
	if err != nil {
		return err
	}
	defer c.Close()
	raftAdv := n.cfg.RaftAdvertise
	if raftAdv == "" {
		raftAdv = n.cfg.RaftAddress
	}
	if err := c.Join(ctx, &pb.JoinRequest{NodeId: n.cfg.NodeID, RaftAddress: raftAdv, GrpcAddress: grpcAdv, NonVoter: n.cfg.NonVoter}); err != nil {
		return fmt.Errorf("join via %v: %w", n.cfg.Join, err)
	}
	return nil
}

// dialOptions reach other replicas (forwarding to the leader, joining)
// with this replica's own identity.
func (n *Node) dialOptions() []grpc.DialOption {
	creds := insecure.NewCredentials()
	if n.tls != nil {
		creds = credentials.NewTLS(n.tls.ClientConfig())
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20))}
}

// GRPCAddr returns the bound gRPC address.
func (n *Node) GRPCAddr() string { return n.lis.Addr().String() }

// HTTPAddr returns the bound HTTP address ("" if disabled).
func (n *Node) HTTPAddr() string {
	if n.hlis == nil {
		return ""
	}
	return n.hlis.Addr().String()
}

func (n *Node) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	// Ready when this replica knows a leader (it can then serve or
	// forward every call).
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		id, addr := n.Store.Leader()
		if id == "" || addr == "" {
			http.Error(w, "no leader known", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok leader=%s applied=%d\n", id, n.Store.AppliedIndex())
	})
	if n.cfg.Gatherer != nil {
		mux.Handle("/metrics", promhttp.HandlerFor(n.cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// Shutdown is the orderly stop of a process told to go (SIGTERM): a
// leader first hands leadership to another voter while it still serves,
// so calls forwarded to it finish and the cluster elects no one after a
// timeout; then it closes. A failed or timed-out transfer is logged and
// the replica closes anyway (the others elect a leader as after a crash).
func (n *Node) Shutdown(ctx context.Context) error {
	if n.Store != nil && n.Store.IsLeader() {
		n.cfg.Logger.Info("statestore: transferring leadership before stopping", "node", n.cfg.NodeID)
		if err := n.Store.TransferLeadership(ctx); err != nil {
			n.cfg.Logger.Warn("statestore: leadership not transferred; stopping anyway", "node", n.cfg.NodeID, "error", err)
		} else if id, _ := n.Store.Leader(); id != n.cfg.NodeID {
			n.cfg.Logger.Info("statestore: leadership transferred", "node", n.cfg.NodeID, "leader", id)
		}
	}
	return n.Close()
}

// Close stops serving and closes the store.
func (n *Node) Close() error {
	if n.http != nil {
		n.http.Close()
	}
	if n.grpc != nil {
		// GracefulStop would wait for watch streams forever.
		n.grpc.Stop()
	}
	var err error
	if n.srv != nil {
		err = n.srv.Close()
	}
	if n.guard != nil && n.cfg.Registerer != nil {
		for _, c := range n.guard.collectors() {
			n.cfg.Registerer.Unregister(c)
		}
	}
	if n.Store != nil {
		err = errors.Join(err, n.Store.Close())
	}
	return err
}
