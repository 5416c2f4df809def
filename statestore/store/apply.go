package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// applier applies one decoded command inside the batch transaction. Every
// operation checks before it writes, so a command that fails leaves no
// trace in the (shared) transaction.
type applier struct {
	tx     *bolt.Tx
	index  uint64
	events *[]*pb.WatchEvent
}

func (a *applier) emit(e *pb.WatchEvent) {
	e.Index = a.index
	*a.events = append(*a.events, e)
}

func put(b *bolt.Bucket, k []byte, m proto.Message) error {
	v, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return err
	}
	return b.Put(k, v)
}

func get[T proto.Message](b *bolt.Bucket, k []byte, m T) (T, bool, error) {
	v := b.Get(k)
	if v == nil {
		return m, false, nil
	}
	if err := proto.Unmarshal(v, m); err != nil {
		return m, false, fmt.Errorf("corrupt row %q in %s: %w", k, "bucket", err)
	}
	return m, true, nil
}

func timeKey(createMs int64, appID string) []byte {
	k := make([]byte, 8+len(appID))
	binary.BigEndian.PutUint64(k, uint64(createMs))
	copy(k[8:], appID)
	return k
}

func be32(v int32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(v))
	return b[:]
}

func (a *applier) apply(t CommandType, m proto.Message) (proto.Message, error) {
	switch t {
	case CmdRegisterSubCluster:
		return a.register(m.(*pb.RegisterSubClusterCommand))
	case CmdHeartbeat:
		return a.heartbeat(m.(*pb.HeartbeatCommand))
	case CmdDeregisterSubCluster:
		return a.deregister(m.(*pb.DeregisterSubClusterCommand))
	case CmdAddApplicationHome:
		return a.addApp(m.(*pb.AddApplicationHomeCommand))
	case CmdUpdateApplicationHome:
		return a.updateApp(m.(*pb.UpdateApplicationHomeCommand))
	case CmdDeleteApplicationHome:
		return a.deleteApp(m.(*pb.DeleteApplicationHomeRequest))
	case CmdSetPolicy:
		return a.setPolicy(m.(*pb.SetPolicyRequest))
	case CmdDeletePolicies:
		return a.deletePolicies(m.(*pb.DeletePoliciesRequest))
	case CmdAddReservationHome:
		return a.addReservation(m.(*pb.AddReservationHomeRequest))
	case CmdUpdateReservationHome:
		return a.updateReservation(m.(*pb.UpdateReservationHomeRequest))
	case CmdDeleteReservationHome:
		return a.deleteReservation(m.(*pb.DeleteReservationHomeRequest))
	case CmdStoreMasterKey:
		return a.storeMasterKey(m.(*pb.StoreMasterKeyRequest))
	case CmdRemoveMasterKey:
		return a.removeMasterKey(m.(*pb.RemoveMasterKeyRequest))
	case CmdStoreToken:
		return a.storeToken(m.(*pb.StoreTokenRequest).GetToken(), false)
	case CmdUpdateToken:
		return a.storeToken(m.(*pb.UpdateTokenRequest).GetToken(), true)
	case CmdRemoveToken:
		return a.removeToken(m.(*pb.RemoveTokenRequest))
	case CmdReserveRange:
		return a.reserveRange(m.(*pb.ReserveRangeRequest))
	case CmdSetCounter:
		return a.setCounter(m.(*pb.SetCounterRequest))
	case CmdFormat:
		return a.format()
	case CmdSetNodeAddress:
		c := m.(*pb.SetNodeAddressCommand)
		return &pb.JoinResponse{}, a.tx.Bucket(bNodes).Put([]byte(c.GetNodeId()), []byte(c.GetGrpcAddress()))
	case CmdRemoveNodeAddress:
		return &pb.RemoveResponse{}, a.tx.Bucket(bNodes).Delete([]byte(m.(*pb.RemoveNodeAddressCommand).GetNodeId()))
	case CmdAcquireLease:
		return a.acquireLease(m.(*pb.AcquireLeaseCommand))
	case CmdReleaseLease:
		return a.releaseLease(m.(*pb.ReleaseLeaseCommand))
	case CmdSetPolicies:
		return a.setPolicies(m.(*pb.SetPoliciesCommand))
	case CmdPublishCapacity:
		return a.publishCapacity(m.(*pb.PublishCapacityCommand))
	case CmdMarkSubClustersLost:
		return a.markLost(m.(*pb.MarkSubClustersLostCommand))
	case CmdDeleteApplicationHomes:
		return a.deleteApps(m.(*pb.DeleteApplicationHomesCommand))
	case CmdPutUAM:
		return a.putUAM(m.(*pb.PutUAMCommand))
	case CmdDeleteUAM:
		return a.deleteUAM(m.(*pb.DeleteUAMCommand))
	}
	return nil, fmt.Errorf("no applier for command type %d", t)
}

func (a *applier) register(c *pb.RegisterSubClusterCommand) (proto.Message, error) {
	info := proto.Clone(c.GetInfo()).(*pb.SubClusterInfo)
	// Registration overwrites: an RM that restarts registers afresh. The
	// published capacity is not the RM's to set: it stays.
	info.LastHeartbeatMs = c.GetNowMs()
	info.PublishedCapacity = nil
	if old, ok, err := get(a.tx.Bucket(bSubClusters), []byte(info.GetSubClusterId()), &pb.SubClusterInfo{}); err != nil {
		return nil, err
	} else if ok {
		info.PublishedCapacity = old.GetPublishedCapacity()
	}
	if err := put(a.tx.Bucket(bSubClusters), []byte(info.GetSubClusterId()), info); err != nil {
		return nil, err
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: info.GetSubClusterId(), SubCluster: info})
	return &pb.RegisterSubClusterResponse{}, nil
}

func (a *applier) heartbeat(c *pb.HeartbeatCommand) (proto.Message, error) {
	r := c.GetRequest()
	// A heartbeat overwrites the state: a LOST sub-cluster comes back.
	err := a.updateSubCluster(r.GetSubClusterId(), "heartbeat", func(info *pb.SubClusterInfo) {
		info.State = r.GetState()
		info.Capability = r.GetCapability()
		info.LastHeartbeatMs = c.GetNowMs()
	})
	if err != nil {
		return nil, err
	}
	return &pb.HeartbeatResponse{}, nil
}

func (a *applier) deregister(c *pb.DeregisterSubClusterCommand) (proto.Message, error) {
	r := c.GetRequest()
	// Only the state changes, as in Hadoop's stores: the last heartbeat
	// keeps telling how long the sub-cluster has been silent.
	err := a.updateSubCluster(r.GetSubClusterId(), "deregister", func(info *pb.SubClusterInfo) {
		info.State = r.GetState()
	})
	if err != nil {
		return nil, err
	}
	return &pb.DeregisterSubClusterResponse{}, nil
}

// updateSubCluster applies change to a registered sub-cluster's row and
// announces the new row to watchers; verb names the operation in the error
// for an unknown sub-cluster.
func (a *applier) updateSubCluster(id, verb string, change func(*pb.SubClusterInfo)) error {
	b := a.tx.Bucket(bSubClusters)
	info, ok, err := get(b, []byte(id), &pb.SubClusterInfo{})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: sub-cluster %s is not registered; cannot %s", ErrNotFound, id, verb)
	}
	change(info)
	if err := put(b, []byte(id), info); err != nil {
		return err
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT, Key: id, SubCluster: info})
	return nil
}

func (a *applier) addApp(c *pb.AddApplicationHomeCommand) (proto.Message, error) {
	h := c.GetHome()
	apps := a.tx.Bucket(bApps)
	key := []byte(h.GetApplicationId())
	if stored, ok, err := get(apps, key, &pb.ApplicationHome{}); err != nil {
		return nil, err
	} else if ok {
		// Insert-if-absent: a resubmission after a router crash gets the
		// home chosen the first time, and the stored context so the caller
		// can tell a resubmission from a different app with the same id.
		stored.SubmissionContext = bytes.Clone(a.tx.Bucket(bAppContexts).Get(key))
		return &pb.AddApplicationHomeResponse{Stored: stored, Inserted: false}, nil
	}
	row := &pb.ApplicationHome{ApplicationId: h.GetApplicationId(), HomeSubClusterId: h.GetHomeSubClusterId(), CreateTimeMs: c.GetNowMs()}
	if err := a.writeApp(key, row, h.GetSubmissionContext()); err != nil {
		return nil, err
	}
	// The caller has the context it just sent: no echo.
	return &pb.AddApplicationHomeResponse{Stored: proto.Clone(row).(*pb.ApplicationHome), Inserted: true}, nil
}

func (a *applier) updateApp(c *pb.UpdateApplicationHomeCommand) (proto.Message, error) {
	h := c.GetHome()
	apps := a.tx.Bucket(bApps)
	key := []byte(h.GetApplicationId())
	row, ok, err := get(apps, key, &pb.ApplicationHome{})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: application %s has no home", ErrNotFound, h.GetApplicationId())
	}
	// The creation time (and so the list order) stays; a new context
	// replaces the old one, an empty one keeps it.
	row.HomeSubClusterId = h.GetHomeSubClusterId()
	if err := a.writeApp(key, row, h.GetSubmissionContext()); err != nil {
		return nil, err
	}
	return &pb.UpdateApplicationHomeResponse{}, nil
}

// appendFillPercent is how full bbolt fills a page before splitting it in
// the application-home buckets. Their keys mostly arrive in order
// (application ids grow within an RM's cluster timestamp; the by-time index
// grows with time), so a split page is never filled again: at bbolt's
// default of 50% every page stayed half empty, and the file, every snapshot
// and every restore were twice the size of the data (measured with 100,000
// homes: about 100 bytes per row in use in "apps", 205 allocated). etcd fills its
// append-mostly key bucket to 90% for the same reason.
const appendFillPercent = 0.9

// writeApp stores an application-home row with its entry in the by-time
// index and, if one is given, its submission context (an empty one keeps
// what is stored), then announces the row to watchers.
func (a *applier) writeApp(key []byte, row *pb.ApplicationHome, submission []byte) error {
	apps, byTime, contexts := a.tx.Bucket(bApps), a.tx.Bucket(bAppsByTime), a.tx.Bucket(bAppContexts)
	apps.FillPercent, byTime.FillPercent, contexts.FillPercent = appendFillPercent, appendFillPercent, appendFillPercent
	if err := put(apps, key, row); err != nil {
		return err
	}
	if err := byTime.Put(timeKey(row.CreateTimeMs, row.ApplicationId), []byte(row.HomeSubClusterId)); err != nil {
		return err
	}
	if len(submission) > 0 {
		if err := contexts.Put(key, submission); err != nil {
			return err
		}
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_APPLICATION_HOME_PUT, Key: row.ApplicationId, ApplicationHome: row})
	return nil
}

// deleteApp deletes an application's home row, its by-time index entry and
// its context. Its UAM rows (bucket uams) stay: they are deleted only by
// DeleteUAM, because the GPG's reaper needs them to find and kill the UAMs
// of applications whose home is gone (and so does DeleteApplicationHomes,
// which calls this).
func (a *applier) deleteApp(r *pb.DeleteApplicationHomeRequest) (proto.Message, error) {
	apps := a.tx.Bucket(bApps)
	key := []byte(r.GetApplicationId())
	row, ok, err := get(apps, key, &pb.ApplicationHome{})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: application %s has no home", ErrNotFound, r.GetApplicationId())
	}
	if err := apps.Delete(key); err != nil {
		return nil, err
	}
	if err := a.tx.Bucket(bAppsByTime).Delete(timeKey(row.CreateTimeMs, row.ApplicationId)); err != nil {
		return nil, err
	}
	if err := a.tx.Bucket(bAppContexts).Delete(key); err != nil {
		return nil, err
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_APPLICATION_HOME_DELETED, Key: row.ApplicationId})
	return &pb.DeleteApplicationHomeResponse{}, nil
}

func (a *applier) setPolicy(r *pb.SetPolicyRequest) (proto.Message, error) {
	p := r.GetPolicy()
	if err := put(a.tx.Bucket(bPolicies), []byte(p.GetQueue()), p); err != nil {
		return nil, err
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_POLICY_PUT, Key: p.GetQueue(), Policy: p})
	return &pb.SetPolicyResponse{}, nil
}

func (a *applier) deletePolicies(r *pb.DeletePoliciesRequest) (proto.Message, error) {
	b := a.tx.Bucket(bPolicies)
	var queues []string
	if r.GetAll() {
		_ = b.ForEach(func(k, _ []byte) error { queues = append(queues, string(k)); return nil })
	} else {
		queues = r.GetQueues()
	}
	for _, q := range queues {
		// Deleting a queue without a policy is not an error (Hadoop).
		if b.Get([]byte(q)) == nil {
			continue
		}
		if err := b.Delete([]byte(q)); err != nil {
			return nil, err
		}
		a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_POLICY_DELETED, Key: q})
	}
	return &pb.DeletePoliciesResponse{}, nil
}

func (a *applier) addReservation(r *pb.AddReservationHomeRequest) (proto.Message, error) {
	h := r.GetHome()
	b := a.tx.Bucket(bReservations)
	if stored, ok, err := get(b, []byte(h.GetReservationId()), &pb.ReservationHome{}); err != nil {
		return nil, err
	} else if ok {
		return &pb.AddReservationHomeResponse{Stored: stored}, nil
	}
	if err := put(b, []byte(h.GetReservationId()), h); err != nil {
		return nil, err
	}
	return &pb.AddReservationHomeResponse{Stored: h, Inserted: true}, nil
}

func (a *applier) updateReservation(r *pb.UpdateReservationHomeRequest) (proto.Message, error) {
	h := r.GetHome()
	b := a.tx.Bucket(bReservations)
	if b.Get([]byte(h.GetReservationId())) == nil {
		return nil, fmt.Errorf("%w: reservation %s has no home", ErrNotFound, h.GetReservationId())
	}
	return &pb.UpdateReservationHomeResponse{}, put(b, []byte(h.GetReservationId()), h)
}

func (a *applier) deleteReservation(r *pb.DeleteReservationHomeRequest) (proto.Message, error) {
	b := a.tx.Bucket(bReservations)
	if b.Get([]byte(r.GetReservationId())) == nil {
		return nil, fmt.Errorf("%w: reservation %s has no home", ErrNotFound, r.GetReservationId())
	}
	return &pb.DeleteReservationHomeResponse{}, b.Delete([]byte(r.GetReservationId()))
}

func (a *applier) storeMasterKey(r *pb.StoreMasterKeyRequest) (proto.Message, error) {
	k := r.GetKey()
	b := a.tx.Bucket(bMasterKeys)
	if b.Get(be32(k.GetKeyId())) != nil {
		return nil, fmt.Errorf("%w: master key %d", ErrAlreadyExists, k.GetKeyId())
	}
	return &pb.StoreMasterKeyResponse{}, put(b, be32(k.GetKeyId()), k)
}

func (a *applier) removeMasterKey(r *pb.RemoveMasterKeyRequest) (proto.Message, error) {
	b := a.tx.Bucket(bMasterKeys)
	if b.Get(be32(r.GetKeyId())) == nil {
		return nil, fmt.Errorf("%w: master key %d", ErrNotFound, r.GetKeyId())
	}
	return &pb.RemoveMasterKeyResponse{}, b.Delete(be32(r.GetKeyId()))
}

func (a *applier) storeToken(t *pb.DelegationToken, update bool) (proto.Message, error) {
	b := a.tx.Bucket(bTokens)
	exists := b.Get(t.GetIdentifier()) != nil
	switch {
	case update && !exists:
		return nil, fmt.Errorf("%w: delegation token", ErrNotFound)
	case !update && exists:
		return nil, fmt.Errorf("%w: delegation token", ErrAlreadyExists)
	}
	if err := put(b, t.GetIdentifier(), t); err != nil {
		return nil, err
	}
	if update {
		return &pb.UpdateTokenResponse{}, nil
	}
	return &pb.StoreTokenResponse{}, nil
}

func (a *applier) removeToken(r *pb.RemoveTokenRequest) (proto.Message, error) {
	b := a.tx.Bucket(bTokens)
	if b.Get(r.GetIdentifier()) == nil {
		return nil, fmt.Errorf("%w: delegation token", ErrNotFound)
	}
	return &pb.RemoveTokenResponse{}, b.Delete(r.GetIdentifier())
}

func readCounter(tx *bolt.Tx, c pb.Counter) int64 {
	v := tx.Bucket(bMeta).Get(counterKey(c))
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func writeCounter(tx *bolt.Tx, c pb.Counter, v int64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	return tx.Bucket(bMeta).Put(counterKey(c), b[:])
}

func (a *applier) reserveRange(r *pb.ReserveRangeRequest) (proto.Message, error) {
	cur := readCounter(a.tx, r.GetCounter())
	if cur > (1 << 62) {
		return nil, fmt.Errorf("%w: counter %v exhausted", ErrInvalidArgument, r.GetCounter())
	}
	if err := writeCounter(a.tx, r.GetCounter(), cur+r.GetCount()); err != nil {
		return nil, err
	}
	return &pb.ReserveRangeResponse{First: cur + 1, Count: r.GetCount()}, nil
}

func (a *applier) setCounter(r *pb.SetCounterRequest) (proto.Message, error) {
	return &pb.SetCounterResponse{}, writeCounter(a.tx, r.GetCounter(), r.GetValue())
}

func (a *applier) format() (proto.Message, error) {
	for _, name := range dataBuckets {
		if err := a.tx.DeleteBucket(name); err != nil {
			return nil, err
		}
		if _, err := a.tx.CreateBucket(name); err != nil {
			return nil, err
		}
	}
	for _, c := range []pb.Counter{pb.Counter_COUNTER_TOKEN_SEQUENCE, pb.Counter_COUNTER_MASTER_KEY_ID} {
		if err := a.tx.Bucket(bMeta).Delete(counterKey(c)); err != nil {
			return nil, err
		}
	}
	a.emit(&pb.WatchEvent{Kind: pb.WatchEvent_RESET})
	return &pb.FormatResponse{}, nil
}
