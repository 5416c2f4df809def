package router

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// submitReservation: the queue's policy picks a sub-cluster, the reservation
// home is recorded when the store keeps reservation homes, then the RM gets
// the reservation; failures retry elsewhere like submitApplication.
func (r *Router) submitReservation(ctx context.Context, req *yarnpb.ReservationSubmissionRequestProto) (*yarnpb.ReservationSubmissionResponseProto, error) {
	var resp *yarnpb.ReservationSubmissionResponseProto
	err := r.submitReservationVia(ctx, "submitReservation", req.GetQueue(), req.GetReservationId(), func(sc SubClusterInfo) error {
		resp = &yarnpb.ReservationSubmissionResponseProto{}
		return r.callSC(ctx, sc, "submitReservation", req, resp)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// submitReservationVia picks the reservation's home and hands it to send
// (an IPC call, or the REST relay): one placement rule for both APIs.
func (r *Router) submitReservationVia(ctx context.Context, method, queue string, id *yarnpb.ReservationIdProto, send func(SubClusterInfo) error) error {
	if id == nil {
		return fmt.Errorf("%w: %s: missing ReservationId", ErrBadRequest, method)
	}
	rid := yarnid.ReservationIDString(id)
	pol, err := r.policies.forQueue(ctx, queue)
	if err != nil {
		return err
	}
	rs, _ := r.store.(ReservationStore)
	// The reservation is being placed, not used: the policy chooses by queue
	// (an AppSubmission with a ReservationID means "run where that
	// reservation lives", which the store does not know yet).
	sub := AppSubmission{Queue: queue}
	stored := false
	bl := r.newBlacklist()
	var lastErr error
	for try := 0; try < r.cfg.SubmitRetries; try++ {
		var cands []SubClusterInfo
		if err := r.members.waitFor(ctx, r.window(lastErr), func() bool {
			cands = r.members.candidates(bl)
			return len(cands) > 0
		}); err != nil {
			return firstErr(lastErr, err)
		}
		home, err := pol.SelectHome(ctx, sub, cands)
		if err != nil {
			return err
		}
		if rs != nil && !stored {
			if home, err = rs.AddReservationHome(ctx, rid, home); err != nil {
				return fmt.Errorf("%s %s: store home: %w", method, rid, err)
			}
			stored = true
		}
		sc, ok := r.members.get(home)
		if !ok {
			return fmt.Errorf("%s %s: home %s is not a registered sub-cluster", method, rid, home)
		}
		auditOf(ctx).SC = home
		if lastErr = send(sc); lastErr == nil {
			return nil
		}
		if rs != nil {
			// The stored row pins the reservation; do not move it.
			return lastErr
		}
		bl.add(sc)
	}
	return lastErr
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
	sc, err := r.reservationHome(ctx, method, id)
	if err != nil {
		return err
	}
	return r.callSC(ctx, sc, method, req, resp)
}

// reservationHome is the sub-cluster holding a reservation: the stored
// home, else the one whose listReservations shows it.
func (r *Router) reservationHome(ctx context.Context, method string, id *yarnpb.ReservationIdProto) (SubClusterInfo, error) {
	if id == nil {
		return SubClusterInfo{}, fmt.Errorf("%w: %s: missing ReservationId", ErrBadRequest, method)
	}
	rid := yarnid.ReservationIDString(id)
	var home SubClusterID
	if rs, ok := r.store.(ReservationStore); ok {
		h, err := rs.GetReservationHome(ctx, rid)
		if err != nil && !errors.Is(err, ErrNoHome) {
			return SubClusterInfo{}, err
		}
		home = h
	}
	if home == "" {
		res, err := fanout(ctx, r, "listReservations", &yarnpb.ReservationListRequestProto{ReservationId: proto.String(rid)},
			newMsg[yarnpb.ReservationListResponseProto], true)
		if err != nil {
			return SubClusterInfo{}, err
		}
		for _, x := range res {
			if len(x.resp.GetReservations()) > 0 {
				home = x.sc
				break
			}
		}
		if home == "" {
			return SubClusterInfo{}, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s: reservation %s not found in any sub-cluster", method, rid)
		}
	}
	sc, ok := r.members.get(home)
	if !ok {
		return SubClusterInfo{}, fmt.Errorf("%s: reservation home %s is not a registered sub-cluster", method, home)
	}
	auditOf(ctx).SC = home
	return sc, nil
}
