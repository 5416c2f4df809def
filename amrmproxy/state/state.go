// Package state keeps the AMRMProxy's per-attempt records on local disk
// (bbolt), so a restarted proxy re-attaches its unmanaged AMs instead of
// launching new ones and knows which sub-cluster owns each container.
//
// Layout: bucket "attempts" -> one bucket per attempt id, holding
//
//	"meta"        JSON Attempt (home, queue, user, register request/response)
//	"uam"/<sc>    JSON UAM (its AMRMToken, registration)
//	"containers"/<container key> -> sub-cluster id
//	"aborted"/<container key>    -> sub-cluster id: reported ABORTED to the AM
//	              because that sub-cluster was lost; never to be shown again
//	"delivery"    JSON Delivery: the last answer to the AM that carried
//	              containers or ABORTED statuses
//
// Every write is one bbolt transaction, committed with fsync (bbolt's
// default) before the proxy answers the AM: what the AM has been told is
// on disk. NoSync trades that for latency (see DESIGN.md).
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bktAttempts   = []byte("attempts")
	keyMeta       = []byte("meta")
	keyDelivery   = []byte("delivery")
	bktUAM        = []byte("uam")
	bktContainers = []byte("containers")
	bktAborted    = []byte("aborted")
)

// ErrCorrupt: a stored record does not decode.
var ErrCorrupt = errors.New("amrmproxy state: corrupt record")

// Attempt is what must survive a restart about one AM attempt.
type Attempt struct {
	Attempt  string `json:"attempt"`
	Home     string `json:"home"`
	Queue    string `json:"queue"`
	User     string `json:"user"`
	Register []byte `json:"register_request"`  // RegisterApplicationMasterRequestProto
	Response []byte `json:"register_response"` // RegisterApplicationMasterResponseProto
}

// UAM is one unmanaged AM on a secondary sub-cluster.
type UAM struct {
	SubCluster string `json:"sub_cluster"`
	Token      []byte `json:"token"`              // hadoop.common.TokenProto (the UAM's AMRMToken)
	Registered bool   `json:"registered"`         // registerApplicationMaster succeeded
	Response   []byte `json:"response,omitempty"` // its RegisterApplicationMasterResponseProto
	// NMTokens: the latest NM token per node the secondary sent the UAM
	// (serialized NMTokenProtos), for the next AM attempt after a restart.
	// Records written before the field have none.
	NMTokens [][]byte `json:"nm_tokens,omitempty"`
}

// Delivery is the last answer to the AM that handed out containers: its
// responseId and what it carried. After a crash, the responseId of the
// AM's next allocate says whether it got that answer (it sends the id of
// the last answer it received), so the containers can be handed out again
// exactly when they were lost.
type Delivery struct {
	ResponseID int32    `json:"response_id"`
	Containers [][]byte `json:"containers"` // ContainerProto
	NMTokens   [][]byte `json:"nm_tokens"`  // NMTokenProto
	// Aborted are the ContainerStatusProtos the proxy itself made for
	// containers of a lost sub-cluster, carried by the same answer.
	Aborted [][]byte `json:"aborted,omitempty"`
}

// Recovered is one attempt as read back at start-up.
type Recovered struct {
	Attempt    Attempt
	UAMs       []UAM
	Containers map[string]string // container key -> sub-cluster
	Aborted    map[string]string // container key -> lost sub-cluster
	Delivery   *Delivery
}

// Store is the on-disk state of one proxy. Safe for concurrent use.
type Store struct {
	db *bolt.DB
}

// Open opens (creating) dir/amrmproxy.db. noSync skips fsync on commit.
func Open(dir string, noSync bool) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("amrmproxy state: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, "amrmproxy.db"), 0o600, &bolt.Options{Timeout: 2 * time.Second, NoSync: noSync})
	if err != nil {
		return nil, fmt.Errorf("amrmproxy state: open %s: %w", dir, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bktAttempts)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("amrmproxy state: %w", err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func attemptBucket(tx *bolt.Tx, attempt string, create bool) (*bolt.Bucket, error) {
	root := tx.Bucket(bktAttempts)
	if !create {
		return root.Bucket([]byte(attempt)), nil
	}
	return root.CreateBucketIfNotExists([]byte(attempt))
}

// PutAttempt writes the attempt's record (replacing it).
func (s *Store) PutAttempt(a Attempt) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		ab, err := attemptBucket(tx, a.Attempt, true)
		if err != nil {
			return err
		}
		return ab.Put(keyMeta, b)
	})
}

// PutUAM writes one UAM record of attempt.
func (s *Store) PutUAM(attempt string, u UAM) error {
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		ab, err := attemptBucket(tx, attempt, true)
		if err != nil {
			return err
		}
		ub, err := ab.CreateBucketIfNotExists(bktUAM)
		if err != nil {
			return err
		}
		return ub.Put([]byte(u.SubCluster), b)
	})
}

// UpdateContainers records new containers (key -> sub-cluster), forgets
// completed ones, moves aborted ones (key -> their lost sub-cluster) from
// the live map to the aborted set and, if d is not nil, records the answer
// that delivers the new ones, in one transaction.
func (s *Store) UpdateContainers(attempt string, add map[string]string, remove []string, aborted map[string]string, d *Delivery) error {
	if len(add) == 0 && len(remove) == 0 && len(aborted) == 0 && d == nil {
		return nil
	}
	var db []byte
	if d != nil {
		var err error
		if db, err = json.Marshal(d); err != nil {
			return err
		}
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		ab, err := attemptBucket(tx, attempt, true)
		if err != nil {
			return err
		}
		cb, err := ab.CreateBucketIfNotExists(bktContainers)
		if err != nil {
			return err
		}
		for k, sc := range add {
			if err := cb.Put([]byte(k), []byte(sc)); err != nil {
				return err
			}
		}
		for _, k := range remove {
			if err := cb.Delete([]byte(k)); err != nil {
				return err
			}
		}
		if len(aborted) > 0 {
			xb, err := ab.CreateBucketIfNotExists(bktAborted)
			if err != nil {
				return err
			}
			for k, sc := range aborted {
				if err := cb.Delete([]byte(k)); err != nil {
					return err
				}
				if err := xb.Put([]byte(k), []byte(sc)); err != nil {
					return err
				}
			}
		}
		if db != nil {
			return ab.Put(keyDelivery, db)
		}
		return nil
	})
}

// DeleteAttempt forgets an attempt (after finish).
func (s *Store) DeleteAttempt(attempt string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		err := tx.Bucket(bktAttempts).DeleteBucket([]byte(attempt))
		if errors.Is(err, bolterrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// Load reads every attempt. A record that does not decode is an error
// naming it: the operator must look, not have the proxy silently drop an
// application's UAMs.
func (s *Store) Load() ([]Recovered, error) {
	var out []Recovered
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktAttempts).ForEachBucket(func(name []byte) error {
			ab := tx.Bucket(bktAttempts).Bucket(name)
			r, err := decodeAttempt(string(name), ab.Get(keyMeta))
			if err != nil {
				return err
			}
			rec := Recovered{Attempt: r, Containers: map[string]string{}, Aborted: map[string]string{}}
			if ub := ab.Bucket(bktUAM); ub != nil {
				if err := ub.ForEach(func(k, v []byte) error {
					u, err := DecodeUAM(v)
					if err != nil {
						return fmt.Errorf("attempt %s uam %s: %w", name, k, err)
					}
					rec.UAMs = append(rec.UAMs, u)
					return nil
				}); err != nil {
					return err
				}
			}
			if cb := ab.Bucket(bktContainers); cb != nil {
				_ = cb.ForEach(func(k, v []byte) error {
					rec.Containers[string(k)] = string(v)
					return nil
				})
			}
			if xb := ab.Bucket(bktAborted); xb != nil {
				_ = xb.ForEach(func(k, v []byte) error {
					rec.Aborted[string(k)] = string(v)
					return nil
				})
			}
			if b := ab.Get(keyDelivery); b != nil {
				d, err := DecodeDelivery(b)
				if err != nil {
					return fmt.Errorf("attempt %s delivery: %w", name, err)
				}
				rec.Delivery = &d
			}
			out = append(out, rec)
			return nil
		})
	})
	return out, err
}

func decodeAttempt(name string, b []byte) (Attempt, error) {
	if b == nil {
		// Containers or UAMs written before the register record: an
		// attempt whose register never completed. Recover it as such.
		return Attempt{Attempt: name}, nil
	}
	a, err := DecodeAttempt(b)
	if err != nil {
		return Attempt{}, fmt.Errorf("attempt %s: %w", name, err)
	}
	if a.Attempt != name {
		return Attempt{}, fmt.Errorf("%w: attempt record %q stored under %q", ErrCorrupt, a.Attempt, name)
	}
	return a, nil
}

// DecodeAttempt decodes a stored attempt record.
func DecodeAttempt(b []byte) (Attempt, error) {
	var a Attempt
	if err := json.Unmarshal(b, &a); err != nil {
		return Attempt{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return a, nil
}

// DecodeUAM decodes a stored UAM record.
func DecodeUAM(b []byte) (UAM, error) {
	var u UAM
	if err := json.Unmarshal(b, &u); err != nil {
		return UAM{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if u.SubCluster == "" {
		return UAM{}, fmt.Errorf("%w: UAM record without sub-cluster", ErrCorrupt)
	}
	return u, nil
}

// DecodeDelivery decodes a stored delivery record.
func DecodeDelivery(b []byte) (Delivery, error) {
	var d Delivery
	if err := json.Unmarshal(b, &d); err != nil {
		return Delivery{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if d.ResponseID < 0 {
		return Delivery{}, fmt.Errorf("%w: delivery with responseId %d", ErrCorrupt, d.ResponseID)
	}
	return d, nil
}
