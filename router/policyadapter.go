package router

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/yarnfed/yarnfed/policies"
)

// PoliciesFactory adapts the policies package (Hadoop's router policies and
// managers) to PolicyFactory. It is what New uses when Config.Policies is nil.
type PoliciesFactory struct {
	Registry *policies.Registry
	Env      policies.Env
	// PublishedTTL: a published capacity younger than this narrows the
	// RM's availability figures (policies.Capability.WithPublished); 0
	// ignores published capacity.
	PublishedTTL time.Duration
}

// RouterPolicy builds the manager of conf and returns its router half.
func (f *PoliciesFactory) RouterPolicy(conf PolicyConfiguration) (RouterPolicy, error) {
	m, err := f.Registry.NewManager(policies.PolicyConfig{Queue: conf.Queue, Type: conf.Type, Params: conf.Params}, f.Env)
	if err != nil {
		return nil, err
	}
	return &policyAdapter{p: m.Router(), publishedTTL: f.PublishedTTL, now: time.Now}, nil
}

// policyAdapter feeds a policies.RouterPolicy a snapshot of the candidates.
// Snapshots are cached by the candidates' identity (ids, heartbeats), so
// policies can reuse their derived tables across submissions.
type policyAdapter struct {
	p            policies.RouterPolicy
	publishedTTL time.Duration
	now          func() time.Time

	mu   sync.Mutex
	key  string
	snap *policies.Snapshot
}

// Type names the Hadoop policy (e.g. "WeightedRandom"), for logs.
func (a *policyAdapter) Type() string { return a.p.Type() }

func (a *policyAdapter) SelectHome(ctx context.Context, sub AppSubmission, cands []SubClusterInfo) (SubClusterID, error) {
	var kb strings.Builder
	for _, sc := range cands {
		kb.WriteString(string(sc.ID))
		kb.WriteByte('@')
		kb.WriteString(sc.LastHeartbeat.String())
		if p := a.published(sc); p != nil {
			fmt.Fprintf(&kb, "+%d/%d", p.MemoryMB, p.VCores)
		}
		kb.WriteByte(';')
	}
	key := kb.String()
	a.mu.Lock()
	snap := a.snap
	if a.key != key || snap == nil {
		scs := make([]policies.SubCluster, len(cands))
		for i, sc := range cands {
			capa, _ := policies.ParseCapability([]byte(sc.Capability)) // missing -> zero, as Hadoop
			if p := a.published(sc); p != nil {
				capa = capa.WithPublished(p.MemoryMB, p.VCores)
			}
			scs[i] = policies.SubCluster{ID: policies.SubClusterID(sc.ID), State: policies.SubClusterState(sc.State),
				Capability: capa, LastHeartbeat: sc.LastHeartbeat}
		}
		snap = policies.NewSnapshot(scs)
		a.key, a.snap = key, snap
	}
	a.mu.Unlock()
	app := &policies.AppSubmission{ApplicationID: sub.AppID, Queue: sub.Queue, ReservationID: sub.ReservationID}
	for _, rr := range sub.AMResourceRequests {
		app.AMResourceRequests = append(app.AMResourceRequests, policies.ResourceRequest{
			AllocationRequestID: rr.AllocationRequestID, ResourceName: rr.ResourceName,
			NumContainers: rr.NumContainers, RelaxLocality: rr.RelaxLocality,
		})
	}
	id, err := a.p.HomeSubCluster(ctx, snap, app, nil)
	return SubClusterID(id), err
}

// published returns sc's published capacity while it is fresh, else nil.
func (a *policyAdapter) published(sc SubClusterInfo) *PublishedCapacity {
	p := sc.Published
	if p == nil || a.publishedTTL <= 0 || a.now().Sub(p.PublishedAt) > a.publishedTTL {
		return nil
	}
	return p
}
