package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
	"github.com/yarnfed/yarnfed/statestore/storetest"
)

func newClient(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Addrs: addrs, RetryTimeout: 10 * time.Second, CallTimeout: 3 * time.Second, DisableCache: true, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func addHome(t *testing.T, c *client.Client, app, sc string) {
	t.Helper()
	if _, _, err := c.AddApplicationHome(context.Background(), &pb.ApplicationHome{ApplicationId: app, HomeSubClusterId: sc}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteWhoseReplyIsLostIsNotResent: the store applied the delete and
// the connection broke before the reply. Resending it would report
// NotFound for the caller's own success; the client must report an
// unknown outcome instead.
func TestDeleteWhoseReplyIsLostIsNotResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0001", "sc1")

	f.Once("DeleteApplicationHome", storetest.DropReply)
	err := c.DeleteApplicationHome(ctx, "application_1_0001")
	if !errors.Is(err, client.ErrUnknownOutcome) || errors.Is(err, client.ErrNotFound) {
		t.Fatalf("delete whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	if n := f.Calls("DeleteApplicationHome"); n != 1 {
		t.Fatalf("delete reached the store %d times, want 1", n)
	}
	if _, err := c.GetApplicationHome(ctx, "application_1_0001", false); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("home after the applied delete: %v, want ErrNotFound", err)
	}
}

// TestUpdateWhoseReplyIsLostIsNotResent: a resent blind update could undo a
// concurrent caller's update (X, Y, X).
func TestUpdateWhoseReplyIsLostIsNotResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0002", "sc1")

	f.Once("UpdateApplicationHome", storetest.DropReply)
	err := c.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0002", HomeSubClusterId: "sc2"})
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("update whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	if n := f.Calls("UpdateApplicationHome"); n != 1 {
		t.Fatalf("update reached the store %d times, want 1", n)
	}
	h, err := c.GetApplicationHome(ctx, "application_1_0002", false)
	if err != nil || h.GetHomeSubClusterId() != "sc2" {
		t.Fatalf("home after the applied update: %v %v, want sc2", h, err)
	}
}

// TestInsertWhoseReplyIsLostIsNotResent: insert-if-absent is not resent
// either (a resend after another client's delete would insert a second
// time), batched or not; the row the first attempt stored is there.
func TestInsertWhoseReplyIsLostIsNotResent(t *testing.T) {
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batching), func(t *testing.T) {
			f := storetest.NewFaultyReplica(t)
			c, err := client.New(client.Config{Addrs: []string{f.Addr}, RetryTimeout: 10 * time.Second, CallTimeout: 3 * time.Second, DisableCache: true, DisableBatching: !batching})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			method := "AddApplicationHome"
			if batching {
				method = "AddApplicationHomes"
			}
			f.Once(method, storetest.DropReply)
			ctx := context.Background()
			_, _, err = c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0003", HomeSubClusterId: "sc1"})
			if !errors.Is(err, client.ErrUnknownOutcome) {
				t.Fatalf("insert whose reply was lost: %v, want ErrUnknownOutcome", err)
			}
			if n := f.Calls(method); n != 1 {
				t.Fatalf("insert reached the store %d times, want 1", n)
			}
			// Inserting again is a new call; it finds the first one's row.
			stored, inserted, err := c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0003", HomeSubClusterId: "sc9"})
			if err != nil || inserted || stored.GetHomeSubClusterId() != "sc1" {
				t.Fatalf("insert again: %v inserted=%v %v, want the stored sc1", stored, inserted, err)
			}
		})
	}
}

// TestNotAppliedIsResent: the replica's own marked refusal is retried for a
// non-idempotent write; an unmarked Unavailable after sending is not.
func TestNotAppliedIsResent(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	c := newClient(t, f.Addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0004", "sc1")

	f.Once("DeleteApplicationHome", storetest.NotApplied)
	if err := c.DeleteApplicationHome(ctx, "application_1_0004"); err != nil {
		t.Fatalf("delete after a not-applied refusal: %v", err)
	}
	addHome(t, c, "application_1_0004", "sc1")
	f.Once("DeleteApplicationHome", storetest.BareUnavailable)
	if err := c.DeleteApplicationHome(ctx, "application_1_0004"); !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("delete after an unmarked Unavailable: %v, want ErrUnknownOutcome", err)
	}
}

// TestUnsentCallMovesOn: a replica that is down never received the call,
// so even a non-idempotent write moves on to the next address.
func TestUnsentCallMovesOn(t *testing.T) {
	f := storetest.NewFaultyReplica(t)
	addHome(t, newClient(t, f.Addr), "application_1_0005", "sc1")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	// The first call goes to the first address: the dead one.
	c := newClient(t, dead, f.Addr)
	if err := c.DeleteApplicationHome(context.Background(), "application_1_0005"); err != nil {
		t.Fatalf("delete with the first replica down: %v", err)
	}
}

// TestUnknownOutcomeMovesToAnotherReplica: a write whose outcome is unknown
// is not resent, but the next call must not start on the replica that just
// dropped it: with a frozen leader every call timed out on it in turn and
// writers made no progress (TestStoreFrozenLeaderNoStaleRead, real
// processes).
func TestUnknownOutcomeMovesToAnotherReplica(t *testing.T) {
	f1, f2 := storetest.NewFaultyReplica(t), storetest.NewFaultyReplica(t)
	c := newClient(t, f1.Addr, f2.Addr)
	ctx := context.Background()
	addHome(t, c, "application_1_0009", "sc1") // lands on f1, the first replica

	f1.Once("UpdateApplicationHome", storetest.DropReply)
	err := c.UpdateApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: "application_1_0009", HomeSubClusterId: "sc2"})
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("update whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	_, _ = c.GetApplicationHome(ctx, "application_1_0009", false)
	if n1, n2 := f1.Calls("GetApplicationHome"), f2.Calls("GetApplicationHome"); n1 != 0 || n2 != 1 {
		t.Fatalf("the call after an unknown outcome went to the same replica (first %d, second %d calls)", n1, n2)
	}
}
