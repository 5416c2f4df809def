package store

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Reads run against the local FSM database. Whether they are linearizable
// is the caller's business (Store.ReadBarrier).

func (f *fsm) getSubCluster(id string) (*pb.SubClusterInfo, error) {
	var out *pb.SubClusterInfo
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bSubClusters), []byte(id), &pb.SubClusterInfo{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: sub-cluster %s", ErrNotFound, id)
		}
		out = m
		return nil
	})
	return out, err
}

func (f *fsm) listSubClusters(filterInactive bool) ([]*pb.SubClusterInfo, error) {
	var out []*pb.SubClusterInfo
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bSubClusters).ForEach(func(k, v []byte) error {
			m := &pb.SubClusterInfo{}
			if err := proto.Unmarshal(v, m); err != nil {
				return err
			}
			if !filterInactive || m.GetState() == pb.SubClusterState_SC_RUNNING {
				out = append(out, m)
			}
			return nil
		})
	})
	return out, err
}

func (f *fsm) getApp(id string, withContext bool) (*pb.ApplicationHome, error) {
	var out *pb.ApplicationHome
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bApps), []byte(id), &pb.ApplicationHome{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: application %s has no home", ErrNotFound, id)
		}
		if withContext {
			m.SubmissionContext = bytes.Clone(tx.Bucket(bAppContexts).Get([]byte(id)))
		}
		out = m
		return nil
	})
	return out, err
}

// listApps walks the creation-time index backwards: newest first, as
// Hadoop's getApplicationsHomeSubCluster returns them. The page token is
// the index key of the last row returned.
func (f *fsm) listApps(subCluster string, limit int, token []byte, withContext bool) ([]*pb.ApplicationHome, []byte, error) {
	var out []*pb.ApplicationHome
	var next []byte
	err := f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bAppsByTime).Cursor()
		var k, v []byte
		if len(token) == 0 {
			k, v = c.Last()
		} else {
			k, v = c.Seek(token)
			if k == nil {
				k, v = c.Last()
			}
			// Step back past the token itself (and anything after it).
			for k != nil && bytes.Compare(k, token) >= 0 {
				k, v = c.Prev()
			}
		}
		ctxs := tx.Bucket(bAppContexts)
		for ; k != nil; k, v = c.Prev() {
			if subCluster != "" && string(v) != subCluster {
				continue
			}
			if len(out) == limit {
				last := out[len(out)-1]
				next = timeKey(last.CreateTimeMs, last.ApplicationId)
				return nil
			}
			h := &pb.ApplicationHome{
				ApplicationId:    string(k[8:]),
				HomeSubClusterId: string(v),
				CreateTimeMs:     int64(binary.BigEndian.Uint64(k)),
			}
			if withContext {
				h.SubmissionContext = bytes.Clone(ctxs.Get(k[8:]))
			}
			out = append(out, h)
		}
		return nil
	})
	return out, next, err
}

func (f *fsm) getPolicy(queue string) (*pb.PolicyConfiguration, error) {
	var out *pb.PolicyConfiguration
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bPolicies), []byte(queue), &pb.PolicyConfiguration{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: no policy for queue %s", ErrNotFound, queue)
		}
		out = m
		return nil
	})
	return out, err
}

func (f *fsm) listPolicies() ([]*pb.PolicyConfiguration, error) {
	var out []*pb.PolicyConfiguration
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bPolicies).ForEach(func(_, v []byte) error {
			m := &pb.PolicyConfiguration{}
			if err := proto.Unmarshal(v, m); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	return out, err
}

func (f *fsm) getReservation(id string) (*pb.ReservationHome, error) {
	var out *pb.ReservationHome
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bReservations), []byte(id), &pb.ReservationHome{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: reservation %s has no home", ErrNotFound, id)
		}
		out = m
		return nil
	})
	return out, err
}

func (f *fsm) listReservations() ([]*pb.ReservationHome, error) {
	var out []*pb.ReservationHome
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bReservations).ForEach(func(_, v []byte) error {
			m := &pb.ReservationHome{}
			if err := proto.Unmarshal(v, m); err != nil {
				return err
			}
			out = append(out, m)
			return nil
		})
	})
	return out, err
}

func (f *fsm) getMasterKey(id int32) (*pb.MasterKey, error) {
	var out *pb.MasterKey
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bMasterKeys), be32(id), &pb.MasterKey{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: master key %d", ErrNotFound, id)
		}
		out = m
		return nil
	})
	return out, err
}

func (f *fsm) getToken(id []byte) (*pb.DelegationToken, error) {
	var out *pb.DelegationToken
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bTokens), id, &pb.DelegationToken{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: delegation token", ErrNotFound)
		}
		out = m
		return nil
	})
	return out, err
}

func (f *fsm) getCounter(c pb.Counter) (int64, error) {
	var v int64
	err := f.view(func(tx *bolt.Tx) error { v = readCounter(tx, c); return nil })
	return v, err
}

func (f *fsm) getVersion() (*pb.Version, error) {
	var out *pb.Version
	err := f.view(func(tx *bolt.Tx) error {
		m, _, err := get(tx.Bucket(bMeta), kVersion, &pb.Version{})
		out = m
		return err
	})
	return out, err
}

// nodeAddresses returns the recorded gRPC address of every Raft node.
func (f *fsm) nodeAddresses() (map[string]string, error) {
	out := map[string]string{}
	err := f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bNodes).ForEach(func(k, v []byte) error { out[string(k)] = string(v); return nil })
	})
	return out, err
}

// counts returns the number of rows per table (for tests and status).
func (f *fsm) counts() (map[string]int, error) {
	out := map[string]int{}
	err := f.view(func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			out[string(b)] = tx.Bucket(b).Stats().KeyN
		}
		return nil
	})
	return out, err
}

func (f *fsm) getLease(name string) (*pb.Lease, error) {
	var out *pb.Lease
	err := f.view(func(tx *bolt.Tx) error {
		m, ok, err := get(tx.Bucket(bLeases), []byte(name), &pb.Lease{})
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: lease %s", ErrNotFound, name)
		}
		out = m
		return nil
	})
	return out, err
}
