package routertest

import (
	"context"

	"github.com/yarnfed/yarnfed/router"
)

// pickPolicy always chooses the first candidate in a fixed preference order.
type pickPolicy struct{ pref []router.SubClusterID }

func (p pickPolicy) SelectHome(_ context.Context, _ router.AppSubmission, c []router.SubClusterInfo) (router.SubClusterID, error) {
	for _, want := range p.pref {
		for _, sc := range c {
			if sc.ID == want {
				return sc.ID, nil
			}
		}
	}
	if len(c) == 0 {
		return "", router.ErrNoActiveSubCluster
	}
	return c[0].ID, nil
}

type fixedFactory struct{ p router.RouterPolicy }

func (f fixedFactory) RouterPolicy(router.PolicyConfiguration) (router.RouterPolicy, error) {
	return f.p, nil
}

// Prefer makes every queue's policy pick the first routable of ids (else
// any routable sub-cluster).
func Prefer(ids ...router.SubClusterID) func(*router.Config) {
	return func(c *router.Config) { c.Policies = fixedFactory{pickPolicy{ids}} }
}
