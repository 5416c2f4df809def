package gpg

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
)

// errNotLeader: this GPG does not hold the lease (any more); it must not
// write.
var errNotLeader = errors.New("gpg: lease not held")

// lease keeps this GPG's tenure of the store lease: acquire, renew every
// third of the TTL, and know locally when the tenure surely ended.
//
// The local deadline is counted from *before* each acquire request was
// sent, so it ends no later than the store's expiry (which counts from when
// the leader applied the request) give or take clock-rate drift; writes are
// also fenced by (holder, epoch) in the store, so a holder that is wrong
// about its deadline still cannot write after losing the lease.
type lease struct {
	store  Store
	name   string
	holder string
	ttl    time.Duration
	log    *slog.Logger
	now    func() time.Time
	onHeld func(bool)

	mu       sync.Mutex
	epoch    uint64
	deadline time.Time
	other    string // the holder seen when we did not get it
	reached  bool   // the store answered at least once
}

// holding reports whether this GPG may act now.
func (l *lease) holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch > 0 && l.now().Before(l.deadline)
}

// fence is what fenced writes carry; nil when not holding.
func (l *lease) fence() *client.Fence {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch == 0 || !l.now().Before(l.deadline) {
		return nil
	}
	return &client.Fence{Lease: l.name, Holder: l.holder, Epoch: l.epoch}
}

// tryOnce acquires or renews the lease once.
func (l *lease) tryOnce(ctx context.Context) {
	sent := l.now()
	cctx, cancel := context.WithTimeout(ctx, l.ttl/3)
	got, ok, err := l.store.AcquireLease(cctx, l.name, l.holder, l.ttl.Milliseconds())
	cancel()
	l.mu.Lock()
	was := l.epoch > 0 && l.now().Before(l.deadline)
	switch {
	case err != nil:
		// Keep the current deadline: it ends on its own.
		if ctx.Err() == nil {
			l.log.Warn("gpg lease: acquire failed", "err", err)
		}
	case ok:
		l.reached = true
		if got.GetEpoch() != l.epoch {
			l.log.Info("gpg lease: acquired; this GPG acts", "holder", l.holder, "epoch", got.GetEpoch())
		}
		l.epoch, l.deadline, l.other = got.GetEpoch(), sent.Add(l.ttl), ""
	default:
		l.reached = true
		if l.other != got.GetHolder() {
			l.log.Info("gpg lease: held by another GPG; standing by", "holder", got.GetHolder(), "epoch", got.GetEpoch())
		}
		l.epoch, l.deadline, l.other = 0, time.Time{}, got.GetHolder()
	}
	now := l.epoch > 0 && l.now().Before(l.deadline)
	l.mu.Unlock()
	if was != now && l.onHeld != nil {
		l.onHeld(now)
	}
}

// run keeps the lease until ctx ends, then releases it.
func (l *lease) run(ctx context.Context) {
	every := l.ttl / 3
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.release()
			return
		case <-t.C:
		}
		l.tryOnce(ctx)
		t.Reset(every)
	}
}

// release gives the lease up so a standby takes over at once instead of
// after the TTL.
func (l *lease) release() {
	l.mu.Lock()
	epoch := l.epoch
	held := epoch > 0 && l.now().Before(l.deadline)
	l.epoch, l.deadline = 0, time.Time{}
	l.mu.Unlock()
	if l.onHeld != nil && held {
		l.onHeld(false)
	}
	if !held {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.store.ReleaseLease(ctx, l.name, l.holder, epoch); err != nil {
		l.log.Warn("gpg lease: release failed; it expires on its own", "err", err)
	}
}
