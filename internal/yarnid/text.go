package yarnid

import (
	"fmt"
	"strconv"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// The text forms of ids the router handles in their protobuf form, on the
// hot path of every routed call (moved here from router/yarnid so Hadoop's
// ids have one home).

// AppIDString renders an ApplicationId as Hadoop does:
// application_<clusterTimestamp>_<sequence, at least 4 digits>.
func AppIDString(id *yarnpb.ApplicationIdProto) string {
	// strconv, not fmt: called several times per routed call.
	seq := id.GetId()
	if seq < 0 {
		return fmt.Sprintf("application_%d_%04d", id.GetClusterTimestamp(), seq)
	}
	b := make([]byte, 0, 48)
	b = append(b, "application_"...)
	b = strconv.AppendInt(b, id.GetClusterTimestamp(), 10)
	b = append(b, '_')
	switch { // %04d
	case seq < 10:
		b = append(b, "000"...)
	case seq < 100:
		b = append(b, "00"...)
	case seq < 1000:
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(seq), 10)
	return string(b)
}

// ParseAppIDProto parses Hadoop's application id text form into its
// protobuf form; errors wrap ErrBadID.
func ParseAppIDProto(s string) (*yarnpb.ApplicationIdProto, error) {
	id, err := ParseAppID(s)
	if err != nil {
		return nil, err
	}
	return AppPB(id), nil
}

// AttemptIDString renders appattempt_<ts>_<id4>_<attempt6>.
func AttemptIDString(id *yarnpb.ApplicationAttemptIdProto) string {
	a := id.GetApplicationId()
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.GetClusterTimestamp(), a.GetId(), id.GetAttemptId())
}

// AppOfContainer finds the application a container belongs to.
func AppOfContainer(c *yarnpb.ContainerIdProto) *yarnpb.ApplicationIdProto {
	if c.GetAppAttemptId().GetApplicationId() != nil {
		return c.GetAppAttemptId().GetApplicationId()
	}
	return c.GetAppId()
}

// ReservationIDString renders reservation_<ts>_<id4>.
func ReservationIDString(id *yarnpb.ReservationIdProto) string {
	return fmt.Sprintf("reservation_%d_%04d", id.GetClusterTimestamp(), id.GetId())
}
