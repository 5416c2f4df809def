package router

import (
	"errors"
	"fmt"

	"github.com/yarnfed/yarnfed/router/yarnid"
)

// Sentinel errors. They are translated to Hadoop exception classes only at
// the IPC and REST edges (see toRemote and the REST error writer).
var (
	// ErrNoHome: the store has no home row for an application.
	ErrNoHome = errors.New("no home sub-cluster recorded")
	// ErrNoPolicy: the store has no policy for a queue.
	ErrNoPolicy = errors.New("no policy configured")
	// ErrNoActiveSubCluster: nothing is routable, even after waiting out the
	// failover window.
	ErrNoActiveSubCluster = errors.New("no active sub-cluster available")
	// ErrSubClusterUnavailable: the sub-cluster's circuit breaker is open, so
	// the call was not sent. Safe to retry elsewhere (nothing reached the RM).
	ErrSubClusterUnavailable = errors.New("sub-cluster unavailable (circuit open)")
	// ErrSubClusterDown: the sub-cluster a call must go to (an app's home)
	// is down, hung or failing over and is expected back: the client should
	// retry, as it would retry an RM it talks to directly: IPC answers
	// StandbyException (see toRemote), REST 503.
	ErrSubClusterDown = errors.New("sub-cluster temporarily unavailable, retry later")
	// ErrAppNotFound: no sub-cluster knows the application.
	ErrAppNotFound = errors.New("application not found in any sub-cluster")
	// ErrBadRequest: the client request is malformed.
	ErrBadRequest = yarnid.ErrBadRequest
	// ErrUnsupported: the call has no federated meaning yet.
	ErrUnsupported = errors.New("not supported by the federation router")
	// errCrash is returned by an injected crash point (tests only).
	errCrash = errors.New("router crashed (injected)")
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
