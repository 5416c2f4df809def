package server

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

func wanted(r *pb.WatchRequest, k pb.WatchEvent_Kind) bool {
	all := !r.GetMembership() && !r.GetPolicies() && !r.GetApplicationHomes()
	switch k {
	case pb.WatchEvent_SUB_CLUSTER_PUT, pb.WatchEvent_SUB_CLUSTER_DELETED:
		return all || r.GetMembership()
	case pb.WatchEvent_POLICY_PUT, pb.WatchEvent_POLICY_DELETED:
		return all || r.GetPolicies()
	case pb.WatchEvent_APPLICATION_HOME_PUT, pb.WatchEvent_APPLICATION_HOME_DELETED:
		return all || r.GetApplicationHomes()
	}
	return true // RESET, SYNCED
}

// Watch streams changes applied on this replica. It never forwards: any
// replica's applied stream is a valid (possibly slightly behind) history,
// and watchers spread over followers instead of loading the leader. The
// first events are the backlog after r.AfterIndex (or a RESET if it is
// gone), then SYNCED, then live events. A watcher that falls behind gets a
// RESET and continues from the present.
func (s *Server) Watch(r *pb.WatchRequest, stream pb.StateStore_WatchServer) error {
	ctx := stream.Context()
	may := watchAllowed(ctx) // watchauthz.go
	tick := time.NewTicker(s.progressEvery)
	defer tick.Stop()
	after := r.GetAfterIndex()
	for {
		sub := s.st.Watch(after)
		synced := &pb.WatchEvent{Kind: pb.WatchEvent_SYNCED, Index: s.st.AppliedIndex()}
		backlog := len(sub.C)
		err := func() error {
			defer sub.Cancel()
			for {
				if backlog == 0 && synced != nil {
					if err := stream.Send(synced); err != nil {
						return err
					}
					synced = nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-tick.C:
					// Silence is how a cut-off replica looks to its
					// watchers: only vouch for freshness while in touch.
					if synced == nil && s.st.InTouch(2*s.progressEvery) {
						if err := stream.Send(&pb.WatchEvent{Kind: pb.WatchEvent_PROGRESS, Index: s.st.AppliedIndex()}); err != nil {
							return err
						}
					}
				case e, ok := <-sub.C:
					if !ok {
						if sub.Lagged() {
							return errLagged
						}
						return status.Error(codes.Unavailable, "statestore: replica shutting down")
					}
					if backlog > 0 {
						backlog--
					}
					if e.GetIndex() > after {
						after = e.GetIndex()
					}
					if !wanted(r, e.GetKind()) || !may(e.GetKind()) {
						continue
					}
					if err := stream.Send(e); err != nil {
						return err
					}
				}
			}
		}()
		if err != errLagged {
			return err
		}
		if err := stream.Send(&pb.WatchEvent{Kind: pb.WatchEvent_RESET, Index: s.st.AppliedIndex()}); err != nil {
			return err
		}
		after = 0
	}
}

var errLagged = status.Error(codes.ResourceExhausted, "statestore: watcher fell behind")
