package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// amrmToken is a serialized TokenProto like the one an RM hands a UAM.
func amrmToken(password string) []byte {
	b, err := proto.Marshal(&commonpb.TokenProto{
		Identifier: []byte("appattempt_1_0001_000001/key-7"), Password: []byte(password),
		Kind: proto.String("YARN_AM_RM_TOKEN"), Service: proto.String("rm-2:8030"),
	})
	if err != nil {
		panic(err)
	}
	return b
}

// nmToken is a serialized NMTokenProto for host:port, its identifier
// padded with pad bytes.
func nmToken(host string, port int32, pad int) []byte {
	b, err := proto.Marshal(&yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)},
		Token: &commonpb.TokenProto{Identifier: append([]byte("nm-ident-"), make([]byte, pad)...), Password: []byte("pw"),
			Kind: proto.String("NMToken"), Service: proto.String(fmt.Sprintf("%s:%d", host, port))}})
	if err != nil {
		panic(err)
	}
	return b
}

// nmTokenOfSize is a serialized NMTokenProto of exactly size bytes.
func nmTokenOfSize(size int) []byte {
	for pad := size - len(nmToken("nm-1", 8041, 0)); pad >= 0; pad-- {
		if b := nmToken("nm-1", 8041, pad); len(b) == size {
			return b
		}
	}
	panic(fmt.Sprintf("no NM token of %d bytes", size))
}

func nmTokens(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = nmToken(fmt.Sprintf("nm-%d", i), 8041, 0)
	}
	return out
}

func uam(app, sub string) *pb.UAMRecord {
	var ts, seq int
	if _, err := fmt.Sscanf(app, "application_%d_%d", &ts, &seq); err != nil {
		panic(err)
	}
	return &pb.UAMRecord{
		ApplicationId: app, SubClusterId: sub, HomeSubClusterId: "SC-1",
		UamAttemptId: fmt.Sprintf("appattempt_%d_%04d_000001", ts, seq), AmAttemptId: fmt.Sprintf("appattempt_%d_%04d_000001", ts, seq),
		Proxy: "nm-1", User: "alice", Queue: "root.a",
	}
}

func (h *fsmHarness) putUAM(r *pb.UAMRecord, now int64) (*pb.UAMRecord, error) {
	h.t.Helper()
	resp, err := h.apply(CmdPutUAM, &pb.PutUAMCommand{Record: r, NowMs: now})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.PutUAMResponse).GetStored(), nil
}

func (h *fsmHarness) deleteUAM(app, sub string) int32 {
	h.t.Helper()
	resp, err := h.apply(CmdDeleteUAM, &pb.DeleteUAMCommand{ApplicationId: app, SubClusterId: sub})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.(*pb.DeleteUAMResponse).GetDeleted()
}

func (h *fsmHarness) registerAll(ids ...string) {
	h.t.Helper()
	for _, id := range ids {
		if _, err := h.apply(CmdRegisterSubCluster, &pb.RegisterSubClusterCommand{Info: sc(id, pb.SubClusterState_SC_RUNNING), NowMs: 1}); err != nil {
			h.t.Fatal(err)
		}
	}
}

func uamKeys(rows []*pb.UAMRecord) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.GetApplicationId()+"/"+r.GetSubClusterId())
	}
	return out
}

// TestUAMApply: encode -> Apply -> assert for PutUAM and DeleteUAM: upsert
// keeps the first creation time and stamps the update time, an
// application's rows are exactly its own (an id that extends another is
// not a prefix match), unregistered sub-clusters are refused, deletes are
// per row or per application and count what they removed, and none of it
// reaches watchers.
func TestUAMApply(t *testing.T) {
	h := newFSMHarness(t)
	h.registerAll("SC-1", "SC-2", "SC-3")
	sub := h.f.hub.subscribe(0)
	defer sub.Cancel()

	first, err := h.putUAM(uam("application_1_1", "SC-2"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetCreateTimeMs() != 100 || first.GetUpdateTimeMs() != 100 || len(first.GetAmrmToken()) != 0 {
		t.Fatalf("first put stored %v", first)
	}
	// The token arrives; the caller's times are ignored.
	withToken := uam("application_1_1", "SC-2")
	withToken.AmrmToken, withToken.Registered, withToken.CreateTimeMs, withToken.UpdateTimeMs = amrmToken("p1"), true, 5, 5
	second, err := h.putUAM(withToken, 200)
	if err != nil {
		t.Fatal(err)
	}
	if second.GetCreateTimeMs() != 100 || second.GetUpdateTimeMs() != 200 || !bytes.Equal(second.GetAmrmToken(), amrmToken("p1")) || !second.GetRegistered() {
		t.Fatalf("second put stored %v", second)
	}
	for _, r := range []*pb.UAMRecord{uam("application_1_1", "SC-3"), uam("application_1_10", "SC-2"), uam("application_2_1", "SC-3")} {
		if _, err := h.putUAM(r, 300); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.putUAM(uam("application_1_1", "SC-9"), 400); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UAM on an unregistered sub-cluster: %v, want ErrNotFound", err)
	}
	unknownHome := uam("application_1_1", "SC-3")
	unknownHome.HomeSubClusterId = "SC-9"
	if _, err := h.putUAM(unknownHome, 400); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UAM with an unregistered home: %v, want ErrNotFound", err)
	}

	rows, err := h.f.getUAMs("application_1_1")
	if err != nil {
		t.Fatal(err)
	}
	if got := uamKeys(rows); !slices.Equal(got, []string{"application_1_1/SC-2", "application_1_1/SC-3"}) {
		t.Fatalf("rows of application_1_1: %v", got)
	}
	if !proto.Equal(rows[0], second) || rows[1].GetHomeSubClusterId() != "SC-1" {
		t.Fatalf("stored rows %v, want %v first", rows, second)
	}
	if rows, _ := h.f.getUAMs("application_1_100"); len(rows) != 0 {
		t.Fatalf("rows of an application without UAMs: %v", rows)
	}

	if n := h.deleteUAM("application_1_1", "SC-3"); n != 1 {
		t.Fatalf("delete one row: %d", n)
	}
	if n := h.deleteUAM("application_1_1", "SC-3"); n != 0 {
		t.Fatalf("delete it again: %d, want 0", n)
	}
	h.putUAM(uam("application_1_1", "SC-3"), 500)
	if n := h.deleteUAM("application_1_1", ""); n != 2 {
		t.Fatalf("delete the application's rows: %d, want 2", n)
	}
	all, _ := h.f.listUAMs("", 0)
	if got := uamKeys(all); !slices.Equal(got, []string{"application_1_10/SC-2", "application_2_1/SC-3"}) {
		t.Fatalf("rows left: %v", got)
	}

	select {
	case e := <-sub.C:
		t.Fatalf("a UAM command reached watchers: %v", e)
	default:
	}
}

// TestUAMRowsOutliveApplicationHome: deleting an application's home (the
// router's DeleteApplicationHome, the GPG's DeleteApplicationHomes) leaves
// its UAM rows: the reaper needs them to find the UAMs to kill.
func TestUAMRowsOutliveApplicationHome(t *testing.T) {
	h := newFSMHarness(t)
	h.registerAll("SC-1", "SC-2")
	for _, app := range []string{"application_1_1", "application_1_2"} {
		if _, err := h.apply(CmdAddApplicationHome, &pb.AddApplicationHomeCommand{Home: &pb.ApplicationHome{ApplicationId: app, HomeSubClusterId: "SC-1"}, NowMs: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.putUAM(uam(app, "SC-2"), 20); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.apply(CmdDeleteApplicationHome, &pb.DeleteApplicationHomeRequest{ApplicationId: "application_1_1"}); err != nil {
		t.Fatal(err)
	}
	r, err := h.apply(CmdDeleteApplicationHomes, &pb.DeleteApplicationHomesCommand{Request: &pb.DeleteApplicationHomesRequest{ApplicationIds: []string{"application_1_2"}, CreatedBeforeMs: 11}, NowMs: 30})
	if err != nil || !slices.Equal(r.(*pb.DeleteApplicationHomesResponse).GetDeleted(), []string{"application_1_2"}) {
		t.Fatalf("delete homes: %v %v", r, err)
	}
	all, _ := h.f.listUAMs("", 0)
	if got := uamKeys(all); !slices.Equal(got, []string{"application_1_1/SC-2", "application_1_2/SC-2"}) {
		t.Fatalf("UAM rows after the homes were deleted: %v", got)
	}
}

// TestListUAMs: ordered by application then sub-cluster, the sub-cluster
// filter matches the whole id, the limit counts filtered rows.
func TestListUAMs(t *testing.T) {
	h := newFSMHarness(t)
	h.registerAll("SC-1", "SC-2", "SC-3", "XSC-2")
	for _, k := range [][2]string{{"application_3_1", "SC-3"}, {"application_1_1", "SC-3"}, {"application_1_1", "SC-2"}, {"application_2_1", "SC-2"}, {"application_2_1", "XSC-2"}} {
		if _, err := h.putUAM(uam(k[0], k[1]), 1); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		sub   string
		limit int
		want  []string
	}{
		{"", 0, []string{"application_1_1/SC-2", "application_1_1/SC-3", "application_2_1/SC-2", "application_2_1/XSC-2", "application_3_1/SC-3"}},
		{"", 2, []string{"application_1_1/SC-2", "application_1_1/SC-3"}},
		{"SC-2", 0, []string{"application_1_1/SC-2", "application_2_1/SC-2"}},
		{"SC-2", 1, []string{"application_1_1/SC-2"}},
		{"SC-3", 5, []string{"application_1_1/SC-3", "application_3_1/SC-3"}},
		{"SC-9", 0, nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/limit=%d", tc.sub, tc.limit), func(t *testing.T) {
			rows, err := h.f.listUAMs(tc.sub, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := uamKeys(rows); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUAMSnapshotRestoreAndFormat: the table is in snapshots (restored
// into a fresh FSM row for row) and Format empties it.
func TestUAMSnapshotRestoreAndFormat(t *testing.T) {
	h := newFSMHarness(t)
	h.registerAll("SC-1", "SC-2", "SC-3")
	withToken := uam("application_1_1", "SC-2")
	withToken.AmrmToken = amrmToken("p")
	withToken.NmTokens = nmTokens(2)
	for _, r := range []*pb.UAMRecord{withToken, uam("application_1_1", "SC-3"), uam("application_1_2", "SC-2")} {
		if _, err := h.putUAM(r, 7); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := h.f.listUAMs("", 0)
	snap, err := h.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&memSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	h2 := newFSMHarness(t)
	if err := h2.f.Restore(io.NopCloser(&buf)); err != nil {
		t.Fatal(err)
	}
	got, _ := h2.f.listUAMs("", 0)
	if len(got) != 3 || len(got) != len(want) {
		t.Fatalf("restored %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("restored row %d: %v, want %v", i, got[i], want[i])
		}
	}
	if len(got[0].GetNmTokens()) != 2 || !bytes.Equal(got[0].GetNmTokens()[1], withToken.NmTokens[1]) {
		t.Fatalf("restored row's NM tokens: %d", len(got[0].GetNmTokens()))
	}

	if _, err := h.apply(CmdFormat, &pb.FormatRequest{Confirm: true}); err != nil {
		t.Fatal(err)
	}
	if rows, _ := h.f.listUAMs("", 0); len(rows) != 0 {
		t.Fatalf("rows after format: %v", uamKeys(rows))
	}
}

// TestValidateUAM: what PutUAM accepts and why it refuses the rest.
func TestValidateUAM(t *testing.T) {
	l := DefaultLimits()
	long := string(bytes.Repeat([]byte("x"), l.MaxIDBytes+1))
	change := func(f func(r *pb.UAMRecord)) *pb.UAMRecord {
		r := uam("application_1700000000000_0042", "SC-2")
		f(r)
		return r
	}
	ok := []struct {
		name string
		r    *pb.UAMRecord
	}{
		{"complete", change(func(r *pb.UAMRecord) { r.AmrmToken = amrmToken("p") })},
		{"no token yet, no attempts yet", change(func(r *pb.UAMRecord) { r.UamAttemptId, r.AmAttemptId = "", "" })},
		{"optional strings empty", change(func(r *pb.UAMRecord) { r.Proxy, r.User, r.Queue = "", "", "" })},
		{"later AM attempt", change(func(r *pb.UAMRecord) { r.AmAttemptId = "appattempt_1700000000000_42_2" })},
		{"NM tokens", change(func(r *pb.UAMRecord) { r.NmTokens = nmTokens(3) })},
		{"NM tokens at the count cap", change(func(r *pb.UAMRecord) { r.NmTokens = nmTokens(pb.MaxUAMNMTokens) })},
		{"an NM token at the size cap", change(func(r *pb.UAMRecord) { r.NmTokens = [][]byte{nmTokenOfSize(pb.MaxUAMNMTokenBytes)} })},
		{"the same host on two ports", change(func(r *pb.UAMRecord) { r.NmTokens = [][]byte{nmToken("nm-1", 1, 0), nmToken("nm-1", 2, 0)} })},
		{"token at the cap", change(func(r *pb.UAMRecord) {
			r.AmrmToken, _ = proto.Marshal(&commonpb.TokenProto{Identifier: make([]byte, MaxUAMTokenBytes-40), Password: []byte("p"), Kind: proto.String("k"), Service: proto.String("s")})
			if len(r.AmrmToken) > MaxUAMTokenBytes {
				panic("token over the cap")
			}
		})},
	}
	for _, tc := range ok {
		if err := l.ValidateUAM(tc.r); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := []struct {
		name string
		r    *pb.UAMRecord
	}{
		{"missing", nil},
		{"empty application id", change(func(r *pb.UAMRecord) { r.ApplicationId = "" })},
		{"not a YARN application id", change(func(r *pb.UAMRecord) { r.ApplicationId = "app-1" })},
		{"application id with a tail", change(func(r *pb.UAMRecord) { r.ApplicationId = "application_1700000000000_0042_x" })},
		{"application id with letters", change(func(r *pb.UAMRecord) { r.ApplicationId = "application_17e3_0042" })},
		{"application id sequence too long", change(func(r *pb.UAMRecord) { r.ApplicationId = "application_1_12345678901" })},
		{"application id too long", change(func(r *pb.UAMRecord) { r.ApplicationId = "application_1_" + long })},
		{"empty sub-cluster", change(func(r *pb.UAMRecord) { r.SubClusterId = "" })},
		{"sub-cluster with a control character", change(func(r *pb.UAMRecord) { r.SubClusterId = "SC\x002" })},
		{"empty home", change(func(r *pb.UAMRecord) { r.HomeSubClusterId = "" })},
		{"on its home", change(func(r *pb.UAMRecord) { r.SubClusterId = r.HomeSubClusterId })},
		{"UAM attempt of another application", change(func(r *pb.UAMRecord) { r.UamAttemptId = "appattempt_1700000000000_0043_000001" })},
		{"AM attempt malformed", change(func(r *pb.UAMRecord) { r.AmAttemptId = "attempt_1" })},
		{"AM attempt without attempt number", change(func(r *pb.UAMRecord) { r.AmAttemptId = "appattempt_1700000000000_0042_" })},
		{"token over the cap", change(func(r *pb.UAMRecord) {
			r.AmrmToken, _ = proto.Marshal(&commonpb.TokenProto{Identifier: make([]byte, MaxUAMTokenBytes), Password: []byte("p"), Kind: proto.String("k"), Service: proto.String("s")})
		})},
		{"token not a TokenProto", change(func(r *pb.UAMRecord) { r.AmrmToken = []byte{0xff, 0xff} })},
		{"token missing required fields", change(func(r *pb.UAMRecord) {
			r.AmrmToken, _ = proto.Marshal(&commonpb.TokenProto{Identifier: []byte("i")})
		})},
		{"NM tokens over the count cap", change(func(r *pb.UAMRecord) { r.NmTokens = nmTokens(pb.MaxUAMNMTokens + 1) })},
		{"an NM token over the size cap", change(func(r *pb.UAMRecord) { r.NmTokens = [][]byte{nmTokenOfSize(pb.MaxUAMNMTokenBytes + 1)} })},
		{"an NM token not an NMTokenProto", change(func(r *pb.UAMRecord) { r.NmTokens = [][]byte{{0xff, 0xff}} })},
		{"an NM token without a node", change(func(r *pb.UAMRecord) {
			b, _ := proto.Marshal(&yarnpb.NMTokenProto{Token: &commonpb.TokenProto{Identifier: []byte("i"), Password: []byte("p"), Kind: proto.String("k"), Service: proto.String("s")}})
			r.NmTokens = [][]byte{b}
		})},
		{"an NM token without a port", change(func(r *pb.UAMRecord) {
			b, _ := proto.Marshal(&yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String("nm-1")},
				Token: &commonpb.TokenProto{Identifier: []byte("i"), Password: []byte("p"), Kind: proto.String("k"), Service: proto.String("s")}})
			r.NmTokens = [][]byte{b}
		})},
		{"an NM token without its token", change(func(r *pb.UAMRecord) {
			b, _ := proto.Marshal(&yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String("nm-1"), Port: proto.Int32(1)}})
			r.NmTokens = [][]byte{b}
		})},
		{"an NM token whose token misses required fields", change(func(r *pb.UAMRecord) {
			b, _ := proto.Marshal(&yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String("nm-1"), Port: proto.Int32(1)},
				Token: &commonpb.TokenProto{Identifier: []byte("i")}})
			r.NmTokens = [][]byte{b}
		})},
		{"two NM tokens for one node", change(func(r *pb.UAMRecord) { r.NmTokens = [][]byte{nmToken("nm-1", 1, 0), nmToken("nm-1", 1, 5)} })},
		{"proxy too long", change(func(r *pb.UAMRecord) { r.Proxy = long })},
		{"user too long", change(func(r *pb.UAMRecord) { r.User = long })},
		{"queue with a control character", change(func(r *pb.UAMRecord) { r.Queue = "root.\n" })},
		{"user not UTF-8", change(func(r *pb.UAMRecord) { r.User = "\xff" })},
	}
	for _, tc := range bad {
		if err := l.ValidateUAM(tc.r); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
}
