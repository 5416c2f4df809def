package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

func registerSubClusters(t *testing.T, c *client.Client, ids ...string) {
	t.Helper()
	for _, id := range ids {
		info := &pb.SubClusterInfo{SubClusterId: id, State: pb.SubClusterState_SC_RUNNING, AmrmServiceAddress: "h:1", ClientRmServiceAddress: "h:2", RmAdminServiceAddress: "h:3", RmWebServiceAddress: "h:4"}
		if err := c.RegisterSubCluster(context.Background(), info); err != nil {
			t.Fatal(err)
		}
	}
}

// nmTokenRow is a serialized NMTokenProto for host:8041.
func nmTokenRow(host string) []byte {
	b, err := proto.Marshal(&yarnpb.NMTokenProto{NodeId: &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(8041)},
		Token: &commonpb.TokenProto{Identifier: []byte("ident-" + host), Password: []byte("pw"), Kind: proto.String("NMToken"), Service: proto.String(host + ":8041")}})
	if err != nil {
		panic(err)
	}
	return b
}

func uamRow(app, sub string) *pb.UAMRecord {
	return &pb.UAMRecord{ApplicationId: app, SubClusterId: sub, HomeSubClusterId: "sc1", Proxy: "nm-1", User: "alice", Queue: "root.a"}
}

// TestPutUAMWhoseReplyIsLostIsResent: PutUAM is idempotent, so a put whose
// reply was lost is resent and the caller gets the stored row, not
// ErrUnknownOutcome (the AMRMProxy must know its UAM is recorded before it
// uses it).
func TestPutUAMWhoseReplyIsLostIsResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	registerSubClusters(t, c, "sc1", "sc2")

	f.Once("PutUAM", storetest.DropReply)
	stored, err := c.PutUAM(ctx, uamRow("application_1_0001", "sc2"))
	if err != nil {
		t.Fatalf("put whose reply was lost: %v, want it resent", err)
	}
	if n := f.Calls("PutUAM"); n != 2 {
		t.Fatalf("put reached the store %d times, want 2 (applied, then resent)", n)
	}
	rows, err := c.GetUAMs(ctx, "application_1_0001")
	if err != nil || len(rows) != 1 || !proto.Equal(rows[0], stored) {
		t.Fatalf("rows after the resent put: %v %v, want exactly %v", rows, err, stored)
	}
	if stored.GetCreateTimeMs() == 0 || stored.GetUpdateTimeMs() < stored.GetCreateTimeMs() {
		t.Fatalf("times not stamped: %v", stored)
	}
}

// TestDeleteUAMWhoseReplyIsLostIsResent: DeleteUAM is idempotent (unlike
// DeleteApplicationHome, it does not report a missing row as an error): a
// delete whose reply was lost is resent and succeeds; the count is the
// resend's.
func TestDeleteUAMWhoseReplyIsLostIsResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	registerSubClusters(t, c, "sc1", "sc2", "sc3")
	for _, sub := range []string{"sc2", "sc3"} {
		if _, err := c.PutUAM(ctx, uamRow("application_1_0002", sub)); err != nil {
			t.Fatal(err)
		}
	}

	f.Once("DeleteUAM", storetest.DropReply)
	n, err := c.DeleteUAM(ctx, "application_1_0002", "")
	if err != nil {
		t.Fatalf("delete whose reply was lost: %v, want it resent", err)
	}
	if calls := f.Calls("DeleteUAM"); calls != 2 {
		t.Fatalf("delete reached the store %d times, want 2 (applied, then resent)", calls)
	}
	if n != 0 {
		t.Fatalf("resent delete counted %d rows, want 0 (the first attempt took both)", n)
	}
	if rows, err := c.GetUAMs(ctx, "application_1_0002"); err != nil || len(rows) != 0 {
		t.Fatalf("rows after the delete: %v %v", rows, err)
	}
}

// TestUAMNotAppliedIsResent: a marked not-applied refusal is retried too
// (a put or delete that provably never reached the log).
func TestUAMNotAppliedIsResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	registerSubClusters(t, c, "sc1", "sc2")
	f.Once("PutUAM", storetest.NotApplied)
	if _, err := c.PutUAM(ctx, uamRow("application_1_0003", "sc2")); err != nil {
		t.Fatal(err)
	}
	f.Once("DeleteUAM", storetest.BareUnavailable)
	if n, err := c.DeleteUAM(ctx, "application_1_0003", "sc2"); err != nil || n != 1 {
		t.Fatalf("delete after an unmarked Unavailable: %d %v, want it resent and 1 row deleted", n, err)
	}
}

// TestUAMRegistryOverGRPC: the four calls through the server: validation
// errors are InvalidArgument, an unregistered sub-cluster NotFound, empty
// results no error, ListUAMs filters and limits, DeleteUAM counts.
func TestUAMRegistryOverGRPC(t *testing.T) {
	cl := storetest.NewCluster(t, 1)
	c := newClient(t, cl.Addrs()...)
	ctx := context.Background()
	registerSubClusters(t, c, "sc1", "sc2", "sc3")

	bad := map[string]*pb.UAMRecord{
		"malformed application id": uamRow("app-4", "sc2"),
		"on its home":              uamRow("application_1_0004", "sc1"),
		"token not a TokenProto":   func() *pb.UAMRecord { r := uamRow("application_1_0004", "sc2"); r.AmrmToken = []byte{0xff}; return r }(),
		"oversized token": func() *pb.UAMRecord {
			r := uamRow("application_1_0004", "sc2")
			r.AmrmToken = make([]byte, 64<<10+1)
			return r
		}(),
		"NM token not an NMTokenProto": func() *pb.UAMRecord {
			r := uamRow("application_1_0004", "sc2")
			r.NmTokens = [][]byte{{0xff}}
			return r
		}(),
		"too many NM tokens": func() *pb.UAMRecord {
			r := uamRow("application_1_0004", "sc2")
			for i := 0; i <= pb.MaxUAMNMTokens; i++ {
				r.NmTokens = append(r.NmTokens, nmTokenRow(fmt.Sprintf("nm-%d", i)))
			}
			return r
		}(),
		"oversized queue": func() *pb.UAMRecord {
			r := uamRow("application_1_0004", "sc2")
			r.Queue = string(make([]byte, 1<<20))
			return r
		}(),
	}
	for name, r := range bad {
		if _, err := c.PutUAM(ctx, r); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := c.GetUAMs(ctx, "nope"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("get with a malformed id: %v, want ErrInvalidArgument", err)
	}
	if _, err := c.ListUAMs(ctx, "", -1); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("list with a negative limit: %v, want ErrInvalidArgument", err)
	}
	if _, err := c.DeleteUAM(ctx, "", "sc2"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("delete without an application: %v, want ErrInvalidArgument", err)
	}
	if _, err := c.PutUAM(ctx, uamRow("application_1_0004", "sc9")); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("UAM on an unregistered sub-cluster: %v, want ErrNotFound", err)
	}
	if rows, err := c.GetUAMs(ctx, "application_1_0004"); err != nil || len(rows) != 0 {
		t.Fatalf("no rows: %v %v", rows, err)
	}

	for _, k := range [][2]string{{"application_1_0005", "sc3"}, {"application_1_0005", "sc2"}, {"application_1_0006", "sc2"}} {
		if _, err := c.PutUAM(ctx, uamRow(k[0], k[1])); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(rows []*pb.UAMRecord, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var s string
		for _, r := range rows {
			s += r.GetApplicationId() + "/" + r.GetSubClusterId() + " "
		}
		return s
	}
	withTokens := uamRow("application_1_0006", "sc3")
	withTokens.NmTokens = [][]byte{nmTokenRow("nm-1"), nmTokenRow("nm-2")}
	if _, err := c.PutUAM(ctx, withTokens); err != nil {
		t.Fatal(err)
	}
	if rows, err := c.GetUAMs(ctx, "application_1_0006"); err != nil || len(rows) != 2 || len(rows[1].GetNmTokens()) != 2 ||
		!bytes.Equal(rows[1].GetNmTokens()[1], withTokens.NmTokens[1]) {
		t.Fatalf("row with NM tokens read back: %v %v", rows, err)
	}
	if got, want := keys(c.GetUAMs(ctx, "application_1_0005")), "application_1_0005/sc2 application_1_0005/sc3 "; got != want {
		t.Errorf("get: %q, want %q", got, want)
	}
	if got, want := keys(c.GetUAMs(ctx, "application_1_0005", client.Stale())), "application_1_0005/sc2 application_1_0005/sc3 "; got != want {
		t.Errorf("stale get: %q, want %q", got, want)
	}
	if got, want := keys(c.ListUAMs(ctx, "sc2", 0)), "application_1_0005/sc2 application_1_0006/sc2 "; got != want {
		t.Errorf("list sc2: %q, want %q", got, want)
	}
	if got, want := keys(c.ListUAMs(ctx, "", 2)), "application_1_0005/sc2 application_1_0005/sc3 "; got != want {
		t.Errorf("list limit 2: %q, want %q", got, want)
	}
	if n, err := c.DeleteUAM(ctx, "application_1_0005", ""); err != nil || n != 2 {
		t.Errorf("delete the application's rows: %d %v, want 2", n, err)
	}
	if got, want := keys(c.ListUAMs(ctx, "", 0)), "application_1_0006/sc2 application_1_0006/sc3 "; got != want {
		t.Errorf("list after delete: %q, want %q", got, want)
	}
}
