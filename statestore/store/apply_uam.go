package store

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// The UAM registry (issue 19): one row per application and secondary
// sub-cluster, written by the AMRMProxy that launched the UAM and deleted
// by it, the router (kill) or the GPG (reaper). Rows hold live AMRMTokens:
// no watch event is ever emitted for them (Watch is open to every role).

// uamKey is a row's key:
//
//	+----------------+------+----------------+
//	| application id | 0x00 | sub-cluster id |
//	+----------------+------+----------------+
//
// Ids never contain control characters (Limits.id), so 0x00 cannot occur
// in either part: the key is unambiguous, rows sort by application then
// sub-cluster, and one application's rows are the keys with prefix
// uamPrefix(app) ("application_1_1\x00" is not a prefix of
// "application_1_10\x00...").
func uamKey(appID, subClusterID string) []byte {
	k := make([]byte, 0, len(appID)+1+len(subClusterID))
	k = append(k, appID...)
	k = append(k, 0)
	return append(k, subClusterID...)
}

func uamPrefix(appID string) []byte { return uamKey(appID, "")[:len(appID)+1] }

// putUAM inserts or replaces a row. The creation time is the first put's;
// the update time is this command's (both the leader's clock).
func (a *applier) putUAM(c *pb.PutUAMCommand) (proto.Message, error) {
	row := c.GetRecord()
	if row == nil {
		row = &pb.UAMRecord{}
	}
	b := a.tx.Bucket(bUAMs)
	key := uamKey(row.GetApplicationId(), row.GetSubClusterId())
	// A UAM lives on a registered sub-cluster and serves one homed on
	// another: this also bounds an application's rows by the number of
	// sub-clusters.
	for _, sc := range []string{row.GetSubClusterId(), row.GetHomeSubClusterId()} {
		if a.tx.Bucket(bSubClusters).Get([]byte(sc)) == nil {
			return nil, fmt.Errorf("%w: sub-cluster %s is not registered; cannot record a UAM of %s on it", ErrNotFound, sc, row.GetApplicationId())
		}
	}
	row.CreateTimeMs = c.GetNowMs()
	old, ok, err := get(b, key, &pb.UAMRecord{})
	if err != nil {
		return nil, err
	}
	if ok {
		row.CreateTimeMs = old.GetCreateTimeMs()
	}
	row.UpdateTimeMs = c.GetNowMs()
	if err := put(b, key, row); err != nil {
		return nil, err
	}
	return &pb.PutUAMResponse{Stored: row}, nil
}

// deleteUAM deletes one row, or every row of the application when no
// sub-cluster is named. Deleting what is not there is not an error.
func (a *applier) deleteUAM(c *pb.DeleteUAMCommand) (proto.Message, error) {
	b := a.tx.Bucket(bUAMs)
	var keys [][]byte
	if sc := c.GetSubClusterId(); sc != "" {
		if k := uamKey(c.GetApplicationId(), sc); b.Get(k) != nil {
			keys = append(keys, k)
		}
	} else {
		prefix := uamPrefix(c.GetApplicationId())
		cur := b.Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			keys = append(keys, bytes.Clone(k))
		}
	}
	// Collected first: deleting under a live cursor skips keys in bbolt.
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return nil, err
		}
	}
	return &pb.DeleteUAMResponse{Deleted: int32(len(keys))}, nil
}

// getUAMs returns an application's rows ordered by sub-cluster (none is
// not an error).
func (f *fsm) getUAMs(appID string) ([]*pb.UAMRecord, error) {
	prefix := uamPrefix(appID)
	return f.scanUAMs(prefix, func(k []byte) (bool, bool) { return bytes.HasPrefix(k, prefix), true }, 0)
}

// listUAMs returns up to limit rows (0: all) ordered by application, then
// sub-cluster, only those on subClusterID when it is set. The filter is a
// scan: the table holds one row per running federated application and
// secondary, and its readers list rarely.
func (f *fsm) listUAMs(subClusterID string, limit int) ([]*pb.UAMRecord, error) {
	return f.scanUAMs(nil, func(k []byte) (bool, bool) {
		if subClusterID == "" {
			return true, true
		}
		i := bytes.IndexByte(k, 0)
		return true, i >= 0 && string(k[i+1:]) == subClusterID
	}, limit)
}

// scanUAMs returns the rows from the first key at or after from, in key
// order, while match says go on, keeping those it says keep, up to limit
// rows (0: all).
func (f *fsm) scanUAMs(from []byte, match func(k []byte) (goOn, keep bool), limit int) ([]*pb.UAMRecord, error) {
	var out []*pb.UAMRecord
	err := f.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket(bUAMs).Cursor()
		for k, v := cur.Seek(from); k != nil && (limit == 0 || len(out) < limit); k, v = cur.Next() {
			goOn, keep := match(k)
			if !goOn {
				break
			}
			if !keep {
				continue
			}
			m := &pb.UAMRecord{}
			if err := proto.Unmarshal(v, m); err != nil {
				return fmt.Errorf("corrupt UAM row %q: %w", k, err)
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}
