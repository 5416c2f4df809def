// Package yarnid renders and parses the text forms of YARN's record ids
// (application_<ts>_<seq>, appattempt_..., reservation_...) as Hadoop
// prints them. A leaf: every room of the router names applications.
package yarnid

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// ErrBadRequest: the text is not a valid id (the router's REST API
// answers it with 400; router.ErrBadRequest is this same value).
var ErrBadRequest = errors.New("bad request")

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

// ParseAppID parses Hadoop's application id text form.
func ParseAppID(s string) (*yarnpb.ApplicationIdProto, error) {
	rest, ok := strings.CutPrefix(s, "application_")
	if !ok {
		return nil, fmt.Errorf("%w: invalid ApplicationId %q: must start with application_", ErrBadRequest, s)
	}
	ts, seq, ok := strings.Cut(rest, "_")
	if !ok {
		return nil, fmt.Errorf("%w: invalid ApplicationId %q: want application_<timestamp>_<id>", ErrBadRequest, s)
	}
	t, err1 := strconv.ParseInt(ts, 10, 64)
	n, err2 := strconv.ParseInt(seq, 10, 32)
	if err1 != nil || err2 != nil || t < 0 || n < 0 {
		return nil, fmt.Errorf("%w: invalid ApplicationId %q: timestamp and id must be non-negative integers", ErrBadRequest, s)
	}
	return &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(t), Id: proto.Int32(int32(n))}, nil
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
