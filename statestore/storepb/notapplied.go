package storepb

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A replica's own Unavailable answers mean "not applied": it refused the
// call before proposing it (not the leader, no leader known, leadership
// changing, shutting down before the command was queued). gRPC also
// answers Unavailable when a connection breaks mid-call, after the write
// may have been applied, so the store marks its own answers with an
// ErrorInfo detail; an Unavailable without it proves nothing. The code
// stays Unavailable for clients that do not look at details.
const (
	ErrorDomain      = "statestore.yarnfed.io"
	ReasonNotApplied = "NOT_APPLIED"
)

// NotApplied returns an Unavailable status carrying the not-applied marker.
func NotApplied(msg string) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonNotApplied, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}

// IsNotApplied reports whether err is an Unavailable status a replica
// marked as not applied.
func IsNotApplied(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	st := se.GRPCStatus()
	if st.Code() != codes.Unavailable {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == ReasonNotApplied && ei.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}
