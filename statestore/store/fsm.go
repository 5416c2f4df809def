package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Buckets of the FSM database. Values are protobuf unless noted.
var (
	bMeta         = []byte("meta")         // applied index, clean flag, version, counters
	bSubClusters  = []byte("subclusters")  // id -> SubClusterInfo
	bApps         = []byte("apps")         // app id -> ApplicationHome without context
	bAppContexts  = []byte("appctx")       // app id -> raw submission context
	bAppsByTime   = []byte("apptime")      // be64(create ms) | app id -> home sub-cluster id (raw)
	bPolicies     = []byte("policies")     // queue -> PolicyConfiguration
	bReservations = []byte("reservations") // reservation id -> ReservationHome
	bMasterKeys   = []byte("masterkeys")   // be32(key id) -> MasterKey
	bTokens       = []byte("tokens")       // identifier -> DelegationToken
	bNodes        = []byte("nodes")        // raft node id -> gRPC address (raw)
	bLeases       = []byte("leases")       // lease name -> Lease
	bUAMs         = []byte("uams")         // uamKey(app id, sub-cluster id) -> UAMRecord

	// Federation data: what Format wipes. Nodes and meta are the store's own.
	dataBuckets = [][]byte{bSubClusters, bApps, bAppContexts, bAppsByTime, bPolicies, bReservations, bMasterKeys, bTokens, bLeases, bUAMs}
	allBuckets  = append([][]byte{bMeta, bNodes}, dataBuckets...)

	kApplied = []byte("applied")
	kClean   = []byte("clean")
	kVersion = []byte("version")
)

// CurrentVersion is the data format this code writes. A major change is
// incompatible; Hadoop's checkVersion contract.
var CurrentVersion = &pb.Version{Major: 1, Minor: 0}

func counterKey(c pb.Counter) []byte { return []byte(fmt.Sprintf("counter/%d", int32(c))) }

// result is what Apply hands back through the raft future.
type result struct {
	resp proto.Message
	err  error
}

// fsm applies commands to a bbolt database. All state lives in the
// database, so memory stays flat however many applications are stored,
// and restarts need not replay the log when the file is trusted.
type fsm struct {
	path   string
	noSync bool
	logger *slog.Logger
	hub    *hub

	mu sync.RWMutex // held for writing only while Restore swaps db
	db *bolt.DB

	applied   atomic.Uint64
	notifyMu  sync.Mutex
	appliedCh chan struct{} // closed and replaced whenever applied advances

	batches, commands atomic.Uint64
}

func openDB(path string, noSync bool) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		NoSync:         noSync,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		// Reserve address space up front: a remap waits for every open
		// read transaction, including a snapshot being persisted.
		InitialMmapSize: 1 << 30,
	})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		m := tx.Bucket(bMeta)
		if m.Get(kVersion) == nil {
			v, _ := proto.Marshal(CurrentVersion)
			return m.Put(kVersion, v)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// openFSM opens the FSM database. With noSync the file is only trusted
// after a clean Close: after a crash it is discarded and Raft rebuilds it
// from the latest snapshot and the log. trusted reports whether the file
// was kept.
func openFSM(path string, noSync bool, logger *slog.Logger) (f *fsm, trusted bool, err error) {
	if noSync {
		if db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true}); err == nil {
			clean := false
			_ = db.View(func(tx *bolt.Tx) error {
				if m := tx.Bucket(bMeta); m != nil {
					clean = len(m.Get(kClean)) == 1 && m.Get(kClean)[0] == 1
				}
				return nil
			})
			db.Close()
			if !clean {
				logger.Warn("statestore: FSM database not closed cleanly; rebuilding from snapshot and log", "path", path)
				if err := os.Remove(path); err != nil {
					return nil, false, err
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			logger.Warn("statestore: FSM database unreadable; rebuilding from snapshot and log", "path", path, "error", err)
			if err := os.Remove(path); err != nil {
				return nil, false, err
			}
		}
	}
	db, err := openDB(path, noSync)
	if err != nil {
		return nil, false, fmt.Errorf("open FSM database %s: %w", path, err)
	}
	f = &fsm{path: path, noSync: noSync, logger: logger, hub: newHub(8192), db: db, appliedCh: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if v := m.Get(kApplied); len(v) == 8 {
			f.applied.Store(binary.BigEndian.Uint64(v))
		}
		// From here on the file is dirty until Close marks it clean.
		return m.Put(kClean, []byte{0})
	})
	if err == nil && noSync {
		err = db.Sync()
	}
	if err != nil {
		db.Close()
		return nil, false, err
	}
	return f, f.applied.Load() > 0, nil
}

// close syncs the database and marks it clean.
func (f *fsm) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hub.close()
	err := f.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bMeta).Put(kClean, []byte{1}) })
	if err == nil {
		err = f.db.Sync()
	}
	return errors.Join(err, f.db.Close())
}

func (f *fsm) appliedIndex() uint64 { return f.applied.Load() }

func (f *fsm) setApplied(i uint64) {
	f.applied.Store(i)
	f.notifyMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.notifyMu.Unlock()
}

// appliedNotify returns a channel closed when the applied index next moves.
func (f *fsm) appliedNotify() <-chan struct{} {
	f.notifyMu.Lock()
	defer f.notifyMu.Unlock()
	return f.appliedCh
}

// view runs fn in a read transaction.
func (f *fsm) view(fn func(tx *bolt.Tx) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db.View(fn)
}

// Apply implements raft.FSM for single entries.
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch implements raft.BatchingFSM: one bbolt transaction (one
// commit, one fsync when syncing) per batch Raft hands over.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	if len(logs) == 0 {
		return out
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	applied := f.applied.Load()
	last := logs[len(logs)-1].Index
	if last <= applied {
		// Replay of entries already in the trusted database.
		for i := range out {
			out[i] = &result{err: ErrUnknownOutcome}
		}
		return out
	}
	var events []*pb.WatchEvent
	tx, err := f.db.Begin(true)
	if err != nil {
		panic(fmt.Sprintf("statestore: begin FSM transaction: %v", err))
	}
	for i, l := range logs {
		if l.Type != raft.LogCommand || l.Index <= applied {
			continue
		}
		out[i] = f.applyOne(tx, l, &events)
	}
	var ib [8]byte
	binary.BigEndian.PutUint64(ib[:], last)
	if err := tx.Bucket(bMeta).Put(kApplied, ib[:]); err != nil {
		panic(fmt.Sprintf("statestore: record applied index: %v", err))
	}
	if err := tx.Commit(); err != nil {
		// The state on disk no longer matches the log; continuing would
		// serve a fork.
		panic(fmt.Sprintf("statestore: commit FSM transaction: %v", err))
	}
	f.batches.Add(1)
	f.commands.Add(uint64(len(logs)))
	f.setApplied(last)
	f.hub.publish(events)
	return out
}

func (f *fsm) applyOne(tx *bolt.Tx, l *raft.Log, events *[]*pb.WatchEvent) any {
	t, m, err := DecodeCommand(l.Data)
	if errors.Is(err, errUnknownIgnorable) {
		f.logger.Warn("statestore: skipping unknown optional command", "type", int(t), "index", l.Index)
		return &result{}
	}
	if err != nil {
		// Every replica would fail the same way; stopping is the only way
		// not to diverge silently.
		panic(fmt.Sprintf("statestore: log entry %d: %v", l.Index, err))
	}
	if t == CmdBatch {
		b := m.(*pb.BatchCommand)
		out := make(batchResult, len(b.GetCommands()))
		for i, sub := range b.GetCommands() {
			st, sm, err := DecodeCommand(sub)
			if errors.Is(err, errUnknownIgnorable) {
				out[i] = &result{}
				continue
			}
			if err == nil && st == CmdBatch {
				err = errors.New("nested batch")
			}
			if err != nil {
				panic(fmt.Sprintf("statestore: log entry %d, batched command %d: %v", l.Index, i, err))
			}
			out[i] = f.applyDecoded(tx, l.Index, st, sm, events)
		}
		return out
	}
	return f.applyDecoded(tx, l.Index, t, m, events)
}

// batchResult holds one result per command of a CmdBatch entry.
type batchResult []*result

func (f *fsm) applyDecoded(tx *bolt.Tx, index uint64, t CommandType, m proto.Message, events *[]*pb.WatchEvent) *result {
	a := applier{tx: tx, index: index, events: events}
	resp, err := a.apply(t, m)
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) && !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrFenced) {
		panic(fmt.Sprintf("statestore: apply log entry %d type %d: %v", index, t, err))
	}
	return &result{resp: resp, err: err}
}

// Snapshot implements raft.FSM. The snapshot is a consistent copy of the
// whole database file taken from a read transaction, so Apply continues
// while it is written.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	tx, err := f.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &snapshot{tx: tx}, nil
}

type snapshot struct{ tx *bolt.Tx }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.tx.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() { _ = s.tx.Rollback() }

// Restore implements raft.FSM: the snapshot is a database file; it replaces
// ours.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	tmp := f.path + ".restore"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, rc); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("restore snapshot: %w", err)
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.db.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return err
	}
	db, err := openDB(f.path, f.noSync)
	if err != nil {
		return fmt.Errorf("reopen restored FSM database: %w", err)
	}
	var applied uint64
	err = db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if v := m.Get(kApplied); len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		}
		return m.Put(kClean, []byte{0})
	})
	if err != nil {
		db.Close()
		return err
	}
	f.db = db
	f.setApplied(applied)
	f.hub.publish([]*pb.WatchEvent{{Kind: pb.WatchEvent_RESET, Index: applied}})
	return nil
}
