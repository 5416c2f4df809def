package node

import "github.com/spf13/pflag"

// BindFlags defines the replica's flags on fs, writing into cfg's fields
// (so internal/config.Loader finds each flag's file key). Their defaults
// are cfg's current values.
func BindFlags(f *pflag.FlagSet, cfg *Config) {
	f.StringVar(&cfg.NodeID, "node-id", cfg.NodeID, "stable Raft id of this replica")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for the Raft log, FSM database and snapshots")
	f.StringVar(&cfg.GRPCAddress, "grpc-address", cfg.GRPCAddress, "gRPC listen address (clients and forwarding)")
	f.StringVar(&cfg.GRPCAdvertise, "grpc-advertise", cfg.GRPCAdvertise, "gRPC address other replicas use (default: the bound address)")
	f.StringVar(&cfg.RaftAddress, "raft-address", cfg.RaftAddress, "Raft TCP listen address")
	f.StringVar(&cfg.RaftAdvertise, "raft-advertise", cfg.RaftAdvertise, "Raft address peers dial (default: --raft-address)")
	f.StringVar(&cfg.HTTPAddress, "http-address", cfg.HTTPAddress, "HTTP address for /metrics, /healthz, /readyz (empty disables)")
	f.BoolVar(&cfg.Bootstrap, "bootstrap", cfg.Bootstrap, "form a new cluster if the data dir is empty")
	f.StringSliceVar(&cfg.Peers, "peers", cfg.Peers, "initial voters for --bootstrap, id=raft-host:port,... (same on every member)")
	f.StringSliceVar(&cfg.Join, "join", cfg.Join, "gRPC addresses of existing replicas to join through")
	f.BoolVar(&cfg.NonVoter, "non-voter", cfg.NonVoter, "join as a non-voting read replica")
	f.BoolVar(&cfg.FSMSync, "fsm-sync", cfg.FSMSync, "fsync the FSM database per batch (otherwise rebuilt from the log after a crash)")
	f.StringVar(&cfg.RaftLogStore, "raft-log-store", cfg.RaftLogStore, "Raft log store for a new data dir: wal or bolt (default: what the data dir holds, else wal); a data dir keeps the kind it was created with, a different value refuses to start")
	f.BoolVar(&cfg.NoSync, "unsafe-no-sync", cfg.NoSync, "skip fsync of the Raft log (loses acknowledged writes on power failure)")
	f.BoolVar(&cfg.ParallelLeaderAppend, "raft-parallel-append", cfg.ParallelLeaderAppend, "the leader writes its log in parallel with replicating it (the raft fork's option; off: upstream hashicorp/raft's order, write then replicate)")
	f.Var(&cfg.HeartbeatTimeout, "heartbeat-timeout", "Raft heartbeat timeout")
	f.Var(&cfg.ElectionTimeout, "election-timeout", "Raft election timeout")
	f.Var(&cfg.CommitTimeout, "commit-timeout", "longest quiet time (1-2x) before the leader tells followers what committed, and so before their watchers see a write")
	f.Var(&cfg.SnapshotInterval, "snapshot-interval", "how often to check whether to snapshot")
	f.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", cfg.SnapshotThreshold, "log entries between snapshots")
	f.Uint64Var(&cfg.TrailingLogs, "trailing-logs", cfg.TrailingLogs, "log entries kept after a snapshot (0: Raft's default, 10240); a follower further behind installs the snapshot")
	f.IntVar(&cfg.MaxContextBytes, "max-context-bytes", cfg.MaxContextBytes, "largest application submission context accepted")
	cfg.TLS.BindFlags(f, "", "replica")
	f.IntVar(&cfg.GRPCMaxConns, "grpc-max-conns", cfg.GRPCMaxConns, "gRPC connections open at once (beyond it the oldest unauthenticated one is closed, else the newcomer)")
	f.IntVar(&cfg.GRPCMaxConnsPerAddr, "grpc-max-conns-per-addr", cfg.GRPCMaxConnsPerAddr, "gRPC connections open at once from one IP (raise behind a NAT)")
	f.IntVar(&cfg.GRPCMaxPendingHandshakes, "grpc-max-pending-handshakes", cfg.GRPCMaxPendingHandshakes, "gRPC connections not yet authenticated at once")
	f.Var(&cfg.GRPCHandshakeTimeout, "grpc-handshake-timeout", "a gRPC connection must finish its TLS handshake and HTTP/2 preface within this")
	f.Var(&cfg.RaftHelloTimeout, "raft-hello-timeout", "an accepted Raft connection must send its first byte within this (TLS only)")
	f.Var(&cfg.RaftHandshakeTimeout, "raft-handshake-timeout", "an accepted Raft connection must finish its TLS handshake within this")
	f.IntVar(&cfg.RaftMaxPendingHandshakes, "raft-max-pending-handshakes", cfg.RaftMaxPendingHandshakes, "Raft handshakes at once from addresses that are not replicas (beyond it the oldest is closed)")
	f.IntVar(&cfg.RaftMaxPendingPerAddr, "raft-max-pending-handshakes-per-addr", cfg.RaftMaxPendingPerAddr, "Raft handshakes at once from one IP that is not a replica's")
	f.IntVar(&cfg.RaftMaxPendingPerPeer, "raft-max-pending-handshakes-per-peer", cfg.RaftMaxPendingPerPeer, "Raft handshakes at once from one replica's IP (a pool of its own)")
	f.BoolVar(&cfg.Insecure, "insecure", cfg.Insecure, "serve gRPC and Raft in plaintext without authentication (development only; logs a warning)")
	f.IntVar(&cfg.MaxListApplications, "max-list-applications", cfg.MaxListApplications, "cap of one application-home listing (yarn.federation.state-store.max-applications)")
}
