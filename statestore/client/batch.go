package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Application-home inserts from concurrent callers are coalesced: while
// maxInflightBatches AddApplicationHomes calls are out, new inserts queue,
// and the next call carries all of them (up to maxBatchItems). One caller
// alone sees no delay; a router submitting hundreds of applications at
// once pays one RPC and one Raft entry per batch instead of per
// application.
const (
	maxInflightBatches = 4
	maxBatchItems      = 512
	// maxBatchBytes keeps a batch under the server's message limit (the
	// largest single context plus 1 MiB by default).
	maxBatchBytes = 1 << 20
)

type addReq struct {
	ctx  context.Context
	home *pb.ApplicationHome
	done chan addRes
}

type addRes struct {
	stored   *pb.ApplicationHome
	inserted bool
	err      error
}

func (c *Client) runAddBatcher(ctx context.Context) {
	defer c.wg.Done()
	sem := make(chan struct{}, maxInflightBatches)
	var carry *addReq // did not fit the previous batch
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-c.addCh:
			case <-ctx.Done():
				return
			}
		}
		batch := []*addReq{first}
		size := proto.Size(first.home)
	drain:
		for len(batch) < maxBatchItems {
			select {
			case r := <-c.addCh:
				if n := proto.Size(r.home); size+n > maxBatchBytes {
					carry = r
					break drain
				} else {
					size += n
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() { <-sem }()
			c.sendAdds(ctx, batch)
		}()
	}
}

func (c *Client) sendAdds(ctx context.Context, batch []*addReq) {
	// Callers that gave up are left out; the batch lives as long as its
	// longest-waiting caller would.
	live := batch[:0]
	var deadline time.Time
	for _, r := range batch {
		if r.ctx.Err() != nil {
			r.done <- addRes{err: r.ctx.Err()}
			continue
		}
		live = append(live, r)
		if dl, ok := r.ctx.Deadline(); !ok {
			deadline = time.Now().Add(c.cfg.RetryTimeout)
		} else if dl.After(deadline) {
			deadline = dl
		}
	}
	if len(live) == 0 {
		return
	}
	bctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// Items the store refused before proposing (leadership moved) are
	// resent; a batch or an item whose outcome is unknown is not (see
	// AddApplicationHome).
	backoff := 5 * time.Millisecond
	for len(live) > 0 {
		req := &pb.AddApplicationHomesRequest{Homes: make([]*pb.ApplicationHome, len(live))}
		for i, r := range live {
			req.Homes[i] = r.home
		}
		resp, err := call(bctx, c, false, func(ctx context.Context, s replica) (*pb.AddApplicationHomesResponse, error) {
			return s.AddApplicationHomes(ctx, req)
		})
		if err == nil && len(resp.GetResults()) != len(live) {
			err = fmt.Errorf("%w: %d results for %d inserts", ErrInternal, len(resp.GetResults()), len(live))
		}
		again := live[:0]
		for i, r := range live {
			if err != nil {
				r.done <- addRes{err: err}
				continue
			}
			res := resp.GetResults()[i]
			switch code := codes.Code(res.GetCode()); {
			case code == codes.OK:
				r.done <- addRes{stored: res.GetStored(), inserted: res.GetInserted()}
			case code == codes.Unavailable && time.Now().Add(backoff).Before(deadline):
				again = append(again, r)
			default:
				r.done <- addRes{err: fromStatus(status.Error(code, res.GetMessage()))}
			}
		}
		live = again
		if len(live) > 0 {
			select {
			case <-bctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 200*time.Millisecond)
		}
	}
}
