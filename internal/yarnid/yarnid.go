// Package yarnid is Hadoop's record ids (ApplicationId, ApplicationAttemptId,
// ContainerId) with their string forms and protobuf forms. simrm and kuberm
// both hand them out; the string forms are wire facts Java parses.
package yarnid

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Hadoop's record ids and their string forms. The string forms are wire
// facts: Java clients parse them (ApplicationId.fromString and friends), the
// REST API uses them as path segments, and the federation state store keys
// applications by them.

// ContainerIDBits is how many low bits of ContainerIdProto.id hold the
// per-application sequence; the bits above hold the RM epoch, so ids stay
// unique across RM restarts and across the sub-clusters of a federation.
const ContainerIDBits = 40

const containerSeqMask = int64(1)<<ContainerIDBits - 1

// ErrBadID reports an id string that is not in Hadoop's format.
var ErrBadID = errors.New("invalid id")

// AppID is an ApplicationId: the RM's cluster timestamp plus a sequence.
type AppID struct {
	ClusterTimestamp int64
	ID               int32
}

// String renders application_<ts>_<id>, the id zero-padded to 4 digits.
func (a AppID) String() string {
	return "application_" + strconv.FormatInt(a.ClusterTimestamp, 10) + "_" + Pad(int64(a.ID), 4)
}

// AttemptID is an ApplicationAttemptId.
type AttemptID struct {
	App     AppID
	Attempt int32
}

// String renders appattempt_<ts>_<app>_<attempt>, the attempt padded to 6.
func (a AttemptID) String() string {
	return "appattempt_" + strconv.FormatInt(a.App.ClusterTimestamp, 10) + "_" +
		Pad(int64(a.App.ID), 4) + "_" + Pad(int64(a.Attempt), 6)
}

// ContainerID is a ContainerId. ID is the raw 64-bit value carried in
// ContainerIdProto.id: epoch << 40 | sequence.
type ContainerID struct {
	Attempt AttemptID
	ID      int64
}

// Epoch is the RM epoch encoded in the high bits of the id.
func (c ContainerID) Epoch() int64 { return c.ID >> ContainerIDBits }

// Sequence is the per-application container number.
func (c ContainerID) Sequence() int64 { return c.ID & containerSeqMask }

// String renders container_[e<epoch>_]<ts>_<app>_<attempt>_<seq>: the epoch
// part only when non-zero (padded to 2), the attempt padded to 2 and the
// sequence to 6, as Hadoop's ContainerId.toString does.
func (c ContainerID) String() string {
	var b strings.Builder
	b.WriteString("container_")
	if e := c.Epoch(); e > 0 {
		b.WriteString("e")
		b.WriteString(Pad(e, 2))
		b.WriteString("_")
	}
	b.WriteString(strconv.FormatInt(c.Attempt.App.ClusterTimestamp, 10))
	b.WriteString("_")
	b.WriteString(Pad(int64(c.Attempt.App.ID), 4))
	b.WriteString("_")
	b.WriteString(Pad(int64(c.Attempt.Attempt), 2))
	b.WriteString("_")
	b.WriteString(Pad(c.Sequence(), 6))
	return b.String()
}

// NewContainerID builds the raw id from an epoch and a sequence.
func NewContainerID(attempt AttemptID, epoch, seq int64) ContainerID {
	return ContainerID{Attempt: attempt, ID: epoch<<ContainerIDBits | seq&containerSeqMask}
}

// Pad renders v zero-padded to width digits, as Hadoop's id forms do.
func Pad(v int64, width int) string {
	s := strconv.FormatInt(v, 10)
	neg := v < 0
	if neg {
		s = s[1:]
	}
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ParseAppID parses application_<ts>_<id>.
func ParseAppID(s string) (AppID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || parts[0] != "application" {
		return AppID{}, fmt.Errorf("%w: %q is not application_<clusterTimestamp>_<id>", ErrBadID, s)
	}
	return parseAppParts(s, parts[1], parts[2])
}

// ParseAttemptID parses appattempt_<ts>_<app>_<attempt>.
func ParseAttemptID(s string) (AttemptID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || parts[0] != "appattempt" {
		return AttemptID{}, fmt.Errorf("%w: %q is not appattempt_<clusterTimestamp>_<app>_<attempt>", ErrBadID, s)
	}
	app, err := parseAppParts(s, parts[1], parts[2])
	if err != nil {
		return AttemptID{}, err
	}
	n, err := parseNonNeg(parts[3], 31)
	if err != nil {
		return AttemptID{}, fmt.Errorf("%w: attempt in %q: %v", ErrBadID, s, err)
	}
	return AttemptID{App: app, Attempt: int32(n)}, nil
}

// ParseContainerID parses both the plain and the epoch ("e<N>_") forms.
func ParseContainerID(s string) (ContainerID, error) {
	parts := strings.Split(s, "_")
	if len(parts) < 5 || parts[0] != "container" {
		return ContainerID{}, fmt.Errorf("%w: %q is not container_[e<epoch>_]<ts>_<app>_<attempt>_<seq>", ErrBadID, s)
	}
	var epoch int64
	if strings.HasPrefix(parts[1], "e") {
		e, err := parseNonNeg(parts[1][1:], 23)
		if err != nil {
			return ContainerID{}, fmt.Errorf("%w: epoch in %q: %v", ErrBadID, s, err)
		}
		epoch = e
		parts = parts[1:]
	}
	if len(parts) != 5 {
		return ContainerID{}, fmt.Errorf("%w: %q has the wrong number of fields", ErrBadID, s)
	}
	app, err := parseAppParts(s, parts[1], parts[2])
	if err != nil {
		return ContainerID{}, err
	}
	att, err := parseNonNeg(parts[3], 31)
	if err != nil {
		return ContainerID{}, fmt.Errorf("%w: attempt in %q: %v", ErrBadID, s, err)
	}
	seq, err := parseNonNeg(parts[4], ContainerIDBits)
	if err != nil {
		return ContainerID{}, fmt.Errorf("%w: sequence in %q: %v", ErrBadID, s, err)
	}
	return NewContainerID(AttemptID{App: app, Attempt: int32(att)}, epoch, seq), nil
}

func parseAppParts(s, ts, id string) (AppID, error) {
	t, err := parseNonNeg(ts, 63)
	if err != nil {
		return AppID{}, fmt.Errorf("%w: cluster timestamp in %q: %v", ErrBadID, s, err)
	}
	n, err := parseNonNeg(id, 31)
	if err != nil {
		return AppID{}, fmt.Errorf("%w: id in %q: %v", ErrBadID, s, err)
	}
	return AppID{ClusterTimestamp: t, ID: int32(n)}, nil
}

// parseNonNeg accepts decimal digits only (no sign, no spaces) below 2^bits.
func parseNonNeg(s string, bits int) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a decimal number", s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if bits < 63 && v >= int64(1)<<bits {
		return 0, fmt.Errorf("%d out of range", v)
	}
	return v, nil
}

// AppPB is the protobuf form of an ApplicationId.
func AppPB(id AppID) *yarnpb.ApplicationIdProto {
	return &yarnpb.ApplicationIdProto{Id: proto.Int32(id.ID), ClusterTimestamp: proto.Int64(id.ClusterTimestamp)}
}

// AppFromPB reads an ApplicationId (nil reads as the zero id).
func AppFromPB(p *yarnpb.ApplicationIdProto) AppID {
	return AppID{ClusterTimestamp: p.GetClusterTimestamp(), ID: p.GetId()}
}

// AttemptPB is the protobuf form of an ApplicationAttemptId.
func AttemptPB(id AttemptID) *yarnpb.ApplicationAttemptIdProto {
	return &yarnpb.ApplicationAttemptIdProto{ApplicationId: AppPB(id.App), AttemptId: proto.Int32(id.Attempt)}
}

// AttemptFromPB reads an ApplicationAttemptId.
func AttemptFromPB(p *yarnpb.ApplicationAttemptIdProto) AttemptID {
	return AttemptID{App: AppFromPB(p.GetApplicationId()), Attempt: p.GetAttemptId()}
}

// ContainerPB is the protobuf form of a ContainerId.
func ContainerPB(id ContainerID) *yarnpb.ContainerIdProto {
	return &yarnpb.ContainerIdProto{AppId: AppPB(id.Attempt.App), AppAttemptId: AttemptPB(id.Attempt), Id: proto.Int64(id.ID)}
}

// ContainerFromPB reads a ContainerId; old clients may send only app_id.
func ContainerFromPB(p *yarnpb.ContainerIdProto) ContainerID {
	at := AttemptFromPB(p.GetAppAttemptId())
	if p.GetAppAttemptId() == nil && p.GetAppId() != nil {
		at.App = AppFromPB(p.GetAppId())
	}
	return ContainerID{Attempt: at, ID: p.GetId()}
}
