package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	bolt "go.etcd.io/bbolt"
)

// Raft log stores (Config.LogStore). Both hold the log and the stable
// store (current term, vote), both durable: every StoreLogs batch is
// fsynced before it returns, and so is every term/vote change.
const (
	// LogStoreWAL is hashicorp/raft-wal (Consul's): append-only segment
	// files in Dir/wal, one fsync per batch; term and vote in its bbolt
	// meta file (wal-meta.db, fsynced per change).
	LogStoreWAL = "wal"
	// LogStoreBolt is raft-boltdb v2: log and stable store in one bbolt
	// file, Dir/raft.db; a commit costs two fsyncs (pages, then meta).
	LogStoreBolt = "bolt"
	// DefaultLogStore is what a new data dir gets when Config.LogStore is
	// empty. A data dir that already holds a log keeps its own kind.
	DefaultLogStore = LogStoreWAL
)

const (
	boltLogFile = "raft.db"
	walLogDir   = "wal"
)

// ErrLogStoreMismatch: the data dir holds a Raft log of another kind than
// the one configured. Opening the configured kind would start an empty log
// beside the old one: the replica would forget its term, vote and entries.
var ErrLogStoreMismatch = errors.New("statestore: raft log store mismatch")

// logStore is a Raft log and stable store in one.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// ValidLogStore reports whether name is a log store kind, or empty (auto).
func ValidLogStore(name string) error {
	switch name {
	case "", LogStoreWAL, LogStoreBolt:
		return nil
	}
	return fmt.Errorf("raft log store %q: want %q or %q", name, LogStoreWAL, LogStoreBolt)
}

// DetectLogStore reports which kind of Raft log dir holds: LogStoreBolt
// (raft.db), LogStoreWAL (wal/) or "" (none yet). A dir holding both is an
// error: which one is this replica's state cannot be known.
func DetectLogStore(dir string) (string, error) {
	hasBolt, err := exists(filepath.Join(dir, boltLogFile))
	if err != nil {
		return "", err
	}
	hasWAL, err := exists(filepath.Join(dir, walLogDir))
	if err != nil {
		return "", err
	}
	switch {
	case hasBolt && hasWAL:
		return "", fmt.Errorf("%w: %s holds both %s and %s/; move the one that is not this replica's state away", ErrLogStoreMismatch, dir, boltLogFile, walLogDir)
	case hasBolt:
		return LogStoreBolt, nil
	case hasWAL:
		return LogStoreWAL, nil
	}
	return "", nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// resolveLogStore picks the log store for dir: the kind already there, else
// the configured one, else DefaultLogStore (bolt when noSync asks for an
// unsynced log: raft-wal always fsyncs). An explicit choice that differs
// from what dir holds is refused, never obeyed.
func resolveLogStore(dir, want string, noSync bool) (string, error) {
	if err := ValidLogStore(want); err != nil {
		return "", err
	}
	have, err := DetectLogStore(dir)
	if err != nil {
		return "", err
	}
	kind := want
	switch {
	case have != "" && want != "" && have != want:
		return "", fmt.Errorf("%w: data dir %s holds a %q Raft log (%s) but raft_log_store is %q: this would start an empty log beside the existing one and lose the replica's term, vote and entries. Set raft_log_store to %q (or leave it empty to use what the dir holds)",
			ErrLogStoreMismatch, dir, have, logPath(have), want, have)
	case have != "":
		kind = have
	case want == "" && noSync:
		kind = LogStoreBolt
	case want == "":
		kind = DefaultLogStore
	}
	if noSync && kind != LogStoreBolt {
		return "", fmt.Errorf("statestore: unsafe_no_sync needs raft_log_store %q (raft-wal always fsyncs); this data dir uses %q", LogStoreBolt, kind)
	}
	return kind, nil
}

func logPath(kind string) string {
	if kind == LogStoreWAL {
		return walLogDir + "/"
	}
	return boltLogFile
}

// openLogStore opens (creating if needed) the log store of the given kind
// in dir.
func openLogStore(dir, kind string, noSync bool, hlog hclog.Logger) (logStore, error) {
	switch kind {
	case LogStoreBolt:
		return raftboltdb.New(raftboltdb.Options{
			Path: filepath.Join(dir, boltLogFile), NoSync: noSync,
			// The freelist is rebuilt on open instead of written on every
			// commit: fewer pages per fsync on the hot path.
			BoltOptions: &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType},
		})
	case LogStoreWAL:
		d := filepath.Join(dir, walLogDir)
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		// The new directory's entry must be durable before anything is
		// acknowledged from inside it (raft-wal syncs its own files and
		// wal/, not wal/'s parent).
		if err := syncDir(dir); err != nil {
			return nil, err
		}
		// v0.4.2 or later: v0.4.0 left the tail segment without its index
		// block after a tail truncation, so the next open failed
		// (TestLogStoreTailTruncationSurvivesRestart), and its Close left
		// the meta db's file lock held, so an in-process reopen hung.
		return wal.Open(d, wal.WithLogger(hlog.Named("wal")))
	}
	return nil, fmt.Errorf("raft log store %q: want %q or %q", kind, LogStoreWAL, LogStoreBolt)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
