package client

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func TestFromStatusMapsCodesToSentinels(t *testing.T) {
	cases := []struct {
		name string
		code codes.Code
		want error
	}{
		{"not found", codes.NotFound, ErrNotFound},
		{"already exists", codes.AlreadyExists, ErrAlreadyExists},
		{"invalid argument", codes.InvalidArgument, ErrInvalidArgument},
		{"unavailable", codes.Unavailable, ErrUnavailable},
		{"aborted is unknown outcome", codes.Aborted, ErrUnknownOutcome},
		{"deadline", codes.DeadlineExceeded, context.DeadlineExceeded},
		{"canceled", codes.Canceled, context.Canceled},
		{"anything else", codes.DataLoss, ErrInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := fromStatus(status.Error(tc.code, "detail"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("fromStatus(%v) = %v, want %v", tc.code, err, tc.want)
			}
		})
	}
}

func TestNewNeedsAddresses(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("New without addresses: %v", err)
	}
}

// TestCacheGenerationDropsRacingLoad: a load that started before an
// invalidation must not store what it read.
func TestCacheGenerationDropsRacingLoad(t *testing.T) {
	c := newCache()
	c.setSynced(true)
	ctx := context.Background()
	stale := []*pb.SubClusterInfo{{SubClusterId: "old"}}
	got, err := c.membership.load(ctx, c, func(context.Context) ([]*pb.SubClusterInfo, error) {
		c.apply(&pb.WatchEvent{Kind: pb.WatchEvent_SUB_CLUSTER_PUT}) // arrives mid-load
		return stale, nil
	})
	if err != nil || len(got) != 1 {
		t.Fatalf("load: %v %v", got, err)
	}
	loads := 0
	fresh := []*pb.SubClusterInfo{{SubClusterId: "new"}}
	for i := 0; i < 2; i++ {
		got, _ = c.membership.load(ctx, c, func(context.Context) ([]*pb.SubClusterInfo, error) {
			loads++
			return fresh, nil
		})
	}
	if loads != 1 || got[0].GetSubClusterId() != "new" {
		t.Fatalf("racing load was cached: %d loads, got %v", loads, got)
	}
	// Without a live watch nothing is cached.
	c.setSynced(false)
	c.membership.load(ctx, c, func(context.Context) ([]*pb.SubClusterInfo, error) { loads++; return fresh, nil })
	c.membership.load(ctx, c, func(context.Context) ([]*pb.SubClusterInfo, error) { loads++; return fresh, nil })
	if loads != 3 {
		t.Fatalf("cache served without a watch: %d loads", loads)
	}
}
