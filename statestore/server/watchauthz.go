package server

import (
	"context"

	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

var ssPrefix = "/" + pb.StateStore_ServiceDesc.ServiceName + "/"

// watchReadOf is the read RPC whose authorization-table entry decides who
// may receive each kind of watch event: a watcher gets what it could read
// with the unary calls, no more (an agent may list sub-clusters but not
// application homes or policies).
var watchReadOf = map[pb.WatchEvent_Kind]string{
	pb.WatchEvent_SUB_CLUSTER_PUT:          ssPrefix + "ListSubClusters",
	pb.WatchEvent_SUB_CLUSTER_DELETED:      ssPrefix + "ListSubClusters",
	pb.WatchEvent_POLICY_PUT:               ssPrefix + "ListPolicies",
	pb.WatchEvent_POLICY_DELETED:           ssPrefix + "ListPolicies",
	pb.WatchEvent_APPLICATION_HOME_PUT:     ssPrefix + "ListApplicationHomes",
	pb.WatchEvent_APPLICATION_HOME_DELETED: ssPrefix + "ListApplicationHomes",
}

// watchAllowed returns which event kinds the caller in ctx may receive.
// Without TLS there is no identity and everything passes (--insecure).
// Control events (RESET, SYNCED, PROGRESS) always pass; a data kind not in
// watchReadOf is decided by the application-home readers' entry, the
// narrowest read (fail closed for kinds added later).
func watchAllowed(ctx context.Context) func(pb.WatchEvent_Kind) bool {
	id, ok := security.PeerIdentity(ctx)
	if !ok {
		return func(pb.WatchEvent_Kind) bool { return true }
	}
	cache := map[pb.WatchEvent_Kind]bool{}
	return func(k pb.WatchEvent_Kind) bool {
		switch k {
		case pb.WatchEvent_RESET, pb.WatchEvent_SYNCED, pb.WatchEvent_PROGRESS:
			return true
		}
		if v, ok := cache[k]; ok {
			return v
		}
		m, ok := watchReadOf[k]
		if !ok {
			m = ssPrefix + "ListApplicationHomes"
		}
		v := security.Allowed(id, m, nil) == nil
		cache[k] = v
		return v
	}
}
