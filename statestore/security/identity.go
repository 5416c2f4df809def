package security

import (
	"context"
	"crypto/x509"
	"slices"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Role is what a certificate allows its holder to do. A certificate's
// roles are the values of its subject Organization (O=) that name a role;
// its name is the subject Common Name (CN=). One certificate may carry
// several roles (O=router, O=admin), rarely a good idea.
type Role string

// Roles.
const (
	// RoleAdmin: operators (yarnfedctl): everything, including Format,
	// Join, Remove.
	RoleAdmin Role = "admin"
	// RoleReplica: state store replicas. Required on both ends of the
	// Raft port; on gRPC it may call everything, because followers
	// forward other callers' already-authorized requests to the leader,
	// and a replica holds the whole log anyway.
	RoleReplica Role = "replica"
	// RoleRouter: routers (submissions, homes, reservations, tokens and
	// their master keys, and the RouterAdminProtocol's policy and
	// deregistration writes, which the router guards with its own admin
	// ACL).
	RoleRouter Role = "router"
	// RoleAgent: sub-cluster agents: register and heartbeat the
	// sub-cluster named by the certificate's CN, and nothing else.
	RoleAgent Role = "agent"
	// RoleAMRMProxy: AMRMProxies: read membership, homes and policies.
	RoleAMRMProxy Role = "amrmproxy"
	// RoleGPG: the Global Policy Generator: its lease and its fenced
	// writes (weights, capacity, lost marks, home cleanup).
	RoleGPG Role = "gpg"
)

// AllRoles lists every role.
var AllRoles = []Role{RoleAdmin, RoleReplica, RoleRouter, RoleAgent, RoleAMRMProxy, RoleGPG}

// Identity is who a verified peer certificate says its holder is.
type Identity struct {
	Name  string
	Roles []Role
}

// Has reports whether id carries r.
func (id Identity) Has(r Role) bool { return slices.Contains(id.Roles, r) }

// IdentityOf reads the identity of a (verified) certificate.
func IdentityOf(c *x509.Certificate) Identity {
	id := Identity{Name: c.Subject.CommonName}
	for _, o := range c.Subject.Organization {
		if slices.Contains(AllRoles, Role(o)) && !slices.Contains(id.Roles, Role(o)) {
			id.Roles = append(id.Roles, Role(o))
		}
	}
	return id
}

// PeerIdentity returns the identity of the gRPC peer in ctx; ok is false
// when the connection is not TLS or carries no certificate.
func PeerIdentity(ctx context.Context) (Identity, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}, false
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.PeerCertificates) == 0 {
		return Identity{}, false
	}
	return IdentityOf(ti.State.PeerCertificates[0]), true
}
