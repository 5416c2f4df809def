package router

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// submitReservation: the queue's policy picks a sub-cluster, the reservation
// home is recorded when the store keeps reservation homes, then the RM gets
// the reservation; failures retry elsewhere like submitApplication.
func (r *Router) submitReservation(ctx context.Context, req *yarnpb.ReservationSubmissionRequestProto) (*yarnpb.ReservationSubmissionResponseProto, error) {
	if req.GetReservationId() == nil {
		return nil, fmt.Errorf("%w: submitReservation: missing ReservationId", ErrBadRequest)
	}
	rid := ReservationIDString(req.GetReservationId())
	pol, err := r.policies.forQueue(ctx, req.GetQueue())
	if err != nil {
		return nil, err
	}
	rs, _ := r.store.(ReservationStore)
	sub := AppSubmission{Queue: req.GetQueue(), ReservationID: rid}
	var resp *yarnpb.ReservationSubmissionResponseProto
	stored := false
	bl := r.newBlacklist()
	var lastErr error
	for try := 0; try < r.cfg.SubmitRetries; try++ {
		var cands []SubClusterInfo
		if err := r.members.waitFor(ctx, r.window(lastErr), func() bool {
			cands = r.members.candidates(bl)
			return len(cands) > 0
		}); err != nil {
			return nil, firstErr(lastErr, err)
		}
		home, err := pol.SelectHome(ctx, sub, cands)
		if err != nil {
			return nil, err
		}
		if rs != nil && !stored {
			if home, err = rs.AddReservationHome(ctx, rid, home); err != nil {
				return nil, fmt.Errorf("submitReservation %s: store home: %w", rid, err)
			}
			stored = true
		}
		sc, ok := r.members.get(home)
		if !ok {
			return nil, fmt.Errorf("submitReservation %s: home %s is not a registered sub-cluster", rid, home)
		}
		auditOf(ctx).sc = home
		resp = &yarnpb.ReservationSubmissionResponseProto{}
		if lastErr = r.callSC(ctx, sc, "submitReservation", req, resp); lastErr == nil {
			return resp, nil
		}
		if rs != nil {
			// The stored row pins the reservation; do not move it.
			return nil, lastErr
		}
		bl.add(sc)
	}
	return nil, lastErr
}

func (r *Router) updateReservation(ctx context.Context, req *yarnpb.ReservationUpdateRequestProto) (*yarnpb.ReservationUpdateResponseProto, error) {
	resp := &yarnpb.ReservationUpdateResponseProto{}
	return resp, r.onReservationHome(ctx, "updateReservation", req.GetReservationId(), req, resp)
}

func (r *Router) deleteReservation(ctx context.Context, req *yarnpb.ReservationDeleteRequestProto) (*yarnpb.ReservationDeleteResponseProto, error) {
	resp := &yarnpb.ReservationDeleteResponseProto{}
	return resp, r.onReservationHome(ctx, "deleteReservation", req.GetReservationId(), req, resp)
}

// onReservationHome sends a call to the sub-cluster holding the reservation:
// the stored home, else the one whose listReservations shows it.
func (r *Router) onReservationHome(ctx context.Context, method string, id *yarnpb.ReservationIdProto, req, resp proto.Message) error {
	if id == nil {
		return fmt.Errorf("%w: %s: missing ReservationId", ErrBadRequest, method)
	}
	rid := ReservationIDString(id)
	var home SubClusterID
	if rs, ok := r.store.(ReservationStore); ok {
		h, err := rs.GetReservationHome(ctx, rid)
		if err != nil && !errors.Is(err, ErrNoHome) {
			return err
		}
		home = h
	}
	if home == "" {
		res, err := fanout(ctx, r, "listReservations", &yarnpb.ReservationListRequestProto{ReservationId: proto.String(rid)},
			newMsg[yarnpb.ReservationListResponseProto], true)
		if err != nil {
			return err
		}
		for _, x := range res {
			if len(x.resp.GetReservations()) > 0 {
				home = x.sc
				break
			}
		}
		if home == "" {
			return hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s: reservation %s not found in any sub-cluster", method, rid)
		}
	}
	sc, ok := r.members.get(home)
	if !ok {
		return fmt.Errorf("%s: reservation home %s is not a registered sub-cluster", method, home)
	}
	auditOf(ctx).sc = home
	return r.callSC(ctx, sc, method, req, resp)
}
