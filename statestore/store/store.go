package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Peer is a Raft voter named at bootstrap.
type Peer struct {
	ID       string
	RaftAddr string
}

// Config configures a Store. Zero durations take Raft's defaults.
type Config struct {
	// NodeID is this replica's stable Raft server id.
	NodeID string
	// Dir holds the Raft log and stable store (wal/ or raft.db, see
	// LogStore), fsm.db and snapshots/.
	Dir string
	// RaftAddr is the TCP address Raft binds; RaftAdvertise the one peers
	// dial (defaults to RaftAddr). Ignored when Transport is set.
	RaftAddr      string
	RaftAdvertise string
	// Transport overrides the TCP transport (tests use raft's in-memory
	// transport to cut links).
	Transport raft.Transport
	// RaftTLS, when set, runs the Raft transport over mutual TLS
	// (security.StreamLayer: both ends need a replica certificate) instead
	// of plain TCP.
	RaftTLS *security.Reloader
	// RaftHandshake bounds unauthenticated Raft connections (RaftTLS
	// only; zero fields: security.DefaultHandshakeLimits).
	RaftHandshake security.HandshakeLimits
	// GRPCAddr is the address other replicas forward requests to; the
	// leader records it in the FSM.
	GRPCAddr string

	// Bootstrap forms a new cluster of Peers (this node must be one of
	// them; a single-node cluster lists only itself) unless Dir already
	// has Raft state. Every initial member bootstraps with the same list.
	Bootstrap bool
	Peers     []Peer

	// LogStore is the Raft log and stable store: LogStoreWAL or
	// LogStoreBolt. Empty: the kind Dir already holds, else
	// DefaultLogStore. A kind that differs from what Dir holds is refused
	// (ErrLogStoreMismatch).
	LogStore string
	// NoSync skips fsync of the Raft log (bolt only). Unsafe: acknowledged
	// writes can be lost on power failure. For benchmarks that say so.
	NoSync bool
	// ParallelLeaderAppend makes the leader write new entries to its own
	// log in parallel with replicating them, counting itself towards the
	// commit quorum once its write has returned
	// (raft.Config.ParallelLeaderAppend in statestore/third_party/raft):
	// one fsync less on the path of every write. Off by default, so the
	// leader keeps upstream hashicorp/raft's order (write, then
	// replicate): its gain is not yet resolved by the bench on the shared
	// VM, and a consensus change is on by default only after a soak
	// (statestore/DESIGN.md, "The leader's parallel append").
	ParallelLeaderAppend bool
	// FSMSync fsyncs the FSM database on every batch. Without it the FSM
	// file is trusted only after a clean shutdown and is rebuilt from the
	// snapshot and the (always durable) Raft log after a crash.
	FSMSync bool

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64
	// ApplyTimeout bounds one proposal when the context has no deadline.
	ApplyTimeout time.Duration

	Limits     Limits
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Store is one replica of the state store.
type Store struct {
	cfg Config
	// hadState: Dir held Raft state when opened (this replica is already a
	// member of a cluster; its membership is in its log).
	hadState bool
	logger   *slog.Logger
	raft     *raft.Raft
	fsm      *fsm
	logs     logStore
	logKind  string
	trans    raft.Transport
	snaps    *raft.FileSnapshotStore
	layer    *security.StreamLayer // nil without RaftTLS

	notifyCh chan bool
	propCh   chan []*proposal // a request's proposals travel together
	done     chan struct{}
	wg       sync.WaitGroup

	ri struct {
		sync.Mutex
		waiting []chan readIndexResult
		running bool
	}

	applySeconds prometheus.Histogram
	raftSeconds  prometheus.Histogram
	batchSize    prometheus.Histogram
	collectors   []prometheus.Collector
	closeOnce    sync.Once
}

// Open starts a replica. It returns once Raft is running; a leader may not
// be elected yet (see WaitLeader).
func Open(cfg Config) (*Store, error) {
	if cfg.NodeID == "" || cfg.Dir == "" {
		return nil, errors.New("statestore: NodeID and Dir are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits()
	}
	if cfg.ApplyTimeout == 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	// Before anything is created in Dir: refuse a log store that differs
	// from the one Dir already holds.
	kind, err := resolveLogStore(cfg.Dir, cfg.LogStore, cfg.NoSync)
	if err != nil {
		return nil, err
	}
	s := &Store{logKind: kind, cfg: cfg, logger: cfg.Logger.With("node", cfg.NodeID), notifyCh: make(chan bool, 16), propCh: make(chan []*proposal, 1024), done: make(chan struct{})}
	cleanup := func() {
		if s.fsm != nil {
			s.fsm.close()
		}
		if s.logs != nil {
			s.logs.Close()
		}
		if c, ok := s.trans.(raft.WithClose); ok && cfg.Transport == nil {
			c.Close()
		}
	}
	var trusted bool
	if s.fsm, trusted, err = openFSM(filepath.Join(cfg.Dir, "fsm.db"), !cfg.FSMSync, s.logger); err != nil {
		return nil, err
	}
	hlog := hclog.FromStandardLogger(slog.NewLogLogger(s.logger.Handler(), slog.LevelInfo), &hclog.LoggerOptions{Name: "raft", Level: hclog.Info})
	if s.logs, err = openLogStore(cfg.Dir, s.logKind, cfg.NoSync, hlog); err != nil {
		s.logs = nil // a typed nil would pass cleanup's check
		cleanup()
		return nil, fmt.Errorf("open raft log (%s): %w", s.logKind, err)
	}
	s.logger.Info("statestore: raft log store", "kind", s.logKind)
	if s.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, hlog); err != nil {
		cleanup()
		return nil, err
	}
	s.trans = cfg.Transport
	if s.trans == nil {
		adv := cfg.RaftAdvertise
		if adv == "" {
			adv = cfg.RaftAddr
		}
		advAddr, err := net.ResolveTCPAddr("tcp", adv)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("raft advertise address %q: %w", adv, err)
		}
		if cfg.RaftTLS != nil {
			var adv net.Addr
			if cfg.RaftAdvertise != "" {
				adv = advAddr
			}
			layer, err := security.NewStreamLayerWithLimits(cfg.RaftAddr, adv, cfg.RaftTLS, cfg.RaftHandshake)
			if err != nil {
				cleanup()
				return nil, fmt.Errorf("raft transport: %w", err)
			}
			s.layer = layer
			s.trans = raft.NewNetworkTransportWithLogger(layer, 8, 10*time.Second, hlog)
		} else if s.trans, err = raft.NewTCPTransportWithLogger(cfg.RaftAddr, advAddr, 8, 10*time.Second, hlog); err != nil {
			cleanup()
			return nil, fmt.Errorf("raft transport: %w", err)
		}
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	rc.NotifyCh = s.notifyCh
	// Batching is what makes the store fast: the leader takes up to
	// MaxAppendEntries proposals from its queue at once, writes them to
	// the log in one fsync, ships them in one AppendEntries, and the FSM
	// applies them in one bbolt transaction.
	rc.BatchApplyCh = true
	rc.MaxAppendEntries = 1024
	// When set, the leader's log write runs while the entries travel to
	// the followers: a round is one fsync and a round trip, not two
	// fsyncs in a row (off by default: DESIGN.md, Performance).
	rc.ParallelLeaderAppend = cfg.ParallelLeaderAppend
	// The FSM file already holds everything up to its applied index; only
	// restore the snapshot when the file is missing or older.
	if trusted {
		if snaps, err := s.snaps.List(); err == nil && len(snaps) > 0 && snaps[0].Index > s.fsm.appliedIndex() {
			trusted = false
		}
	}
	rc.NoSnapshotRestoreOnStart = trusted
	setDur(&rc.HeartbeatTimeout, cfg.HeartbeatTimeout)
	setDur(&rc.ElectionTimeout, cfg.ElectionTimeout)
	setDur(&rc.LeaderLeaseTimeout, cfg.LeaderLeaseTimeout)
	setDur(&rc.CommitTimeout, cfg.CommitTimeout)
	setDur(&rc.SnapshotInterval, cfg.SnapshotInterval)
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	cache, err := raft.NewLogCache(4096, s.logs)
	if err != nil {
		cleanup()
		return nil, err
	}

	has, err := raft.HasExistingState(cache, s.logs, s.snaps)
	if err != nil {
		cleanup()
		return nil, err
	}
	s.hadState = has
	if cfg.Bootstrap {
		if !has {
			conf := raft.Configuration{}
			self := false
			for _, p := range cfg.Peers {
				conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
				self = self || p.ID == cfg.NodeID
			}
			if !self {
				conf.Servers = append(conf.Servers, raft.Server{ID: rc.LocalID, Address: s.trans.LocalAddr(), Suffrage: raft.Voter})
			}
			if err := raft.BootstrapCluster(rc, cache, s.logs, s.snaps, s.trans, conf); err != nil {
				cleanup()
				return nil, fmt.Errorf("bootstrap: %w", err)
			}
		}
	}
	if s.raft, err = raft.NewRaft(rc, s.fsm, cache, s.logs, s.snaps, s.trans); err != nil {
		cleanup()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	s.initMetrics()
	s.wg.Add(2)
	go s.watchLeadership()
	go s.runProposer()
	if s.layer != nil {
		s.wg.Add(1)
		go s.refreshRaftPeers()
	}
	return s, nil
}

func setDur(dst *time.Duration, v time.Duration) {
	if v > 0 {
		*dst = v
	}
}

func (s *Store) initMetrics() {
	s.applySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "yarnfed_statestore_apply_seconds",
		Help:    "Time from proposing a command on the leader to its FSM result.",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
	})
	s.raftSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "yarnfed_statestore_raft_commit_seconds",
		Help:    "Time from handing a Raft entry to Raft to its FSM result (commit and apply).",
		Buckets: prometheus.ExponentialBuckets(0.0002, 2, 14),
	})
	s.batchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "yarnfed_statestore_batch_commands",
		Help:    "Commands per Raft entry proposed by the group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	})
	s.collectors = []prometheus.Collector{
		s.applySeconds, s.raftSeconds, s.batchSize,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "yarnfed_statestore_fsm_batches_total", Help: "Batches applied to the FSM (one bbolt transaction each)."},
			func() float64 { return float64(s.fsm.batches.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "yarnfed_statestore_fsm_entries_total", Help: "Raft log entries applied to the FSM."},
			func() float64 { return float64(s.fsm.commands.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "yarnfed_statestore_applied_index", Help: "Raft index applied to the FSM."},
			func() float64 { return float64(s.fsm.appliedIndex()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "yarnfed_statestore_leader", Help: "1 if this replica is the Raft leader."},
			func() float64 {
				if s.IsLeader() {
					return 1
				}
				return 0
			}),
	}
	s.collectors = append(s.collectors, limitsGauge(s.cfg.Limits))
	if s.layer != nil {
		s.collectors = append(s.collectors, s.layer.Collectors()...)
	}
	if s.cfg.Registerer != nil {
		for _, c := range s.collectors {
			if err := s.cfg.Registerer.Register(c); err != nil {
				s.logger.Warn("statestore: register metric", "error", err)
			}
		}
	}
}

// watchLeadership records this node's gRPC address in the FSM whenever it
// becomes leader, so followers can find where to forward.
func (s *Store) watchLeadership() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case isLeader := <-s.notifyCh:
			if !isLeader || s.cfg.GRPCAddr == "" {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := s.Propose(ctx, CmdSetNodeAddress, &pb.SetNodeAddressCommand{NodeId: s.cfg.NodeID, GrpcAddress: s.cfg.GRPCAddr})
			cancel()
			if err != nil {
				s.logger.Warn("statestore: record leader address", "error", err)
			}
		}
	}
}

// TransferLeadership hands leadership to the most up-to-date other voter
// when this replica leads, and waits until it has stepped down. A replica
// that does not lead, or leads alone, has nothing to hand over and returns
// nil. Stopping a leader without it leaves the cluster leaderless for an
// election timeout; with it, the pause is one round trip (a rolling
// restart of a StatefulSet stops every leader in turn).
//
// One attempt gives the target an election timeout to win, and a loaded
// target, or a TimeoutNow lost on the way, misses it; the attempt then
// fails while this replica still leads. So a failed attempt is tried
// again, after a short pause, for as long as this replica leads and ctx
// allows: only ctx's end, or a stopped Raft, ends it with an error.
func (s *Store) TransferLeadership(ctx context.Context) error {
	pause := transferRetryPause
	for {
		err := s.transferLeadershipOnce(ctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("statestore: leadership transfer: %w", err)
		case errors.Is(err, ErrUnavailable):
			return fmt.Errorf("statestore: leadership transfer: %w", err)
		case !s.IsLeader():
			return nil // the target won after all, or another voter did
		}
		s.logger.Info("statestore: leadership transfer failed; trying again", "node", s.cfg.NodeID, "error", err, "pause", pause)
		select {
		case <-ctx.Done():
			return fmt.Errorf("statestore: leadership transfer: %w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// transferRetryPause is the first pause between transfer attempts; it
// doubles up to a second.
const transferRetryPause = 50 * time.Millisecond

// transferLeadershipOnce is one attempt: nil once this replica no longer
// leads (or never did, or leads alone).
//
// ctx's end is its answer too: it ended the attempt, or the attempt
// failed as ctx ended, and the caller is told of ctx either way.
func (s *Store) transferLeadershipOnce(ctx context.Context) error {
	if !s.IsLeader() {
		return nil
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftError(err)
	}
	others := 0
	for _, srv := range cf.Configuration().Servers {
		if srv.Suffrage == raft.Voter && srv.ID != raft.ServerID(s.cfg.NodeID) {
			others++
		}
	}
	if others == 0 {
		return nil
	}
	f := s.raft.LeadershipTransfer()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), mapRaftError(err))
		}
		return mapRaftError(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LogStore names the Raft log store in use (LogStoreWAL or LogStoreBolt).
func (s *Store) LogStore() string { return s.logKind }

// Close stops Raft and closes the files. It is safe to call twice.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		err = s.raft.Shutdown().Error()
		s.wg.Wait()
		if s.cfg.Transport == nil {
			if c, ok := s.trans.(raft.WithClose); ok {
				err = errors.Join(err, c.Close())
			}
			// Close stops the listener only: pooled connections to the
			// peers stay open, and with them the peers' handler
			// goroutines (found by goleak).
			if nt, ok := s.trans.(*raft.NetworkTransport); ok {
				nt.CloseStreams()
			}
		}
		err = errors.Join(err, s.logs.Close(), s.fsm.close())
		if s.cfg.Registerer != nil {
			for _, c := range s.collectors {
				s.cfg.Registerer.Unregister(c)
			}
		}
	})
	return err
}

// HadState reports whether the data directory already held Raft state when
// the store opened: the replica rejoins its cluster from its own log.
func (s *Store) HadState() bool { return s.hadState }

// NodeID returns this replica's id.
func (s *Store) NodeID() string { return s.cfg.NodeID }

// Limits returns the input limits in force.
func (s *Store) Limits() Limits { return s.cfg.Limits }

// IsLeader reports whether this replica is the Raft leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the leader's id and recorded gRPC address ("" if unknown).
func (s *Store) Leader() (id, grpcAddr string) {
	_, lid := s.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	addrs, err := s.fsm.nodeAddresses()
	if err != nil {
		return string(lid), ""
	}
	return string(lid), addrs[string(lid)]
}

// WaitLeader blocks until some leader is known.
func (s *Store) WaitLeader(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if _, id := s.raft.LeaderWithID(); id != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: no leader: %w", ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
}

// InTouch reports whether this replica has heard from a leader within d
// (always true on the leader: it steps down when it loses its quorum).
func (s *Store) InTouch(d time.Duration) bool {
	if s.IsLeader() {
		return true
	}
	if _, id := s.raft.LeaderWithID(); id == "" {
		return false
	}
	return time.Since(s.raft.LastContact()) < d
}

// AppliedIndex returns the index applied to the local FSM.
func (s *Store) AppliedIndex() uint64 { return s.fsm.appliedIndex() }

func mapRaftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	case errors.Is(err, raft.ErrRaftShutdown), errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Propose replicates one command and returns the FSM's answer. Only the
// leader may propose; the caller must have validated and stamped it.
//
// Proposals go through a group commit: while maxInflight entries are in
// Raft, new proposals queue, and the next entry takes every queued one as
// a single CmdBatch. An idle store proposes at once; a busy one
// writes, replicates and applies hundreds of commands per Raft entry.
func (s *Store) Propose(ctx context.Context, t CommandType, m proto.Message) (proto.Message, error) {
	data, err := EncodeCommand(t, m)
	if err != nil {
		return nil, err
	}
	p := &proposal{data: data, done: make(chan *result, 1), start: time.Now()}
	select {
	case s.propCh <- []*proposal{p}:
	case <-ctx.Done():
		return nil, ctx.Err() // never queued: not applied
	case <-s.done:
		return nil, ErrUnavailable
	}
	select {
	case r := <-p.done:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
	case <-s.done:
		// Queued, so possibly handed to Raft and committed: not
		// ErrUnavailable, which promises the command was never proposed.
		return nil, fmt.Errorf("%w: store shutting down", ErrUnknownOutcome)
	}
}

// proposeMany queues several commands at once (they usually share one
// Raft entry) and returns one result per command, in order.
func (s *Store) proposeMany(ctx context.Context, cmds [][]byte) ([]*result, error) {
	ps := make([]*proposal, len(cmds))
	now := time.Now()
	for i, data := range cmds {
		ps[i] = &proposal{data: data, done: make(chan *result, 1), start: now}
	}
	// One send: the group is never split across Raft entries, so the
	// request waits for one round, not two.
	select {
	case s.propCh <- ps:
	case <-ctx.Done():
		return nil, ctx.Err() // never queued: not applied
	case <-s.done:
		return nil, ErrUnavailable
	}
	out := make([]*result, len(ps))
	for i, p := range ps {
		select {
		case out[i] = <-p.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrUnknownOutcome, ctx.Err())
		case <-s.done:
			return nil, fmt.Errorf("%w: store shutting down", ErrUnknownOutcome)
		}
	}
	return out, nil
}

type proposal struct {
	data  []byte
	done  chan *result
	start time.Time
}

const (
	// maxInflight bounds Raft entries proposed but not yet applied by the
	// group commit. One: measured on fsync-bound disks, overlapping rounds
	// only make each round slower (their fsyncs contend) and the batches
	// smaller; a single round in flight carries everything that queued
	// during the previous one (at 64 clients: ~2 ms rounds of ~20
	// commands, against ~3-5 ms rounds of ~5-14 with 2-8 in flight).
	maxInflight = 1
	// maxBatch bounds commands and bytes per Raft entry.
	maxBatch      = 1024
	maxBatchBytes = 2 << 20
)

func (s *Store) runProposer() {
	defer s.wg.Done()
	sem := make(chan struct{}, maxInflight)
	var carry []*proposal // a group that did not fit the previous entry
	for {
		select {
		case sem <- struct{}{}:
		case <-s.done:
			return
		}
		group := carry
		carry = nil
		if group == nil {
			select {
			case group = <-s.propCh:
			case <-s.done:
				return
			}
		}
		batch := append([]*proposal(nil), group...)
		size := 0
		for _, p := range group {
			size += len(p.data)
		}
	drain:
		for len(batch) < maxBatch && size < maxBatchBytes {
			select {
			case g := <-s.propCh:
				gsize := 0
				for _, p := range g {
					gsize += len(p.data)
				}
				if len(batch)+len(g) > maxBatch || size+gsize > maxBatchBytes {
					carry = g
					break drain
				}
				batch = append(batch, g...)
				size += gsize
			default:
				break drain
			}
		}
		first := batch[0]
		data := first.data
		if len(batch) > 1 {
			cmds := make([][]byte, len(batch))
			for i, p := range batch {
				cmds[i] = p.data
			}
			var err error
			if data, err = EncodeCommand(CmdBatch, &pb.BatchCommand{Commands: cmds}); err != nil {
				s.finish(batch, nil, err)
				<-sem
				continue
			}
		}
		s.batchSize.Observe(float64(len(batch)))
		f := s.raft.Apply(data, s.cfg.ApplyTimeout)
		sent := time.Now()
		go func() {
			defer func() { <-sem }()
			defer func() { s.raftSeconds.Observe(time.Since(sent).Seconds()) }()
			// Raft does not answer futures still queued when it shuts
			// down; Close stops waiting through s.done instead.
			if err := f.Error(); err != nil {
				if errors.Is(err, raft.ErrRaftShutdown) {
					// Raft answers a committed entry's future with
					// ErrRaftShutdown when it stops before applying it
					// (and a waiting future when it stops at all): the
					// command may be in the log, so the outcome is unknown.
					err = fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
				} else {
					err = mapRaftError(err)
				}
				s.finish(batch, nil, err)
				return
			}
			s.finish(batch, f.Response(), nil)
		}()
	}
}

// finish hands each proposal of a batch its result.
func (s *Store) finish(batch []*proposal, resp any, err error) {
	now := time.Now()
	for i, p := range batch {
		r := &result{err: err}
		if err == nil {
			switch v := resp.(type) {
			case *result:
				if len(batch) == 1 && v != nil {
					r = v
				}
			case batchResult:
				if len(v) == len(batch) && v[i] != nil {
					r = v[i]
					// Raft's log cache keeps the leader's last 4096
					// entries, each through its future and so its
					// response: keeping the results (stored rows, their
					// clones) too held ~300 MB on the leader after a
					// 1,000,000-home bulk load. Only the waiter needs r.
					v[i] = nil
				}
			}
			if r.err == nil && r.resp == nil {
				r = &result{err: fmt.Errorf("%w: no FSM result", ErrUnknownOutcome)}
			}
		}
		s.applySeconds.Observe(now.Sub(p.start).Seconds())
		p.done <- r
	}
}

type readIndexResult struct {
	index uint64
	err   error
}

// ReadBarrier makes the next local read linearizable: it confirms this
// replica is still leader after the call began (one heartbeat round shared
// by every read waiting at that moment) and waits until the FSM has
// applied everything the leader had in its log then.
func (s *Store) ReadBarrier(ctx context.Context) error {
	ch := make(chan readIndexResult, 1)
	s.ri.Lock()
	s.ri.waiting = append(s.ri.waiting, ch)
	if !s.ri.running {
		s.ri.running = true
		go s.readIndexLoop()
	}
	s.ri.Unlock()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		return s.WaitApplied(ctx, r.index)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) readIndexLoop() {
	for {
		s.ri.Lock()
		batch := s.ri.waiting
		s.ri.waiting = nil
		if len(batch) == 0 {
			s.ri.running = false
			s.ri.Unlock()
			return
		}
		s.ri.Unlock()
		// Captured after every waiter in batch arrived. LastIndex covers
		// entries a new leader inherited but has not committed yet.
		idx := s.raft.LastIndex()
		err := mapRaftError(s.raft.VerifyLeader().Error())
		for _, ch := range batch {
			ch <- readIndexResult{idx, err}
		}
	}
}

// WaitApplied blocks until the local FSM has applied index.
func (s *Store) WaitApplied(ctx context.Context, index uint64) error {
	for {
		ch := s.fsm.appliedNotify()
		if s.fsm.appliedIndex() >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return ErrUnavailable
		}
	}
}

// Watch subscribes to changes applied on this replica after index (0: only
// new ones).
func (s *Store) Watch(after uint64) *Subscription { return s.fsm.hub.subscribe(after) }

// Snapshot forces a Raft snapshot (tests, admin).
func (s *Store) Snapshot() error { return s.raft.Snapshot().Error() }

// TakeSnapshot takes a Raft snapshot of this replica now and describes it
// (the `Snapshot` admin RPC). When Raft has nothing to snapshot it
// describes the newest snapshot (Duration 0) instead of failing: the caller
// wanted one covering the current state, and there is one.
func (s *Store) TakeSnapshot() (*pb.SnapshotResponse, error) {
	t0 := time.Now()
	err := s.raft.Snapshot().Error()
	took := time.Since(t0)
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		took, err = 0, nil
	}
	if err != nil {
		return nil, mapRaftError(err)
	}
	// List reads only the snapshots' meta files (not their data), newest
	// first.
	metas, err := s.snaps.List()
	if err != nil {
		return nil, err
	}
	if len(metas) == 0 {
		return nil, fmt.Errorf("%w: snapshot taken but not listed", ErrUnavailable)
	}
	return &pb.SnapshotResponse{Index: metas[0].Index, SizeBytes: metas[0].Size, DurationUs: took.Microseconds()}, nil
}

// Join adds a node to the cluster (leader only).
func (s *Store) Join(ctx context.Context, req *pb.JoinRequest) error {
	if err := s.cfg.Limits.id("node id", req.GetNodeId()); err != nil {
		return err
	}
	if err := s.cfg.Limits.address("raft address", req.GetRaftAddress()); err != nil {
		return err
	}
	id, addr := raft.ServerID(req.GetNodeId()), raft.ServerAddress(req.GetRaftAddress())
	var f raft.IndexFuture
	if req.GetNonVoter() {
		f = s.raft.AddNonvoter(id, addr, 0, s.cfg.ApplyTimeout)
	} else {
		f = s.raft.AddVoter(id, addr, 0, s.cfg.ApplyTimeout)
	}
	if err := f.Error(); err != nil {
		return mapRaftError(err)
	}
	if req.GetGrpcAddress() == "" {
		return nil
	}
	_, err := s.Propose(ctx, CmdSetNodeAddress, &pb.SetNodeAddressCommand{NodeId: req.GetNodeId(), GrpcAddress: req.GetGrpcAddress()})
	return err
}

// Remove takes a node out of the cluster (leader only).
func (s *Store) Remove(ctx context.Context, nodeID string) error {
	if err := s.cfg.Limits.id("node id", nodeID); err != nil {
		return err
	}
	if err := s.raft.RemoveServer(raft.ServerID(nodeID), 0, s.cfg.ApplyTimeout).Error(); err != nil {
		return mapRaftError(err)
	}
	_, err := s.Propose(ctx, CmdRemoveNodeAddress, &pb.RemoveNodeAddressCommand{NodeId: nodeID})
	return err
}

// Status describes this replica's view of the cluster.
func (s *Store) Status() (*pb.StatusResponse, error) {
	out := &pb.StatusResponse{
		NodeId:       s.cfg.NodeID,
		RaftState:    s.raft.State().String(),
		AppliedIndex: s.fsm.appliedIndex(),
		LastIndex:    s.raft.LastIndex(),
		Term:         s.raft.CurrentTerm(),
	}
	out.LeaderId, out.LeaderGrpcAddress = s.Leader()
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftError(err)
	}
	addrs, err := s.fsm.nodeAddresses()
	if err != nil {
		return nil, err
	}
	for _, srv := range cf.Configuration().Servers {
		out.Nodes = append(out.Nodes, &pb.Node{
			NodeId:      string(srv.ID),
			RaftAddress: string(srv.Address),
			GrpcAddress: addrs[string(srv.ID)],
			Voter:       srv.Suffrage == raft.Voter,
			Leader:      string(srv.ID) == out.LeaderId,
		})
	}
	return out, nil
}

// Counts returns rows per table of the local FSM (tests, status pages).
func (s *Store) Counts() (map[string]int, error) { return s.fsm.counts() }

var _ raft.BatchingFSM = (*fsm)(nil)
