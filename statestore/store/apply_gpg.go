package store

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The GPG's commands: a lease, fenced batch writes, published capacity and
// conditional hygiene. Every condition (lease held, heartbeat still stale,
// row old enough, queue not pinned) is checked here, when the command is
// applied, with the leader's stamped clock: what the caller saw when it
// decided may be out of date by then.

// checkFence reports ErrFenced unless f is empty or its holder still holds
// the named lease with that epoch at now.
func (a *applier) checkFence(f *pb.Fence, nowMs int64) error {
	if f == nil || f.GetLease() == "" {
		return nil
	}
	l, ok, err := get(a.tx.Bucket(bLeases), []byte(f.GetLease()), &pb.Lease{})
	if err != nil {
		return err
	}
	switch {
	case !ok:
		return fmt.Errorf("%w: lease %s was never acquired", ErrFenced, f.GetLease())
	case l.GetHolder() != f.GetHolder() || l.GetEpoch() != f.GetEpoch():
		return fmt.Errorf("%w: lease %s is held by %s (epoch %d), not %s (epoch %d)", ErrFenced, f.GetLease(), l.GetHolder(), l.GetEpoch(), f.GetHolder(), f.GetEpoch())
	case l.GetExpiresMs() <= nowMs:
		return fmt.Errorf("%w: lease %s of %s expired", ErrFenced, f.GetLease(), f.GetHolder())
	}
	return nil
}

func (a *applier) acquireLease(c *pb.AcquireLeaseCommand) (proto.Message, error) {
	r, now := c.GetRequest(), c.GetNowMs()
	b := a.tx.Bucket(bLeases)
	l, ok, err := get(b, []byte(r.GetName()), &pb.Lease{})
	if err != nil {
		return nil, err
	}
	held := ok && l.GetExpiresMs() > now
	if held && l.GetHolder() != r.GetHolder() {
		return &pb.AcquireLeaseResponse{Lease: l, Acquired: false}, nil
	}
	if !ok {
		l = &pb.Lease{Name: r.GetName()}
	}
	if !held || l.GetHolder() != r.GetHolder() {
		// A new tenure (another holder, or the same one after expiry, which
		// may have missed writes of another holder since): a new epoch, so
		// writes fenced with the old one fail.
		l.Epoch++
		l.Holder = r.GetHolder()
	}
	l.ExpiresMs = now + r.GetTtlMs()
	if err := put(b, []byte(r.GetName()), l); err != nil {
		return nil, err
	}
	return &pb.AcquireLeaseResponse{Lease: l, Acquired: true}, nil
}

func (a *applier) releaseLease(c *pb.ReleaseLeaseCommand) (proto.Message, error) {
	r := c.GetRequest()
	b := a.tx.Bucket(bLeases)
	l, ok, err := get(b, []byte(r.GetName()), &pb.Lease{})
	if err != nil {
		return nil, err
	}
	// Releasing a lease one does not hold is a no-op: the caller only
	// wants to be sure it no longer holds it.
	if !ok || l.GetHolder() != r.GetHolder() || l.GetEpoch() != r.GetEpoch() || l.GetExpiresMs() <= c.GetNowMs() {
		return &pb.ReleaseLeaseResponse{}, nil
	}
	l.ExpiresMs = c.GetNowMs()
	return &pb.ReleaseLeaseResponse{}, put(b, []byte(r.GetName()), l)
}

func (a *applier) setPolicies(c *pb.SetPoliciesCommand) (proto.Message, error) {
	r := c.GetRequest()
	if err := a.checkFence(r.GetFence(), c.GetNowMs()); err != nil {
		return nil, err
	}
	b := a.tx.Bucket(bPolicies)
	out := &pb.SetPoliciesResponse{}
	unknown, err := a.writeCapacities(r.GetCapacities(), c.GetNowMs())
	if err != nil {
		return nil, err
	}
	out.UnknownSubClusters = unknown
	for _, p := range r.GetPolicies() {
		cur, ok, err := get(b, []byte(p.GetQueue()), &pb.PolicyConfiguration{})
		if err != nil {
			return nil, err
		}
		if ok && cur.GetPinned() && r.GetSkipPinned() {
			out.SkippedPinned = append(out.SkippedPinned, p.GetQueue())
			continue
		}
		if _, err := a.setPolicy(&pb.SetPolicyRequest{Policy: p}); err != nil {
			return nil, err
		}
		out.Written = append(out.Written, p.GetQueue())
	}
	return out, nil
}

func (a *applier) publishCapacity(c *pb.PublishCapacityCommand) (proto.Message, error) {
	r := c.GetRequest()
	if err := a.checkFence(r.GetFence(), c.GetNowMs()); err != nil {
		return nil, err
	}
	unknown, err := a.writeCapacities(r.GetItems(), c.GetNowMs())
	if err != nil {
		return nil, err
	}
	return &pb.PublishCapacityResponse{Unknown: unknown}, nil
}

// writeCapacities sets the published capacity of each named sub-cluster
// and returns the names it does not know.
func (a *applier) writeCapacities(items []*pb.PublishCapacityRequest_Item, nowMs int64) (unknown []string, err error) {
	b := a.tx.Bucket(bSubClusters)
	for _, it := range items {
		if b.Get([]byte(it.GetSubClusterId())) == nil {
			unknown = append(unknown, it.GetSubClusterId())
			continue
		}
		err := a.updateSubCluster(it.GetSubClusterId(), "publish capacity", func(info *pb.SubClusterInfo) {
			info.PublishedCapacity = &pb.PublishedCapacity{
				MemoryMb: it.GetMemoryMb(), Vcores: it.GetVcores(), Nodes: it.GetNodes(),
				ObservedMs: it.GetObservedMs(), PublishedMs: nowMs,
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return unknown, nil
}

// usable is Hadoop's SubClusterState.isUsable plus UNHEALTHY: states a
// silent sub-cluster can be in before the GPG calls it lost.
func usable(s pb.SubClusterState) bool {
	return s == pb.SubClusterState_SC_NEW || s == pb.SubClusterState_SC_RUNNING || s == pb.SubClusterState_SC_UNHEALTHY
}

func (a *applier) markLost(c *pb.MarkSubClustersLostCommand) (proto.Message, error) {
	r := c.GetRequest()
	if err := a.checkFence(r.GetFence(), c.GetNowMs()); err != nil {
		return nil, err
	}
	out := &pb.MarkSubClustersLostResponse{}
	b := a.tx.Bucket(bSubClusters)
	for _, id := range r.GetSubClusterIds() {
		info, ok, err := get(b, []byte(id), &pb.SubClusterInfo{})
		if err != nil {
			return nil, err
		}
		// One that heartbeated since the caller looked, or that is no
		// longer usable, is left alone.
		if !ok || !usable(info.GetState()) || info.GetLastHeartbeatMs() >= r.GetHeartbeatBeforeMs() {
			continue
		}
		if err := a.updateSubCluster(id, "mark lost", func(info *pb.SubClusterInfo) { info.State = pb.SubClusterState_SC_LOST }); err != nil {
			return nil, err
		}
		out.Marked = append(out.Marked, id)
	}
	return out, nil
}

func (a *applier) deleteApps(c *pb.DeleteApplicationHomesCommand) (proto.Message, error) {
	r := c.GetRequest()
	if err := a.checkFence(r.GetFence(), c.GetNowMs()); err != nil {
		return nil, err
	}
	out := &pb.DeleteApplicationHomesResponse{}
	apps := a.tx.Bucket(bApps)
	for _, id := range r.GetApplicationIds() {
		row, ok, err := get(apps, []byte(id), &pb.ApplicationHome{})
		if err != nil {
			return nil, err
		}
		if !ok || row.GetCreateTimeMs() >= r.GetCreatedBeforeMs() {
			out.Kept = append(out.Kept, id)
			continue
		}
		if _, err := a.deleteApp(&pb.DeleteApplicationHomeRequest{ApplicationId: id}); err != nil {
			return nil, err
		}
		out.Deleted = append(out.Deleted, id)
	}
	return out, nil
}
