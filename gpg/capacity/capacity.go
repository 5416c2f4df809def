// Package capacity is the contract between the GPG's capacity sources (today:
// Kubernetes co-location clusters, package gpg/kube) and the parts of the GPG
// that act on capacity (the policy generator and the capability it publishes).
// It holds types and Merge only, so either side can be built and tested
// alone.
package capacity

import "time"

// Resources is an amount of YARN-usable resources in YARN's units.
type Resources struct {
	MemoryMB int64 // MiB: floor(bytes / 2^20)
	VCores   int64 // floor(milli-cores / 1000)
}

// SubCluster is the capacity YARN can really use in one sub-cluster, as
// measured outside YARN.
type SubCluster struct {
	ID string // the federation sub-cluster id
	// Usable is what YARN can use now: for Kubernetes, the Koordinator batch
	// capacity of the nodes that run this sub-cluster's NodeManagers, minus the
	// batch requests of the other pods on those nodes. Never negative.
	Usable Resources
	// Nodes counts the nodes that contributed (a NodeManager runs there).
	Nodes int
	// ObservedAt is when the source last saw a change or resynced; a consumer
	// may treat a very old figure as unknown.
	ObservedAt time.Time
}

// Source supplies capacities. Implementations are safe for concurrent use.
type Source interface {
	// Snapshot returns the current capacity of every sub-cluster the source
	// knows, keyed by sub-cluster id. The caller may keep the map.
	Snapshot() map[string]SubCluster
	// Changed delivers a value (coalesced: at most one pending) after any
	// change that may alter Snapshot, so a consumer reacts to events instead
	// of polling.
	Changed() <-chan struct{}
}
