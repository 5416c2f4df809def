package router

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Policy manager names as Hadoop stores them (the class names).
const (
	PolicyUniformBroadcast = "org.apache.hadoop.yarn.server.federation.policies.manager.UniformBroadcastPolicyManager"
)

// ResourceRequest is the part of an AM ResourceRequest a locality policy
// looks at.
type ResourceRequest struct {
	ResourceName        string
	NumContainers       int32
	RelaxLocality       bool
	AllocationRequestID int64
}

// AppSubmission is what a router policy sees of a submission.
type AppSubmission struct {
	AppID              string
	Queue              string
	ReservationID      string
	AMResourceRequests []ResourceRequest
}

// RouterPolicy picks the home of a submission among routable candidates
// (already filtered: RUNNING, breaker closed, not blacklisted).
type RouterPolicy interface {
	SelectHome(ctx context.Context, sub AppSubmission, candidates []SubClusterInfo) (SubClusterID, error)
}

// PolicyFactory builds the router policy of a stored policy configuration.
// The production one adapts the policies package.
type PolicyFactory interface {
	RouterPolicy(conf PolicyConfiguration) (RouterPolicy, error)
}

// queuePolicies resolves a queue to its router policy: store entry for the
// queue, then "*", then the configured default (Hadoop's lookup order).
// Built policies are reused while the stored type and params are unchanged,
// so a policy change applies to the next submission while building stays
// rare. (The production store client serves policies from its watch-fed
// cache, so the lookup is local.)
type queuePolicies struct {
	store   StateStore
	factory PolicyFactory
	def     string
	log     *slog.Logger

	mu    sync.Mutex
	cache map[string]policyEntry
}

type policyEntry struct {
	conf PolicyConfiguration
	p    RouterPolicy
}

func (p *queuePolicies) forQueue(ctx context.Context, queue string) (RouterPolicy, error) {
	if queue == "" {
		queue = "default"
	}
	conf, err := p.store.GetPolicyConfiguration(ctx, queue)
	if errors.Is(err, ErrNoPolicy) {
		conf, err = p.store.GetPolicyConfiguration(ctx, "*")
	}
	if errors.Is(err, ErrNoPolicy) {
		conf, err = PolicyConfiguration{Queue: queue, Type: p.def}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("policy for queue %q: %w", queue, err)
	}
	p.mu.Lock()
	e, ok := p.cache[queue]
	p.mu.Unlock()
	if ok && e.conf.Type == conf.Type && bytes.Equal(e.conf.Params, conf.Params) {
		return e.p, nil
	}
	pol, err := p.factory.RouterPolicy(conf)
	if err != nil {
		if ok {
			// A bad new configuration does not stop routing: keep the
			// last good policy (as Hadoop's facade does) and say so.
			p.log.Error("invalid queue policy, keeping the previous one", "queue", queue, "type", conf.Type, "err", err)
			return e.p, nil
		}
		return nil, fmt.Errorf("policy for queue %q (%s): %w", queue, conf.Type, err)
	}
	p.mu.Lock()
	p.cache[queue] = policyEntry{conf: conf, p: pol}
	p.mu.Unlock()
	return pol, nil
}
