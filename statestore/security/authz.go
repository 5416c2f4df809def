package security

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Role sets used by the table.
var (
	readers     = []Role{RoleAdmin, RoleReplica, RoleRouter, RoleAMRMProxy, RoleGPG}
	membership  = []Role{RoleAdmin, RoleReplica, RoleRouter, RoleAMRMProxy, RoleGPG, RoleAgent}
	routerWrite = []Role{RoleAdmin, RoleReplica, RoleRouter}
	adminOnly   = []Role{RoleAdmin, RoleReplica}
	gpgWrite    = []Role{RoleAdmin, RoleReplica, RoleGPG}
	agentWrite  = []Role{RoleAdmin, RoleReplica, RoleAgent}
	routerOnly  = []Role{RoleReplica, RoleRouter}
	uamWrite    = []Role{RoleReplica, RoleAMRMProxy}
	uamRead     = []Role{RoleReplica, RoleAMRMProxy, RoleRouter}
	uamDelete   = []Role{RoleReplica, RoleAMRMProxy, RoleRouter, RoleGPG}
)

var (
	ss = "/" + pb.StateStore_ServiceDesc.ServiceName + "/"
	cl = "/" + pb.Cluster_ServiceDesc.ServiceName + "/"
)

// Table maps every gRPC method (full name) of the state store to the roles
// allowed to call it. A method missing here is refused to everyone, and
// TestTableCoversEveryRPC fails until it is added.
var Table = map[string][]Role{
	// Membership: agents write their own sub-cluster; the router's admin
	// protocol and operators deregister.
	ss + "RegisterSubCluster":   agentWrite,
	ss + "Heartbeat":            agentWrite,
	ss + "DeregisterSubCluster": routerWrite,
	ss + "GetSubCluster":        membership,
	ss + "ListSubClusters":      membership,

	// Application homes: routers place applications; AMRMProxies and the
	// GPG read them; the GPG deletes old ones only through its fenced
	// DeleteApplicationHomes.
	ss + "AddApplicationHome":     routerWrite,
	ss + "AddApplicationHomes":    routerWrite,
	ss + "UpdateApplicationHome":  routerWrite,
	ss + "GetApplicationHome":     readers,
	ss + "DeleteApplicationHome":  routerWrite,
	ss + "ListApplicationHomes":   readers,
	ss + "DeleteApplicationHomes": gpgWrite,

	// Policies: the router's RouterAdminProtocol saves and deletes them
	// (guarded by its admin ACL), the GPG writes weights fenced.
	ss + "GetPolicy":      readers,
	ss + "ListPolicies":   readers,
	ss + "SetPolicy":      routerWrite,
	ss + "DeletePolicies": routerWrite,
	ss + "SetPolicies":    gpgWrite,

	// GPG lease and fenced writes.
	ss + "AcquireLease":        gpgWrite,
	ss + "ReleaseLease":        gpgWrite,
	ss + "GetLease":            readers,
	ss + "PublishCapacity":     gpgWrite,
	ss + "MarkSubClustersLost": gpgWrite,

	// Reservations: routers.
	ss + "AddReservationHome":    routerWrite,
	ss + "UpdateReservationHome": routerWrite,
	ss + "GetReservationHome":    readers,
	ss + "ListReservationHomes":  readers,
	ss + "DeleteReservationHome": routerWrite,

	// Delegation tokens: the master keys sign every token, so only the
	// routers that issue tokens (and replicas forwarding their calls) may
	// read or write them; not even admin reads them.
	ss + "StoreMasterKey":  routerOnly,
	ss + "RemoveMasterKey": routerOnly,
	ss + "GetMasterKey":    routerOnly,
	ss + "StoreToken":      routerOnly,
	ss + "UpdateToken":     routerOnly,
	ss + "RemoveToken":     routerOnly,
	ss + "GetToken":        routerOnly,
	ss + "ReserveRange":    routerOnly,
	ss + "GetCounter":      routerOnly,
	ss + "SetCounter":      routerOnly,

	// UAM registry: every row holds a live AMRMToken of a UAM, with which
	// anyone can allocate containers on the secondary as that application.
	// Only the AMRMProxy, which obtained the token from the secondary RM,
	// writes rows. It and the router read them: the proxy to re-attach
	// UAMs after a restart or a new AM attempt, the router to kill an
	// application on every sub-cluster it spans. Deleting destroys no
	// secret, so the router (after a kill) and the GPG (its reaper) may
	// delete too; the GPG never needs a token and may not read them. Not
	// admin (an operator has no use for the tokens; yarnfedctl is not a
	// path to them) and not agents.
	ss + "PutUAM":    uamWrite,
	ss + "GetUAMs":   uamRead,
	ss + "ListUAMs":  uamRead,
	ss + "DeleteUAM": uamDelete,

	ss + "GetVersion": membership,
	ss + "Format":     adminOnly,
	ss + "Watch":      membership,

	cl + "Join":     adminOnly,
	cl + "Remove":   adminOnly,
	cl + "Status":   membership,
	cl + "Snapshot": adminOnly,
}

// Allowed reports whether id may call fullMethod with req (nil for a
// stream). An identity that is only an agent may write membership only for
// the sub-cluster its certificate names.
func Allowed(id Identity, fullMethod string, req any) error {
	roles, ok := Table[fullMethod]
	if !ok {
		return fmt.Errorf("%s is not in the authorization table", fullMethod)
	}
	var grant []Role
	for _, r := range id.Roles {
		if slices.Contains(roles, r) {
			grant = append(grant, r)
		}
	}
	if len(grant) == 0 {
		return fmt.Errorf("%q (roles %v) may not call %s", id.Name, id.Roles, fullMethod)
	}
	if len(grant) == 1 && grant[0] == RoleAgent {
		var sc string
		switch r := req.(type) {
		case *pb.RegisterSubClusterRequest:
			sc = r.GetInfo().GetSubClusterId()
		case *pb.HeartbeatRequest:
			sc = r.GetSubClusterId()
		default:
			return nil // reads
		}
		if sc != id.Name {
			return fmt.Errorf("agent %q may only write sub-cluster %q, not %q", id.Name, id.Name, sc)
		}
	}
	return nil
}

// Authorizer is the gRPC auth interceptor pair. Every call needs a verified
// client certificate (the transport checked the chain) whose roles allow
// the method; refusals are PermissionDenied (Unauthenticated without a
// certificate); the access-log interceptor outside it records them.
type Authorizer struct{}

func (a Authorizer) check(ctx context.Context, method string, req any) error {
	id, ok := PeerIdentity(ctx)
	if !ok {
		return status.Error(codes.Unauthenticated, "statestore: a client certificate is required")
	}
	if err := Allowed(id, method, req); err != nil {
		return status.Error(codes.PermissionDenied, "statestore: "+err.Error())
	}
	return nil
}

// Unary is the unary server interceptor.
func (a Authorizer) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := a.check(ctx, info.FullMethod, req); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// Stream is the stream server interceptor.
func (a Authorizer) Stream() grpc.StreamServerInterceptor {
	return func(srv any, stream grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := a.check(stream.Context(), info.FullMethod, nil); err != nil {
			return err
		}
		return h(srv, stream)
	}
}
