package policies

import "errors"

// Sentinel errors. Callers match them with errors.Is; the router and the
// AMRMProxy translate them to Hadoop exception classes at their edges.
var (
	// ErrNoActiveSubCluster: no active, non-blacklisted sub-cluster is
	// eligible under the policy (Hadoop: NoActiveSubclustersException /
	// "No active SubCluster available to submit the request.").
	ErrNoActiveSubCluster = errors.New("policies: no active sub-cluster available")
	// ErrRejected: the queue's policy rejects every request by construction
	// (RejectRouterPolicy, RejectAMRMProxyPolicy).
	ErrRejected = errors.New("policies: rejected by policy")
	// ErrUnknownSubCluster: a sub-cluster id the policy does not know.
	ErrUnknownSubCluster = errors.New("policies: unknown sub-cluster")
	// ErrInvalidConfig: a policy configuration that cannot be used; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("policies: invalid policy configuration")
	// ErrUnknownPolicyType: a manager or policy type name not in the registry.
	ErrUnknownPolicyType = errors.New("policies: unknown policy type")
	// ErrInvalidRequest: a request the policy cannot route (for example a
	// wrong number of AM resource requests for the locality router).
	ErrInvalidRequest = errors.New("policies: invalid request")
	// ErrReservation: the reservation's home sub-cluster could not be
	// resolved or is not eligible.
	ErrReservation = errors.New("policies: reservation home unavailable")
	// ErrHomeInactive: the application's home sub-cluster is not active.
	ErrHomeInactive = errors.New("policies: home sub-cluster not active")
	// ErrNotFound: a resolver has no mapping for a node or rack.
	ErrNotFound = errors.New("policies: not found")
)
