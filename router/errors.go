package router

import (
	"errors"

	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Sentinel errors. They are translated to Hadoop exception classes only at
// the IPC and REST edges (see toRemote and the REST error writer).
var (
	// ErrNoHome: the store has no home row for an application.
	ErrNoHome = errors.New("no home sub-cluster recorded")
	// ErrNoPolicy: the store has no policy for a queue.
	ErrNoPolicy = errors.New("no policy configured")
	// The routing sentinels the rooms translate too live in router/fed.
	ErrNoActiveSubCluster    = fed.ErrNoActiveSubCluster
	ErrSubClusterUnavailable = fed.ErrSubClusterUnavailable
	ErrSubClusterDown        = fed.ErrSubClusterDown
	ErrAppNotFound           = fed.ErrAppNotFound
	// ErrBadRequest: the client request is malformed.
	ErrBadRequest = restwire.ErrBadRequest
	// ErrUnsupported: the call has no federated meaning yet.
	ErrUnsupported = errors.New("not supported by the federation router")
	// errCrash is returned by an injected crash point (tests only).
	errCrash = errors.New("router crashed (injected)")
)

// SubClusterError names the sub-cluster a failure came from (router/fed).
type SubClusterError = fed.SubClusterError
