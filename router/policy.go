package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
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

// UniformPolicy picks uniformly at random: Hadoop's UniformRandomRouterPolicy
// and the behaviour of the default UniformBroadcastPolicyManager.
type UniformPolicy struct{}

func (UniformPolicy) SelectHome(_ context.Context, _ AppSubmission, c []SubClusterInfo) (SubClusterID, error) {
	if len(c) == 0 {
		return "", ErrNoActiveSubCluster
	}
	return c[rand.IntN(len(c))].ID, nil
}

// queuePolicies resolves a queue to its router policy: store entry for the queue,
// then "*", then the configured default (Hadoop's lookup order), cached for a
// short TTL so a submission does not cost extra store reads.
type queuePolicies struct {
	store   StateStore
	factory PolicyFactory
	def     string
	ttl     time.Duration

	mu    sync.Mutex
	cache map[string]policyEntry
}

type policyEntry struct {
	p   RouterPolicy
	exp time.Time
}

func (p *queuePolicies) forQueue(ctx context.Context, queue string) (RouterPolicy, error) {
	if queue == "" {
		queue = "default"
	}
	now := time.Now()
	p.mu.Lock()
	if e, ok := p.cache[queue]; ok && now.Before(e.exp) {
		p.mu.Unlock()
		return e.p, nil
	}
	p.mu.Unlock()

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
	pol, err := p.factory.RouterPolicy(conf)
	if err != nil {
		return nil, fmt.Errorf("policy for queue %q (%s): %w", queue, conf.Type, err)
	}
	p.mu.Lock()
	p.cache[queue] = policyEntry{p: pol, exp: now.Add(p.ttl)}
	p.mu.Unlock()
	return pol, nil
}
