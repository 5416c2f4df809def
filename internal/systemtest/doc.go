// Package systemtest drives the built yarnfed binary the way an operator
// would: real processes on loopback (a 3-replica state store, simrm
// sub-clusters, their agents, routers), SIGKILLed and restarted, and checked
// only from the outside (HTTP health endpoints, the state store's gRPC API,
// Hadoop IPC to the router and to each RM).
//
// The tests live in _test.go files; this file only names the package. Run
// them with `go test ./internal/systemtest/` (skipped under -short); set
// YARNFED_BIN to test a prebuilt binary instead of building one.
// README.md lists the same walkthrough as shell commands.
package systemtest
