package amrmproxy

import (
	"context"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
)

// The pieces the SASL relay adapter needs (see DESIGN.md, "Plugging in the
// relay"): the address the AM's login is relayed to, the user name of a
// relayed login, and a HomeConnector that calls the home RM over the
// relayed connection instead of dialling with a token.

// HomeAMRMAddress is the home RM's scheduler address from membership:
// where an AM's DIGEST-MD5 login is relayed. The sub-cluster agent
// registers the active RM alone and updates it on failover; for a row
// holding an HA list the logins rotate over it, so a standby RM costs the
// AM one retried login instead of blocking it.
func (p *Proxy) HomeAMRMAddress(context.Context) (string, error) {
	sc, ok := p.members.get(p.cfg.SubClusterID)
	if !ok {
		return "", hadoopipc.Errorf(hadoopipc.ClassRetriable, "home sub-cluster %s is not in the membership yet", p.cfg.SubClusterID)
	}
	addrs := hostport.SplitList(sc.AMRMServiceAddress)
	if len(addrs) == 0 {
		return "", hadoopipc.Errorf(hadoopipc.ClassRetriable, "home sub-cluster %s has no AMRM address", p.cfg.SubClusterID)
	}
	return addrs[int(p.homeTurn.Add(1)-1)%len(addrs)], nil
}

// RelayUser names the caller of a relayed login as the RM does: the
// application attempt of its AMRMTokenIdentifier. Anything else is refused
// before the login is forwarded.
func RelayUser(identifier []byte) (string, error) {
	id, _, err := ParseAMRMTokenIdentifier(identifier)
	if err != nil {
		return "", hadoopipc.Errorf(hadoopipc.ClassInvalidToken, "%v", err)
	}
	return id.String(), nil
}

// CallerHomeConnector serves the home RM through a connection taken from
// the AM call's context: with the relay, the upstream login of the AM's
// own connection (hadoopipc.RelayedLoginFrom satisfies From's contract).
type CallerHomeConnector struct {
	From func(ctx context.Context) (Caller, bool)
}

func (c CallerHomeConnector) HomeRM(ctx context.Context, attempt AttemptID, _ SubCluster) (AMRM, error) {
	cl, ok := c.From(ctx)
	if !ok {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "attempt %s: no relayed login to the home RM on this connection", attempt)
	}
	return CallerAMRM{C: cl}, nil
}

func (CallerHomeConnector) Forget(AttemptID) {}

// relayHomeConnector calls the home RM over the AM's own relayed login.
var relayHomeConnector = CallerHomeConnector{From: func(ctx context.Context) (Caller, bool) {
	l, ok := hadoopipc.RelayedLoginFrom(ctx)
	return l, ok
}}
