package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// testLogStore is the log store tests open new stores with: empty (the
// default) unless YARNFED_TEST_RAFT_LOG_STORE names one, so the whole suite
// can be run against either kind.
var testLogStore = os.Getenv("YARNFED_TEST_RAFT_LOG_STORE")

func openSingle(t *testing.T, dir string) *Store {
	t.Helper()
	return openSingleKind(t, dir, testLogStore)
}

func openSingleKind(t *testing.T, dir, kind string) *Store {
	t.Helper()
	s, err := openSingleErr(dir, kind)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Ready once the leader has recorded its address (its first command).
	for _, addr := s.Leader(); !s.IsLeader() || addr == ""; _, addr = s.Leader() {
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return s
}

func openSingleErr(dir, kind string) (*Store, error) {
	_, trans := raft.NewInmemTransport("n1")
	return Open(Config{
		NodeID: "n1", Dir: dir, Transport: trans, GRPCAddr: "127.0.0.1:1", LogStore: kind,
		Bootstrap: true, Peers: []Peer{{ID: "n1", RaftAddr: string(trans.LocalAddr())}},
		HeartbeatTimeout: 50 * time.Millisecond, ElectionTimeout: 50 * time.Millisecond,
		LeaderLeaseTimeout: 50 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
	})
}

func sc(id string, st pb.SubClusterState) *pb.SubClusterInfo {
	return &pb.SubClusterInfo{SubClusterId: id, State: st, AmrmServiceAddress: "h:1", ClientRmServiceAddress: "h:2",
		RmAdminServiceAddress: "h:3", RmWebServiceAddress: "h:4", Capability: `{"clusterMetrics":{}}`}
}

// seed writes one row to every table.
func seed(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("SC-1", pb.SubClusterState_SC_RUNNING)}))
	must(s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-1", SubmissionContext: []byte("ctx")}}))
	must(s.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "*", Type: "UniformBroadcastPolicyManager", Params: []byte(`{}`)}}))
	must(s.AddReservationHome(ctx, &pb.AddReservationHomeRequest{Home: &pb.ReservationHome{ReservationId: "reservation_1_0001", HomeSubClusterId: "SC-1"}}))
	must(s.StoreMasterKey(ctx, &pb.StoreMasterKeyRequest{Key: &pb.MasterKey{KeyId: 7, KeyBytes: []byte("k"), ExpiryDateMs: 9}}))
	must(s.StoreToken(ctx, &pb.StoreTokenRequest{Token: &pb.DelegationToken{Identifier: []byte("tok"), RenewDateMs: 5, TokenInfo: []byte("i")}}))
	must(s.ReserveRange(ctx, &pb.ReserveRangeRequest{Counter: pb.Counter_COUNTER_TOKEN_SEQUENCE, Count: 100}))
	must(s.AcquireLease(ctx, &pb.AcquireLeaseRequest{Name: "gpg", Holder: "gpg-a", TtlMs: 60_000}))
	must(s.PublishCapacity(ctx, &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{{SubClusterId: "SC-1", MemoryMb: 1024, Vcores: 4, Nodes: 2}}}))
	// A UAM needs a registered secondary; SC_NEW keeps it out of lists of
	// RUNNING sub-clusters.
	must(s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("SC-2", pb.SubClusterState_SC_NEW)}))
	u := uam("application_1_0001", "SC-2")
	u.AmrmToken = amrmToken("p")
	must(s.PutUAM(ctx, &pb.PutUAMRequest{Record: u}))
}

func TestOperations(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	seed(t, s)

	// Insert-if-absent returns the first home.
	r, err := s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "application_1_0001", HomeSubClusterId: "SC-2"}})
	if err != nil || r.GetInserted() || r.GetStored().GetHomeSubClusterId() != "SC-1" || string(r.GetStored().GetSubmissionContext()) != "ctx" {
		t.Fatalf("re-add: %v %v", r, err)
	}
	if h, err := s.GetApplicationHome("application_1_0001", true); err != nil || string(h.GetSubmissionContext()) != "ctx" {
		t.Fatalf("context kept: %v %v", h, err)
	}
	if _, err := s.Heartbeat(ctx, &pb.HeartbeatRequest{SubClusterId: "nope", State: pb.SubClusterState_SC_RUNNING}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("heartbeat unknown: %v", err)
	}
	if _, err := s.Heartbeat(ctx, &pb.HeartbeatRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_LOST}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.ListSubClusters(true); len(l) != 0 {
		t.Fatalf("LOST listed as active: %v", l)
	}
	if _, err := s.StoreMasterKey(ctx, &pb.StoreMasterKeyRequest{Key: &pb.MasterKey{KeyId: 7, KeyBytes: []byte("k")}}); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("dup key: %v", err)
	}
	rr, err := s.ReserveRange(ctx, &pb.ReserveRangeRequest{Counter: pb.Counter_COUNTER_TOKEN_SEQUENCE, Count: 10})
	if err != nil || rr.GetFirst() != 101 {
		t.Fatalf("range: %v %v", rr, err)
	}
	// Newest first with paging and a filter.
	for i := 2; i <= 5; i++ {
		home := "SC-1"
		if i%2 == 0 {
			home = "SC-2"
		}
		if _, err := s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: fmt.Sprintf("application_1_%04d", i), HomeSubClusterId: home}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct creation stamps make the order checkable
	}
	var got []string
	var tok []byte
	for {
		l, err := s.ListApplicationHomes(&pb.ListApplicationHomesRequest{SubClusterId: "SC-1", Limit: 1, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range l.GetHomes() {
			got = append(got, h.GetApplicationId())
		}
		if tok = l.GetNextPageToken(); tok == nil {
			break
		}
	}
	if fmt.Sprint(got) != "[application_1_0005 application_1_0003 application_1_0001]" {
		t.Fatalf("list: %v", got)
	}
	if _, err := s.Format(ctx, &pb.FormatRequest{Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetApplicationHome("application_1_0001", false); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after format: %v", err)
	}
	if rows, err := s.GetUAMs("application_1_0001"); err != nil || len(rows) != 0 {
		t.Fatalf("UAM rows after format: %v %v", rows, err)
	}
}

// TestSnapshotRestorePerTable: snapshot a store with a row in every table,
// restore it into a fresh FSM, and compare every table.
func TestSnapshotRestorePerTable(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	seed(t, s)
	snap, err := s.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	sink := &memSink{Buffer: &buf}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	f2, _, err := openFSM(t.TempDir()+"/fsm.db", true, s.logger)
	if err != nil {
		t.Fatal(err)
	}
	defer f2.close()
	if err := f2.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	if f2.appliedIndex() != s.fsm.appliedIndex() {
		t.Fatalf("applied index %d, want %d", f2.appliedIndex(), s.fsm.appliedIndex())
	}
	tables := []struct {
		name string
		read func(f *fsm) (any, error)
	}{
		{"subclusters", func(f *fsm) (any, error) { return f.listSubClusters(false) }},
		{"apps", func(f *fsm) (any, error) { return f.getApp("application_1_0001", true) }},
		{"policies", func(f *fsm) (any, error) { return f.listPolicies() }},
		{"reservations", func(f *fsm) (any, error) { return f.listReservations() }},
		{"masterkeys", func(f *fsm) (any, error) { return f.getMasterKey(7) }},
		{"tokens", func(f *fsm) (any, error) { return f.getToken([]byte("tok")) }},
		{"counters", func(f *fsm) (any, error) { return f.getCounter(pb.Counter_COUNTER_TOKEN_SEQUENCE) }},
		{"nodes", func(f *fsm) (any, error) { return f.nodeAddresses() }},
		{"leases", func(f *fsm) (any, error) { return f.getLease("gpg") }},
		{"uams", func(f *fsm) (any, error) { return f.listUAMs("", 0) }},
		{"version", func(f *fsm) (any, error) { return f.getVersion() }},
	}
	for _, tc := range tables {
		t.Run(tc.name, func(t *testing.T) {
			want, err := tc.read(s.fsm)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.read(f2)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(want, got) {
				t.Fatalf("restored %v, want %v", got, want)
			}
			if fmt.Sprint(want) == "[]" || fmt.Sprint(want) == "map[]" {
				t.Fatal("seed wrote nothing to this table")
			}
		})
	}
}

func equal(a, b any) bool {
	if am, ok := a.(proto.Message); ok {
		return proto.Equal(am, b.(proto.Message))
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

type memSink struct{ *bytes.Buffer }

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { return nil }
func (m *memSink) Close() error  { return nil }

// TestRestartRecovers: state survives a clean restart (trusted FSM file) and
// a crash (FSM file discarded and rebuilt from the log).
//
// Both log stores: the restart reopens with LogStore empty, so it also shows
// that a data dir keeps the kind it was created with.
func TestRestartRecovers(t *testing.T) {
	for _, c := range []struct {
		kind  string
		crash bool
	}{{LogStoreBolt, false}, {LogStoreBolt, true}, {LogStoreWAL, false}, {LogStoreWAL, true}} {
		kind, crash := c.kind, c.crash
		t.Run(fmt.Sprintf("%s/crash=%v", kind, crash), func(t *testing.T) {
			dir := t.TempDir()
			s := openSingleKind(t, dir, kind)
			seed(t, s)
			// More entries than one Raft batch, so the log, not only the
			// snapshot-free FSM replay of a few entries, is what restores.
			for i := 0; i < 300; i++ {
				if _, err := s.AddApplicationHome(context.Background(), &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: fmt.Sprintf("application_2_%04d", i), HomeSubClusterId: "SC-1"}}); err != nil {
					t.Fatal(err)
				}
			}
			wantLast := s.raft.LastIndex()
			want, _ := s.Counts()
			if crash {
				// Simulate a crash: the clean flag is never set.
				close(s.done)
				s.raft.Shutdown().Error()
				s.logs.Close()
				s.fsm.db.Close()
			} else if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := openSingleKind(t, dir, "")
			defer s2.Close()
			if s2.LogStore() != kind {
				t.Fatalf("reopened with log store %q, created with %q", s2.LogStore(), kind)
			}
			if s2.raft.LastIndex() < wantLast {
				t.Fatalf("last index %d after restart, want >= %d (the log before it)", s2.raft.LastIndex(), wantLast)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s2.ReadBarrier(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ := s2.Counts()
			for _, b := range dataBuckets {
				if got[string(b)] != want[string(b)] {
					t.Fatalf("table %s: %d rows after restart, want %d", b, got[string(b)], want[string(b)])
				}
			}
		})
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	big := make([]byte, DefaultLimits().MaxContextBytes+1)
	cases := []struct {
		name string
		call func() error
	}{
		{"unknown state", func() error {
			_, err := s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("SC-9", 42)})
			return err
		}},
		{"unspecified state", func() error {
			_, err := s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("SC-9", 0)})
			return err
		}},
		{"empty sub-cluster id", func() error {
			_, err := s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("", pb.SubClusterState_SC_NEW)})
			return err
		}},
		{"bad address", func() error {
			i := sc("SC-9", pb.SubClusterState_SC_NEW)
			i.AmrmServiceAddress = "nohostport"
			_, err := s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: i})
			return err
		}},
		{"empty app id", func() error {
			_, err := s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{HomeSubClusterId: "SC-1"}})
			return err
		}},
		{"oversized context", func() error {
			_, err := s.AddApplicationHome(ctx, &pb.AddApplicationHomeRequest{Home: &pb.ApplicationHome{ApplicationId: "a", HomeSubClusterId: "SC-1", SubmissionContext: big}})
			return err
		}},
		{"malformed policy params", func() error {
			_, err := s.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "root.a", Type: "WeightedLocalityPolicyManager", Params: []byte(`{"routerPolicyWeights":`)}})
			return err
		}},
		{"empty policy type", func() error {
			_, err := s.SetPolicy(ctx, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "root.a"}})
			return err
		}},
		{"zero range", func() error {
			_, err := s.ReserveRange(ctx, &pb.ReserveRangeRequest{Counter: pb.Counter_COUNTER_TOKEN_SEQUENCE})
			return err
		}},
		{"oversized token identifier", func() error {
			_, err := s.StoreToken(ctx, &pb.StoreTokenRequest{Token: &pb.DelegationToken{Identifier: make([]byte, 40<<10)}})
			return err
		}},
		{"lease without holder", func() error {
			_, err := s.AcquireLease(ctx, &pb.AcquireLeaseRequest{Name: "gpg", TtlMs: 1000})
			return err
		}},
		{"lease ttl zero", func() error {
			_, err := s.AcquireLease(ctx, &pb.AcquireLeaseRequest{Name: "gpg", Holder: "a"})
			return err
		}},
		{"lease ttl too long", func() error {
			_, err := s.AcquireLease(ctx, &pb.AcquireLeaseRequest{Name: "gpg", Holder: "a", TtlMs: MaxLeaseTTL + 1})
			return err
		}},
		{"release without name", func() error {
			_, err := s.ReleaseLease(ctx, &pb.ReleaseLeaseRequest{Holder: "a"})
			return err
		}},
		{"set policies empty", func() error {
			_, err := s.SetPolicies(ctx, &pb.SetPoliciesRequest{})
			return err
		}},
		{"set policies duplicate queue", func() error {
			p := &pb.PolicyConfiguration{Queue: "q", Type: "T", Params: []byte(`{}`)}
			_, err := s.SetPolicies(ctx, &pb.SetPoliciesRequest{Policies: []*pb.PolicyConfiguration{p, p}})
			return err
		}},
		{"set policies malformed params", func() error {
			_, err := s.SetPolicies(ctx, &pb.SetPoliciesRequest{Policies: []*pb.PolicyConfiguration{{Queue: "q", Type: "T", Params: []byte(`{`)}}})
			return err
		}},
		{"set policies fence epoch zero", func() error {
			_, err := s.SetPolicies(ctx, &pb.SetPoliciesRequest{Policies: []*pb.PolicyConfiguration{{Queue: "q", Type: "T"}}, Fence: &pb.Fence{Lease: "gpg", Holder: "a"}})
			return err
		}},
		{"publish negative capacity", func() error {
			_, err := s.PublishCapacity(ctx, &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{{SubClusterId: "SC-1", MemoryMb: -1}}})
			return err
		}},
		{"publish empty id", func() error {
			_, err := s.PublishCapacity(ctx, &pb.PublishCapacityRequest{Items: []*pb.PublishCapacityRequest_Item{{MemoryMb: 1}}})
			return err
		}},
		{"publish too many items", func() error {
			_, err := s.PublishCapacity(ctx, &pb.PublishCapacityRequest{Items: make([]*pb.PublishCapacityRequest_Item, MaxBatchItems+1)})
			return err
		}},
		{"mark lost without cut-off", func() error {
			_, err := s.MarkSubClustersLost(ctx, &pb.MarkSubClustersLostRequest{SubClusterIds: []string{"SC-1"}})
			return err
		}},
		{"delete homes without ids", func() error {
			_, err := s.DeleteApplicationHomes(ctx, &pb.DeleteApplicationHomesRequest{CreatedBeforeMs: 5})
			return err
		}},
		{"delete homes without cut-off", func() error {
			_, err := s.DeleteApplicationHomes(ctx, &pb.DeleteApplicationHomesRequest{ApplicationIds: []string{"a"}})
			return err
		}},
		{"format without confirm", func() error {
			_, err := s.Format(ctx, &pb.FormatRequest{})
			return err
		}},
		{"put UAM without record", func() error {
			_, err := s.PutUAM(ctx, &pb.PutUAMRequest{})
			return err
		}},
		{"put UAM malformed application id", func() error {
			_, err := s.PutUAM(ctx, &pb.PutUAMRequest{Record: &pb.UAMRecord{ApplicationId: "app1", SubClusterId: "SC-2", HomeSubClusterId: "SC-1"}})
			return err
		}},
		{"put UAM oversized token", func() error {
			u := uam("application_1_0001", "SC-2")
			u.AmrmToken = make([]byte, MaxUAMTokenBytes+1)
			_, err := s.PutUAM(ctx, &pb.PutUAMRequest{Record: u})
			return err
		}},
		{"put UAM oversized user", func() error {
			u := uam("application_1_0001", "SC-2")
			u.User = string(make([]byte, DefaultLimits().MaxIDBytes+1))
			_, err := s.PutUAM(ctx, &pb.PutUAMRequest{Record: u})
			return err
		}},
		{"get UAMs malformed application id", func() error {
			_, err := s.GetUAMs("application_1")
			return err
		}},
		{"list UAMs negative limit", func() error {
			_, err := s.ListUAMs(&pb.ListUAMsRequest{Limit: -1})
			return err
		}},
		{"delete UAM without application id", func() error {
			_, err := s.DeleteUAM(ctx, &pb.DeleteUAMRequest{SubClusterId: "SC-2"})
			return err
		}},
		{"delete UAM oversized sub-cluster id", func() error {
			_, err := s.DeleteUAM(ctx, &pb.DeleteUAMRequest{ApplicationId: "application_1_0001", SubClusterId: string(make([]byte, DefaultLimits().MaxIDBytes+1))})
			return err
		}},
	}
	before := s.AppliedIndex()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("got %v, want ErrInvalidArgument", err)
			}
		})
	}
	if s.AppliedIndex() != before {
		t.Fatalf("bad input reached the log: index %d -> %d", before, s.AppliedIndex())
	}
}

func TestCommandRoundTrip(t *testing.T) {
	in := &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: "a", HomeSubClusterId: "b"}, NowMs: 3}
	data, err := EncodeCommand(CmdAddApplicationHome, in)
	if err != nil {
		t.Fatal(err)
	}
	typ, out, err := DecodeCommand(data)
	if err != nil || typ != CmdAddApplicationHome || !proto.Equal(in, out) {
		t.Fatalf("round trip: %v %v %v", typ, out, err)
	}
	if _, _, err := DecodeCommand([]byte{0x7f}); err == nil {
		t.Fatal("unknown type without ignore bit decoded")
	}
	if _, _, err := DecodeCommand([]byte{0xff}); !errors.Is(err, errUnknownIgnorable) {
		t.Fatalf("unknown ignorable: %v", err)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	seedData, _ := EncodeCommand(CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: "a"}})
	f.Add(seedData)
	f.Add([]byte{byte(CmdSetPolicy), 0x0a, 0x02, 0x0a, 0x00})
	f.Add([]byte{0x80})
	f.Add([]byte{})
	// The GPG's commands.
	fence := &pb.Fence{Lease: "gpg", Holder: "a", Epoch: 1}
	for _, c := range []struct {
		t CommandType
		m proto.Message
	}{
		{CmdAcquireLease, &pb.AcquireLeaseCommand{Request: &pb.AcquireLeaseRequest{Name: "gpg", Holder: "a", TtlMs: 1000}, NowMs: 5}},
		{CmdSetPolicies, &pb.SetPoliciesCommand{Request: &pb.SetPoliciesRequest{Policies: []*pb.PolicyConfiguration{{Queue: "q", Type: "T", Pinned: true}},
			Capacities: []*pb.PublishCapacityRequest_Item{{SubClusterId: "SC-1", MemoryMb: 1}}, Fence: fence, SkipPinned: true}, NowMs: 5}},
		{CmdDeleteApplicationHomes, &pb.DeleteApplicationHomesCommand{Request: &pb.DeleteApplicationHomesRequest{ApplicationIds: []string{"a"}, CreatedBeforeMs: 3, Fence: fence}}},
		{CmdPutUAM, &pb.PutUAMCommand{Record: &pb.UAMRecord{ApplicationId: "application_1_0001", SubClusterId: "SC-2", HomeSubClusterId: "SC-1", AmrmToken: amrmToken("p")}, NowMs: 5}},
		{CmdDeleteUAM, &pb.DeleteUAMCommand{ApplicationId: "application_1_0001"}},
	} {
		d, _ := EncodeCommand(c.t, c.m)
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, m, err := DecodeCommand(data)
		if err != nil {
			return
		}
		// decode(encode(x)) == x
		again, err := EncodeCommand(typ, m)
		if err != nil {
			t.Fatal(err)
		}
		typ2, m2, err := DecodeCommand(again)
		if err != nil || typ2 != typ || !proto.Equal(m, m2) {
			t.Fatalf("re-decode: %v %v", m2, err)
		}
	})
}

func FuzzListPageToken(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 'a'})
	f.Add([]byte{0xff})
	dir := f.TempDir()
	fs, _, err := openFSM(dir+"/fsm.db", true, discardLogger())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fs.close() })
	fs.db.Update(func(tx *boltTx) error {
		for i := 0; i < 5; i++ {
			tx.Bucket(bAppsByTime).Put(timeKey(int64(i), fmt.Sprint("app", i)), []byte("SC-1"))
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, tok []byte) {
		homes, _, err := fs.listApps("", 3, tok, false)
		if err != nil || len(homes) > 3 {
			t.Fatalf("%v %v", homes, err)
		}
	})
}

// FuzzApplyValidated: any command the server's validation accepts must
// apply without panicking (a panic in Apply stops every replica).
func FuzzApplyValidated(f *testing.F) {
	for _, c := range []struct {
		t CommandType
		m proto.Message
	}{
		{CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: "a", HomeSubClusterId: "b"}}},
		{CmdStoreToken, &pb.StoreTokenRequest{Token: &pb.DelegationToken{Identifier: []byte("t")}}},
		{CmdSetPolicy, &pb.SetPolicyRequest{Policy: &pb.PolicyConfiguration{Queue: "q", Type: "t", Params: []byte("{}")}}},
		{CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc("SC-1", pb.SubClusterState_SC_NEW)}},
		{CmdPutUAM, &pb.PutUAMCommand{Record: uam("application_1_0001", "SC-2")}},
		{CmdDeleteUAM, &pb.DeleteUAMCommand{ApplicationId: "application_1_0001"}},
	} {
		data, _ := EncodeCommand(c.t, c.m)
		f.Add(data)
	}
	fs, _, err := openFSM(f.TempDir()+"/fsm.db", true, discardLogger())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { fs.close() })
	l := DefaultLimits()
	var index uint64
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, m, err := DecodeCommand(data)
		if err != nil || !validForFuzz(l, typ, m) {
			return
		}
		index++
		fs.ApplyBatch([]*raft.Log{{Index: index, Type: raft.LogCommand, Data: data}})
	})
}

// validForFuzz applies the server-side validation of each command type.
func validForFuzz(l Limits, t CommandType, m proto.Message) bool {
	var err error
	switch c := m.(type) {
	case *pb.RegisterSubClusterCommand:
		err = l.ValidateSubClusterInfo(c.GetInfo())
	case *pb.HeartbeatCommand:
		err = l.ValidateHeartbeat(c.GetRequest())
	case *pb.DeregisterSubClusterCommand:
		err = l.ValidateDeregister(c.GetRequest())
	case *pb.AddApplicationHomeCommand:
		err = l.ValidateApplicationHome(c.GetHome())
	case *pb.UpdateApplicationHomeCommand:
		err = l.ValidateApplicationHome(c.GetHome())
	case *pb.DeleteApplicationHomeRequest:
		err = l.id("application id", c.GetApplicationId())
	case *pb.SetPolicyRequest:
		err = l.ValidatePolicy(c.GetPolicy())
	case *pb.DeletePoliciesRequest:
		err = l.ValidateDeletePolicies(c)
	case *pb.AddReservationHomeRequest:
		err = l.ValidateReservationHome(c.GetHome())
	case *pb.UpdateReservationHomeRequest:
		err = l.ValidateReservationHome(c.GetHome())
	case *pb.DeleteReservationHomeRequest:
		err = l.id("reservation id", c.GetReservationId())
	case *pb.StoreMasterKeyRequest:
		err = l.ValidateMasterKey(c.GetKey())
	case *pb.StoreTokenRequest:
		err = l.ValidateToken(c.GetToken())
	case *pb.UpdateTokenRequest:
		err = l.ValidateToken(c.GetToken())
	case *pb.RemoveTokenRequest:
		err = l.tokenID(c.GetIdentifier(), 0)
	case *pb.ReserveRangeRequest:
		err = ValidateReserveRange(c)
	case *pb.SetCounterRequest:
		err = ValidateSetCounter(c)
	case *pb.PutUAMCommand:
		err = l.ValidateUAM(c.GetRecord())
	case *pb.DeleteUAMCommand:
		err = l.ValidateDeleteUAM(&pb.DeleteUAMRequest{ApplicationId: c.GetApplicationId(), SubClusterId: c.GetSubClusterId()})
	case *pb.RemoveMasterKeyRequest, *pb.FormatRequest:
	default:
		return false // batches and node addresses are built by the store itself
	}
	return err == nil
}

// TestDeregisterKeepsLastHeartbeat: deregistering changes only the state, as
// in Hadoop's stores, so an operator (or the GPG) still sees how long a dead
// sub-cluster has been silent. It once reset the heartbeat time to now.
func TestDeregisterKeepsLastHeartbeat(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if _, err := s.RegisterSubCluster(ctx, &pb.RegisterSubClusterRequest{Info: sc("SC-1", pb.SubClusterState_SC_RUNNING)}); err != nil {
		t.Fatal(err)
	}
	before, err := s.GetSubCluster("SC-1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // a later leader stamp would differ
	if _, err := s.DeregisterSubCluster(ctx, &pb.DeregisterSubClusterRequest{SubClusterId: "SC-1", State: pb.SubClusterState_SC_DECOMMISSIONED}); err != nil {
		t.Fatal(err)
	}
	after, err := s.GetSubCluster("SC-1")
	if err != nil {
		t.Fatal(err)
	}
	if after.GetState() != pb.SubClusterState_SC_DECOMMISSIONED {
		t.Fatalf("state %v, want SC_DECOMMISSIONED", after.GetState())
	}
	if after.GetLastHeartbeatMs() != before.GetLastHeartbeatMs() {
		t.Fatalf("last heartbeat moved from %d to %d on deregister", before.GetLastHeartbeatMs(), after.GetLastHeartbeatMs())
	}
	if _, err := s.DeregisterSubCluster(ctx, &pb.DeregisterSubClusterRequest{SubClusterId: "nope", State: pb.SubClusterState_SC_LOST}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deregister unknown: %v", err)
	}
}

// TestTransferLeadership: the leader of three in-memory replicas hands over
// to a follower whose election timer is far away (a minute), so the new
// leader can only come from the transfer. A follower and a lone leader have
// nothing to hand over.
func TestTransferLeadership(t *testing.T) {
	stores := openInmemTrio(t, 50*time.Millisecond, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := waitTrioLeader(ctx, t, stores)
	for i, s := range stores {
		if i == leader {
			continue
		}
		if err := s.TransferLeadership(ctx); err != nil {
			t.Fatalf("follower %s: %v", s.NodeID(), err)
		}
		rc := s.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = time.Minute, time.Minute
		if err := s.raft.ReloadConfig(rc); err != nil {
			t.Fatal(err)
		}
	}
	if err := stores[leader].TransferLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		newLeader := -1
		for i, s := range stores {
			if i != leader && s.IsLeader() {
				newLeader = i
			}
		}
		if newLeader >= 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no follower took over: leadership was not transferred")
		}
		time.Sleep(5 * time.Millisecond)
	}

	lone := openSingle(t, t.TempDir())
	defer lone.Close()
	if err := lone.TransferLeadership(ctx); err != nil || !lone.IsLeader() {
		t.Fatalf("lone leader: err %v, still leader %v", err, lone.IsLeader())
	}
}

// openInmemTrio opens three bootstrapped replicas over raft's in-memory
// transport, each wrapped by wrap when it is not nil, with timeout as
// their heartbeat, election and lease timeouts, and closes them at
// cleanup.
func openInmemTrio(t *testing.T, timeout time.Duration, wrap func(*raft.InmemTransport) raft.Transport) []*Store {
	t.Helper()
	ids := []string{"n1", "n2", "n3"}
	var trans []*raft.InmemTransport
	var peers []Peer
	for _, id := range ids {
		_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		trans = append(trans, tr)
		peers = append(peers, Peer{ID: id, RaftAddr: id})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(trans[j].LocalAddr(), trans[j])
			}
		}
	}
	var stores []*Store
	for i, id := range ids {
		var tr raft.Transport = trans[i]
		if wrap != nil {
			tr = wrap(trans[i])
		}
		s, err := Open(Config{
			NodeID: id, Dir: t.TempDir(), Transport: tr, GRPCAddr: "127.0.0.1:1",
			Bootstrap: true, Peers: peers,
			HeartbeatTimeout: timeout, ElectionTimeout: timeout,
			LeaderLeaseTimeout: timeout, CommitTimeout: 5 * time.Millisecond,
			Logger: discardLogger(), LogStore: testLogStore,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	return stores
}

// waitTrioLeader polls until one of stores leads and returns its index.
func waitTrioLeader(ctx context.Context, t *testing.T, stores []*Store) int {
	t.Helper()
	for {
		for i, s := range stores {
			if s.IsLeader() {
				return i
			}
		}
		if ctx.Err() != nil {
			t.Fatal("no leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// timeoutNowLossFake is a test fake: raft's in-memory transport whose
// first n TimeoutNow RPCs (over every replica sharing it) fail, as a
// message lost to a loaded or briefly unreachable target would.
type timeoutNowLossFake struct {
	*raft.InmemTransport
	left *atomic.Int32
}

func (f timeoutNowLossFake) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if f.left.Add(-1) >= 0 {
		return errors.New("timeoutNowLossFake: TimeoutNow lost")
	}
	return f.InmemTransport.TimeoutNow(id, target, args, resp)
}

// TestTransferLeadershipRetriesAFailedAttempt: an attempt that fails while
// this replica still leads (here its TimeoutNow is lost twice; under load,
// the target misses the election timeout) is tried again, so a stopping
// leader still hands over instead of leaving the cluster leaderless for
// an election timeout.
func TestTransferLeadershipRetriesAFailedAttempt(t *testing.T) {
	left := &atomic.Int32{}
	// Timeouts long enough that leadership moves only when handed over
	// (a lost TimeoutNow fails at once; no timeout is involved).
	stores := openInmemTrio(t, time.Second, func(tr *raft.InmemTransport) raft.Transport {
		return timeoutNowLossFake{InmemTransport: tr, left: left}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := waitTrioLeader(ctx, t, stores)
	left.Store(2)
	if err := stores[leader].TransferLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	if stores[leader].IsLeader() {
		t.Fatal("TransferLeadership returned nil while the replica still leads")
	}
	if n := left.Load(); n > -1 {
		t.Fatalf("%d lost TimeoutNow RPCs left, want both spent and one delivered", n+1)
	}

	// ctx's end stops the retries with ctx's error, not a hang.
	leader = waitTrioLeader(ctx, t, stores)
	left.Store(1 << 30)
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if err := stores[leader].TransferLeadership(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("transfer that cannot succeed: %v, want the context's deadline", err)
	}
}

// TestTakeSnapshot: the admin snapshot covers everything applied, is on
// disk with its size, and asking again with nothing new succeeds with the
// same index.
func TestTakeSnapshot(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	seed(t, s)
	applied := s.fsm.appliedIndex()
	got, err := s.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if got.GetIndex() < applied || got.GetSizeBytes() <= 0 || got.GetDurationUs() <= 0 {
		t.Fatalf("snapshot %v, want index >= %d, a size and a duration", got, applied)
	}
	metas, err := s.snaps.List()
	if err != nil || len(metas) == 0 || metas[0].Index != got.GetIndex() || metas[0].Size != got.GetSizeBytes() {
		t.Fatalf("snapshot store lists %v (%v), want index %d size %d", metas, err, got.GetIndex(), got.GetSizeBytes())
	}
	again, err := s.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if again.GetIndex() != got.GetIndex() {
		t.Fatalf("nothing new: %v, want index %d", again, got.GetIndex())
	}
}

// TestAppHomePagesFilled: application homes arrive in id order, and a page
// split at bbolt's default 50% fill is never filled again; the app-home
// buckets must be mostly full, not half (the file, snapshots and restores
// scale with it).
func TestAppHomePagesFilled(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	for b := 0; b < 5; b++ {
		req := &pb.AddApplicationHomesRequest{}
		for i := 0; i < 1000; i++ {
			req.Homes = append(req.Homes, &pb.ApplicationHome{ApplicationId: fmt.Sprintf("application_1700000000000_%06d", b*1000+i), HomeSubClusterId: "SC-1", SubmissionContext: []byte("ctx")})
		}
		if _, err := s.AddApplicationHomes(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	err := s.fsm.db.View(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bApps, bAppsByTime, bAppContexts} {
			st := tx.Bucket(name).Stats()
			if st.KeyN != 5000 {
				t.Errorf("%s: %d keys, want 5000", name, st.KeyN)
			}
			if fill := float64(st.LeafInuse) / float64(st.LeafAlloc); fill < 0.8 {
				t.Errorf("%s: leaf pages %.0f%% full (%d of %d bytes), want >= 80%%", name, 100*fill, st.LeafInuse, st.LeafAlloc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFinishReleasesBatchResults: Raft's log cache keeps each recent entry's
// future, and with it the FSM's response; once every proposal of a batch has
// its result, the batch response must not hold the results any more (a
// bulk load otherwise kept hundreds of MB of answered results on the leader).
func TestFinishReleasesBatchResults(t *testing.T) {
	s := openSingle(t, t.TempDir())
	defer s.Close()
	batch := make([]*proposal, 3)
	resp := make(batchResult, 3)
	for i := range batch {
		batch[i] = &proposal{done: make(chan *result, 1), start: time.Now()}
		resp[i] = &result{resp: &pb.AddApplicationHomeResponse{Inserted: true}}
	}
	want := append(batchResult(nil), resp...)
	s.finish(batch, resp, nil)
	for i, p := range batch {
		if got := <-p.done; got != want[i] {
			t.Fatalf("proposal %d got %v, want its own result", i, got)
		}
		if resp[i] != nil {
			t.Errorf("batch response still holds result %d after it was handed out", i)
		}
	}
}
