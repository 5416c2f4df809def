// Package fed is the vocabulary the router's rooms share: a sub-cluster's
// id and membership row, the error that names the sub-cluster a failure
// came from, the routing sentinels the REST and web UI edges translate,
// and the audit record a call's handlers fill in. It holds no behaviour
// of the router; the root aliases every name (router.SubClusterInfo is
// fed.SubClusterInfo), so the rooms speak the root's types without
// importing it.
package fed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/internal/rmbreaker"
	"github.com/yarnfed/yarnfed/policies"
)

// SubClusterID names a sub-cluster (one RM or RM HA pair), e.g. "SC-1".
type SubClusterID string

// SubClusterInfo is the membership row the router needs (Hadoop SubClusterInfo).
type SubClusterInfo struct {
	ID                     SubClusterID
	AMRMServiceAddress     string
	ClientRMServiceAddress string // may hold a comma-separated RM HA list
	RMAdminServiceAddress  string
	RMWebServiceAddress    string // host:port of the RM REST API (may be a comma-separated HA list)
	State                  policies.SubClusterState
	LastHeartbeat          time.Time
	LastStartTime          time.Time
	Capability             string // JSON of the RM's clusterMetrics object
	// Published is the capacity the GPG measured outside YARN (nil: none).
	Published *PublishedCapacity
}

// PublishedCapacity is what YARN can really use in a sub-cluster as the GPG
// measured it (Kubernetes batch capacity), kept apart from the RM's own
// capability, which heartbeats overwrite.
type PublishedCapacity struct {
	MemoryMB    int64
	VCores      int64
	Nodes       int32
	ObservedAt  time.Time
	PublishedAt time.Time
}

// Routing sentinels. They are translated to Hadoop exception classes only
// at the IPC (router) and REST (router/rest) edges.
var (
	// ErrNoActiveSubCluster: nothing is routable, even after waiting out the
	// failover window.
	ErrNoActiveSubCluster = errors.New("no active sub-cluster available")
	// ErrSubClusterUnavailable: the sub-cluster's circuit breaker is open, so
	// the call was not sent. Safe to retry elsewhere (nothing reached the RM).
	ErrSubClusterUnavailable = errors.New("sub-cluster unavailable (circuit open)")
	// ErrSubClusterDown: the sub-cluster a call must go to (an app's home)
	// is down, hung or failing over and is expected back: the client should
	// retry, as it would retry an RM it talks to directly: IPC answers
	// StandbyException, REST 503.
	ErrSubClusterDown = errors.New("sub-cluster temporarily unavailable, retry later")
	// ErrAppNotFound: no sub-cluster knows the application.
	ErrAppNotFound = errors.New("application not found in any sub-cluster")
)

// SubClusterError names the sub-cluster a failure came from, so a client sees
// where and why (Hadoop often only says "no active sub-cluster").
type SubClusterError struct {
	SubCluster SubClusterID
	Method     string
	Err        error
}

func (e *SubClusterError) Error() string {
	return fmt.Sprintf("sub-cluster %s: %s: %v", e.SubCluster, e.Method, e.Err)
}

func (e *SubClusterError) Unwrap() error { return e.Err }

// Join keeps the first error's Java class (errors.As finds it) while the
// message names every failing sub-cluster.
func Join(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &multiError{first: errs[0], msg: strings.Join(msgs, "; ")}
}

type multiError struct {
	first error
	msg   string
}

func (m *multiError) Error() string { return m.msg }
func (m *multiError) Unwrap() error { return m.first }

// TimedOut reports whether err is a call that got no answer in time (a
// hung RM), as opposed to one refused or answered.
func TimedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Fan bounds one fan-out: at most Limit calls to sub-clusters at once (0:
// all at once) and every call within Timeout of the fan-out's start (0: no
// deadline of its own, the caller's context only). Sub-clusters waiting for
// a slot wait within the same deadline, so a fan-out over N sub-clusters
// costs at most Timeout, not N/Limit timeouts.
type Fan struct {
	Limit   int
	Timeout time.Duration
}

// ErrLeftOut is the error of a sub-cluster whose call had not answered
// when its fan-out's deadline passed.
var ErrLeftOut = errors.New("no answer within the fan-out deadline")

// FanOut runs fn on every sub-cluster in scs, at most f.Limit at once, and
// parts the answers that came from the errors, each in sub-cluster order.
// fn gets a context that ends at the fan-out's deadline. FanOut returns by
// that deadline even if an fn ignores its context: a call still running
// then counts as failed with ErrLeftOut (wrapped in a SubClusterError), and
// what it returns later is dropped.
func FanOut[T any](ctx context.Context, f Fan, scs []SubClusterInfo, fn func(context.Context, SubClusterInfo) (T, error)) (ok []T, failed []error) {
	if len(scs) == 0 {
		return nil, nil
	}
	cancel := context.CancelFunc(func() {})
	if f.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, f.Timeout)
	}
	defer cancel()
	workers := len(scs)
	if f.Limit > 0 && f.Limit < workers {
		workers = f.Limit
	}
	var (
		mu     sync.Mutex
		closed bool
		next   int
		out    = make([]T, len(scs))
		errs   = make([]error, len(scs))
		done   = make([]bool, len(scs))
		finish = make(chan struct{})
		left   = workers
	)
	// Workers take the next sub-cluster in order: at most `workers`
	// goroutines, not one per sub-cluster parked on a semaphore.
	for range workers {
		go func() {
			for {
				mu.Lock()
				if closed || next == len(scs) {
					left--
					if left == 0 && !closed {
						close(finish)
					}
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				v, err := fn(ctx, scs[i])
				mu.Lock()
				if !closed {
					out[i], errs[i], done[i] = v, err, true
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-finish:
	case <-ctx.Done():
	}
	mu.Lock()
	closed = true
	mu.Unlock()
	for i := range scs {
		switch {
		case !done[i]:
			failed = append(failed, &SubClusterError{SubCluster: scs[i].ID, Method: "fan-out",
				Err: fmt.Errorf("%w: %w", ErrLeftOut, context.Cause(ctx))})
		case errs[i] != nil:
			failed = append(failed, errs[i])
		default:
			ok = append(ok, out[i])
		}
	}
	return ok, failed
}

// FailedIDs names the sub-clusters of a fan-out's failures (the ones a
// partial answer leaves out); failures that name none are skipped.
func FailedIDs(failed []error) []SubClusterID {
	var ids []SubClusterID
	for _, err := range failed {
		var sce *SubClusterError
		if errors.As(err, &sce) {
			ids = append(ids, sce.SubCluster)
		}
	}
	return ids
}

// Audit carries what a call's handlers learned (the application, the
// sub-cluster the call went to) to the audit line its wrapper writes: the
// IPC wrapper in the root, the REST wrapper in router/rest, and the
// routing code both call fill in the same record.
type Audit struct {
	App string
	SC  SubClusterID

	mu      sync.Mutex
	leftOut []SubClusterID
}

// AddLeftOut records sub-clusters a partial answer of this call left out
// (the REST wrapper names them in a response header).
func (a *Audit) AddLeftOut(ids ...SubClusterID) {
	a.mu.Lock()
	a.leftOut = append(a.leftOut, ids...)
	a.mu.Unlock()
}

// LeftOut is what AddLeftOut recorded.
func (a *Audit) LeftOut() []SubClusterID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.leftOut)
}

type auditKey struct{}

// WithAudit gives ctx a fresh audit record.
func WithAudit(ctx context.Context) (context.Context, *Audit) {
	a := &Audit{}
	return context.WithValue(ctx, auditKey{}, a), a
}

// AuditOf is ctx's audit record; outside a wrapper, a harmless sink.
func AuditOf(ctx context.Context) *Audit {
	if a, _ := ctx.Value(auditKey{}).(*Audit); a != nil {
		return a
	}
	return &Audit{}
}

// SubClusterDown reports whether err is a sub-cluster that did not serve
// the call (refused, timed out, standby) rather than one that answered.
func SubClusterDown(err error) bool {
	var sce *SubClusterError
	return errors.As(err, &sce) && rmbreaker.RMDown(sce.Err)
}

// StoreStatus describes the federation state store as one replica sees it.
type StoreStatus struct {
	Kind          string // e.g. "raft state store"
	Replica       string // the replica that answered
	RaftState     string // its Raft role
	LeaderID      string
	LeaderAddress string // the leader's gRPC address
	Members       []StoreMember
	Term          uint64
	AppliedIndex  uint64
	LastIndex     uint64
}

// StoreMember is one replica of the store.
type StoreMember struct {
	ID, RaftAddress, GRPCAddress string
	Voter, Leader                bool
}
