package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// TestNewDirGetsDefaultLogStore: an empty data dir gets DefaultLogStore and
// its files.
func TestNewDirGetsDefaultLogStore(t *testing.T) {
	dir := t.TempDir()
	s := openSingleKind(t, dir, "")
	defer s.Close()
	if s.LogStore() != DefaultLogStore {
		t.Fatalf("log store %q, want %q", s.LogStore(), DefaultLogStore)
	}
	if got, err := DetectLogStore(dir); err != nil || got != DefaultLogStore {
		t.Fatalf("DetectLogStore = %q, %v; want %q", got, err, DefaultLogStore)
	}
}

// TestLogStoreMismatchRefused: a data dir created with one log store and
// reopened with the other explicitly configured is refused with
// ErrLogStoreMismatch, before anything is written beside the old log; the
// old log is intact and opens with the right (or no) setting.
func TestLogStoreMismatchRefused(t *testing.T) {
	for _, c := range []struct{ created, asked string }{{LogStoreBolt, LogStoreWAL}, {LogStoreWAL, LogStoreBolt}} {
		t.Run(c.created+"-as-"+c.asked, func(t *testing.T) {
			dir := t.TempDir()
			s := openSingleKind(t, dir, c.created)
			if _, err := s.AddApplicationHome(context.Background(), &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			before := listDir(t, dir)

			_, err := openSingleErr(dir, c.asked)
			if !errors.Is(err, ErrLogStoreMismatch) {
				t.Fatalf("open %s dir as %s: err = %v, want ErrLogStoreMismatch", c.created, c.asked, err)
			}
			// The message says what is there and how to fix it.
			for _, want := range []string{dir, `"` + c.created + `"`, `"` + c.asked + `"`, "raft_log_store"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
			if after := listDir(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Fatalf("refused open changed the data dir: %v -> %v", before, after)
			}

			for _, kind := range []string{c.created, ""} {
				s2 := openSingleKind(t, dir, kind)
				if s2.LogStore() != c.created {
					t.Fatalf("reopened as %q with %q, want %q", s2.LogStore(), kind, c.created)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := s2.ReadBarrier(ctx); err != nil {
					t.Fatal(err)
				}
				cancel()
				if _, err := s2.GetApplicationHome("application_1_0001", false); err != nil {
					t.Fatalf("home written before the refused open: %v", err)
				}
				if err := s2.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestLogStoreBothPresentRefused: a dir holding both raft.db and wal/ (say,
// two replicas' files copied together) opens with neither.
func TestLogStoreBothPresentRefused(t *testing.T) {
	dir := t.TempDir()
	s := openSingleKind(t, dir, LogStoreBolt)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, walLogDir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"", LogStoreBolt, LogStoreWAL} {
		if _, err := openSingleErr(dir, kind); !errors.Is(err, ErrLogStoreMismatch) {
			t.Fatalf("open with %q: err = %v, want ErrLogStoreMismatch", kind, err)
		}
	}
}

func TestLogStoreConfigErrors(t *testing.T) {
	if _, err := openSingleErr(t.TempDir(), "leveldb"); err == nil || !strings.Contains(err.Error(), "leveldb") {
		t.Fatalf("unknown kind: err = %v", err)
	}
	// raft-wal cannot skip fsync: asking for both is refused, and an
	// unsynced log with no kind named is bolt.
	_, trans := raft.NewInmemTransport("n1")
	if _, err := Open(Config{NodeID: "n1", Dir: t.TempDir(), Transport: trans, LogStore: LogStoreWAL, NoSync: true}); err == nil || !strings.Contains(err.Error(), "unsafe_no_sync") {
		t.Fatalf("wal + NoSync: err = %v", err)
	}
	if kind, err := resolveLogStore(t.TempDir(), "", true); err != nil || kind != LogStoreBolt {
		t.Fatalf("NoSync, no kind: %q, %v; want bolt", kind, err)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestWALIsMonotonic: raft must see the WAL as monotonic through our
// wrapper and its LogCache, or a restored snapshot would leave a gap the WAL
// refuses (raft deletes the old log only for monotonic stores).
func TestWALIsMonotonic(t *testing.T) {
	s := openSingleKind(t, t.TempDir(), LogStoreWAL)
	defer s.Close()
	if m, ok := s.logs.(raft.MonotonicLogStore); !ok || !m.IsMonotonic() {
		t.Fatal("WAL log store is not a raft.MonotonicLogStore")
	}
}

// TestLogStoreTailTruncationSurvivesRestart: a follower whose uncommitted
// suffix is cut (Raft's DeleteRange up to the last index, as when a new
// leader overrides it) and which then restarts must read its log. raft-wal
// v0.4.0 marked the tail segment sealed without writing its index block, so
// the next open panicked in raft.NewRaft ("sealed segment has no index
// block": found by TestStoreLinearizableUnderFaults; raft-wal issue 31,
// fixed in v0.4.1).
func TestLogStoreTailTruncationSurvivesRestart(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			hlog := hclog.NewNullLogger()
			ls, err := openLogStore(dir, kind, false, hlog)
			if err != nil {
				t.Fatal(err)
			}
			var logs []*raft.Log
			for i := uint64(1); i <= 20; i++ {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
			}
			if err := ls.StoreLogs(logs); err != nil {
				t.Fatal(err)
			}
			if err := ls.DeleteRange(18, 20); err != nil {
				t.Fatal(err)
			}
			if err := ls.StoreLogs([]*raft.Log{{Index: 18, Term: 2, Type: raft.LogCommand, Data: []byte("new")}}); err != nil {
				t.Fatal(err)
			}
			if err := ls.DeleteRange(18, 18); err != nil {
				t.Fatal(err)
			}
			if err := ls.Close(); err != nil {
				t.Fatal(err)
			}
			ls, err = openLogStore(dir, kind, false, hlog)
			if err != nil {
				t.Fatal(err)
			}
			defer ls.Close()
			if last, err := ls.LastIndex(); err != nil || last != 17 {
				t.Fatalf("last index %d, %v after restart; want 17", last, err)
			}
			for i := uint64(1); i <= 17; i++ {
				var l raft.Log
				if err := ls.GetLog(i, &l); err != nil || l.Data[0] != byte(i) {
					t.Fatalf("entry %d after restart: %v %v", i, l.Data, err)
				}
			}
			// And it appends on from there.
			if err := ls.StoreLogs([]*raft.Log{{Index: 18, Term: 3, Type: raft.LogCommand, Data: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
