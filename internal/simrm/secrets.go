package simrm

import (
	"crypto/hmac"
	"crypto/sha1"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Token kinds, as Hadoop's identifiers name themselves.
const (
	KindAMRMToken      = "YARN_AM_RM_TOKEN"
	KindNMToken        = "NMToken"
	KindContainerToken = "ContainerToken"
)

// ErrInvalidToken rejects a token login (SASL DIGEST-MD5).
var ErrInvalidToken = errors.New("invalid token")

// secrets signs the RM's tokens. Passwords are HMAC-SHA1 of the identifier
// bytes with the master key, as Hadoop's SecretManager.createPassword does,
// so a token is checked by recomputing its password: no per-token state.
type secrets struct {
	mu      sync.RWMutex
	key     []byte
	keyID   int32
	nmKeyID int32
}

func newSecrets(key []byte, epoch int32) *secrets {
	return &secrets{key: append([]byte(nil), key...), keyID: 1, nmKeyID: epoch}
}

func (s *secrets) sign(identifier []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := hmac.New(sha1.New, s.key)
	m.Write(identifier)
	return m.Sum(nil)
}

// rollNMKey changes the key id stamped into NM and container tokens (an RM
// restart does), so AMs get fresh NM tokens.
func (s *secrets) rollNMKey(id int32) {
	s.mu.Lock()
	s.nmKeyID = id
	s.mu.Unlock()
}

func (s *secrets) ids() (int32, int32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keyID, s.nmKeyID
}

// amrmToken issues the AMRMToken of an attempt. Its service is empty, as
// the RM's AMRMTokenSecretManager leaves it; the client sets it.
func (s *secrets) amrmToken(id AttemptID, _ string) Token {
	keyID, _ := s.ids()
	ident, _ := proto.Marshal(&yarnpb.AMRMTokenIdentifierProto{AppAttemptId: attemptPB(id), KeyId: proto.Int32(keyID)})
	return Token{Identifier: ident, Password: s.sign(ident), Kind: KindAMRMToken, Service: ""}
}

// checkAMRM verifies an AMRMToken identifier and returns its attempt and
// password (hadoopipc.SecretManager semantics).
func (s *secrets) checkAMRM(identifier []byte) (AttemptID, []byte, error) {
	var pb yarnpb.AMRMTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &pb); err != nil {
		return AttemptID{}, nil, fmt.Errorf("%w: AMRMTokenIdentifier does not decode: %v", ErrInvalidToken, err)
	}
	if pb.AppAttemptId == nil || pb.AppAttemptId.ApplicationId == nil {
		return AttemptID{}, nil, fmt.Errorf("%w: AMRMTokenIdentifier has no application attempt id", ErrInvalidToken)
	}
	keyID, _ := s.ids()
	if pb.GetKeyId() != keyID {
		return AttemptID{}, nil, fmt.Errorf("%w: AMRMToken key id %d is not the current master key %d", ErrInvalidToken, pb.GetKeyId(), keyID)
	}
	return attemptFromPB(pb.AppAttemptId), s.sign(identifier), nil
}

// nmToken issues the NM token an AM needs to talk to a node.
func (s *secrets) nmToken(id AttemptID, n NodeID, user string) Token {
	_, nmKey := s.ids()
	ident, _ := proto.Marshal(&yarnpb.NMTokenIdentifierProto{
		AppAttemptId: attemptPB(id), NodeId: nodePB(n), AppSubmitter: proto.String(user), KeyId: proto.Int32(nmKey),
	})
	return Token{Identifier: ident, Password: s.sign(ident), Kind: KindNMToken, Service: n.String()}
}

// containerToken issues the token an AM hands the NodeManager to start a
// container. The simulated nodes never check it; real-NM-shaped anyway.
func (s *secrets) containerToken(ci *ContainerInfo, clusterTS int64, expiry int64) Token {
	_, nmKey := s.ids()
	ident, _ := proto.Marshal(&yarnpb.ContainerTokenIdentifierProto{
		ContainerId:         containerPB(ci.ID),
		NmHostAddr:          proto.String(ci.Node.String()),
		AppSubmitter:        proto.String(ci.User),
		Resource:            resourcePB(ci.Resource),
		ExpiryTimeStamp:     proto.Int64(expiry),
		MasterKeyId:         proto.Int32(nmKey),
		RmIdentifier:        proto.Int64(clusterTS),
		Priority:            &yarnpb.PriorityProto{Priority: proto.Int32(ci.Priority)},
		CreationTime:        proto.Int64(ci.Created),
		AllocationRequestId: proto.Int64(ci.AllocationRequestID),
	})
	return Token{Identifier: ident, Password: s.sign(ident), Kind: KindContainerToken, Service: ci.Node.String()}
}

// ---- id and record conversions shared by the IPC binding ----

func appPB(id AppID) *yarnpb.ApplicationIdProto                   { return yarnid.AppPB(id) }
func appFromPB(p *yarnpb.ApplicationIdProto) AppID                { return yarnid.AppFromPB(p) }
func attemptPB(id AttemptID) *yarnpb.ApplicationAttemptIdProto    { return yarnid.AttemptPB(id) }
func attemptFromPB(p *yarnpb.ApplicationAttemptIdProto) AttemptID { return yarnid.AttemptFromPB(p) }
func containerPB(id ContainerID) *yarnpb.ContainerIdProto         { return yarnid.ContainerPB(id) }
func containerFromPB(p *yarnpb.ContainerIdProto) ContainerID      { return yarnid.ContainerFromPB(p) }

func nodePB(n NodeID) *yarnpb.NodeIdProto {
	return &yarnpb.NodeIdProto{Host: proto.String(n.Host), Port: proto.Int32(n.Port)}
}

func resourcePB(r Resource) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(r.MemoryMB), VirtualCores: proto.Int32(r.VCores)}
}

func resourceFromPB(p *yarnpb.ResourceProto) Resource {
	return Resource{MemoryMB: p.GetMemory(), VCores: p.GetVirtualCores()}
}
