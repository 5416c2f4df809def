package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yarnfed/yarnfed/statestore/store"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func TestToStatus(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"not found", fmt.Errorf("x: %w", store.ErrNotFound), codes.NotFound},
		{"exists", store.ErrAlreadyExists, codes.AlreadyExists},
		{"invalid", fmt.Errorf("%w: empty id", store.ErrInvalidArgument), codes.InvalidArgument},
		{"not leader is retryable", store.ErrNotLeader, codes.Unavailable},
		{"unavailable", store.ErrUnavailable, codes.Unavailable},
		{"unknown outcome", store.ErrUnknownOutcome, codes.Aborted},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"already a status", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{"other", errors.New("disk on fire"), codes.Internal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(ToStatus(tc.err)); got != tc.want {
				t.Fatalf("ToStatus(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestUnavailableIsMarkedNotApplied: the store's own Unavailable answers
// carry the not-applied marker; other codes do not.
func TestUnavailableIsMarkedNotApplied(t *testing.T) {
	for _, err := range []error{store.ErrNotLeader, fmt.Errorf("x: %w", store.ErrUnavailable)} {
		if got := ToStatus(err); !pb.IsNotApplied(got) {
			t.Errorf("ToStatus(%v) = %v, not marked not applied", err, got)
		}
	}
	for _, err := range []error{store.ErrUnknownOutcome, fmt.Errorf("%w: %w", store.ErrUnknownOutcome, store.ErrUnavailable), store.ErrNotFound} {
		if got := ToStatus(err); pb.IsNotApplied(got) {
			t.Errorf("ToStatus(%v) = %v, marked not applied", err, got)
		}
	}
	if pb.IsNotApplied(status.Error(codes.Unavailable, "connection reset")) {
		t.Error("a bare Unavailable counts as not applied")
	}
}

func TestWatchFilter(t *testing.T) {
	only := &pb.WatchRequest{Policies: true}
	all := &pb.WatchRequest{}
	cases := []struct {
		name string
		req  *pb.WatchRequest
		kind pb.WatchEvent_Kind
		want bool
	}{
		{"policy to policy watcher", only, pb.WatchEvent_POLICY_PUT, true},
		{"membership to policy watcher", only, pb.WatchEvent_SUB_CLUSTER_PUT, false},
		{"app home to policy watcher", only, pb.WatchEvent_APPLICATION_HOME_DELETED, false},
		{"reset always", only, pb.WatchEvent_RESET, true},
		{"progress always", only, pb.WatchEvent_PROGRESS, true},
		{"nothing chosen means everything", all, pb.WatchEvent_APPLICATION_HOME_PUT, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := wanted(tc.req, tc.kind); got != tc.want {
				t.Fatalf("wanted = %v", got)
			}
		})
	}
}
