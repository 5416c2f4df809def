package amrmproxy

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// AttemptID names one application attempt (Hadoop ApplicationAttemptId).
type AttemptID struct {
	ClusterTimestamp int64
	App              int32
	Attempt          int32
}

// AppKey is the ApplicationId part, the same in every sub-cluster: the
// UAMs are submitted with the home's ApplicationId.
func (a AttemptID) AppKey() string {
	return fmt.Sprintf("application_%d_%04d", a.ClusterTimestamp, a.App)
}

func (a AttemptID) String() string {
	return fmt.Sprintf("appattempt_%d_%04d_%06d", a.ClusterTimestamp, a.App, a.Attempt)
}

// ApplicationIDProto returns the ApplicationIdProto of the attempt's app.
func (a AttemptID) ApplicationIDProto() *yarnpb.ApplicationIdProto {
	return &yarnpb.ApplicationIdProto{Id: proto.Int32(a.App), ClusterTimestamp: proto.Int64(a.ClusterTimestamp)}
}

// ErrBadTokenIdentifier: the bytes are not an AMRMTokenIdentifier naming
// an application attempt.
var ErrBadTokenIdentifier = errors.New("not an AMRMTokenIdentifier")

// maxTokenIdentifier bounds what we decode; a real AMRMTokenIdentifier is
// about 20 bytes.
const maxTokenIdentifier = 1024

// ParseAMRMTokenIdentifier decodes the identifier of an AMRMToken (the
// base64-decoded SASL user name of an AM's DIGEST-MD5 login) and returns
// the attempt it names and its master key id.
func ParseAMRMTokenIdentifier(b []byte) (AttemptID, int32, error) {
	if len(b) == 0 || len(b) > maxTokenIdentifier {
		return AttemptID{}, 0, fmt.Errorf("%w: %d bytes", ErrBadTokenIdentifier, len(b))
	}
	var pb yarnpb.AMRMTokenIdentifierProto
	if err := proto.Unmarshal(b, &pb); err != nil {
		return AttemptID{}, 0, fmt.Errorf("%w: %v", ErrBadTokenIdentifier, err)
	}
	at := pb.GetAppAttemptId()
	app := at.GetApplicationId()
	if at == nil || app == nil || app.Id == nil || app.ClusterTimestamp == nil || at.AttemptId == nil {
		return AttemptID{}, 0, fmt.Errorf("%w: no complete application attempt id", ErrBadTokenIdentifier)
	}
	id := AttemptID{ClusterTimestamp: app.GetClusterTimestamp(), App: app.GetId(), Attempt: at.GetAttemptId()}
	if id.App <= 0 || id.Attempt <= 0 || id.ClusterTimestamp < 0 {
		return AttemptID{}, 0, fmt.Errorf("%w: invalid attempt %s", ErrBadTokenIdentifier, id)
	}
	return id, pb.GetKeyId(), nil
}

// containerKey names a container across sub-clusters: the id carries the
// issuing RM's epoch in its high bits, and epochs differ per sub-cluster.
type containerKey struct {
	ts      int64
	app     int32
	attempt int32
	id      int64
}

func keyOf(c *yarnpb.ContainerIdProto) containerKey {
	k := containerKey{id: c.GetId()}
	if at := c.GetAppAttemptId(); at != nil {
		k.attempt = at.GetAttemptId()
		k.ts, k.app = at.GetApplicationId().GetClusterTimestamp(), at.GetApplicationId().GetId()
	} else {
		k.ts, k.app = c.GetAppId().GetClusterTimestamp(), c.GetAppId().GetId()
	}
	return k
}

func (k containerKey) String() string {
	return fmt.Sprintf("%d_%d_%d_%d", k.ts, k.app, k.attempt, k.id)
}

func parseContainerKey(s string) (containerKey, error) {
	var k containerKey
	n, err := fmt.Sscanf(s, "%d_%d_%d_%d", &k.ts, &k.app, &k.attempt, &k.id)
	if err != nil || n != 4 {
		return containerKey{}, fmt.Errorf("bad container key %q", s)
	}
	return k, nil
}

// proto rebuilds the container id (attempt id and the deprecated app id).
func (k containerKey) proto() *yarnpb.ContainerIdProto {
	app := &yarnpb.ApplicationIdProto{ClusterTimestamp: proto.Int64(k.ts), Id: proto.Int32(k.app)}
	return &yarnpb.ContainerIdProto{AppId: app, Id: proto.Int64(k.id),
		AppAttemptId: &yarnpb.ApplicationAttemptIdProto{ApplicationId: app, AttemptId: proto.Int32(k.attempt)}}
}
