package kuberm

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// The NodeManager face's tokens: NM tokens (an AM's login to a node's
// ContainerManagementProtocol) and container tokens (the RM's permit for
// one container, which startContainers checks). Both are signed like
// Hadoop's SecretManager does (HMAC-SHA1 of the identifier bytes), with a
// key of their own derived from the AMRMToken master key: one Secret to
// keep, yet a password of one kind never verifies a token of another.

const (
	// KindNMToken and KindContainerToken are Hadoop's token kinds.
	KindNMToken        = "NMToken"
	KindContainerToken = "ContainerToken"
	// nmKeyID is the key id stamped into NM and container tokens. One key
	// for the life of the master key Secret (rolling is left: DESIGN.md).
	nmKeyID = 1
	// maxTokenIdentifier bounds an identifier a peer sends before we parse it.
	maxTokenIdentifier = 4096
)

// nmKey is the NM and container tokens' HMAC key.
func (r *RM) nmKey() []byte {
	m := hmac.New(sha256.New, r.masterKey)
	m.Write([]byte("yarnfed.io/kuberm nm-token-key"))
	return m.Sum(nil)
}

func (r *RM) signNM(identifier []byte) []byte {
	m := hmac.New(sha1.New, r.nmKey())
	m.Write(identifier)
	return m.Sum(nil)
}

func nodeIDString(n *yarnpb.NodeIdProto) string {
	return fmt.Sprintf("%s:%d", n.GetHost(), n.GetPort())
}

// nmToken issues the NM token attempt at uses to talk to node n, as the RM
// sends it in an allocate answer.
func (r *RM) nmToken(at yarnid.AttemptID, n *yarnpb.NodeIdProto, user string) *commonpb.TokenProto {
	id := mustMarshal(&yarnpb.NMTokenIdentifierProto{
		AppAttemptId: yarnid.AttemptPB(at), NodeId: n, AppSubmitter: proto.String(user), KeyId: proto.Int32(nmKeyID),
	})
	return &commonpb.TokenProto{Identifier: id, Password: r.signNM(id), Kind: proto.String(KindNMToken),
		Service: proto.String(nodeIDString(n))}
}

// containerGrant is what a container token says: the container, where it
// may run and how big it is.
type containerGrant struct {
	ID           yarnid.ContainerID
	Node         *yarnpb.NodeIdProto
	User         string
	Resource     *yarnpb.ResourceProto
	Priority     int32
	AllocationID int64
	Created      int64 // ms
	Expiry       int64 // ms
}

// containerToken issues the token an AM hands startContainers.
func (r *RM) containerToken(g containerGrant) *commonpb.TokenProto {
	id := mustMarshal(&yarnpb.ContainerTokenIdentifierProto{
		ContainerId:         yarnid.ContainerPB(g.ID),
		NmHostAddr:          proto.String(nodeIDString(g.Node)),
		AppSubmitter:        proto.String(g.User),
		Resource:            g.Resource,
		ExpiryTimeStamp:     proto.Int64(g.Expiry),
		MasterKeyId:         proto.Int32(nmKeyID),
		RmIdentifier:        proto.Int64(r.ts),
		Priority:            &yarnpb.PriorityProto{Priority: proto.Int32(g.Priority)},
		CreationTime:        proto.Int64(g.Created),
		AllocationRequestId: proto.Int64(g.AllocationID),
	})
	return &commonpb.TokenProto{Identifier: id, Password: r.signNM(id), Kind: proto.String(KindContainerToken),
		Service: proto.String(nodeIDString(g.Node))}
}

// checkNMToken parses an NM token identifier (the DIGEST-MD5 login of the
// NM face) and returns it with the password it must carry.
func (r *RM) checkNMToken(identifier []byte) (*yarnpb.NMTokenIdentifierProto, []byte, error) {
	if len(identifier) > maxTokenIdentifier {
		return nil, nil, fmt.Errorf("%w: NM token identifier of %d bytes", ErrInvalidToken, len(identifier))
	}
	var tid yarnpb.NMTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &tid); err != nil || tid.AppAttemptId == nil || tid.NodeId == nil || tid.GetKeyId() != nmKeyID {
		return nil, nil, fmt.Errorf("%w: not an NM token of this RM", ErrInvalidToken)
	}
	return &tid, r.signNM(identifier), nil
}

// checkContainerToken verifies a container token's password and returns
// what it grants. Expiry and the node it names are the caller's to check.
// A token of an earlier kuberm process verifies (the key is kept in a
// Secret), so containers allocated before a restart still start: a
// NodeManager's check of the RM identifier would lose them.
func (r *RM) checkContainerToken(t *commonpb.TokenProto) (*yarnpb.ContainerTokenIdentifierProto, error) {
	if t == nil || len(t.GetIdentifier()) > maxTokenIdentifier {
		return nil, fmt.Errorf("%w: no container token, or one too large", ErrInvalidToken)
	}
	var tid yarnpb.ContainerTokenIdentifierProto
	if err := proto.Unmarshal(t.GetIdentifier(), &tid); err != nil || tid.ContainerId == nil || tid.GetMasterKeyId() != nmKeyID {
		return nil, fmt.Errorf("%w: not a container token of this RM", ErrInvalidToken)
	}
	if !hmac.Equal(r.signNM(t.GetIdentifier()), t.GetPassword()) {
		return nil, fmt.Errorf("%w: container token password mismatch for %s", ErrInvalidToken,
			yarnid.ContainerFromPB(tid.ContainerId))
	}
	return &tid, nil
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err) // plain fields always marshal
	}
	return b
}
