// Package store is the Raft-replicated federation state store: it owns the
// Raft instance, its bbolt log and stable store, the snapshot store and the
// FSM whose state lives in its own bbolt file. The gRPC server
// (statestore/server) and the in-process harness drive it; other components
// reach it only through statestore/client.
package store

import "errors"

// Sentinel errors. The gRPC server maps them to status codes and the client
// maps the codes back, so callers can use errors.Is end to end.
var (
	// ErrNotFound: the named row does not exist.
	ErrNotFound = errors.New("statestore: not found")
	// ErrAlreadyExists: an insert found a row with the same key.
	ErrAlreadyExists = errors.New("statestore: already exists")
	// ErrInvalidArgument: the request is malformed; nothing was changed.
	ErrInvalidArgument = errors.New("statestore: invalid argument")
	// ErrNotLeader: this replica cannot serve a write or a linearizable
	// read; retry on (or forward to) the leader.
	ErrNotLeader = errors.New("statestore: not the leader")
	// ErrUnavailable: no leader is known, or the store is shutting down.
	ErrUnavailable = errors.New("statestore: unavailable")
	// ErrUnknownOutcome: leadership was lost after the command was
	// proposed; it may or may not have been applied.
	ErrUnknownOutcome = errors.New("statestore: outcome unknown (leadership lost)")
	// ErrFenced: a fenced write's caller no longer holds the lease it
	// named (another holder took it, or it expired); nothing was written.
	ErrFenced = errors.New("statestore: lease not held (fenced write refused)")
)
