// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is not part of upstream hashicorp/raft: it is the yarnfed fork's
// Config.ParallelLeaderAppend (see FORK.md).

package raft

import (
	"sync"
	"time"

	"github.com/hashicorp/go-metrics/compat"
)

// localAppender writes a leader's new entries to its own log store on a
// goroutine of its own, so that replication to the followers (which reads
// the entries from pending until they are in the store) runs while the
// leader's write and fsync are in progress. One per leadership term; only
// the leader loop enqueues, flushes and stops it.
//
// The leader counts itself towards the commit quorum only with the index
// written reports, i.e. once the store has returned from StoreLogs: an
// entry is committed only when a majority holds it durably, as before.
type localAppender struct {
	r *Raft
	// queue carries batches (and flush markers) to the writer in order.
	queue chan appendBatch
	// notifyCh (capacity 1) tells the leader loop a write has finished.
	notifyCh chan struct{}
	// doneCh is closed when the writer goroutine has returned.
	doneCh chan struct{}

	mu sync.Mutex
	// pending holds the entries handed to the writer and not yet written
	// successfully, in index order without gaps.
	pending []*Log
	// written, writtenTerm: the last entry the store has accepted
	// (initially the log's last entry when the term began).
	written, writtenTerm uint64
	// err is the first failed write. Nothing is written after it: a later
	// batch would leave a gap.
	err error
}

type appendBatch struct {
	logs []*Log
	// flush, when set, marks a flush: closed once every batch queued
	// before it has been written (or skipped after an error).
	flush chan struct{}
}

func newLocalAppender(r *Raft) *localAppender {
	idx, term := r.getLastLog()
	a := &localAppender{
		r:           r,
		queue:       make(chan appendBatch, 128),
		notifyCh:    make(chan struct{}, 1),
		doneCh:      make(chan struct{}),
		written:     idx,
		writtenTerm: term,
	}
	r.goFunc(a.run)
	return a
}

// enqueue hands a batch to the writer. The entries are readable through
// lookup before enqueue returns, so the caller may advance lastLog and
// trigger replication right after.
func (a *localAppender) enqueue(logs []*Log) {
	a.mu.Lock()
	a.pending = append(a.pending, logs...)
	a.mu.Unlock()
	a.queue <- appendBatch{logs: logs}
}

// lookup copies a pending entry into out.
func (a *localAppender) lookup(index uint64, out *Log) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) == 0 {
		return false
	}
	first := a.pending[0].Index
	if index < first || index-first >= uint64(len(a.pending)) {
		return false
	}
	*out = *a.pending[index-first]
	return true
}

// status reports the last entry written and the first write error.
func (a *localAppender) status() (index, term uint64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.written, a.writtenTerm, a.err
}

// flush waits until every batch enqueued so far has been written or
// skipped.
func (a *localAppender) flush() {
	ch := make(chan struct{})
	a.queue <- appendBatch{flush: ch}
	<-ch
}

// stop flushes, ends the writer and forgets the pending entries.
func (a *localAppender) stop() {
	close(a.queue)
	<-a.doneCh
	a.mu.Lock()
	a.pending = nil
	a.mu.Unlock()
}

func (a *localAppender) run() {
	defer close(a.doneCh)
	for b := range a.queue {
		var flushes []chan struct{}
		var logs []*Log
		if b.flush != nil {
			flushes = append(flushes, b.flush)
		} else {
			logs = append(logs, b.logs...)
		}
		// Group every batch already queued into one write (one fsync).
		closed := false
	gather:
		for {
			select {
			case nb, ok := <-a.queue:
				if !ok {
					closed = true
					break gather
				}
				if nb.flush != nil {
					flushes = append(flushes, nb.flush)
				} else {
					logs = append(logs, nb.logs...)
				}
			default:
				break gather
			}
		}
		if len(logs) > 0 {
			a.write(logs)
		}
		for _, ch := range flushes {
			close(ch)
		}
		if closed {
			return
		}
	}
}

func (a *localAppender) write(logs []*Log) {
	a.mu.Lock()
	failed := a.err != nil
	a.mu.Unlock()
	if failed {
		return
	}
	start := time.Now()
	err := a.r.logs.StoreLogs(logs)
	metrics.MeasureSince([]string{"raft", "leader", "parallelAppend"}, start)
	last := logs[len(logs)-1]
	a.mu.Lock()
	if err != nil {
		a.err = err
	} else {
		a.written, a.writtenTerm = last.Index, last.Term
		// The store now serves them; keep only what is still queued.
		n := 0
		for n < len(a.pending) && a.pending[n].Index <= last.Index {
			n++
		}
		a.pending = append([]*Log(nil), a.pending[n:]...)
	}
	a.mu.Unlock()
	asyncNotifyCh(a.notifyCh)
}

// replicationLog reads an entry for an AppendEntries request: from the
// leader's pending local writes first, then from the log store.
func (r *Raft) replicationLog(index uint64, out *Log) error {
	if a := r.localAppend.Load(); a != nil && a.lookup(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}

// localAppendDone runs on the leader loop after the appender reported a
// finished write: it counts the leader's own durable index towards the
// commit quorum, or steps down after a failed write.
func (r *Raft) localAppendDone(a *localAppender) {
	index, term, err := a.status()
	if err == nil {
		r.leaderState.commitment.match(r.localID, index)
		return
	}
	r.logger.Error("failed to commit logs", "error", err)
	// The entries after index may be on followers and may be committed
	// by them: their futures must not report this error (the leader's
	// exit answers them ErrLeadershipLost), and this leader must not
	// reuse their indexes, so it steps down. Wait for the writer to skip
	// whatever is still queued, then forget the entries it did not write.
	a.flush()
	r.setLastLog(index, term)
	r.setState(Follower)
}

// settleLocalAppends waits for the leader's queued local writes and
// accounts for them, before the leader loop does something that reads or
// changes the log store directly.
func (r *Raft) settleLocalAppends() {
	a := r.leaderState.appender
	if a == nil {
		return
	}
	a.flush()
	drainNotifyCh(a.notifyCh)
	r.localAppendDone(a)
}
