package store

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// CommandType is the first byte of every Raft log entry this store writes.
// Values are append-only: never renumber or reuse one. A type with
// IgnoreUnknown set may be skipped by a replica that does not know it (for
// rolling upgrades of optional commands); any other unknown type stops the
// replica, because skipping it would fork the state.
type CommandType uint8

// IgnoreUnknown is the high bit of a CommandType.
const IgnoreUnknown CommandType = 0x80

// Command types. Append only.
const (
	CmdRegisterSubCluster     CommandType = 1  // RegisterSubClusterCommand
	CmdHeartbeat              CommandType = 2  // HeartbeatCommand
	CmdDeregisterSubCluster   CommandType = 3  // DeregisterSubClusterCommand
	CmdAddApplicationHome     CommandType = 4  // AddApplicationHomeCommand
	CmdUpdateApplicationHome  CommandType = 5  // UpdateApplicationHomeCommand
	CmdDeleteApplicationHome  CommandType = 6  // DeleteApplicationHomeRequest
	CmdSetPolicy              CommandType = 7  // SetPolicyRequest
	CmdDeletePolicies         CommandType = 8  // DeletePoliciesRequest
	CmdAddReservationHome     CommandType = 9  // AddReservationHomeRequest
	CmdUpdateReservationHome  CommandType = 10 // UpdateReservationHomeRequest
	CmdDeleteReservationHome  CommandType = 11 // DeleteReservationHomeRequest
	CmdStoreMasterKey         CommandType = 12 // StoreMasterKeyRequest
	CmdRemoveMasterKey        CommandType = 13 // RemoveMasterKeyRequest
	CmdStoreToken             CommandType = 14 // StoreTokenRequest
	CmdUpdateToken            CommandType = 15 // UpdateTokenRequest
	CmdRemoveToken            CommandType = 16 // RemoveTokenRequest
	CmdReserveRange           CommandType = 17 // ReserveRangeRequest
	CmdSetCounter             CommandType = 18 // SetCounterRequest
	CmdFormat                 CommandType = 19 // FormatRequest
	CmdSetNodeAddress         CommandType = 20 // SetNodeAddressCommand
	CmdRemoveNodeAddress      CommandType = 21 // RemoveNodeAddressCommand
	CmdBatch                  CommandType = 22 // BatchCommand
	CmdAcquireLease           CommandType = 23 // AcquireLeaseCommand
	CmdReleaseLease           CommandType = 24 // ReleaseLeaseCommand
	CmdSetPolicies            CommandType = 25 // SetPoliciesCommand
	CmdPublishCapacity        CommandType = 26 // PublishCapacityCommand
	CmdMarkSubClustersLost    CommandType = 27 // MarkSubClustersLostCommand
	CmdDeleteApplicationHomes CommandType = 28 // DeleteApplicationHomesCommand
	CmdPutUAM                 CommandType = 29 // PutUAMCommand
	CmdDeleteUAM              CommandType = 30 // DeleteUAMCommand
)

// newCommandMessage returns an empty message of the type t carries, or nil
// if t is unknown.
func newCommandMessage(t CommandType) proto.Message {
	switch t {
	case CmdRegisterSubCluster:
		return &pb.RegisterSubClusterCommand{}
	case CmdHeartbeat:
		return &pb.HeartbeatCommand{}
	case CmdDeregisterSubCluster:
		return &pb.DeregisterSubClusterCommand{}
	case CmdAddApplicationHome:
		return &pb.AddApplicationHomeCommand{}
	case CmdUpdateApplicationHome:
		return &pb.UpdateApplicationHomeCommand{}
	case CmdDeleteApplicationHome:
		return &pb.DeleteApplicationHomeRequest{}
	case CmdSetPolicy:
		return &pb.SetPolicyRequest{}
	case CmdDeletePolicies:
		return &pb.DeletePoliciesRequest{}
	case CmdAddReservationHome:
		return &pb.AddReservationHomeRequest{}
	case CmdUpdateReservationHome:
		return &pb.UpdateReservationHomeRequest{}
	case CmdDeleteReservationHome:
		return &pb.DeleteReservationHomeRequest{}
	case CmdStoreMasterKey:
		return &pb.StoreMasterKeyRequest{}
	case CmdRemoveMasterKey:
		return &pb.RemoveMasterKeyRequest{}
	case CmdStoreToken:
		return &pb.StoreTokenRequest{}
	case CmdUpdateToken:
		return &pb.UpdateTokenRequest{}
	case CmdRemoveToken:
		return &pb.RemoveTokenRequest{}
	case CmdReserveRange:
		return &pb.ReserveRangeRequest{}
	case CmdSetCounter:
		return &pb.SetCounterRequest{}
	case CmdFormat:
		return &pb.FormatRequest{}
	case CmdSetNodeAddress:
		return &pb.SetNodeAddressCommand{}
	case CmdRemoveNodeAddress:
		return &pb.RemoveNodeAddressCommand{}
	case CmdBatch:
		return &pb.BatchCommand{}
	case CmdAcquireLease:
		return &pb.AcquireLeaseCommand{}
	case CmdReleaseLease:
		return &pb.ReleaseLeaseCommand{}
	case CmdSetPolicies:
		return &pb.SetPoliciesCommand{}
	case CmdPublishCapacity:
		return &pb.PublishCapacityCommand{}
	case CmdMarkSubClustersLost:
		return &pb.MarkSubClustersLostCommand{}
	case CmdDeleteApplicationHomes:
		return &pb.DeleteApplicationHomesCommand{}
	case CmdPutUAM:
		return &pb.PutUAMCommand{}
	case CmdDeleteUAM:
		return &pb.DeleteUAMCommand{}
	}
	return nil
}

// EncodeCommand builds a log entry:
//
//	+--------+---------------------------+
//	| type   | protobuf body (0..n bytes)|
//	| 1 byte | message named by type     |
//	+--------+---------------------------+
func EncodeCommand(t CommandType, m proto.Message) ([]byte, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode command %d: %w", t, err)
	}
	out := make([]byte, 0, 1+len(body))
	out = append(out, byte(t))
	return append(out, body...), nil
}

// errUnknownIgnorable is returned by DecodeCommand for an unknown type with
// the IgnoreUnknown bit: the caller skips the entry.
var errUnknownIgnorable = fmt.Errorf("unknown command type with ignore bit")

// DecodeCommand parses a log entry written by EncodeCommand.
func DecodeCommand(data []byte) (CommandType, proto.Message, error) {
	if len(data) == 0 {
		return 0, nil, fmt.Errorf("decode command: empty entry")
	}
	t := CommandType(data[0])
	m := newCommandMessage(t)
	if m == nil {
		if t&IgnoreUnknown != 0 {
			return t, nil, errUnknownIgnorable
		}
		return t, nil, fmt.Errorf("decode command: unknown type %d", t)
	}
	if err := proto.Unmarshal(data[1:], m); err != nil {
		return t, nil, fmt.Errorf("decode command type %d: %w", t, err)
	}
	return t, m, nil
}
