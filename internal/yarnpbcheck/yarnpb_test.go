// Package yarnpbcheck holds the checks that internal/yarnpb (generated code
// only) matches Hadoop 3.4's wire schema: method tables, field numbers and
// scalar types, proto2 required markers.
package yarnpbcheck

import (
	"bytes"
	"encoding/hex"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// methodsOf returns the service's rpc names in declaration order, with their
// input message names.
func methodsOf(t *testing.T, sd protoreflect.ServiceDescriptor) ([]string, map[string]protoreflect.FullName) {
	t.Helper()
	var names []string
	in := map[string]protoreflect.FullName{}
	ms := sd.Methods()
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		names = append(names, string(m.Name()))
		in[string(m.Name())] = m.Input().FullName()
	}
	return names, in
}

func TestServiceMethodTables(t *testing.T) {
	tests := []struct {
		name    string
		svc     protoreflect.ServiceDescriptor
		full    protoreflect.FullName
		count   int
		inputs  map[string]protoreflect.FullName
		outputs map[string]protoreflect.FullName
	}{
		{
			name:  "ApplicationClientProtocol",
			svc:   yarnpb.File_applicationclient_protocol_proto.Services().ByName("ApplicationClientProtocolService"),
			full:  "hadoop.yarn.ApplicationClientProtocolService",
			count: 35,
			inputs: map[string]protoreflect.FullName{
				"getNewApplication":         "hadoop.yarn.GetNewApplicationRequestProto",
				"submitApplication":         "hadoop.yarn.SubmitApplicationRequestProto",
				"getApplicationReport":      "hadoop.yarn.GetApplicationReportRequestProto",
				"getClusterMetrics":         "hadoop.yarn.GetClusterMetricsRequestProto",
				"getApplications":           "hadoop.yarn.GetApplicationsRequestProto",
				"forceKillApplication":      "hadoop.yarn.KillApplicationRequestProto",
				"getQueueUserAcls":          "hadoop.yarn.GetQueueUserAclsInfoRequestProto",
				"getDelegationToken":        "hadoop.common.GetDelegationTokenRequestProto",
				"getResourceProfiles":       "hadoop.yarn.GetAllResourceProfilesRequestProto",
				"getNodeToLabels":           "hadoop.yarn.GetNodesToLabelsRequestProto",
				"getNodesToAttributes":      "hadoop.yarn.GetNodesToAttributesRequestProto",
				"getAttributesToNodes":      "hadoop.yarn.GetAttributesToNodesRequestProto",
				"signalToContainer":         "hadoop.yarn.SignalContainerRequestProto",
				"listReservations":          "hadoop.yarn.ReservationListRequestProto",
				"getResourceTypeInfo":       "hadoop.yarn.GetAllResourceTypeInfoRequestProto",
				"updateApplicationTimeouts": "hadoop.yarn.UpdateApplicationTimeoutsRequestProto",
			},
			outputs: map[string]protoreflect.FullName{
				"getNewApplication":    "hadoop.yarn.GetNewApplicationResponseProto",
				"forceKillApplication": "hadoop.yarn.KillApplicationResponseProto",
			},
		},
		{
			name:  "ApplicationMasterProtocol",
			svc:   yarnpb.File_applicationmaster_protocol_proto.Services().ByName("ApplicationMasterProtocolService"),
			full:  "hadoop.yarn.ApplicationMasterProtocolService",
			count: 3,
			inputs: map[string]protoreflect.FullName{
				"registerApplicationMaster": "hadoop.yarn.RegisterApplicationMasterRequestProto",
				"finishApplicationMaster":   "hadoop.yarn.FinishApplicationMasterRequestProto",
				"allocate":                  "hadoop.yarn.AllocateRequestProto",
			},
			outputs: map[string]protoreflect.FullName{
				"allocate": "hadoop.yarn.AllocateResponseProto",
			},
		},
		{
			name:  "ResourceManagerAdministrationProtocol",
			svc:   yarnpb.File_resourcemanager_administration_protocol_proto.Services().ByName("ResourceManagerAdministrationProtocolService"),
			full:  "hadoop.yarn.ResourceManagerAdministrationProtocolService",
			count: 22,
			inputs: map[string]protoreflect.FullName{
				"refreshQueues":        "hadoop.yarn.RefreshQueuesRequestProto",
				"refreshNodes":         "hadoop.yarn.RefreshNodesRequestProto",
				"getGroupsForUser":     "hadoop.yarn.GetGroupsForUserRequestProto",
				"mapAttributesToNodes": "hadoop.yarn.NodesToAttributesMappingRequestProto",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.svc == nil {
				t.Fatalf("service descriptor missing")
			}
			if tc.svc.FullName() != tc.full {
				t.Errorf("full name = %s, want %s", tc.svc.FullName(), tc.full)
			}
			names, in := methodsOf(t, tc.svc)
			if len(names) != tc.count {
				t.Errorf("%d methods, want %d: %v", len(names), tc.count, names)
			}
			for m, want := range tc.inputs {
				if got, ok := in[m]; !ok || got != want {
					t.Errorf("method %s input = %q (present %v), want %s", m, got, ok, want)
				}
			}
			for m, want := range tc.outputs {
				md := tc.svc.Methods().ByName(protoreflect.Name(m))
				if md == nil || md.Output().FullName() != want {
					t.Errorf("method %s output wrong, want %s", m, want)
				}
			}
		})
	}
}

func TestGoldenEncodings(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		// Hand-computed: tag byte = field<<3 | wiretype, varints 7 bits per
		// byte little-endian with the high bit as continuation.
		want string
	}{
		{
			// 1: int64 1024 -> 08 80 08; 2: int32 1 -> 10 01.
			name: "ResourceProto memory int64 and vcores",
			msg:  &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
			want: "08800810" + "01",
		},
		{
			// 1: id 1 -> 08 01; 2: cluster_timestamp 2^32 (needs int64) -> 10 80 80 80 80 10.
			name: "ApplicationIdProto with 64-bit cluster timestamp",
			msg:  &yarnpb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1 << 32)},
			want: "0801" + "10808080801" + "0",
		},
		{
			// 1: appAttemptId (len 8) { 1: application_id (len 4) {08 01 10 02}, 2: attemptId 1 };
			// 2: keyId int32 -1 -> ten-byte varint (int32, not sint32).
			name: "AMRMTokenIdentifierProto negative int32 keyId",
			msg: &yarnpb.AMRMTokenIdentifierProto{
				AppAttemptId: &yarnpb.ApplicationAttemptIdProto{
					ApplicationId: &yarnpb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(2)},
					AttemptId:     proto.Int32(1),
				},
				KeyId: proto.Int32(-1),
			},
			want: "0a08" + "0a0408011002" + "1001" + "10ffffffffffffffffff01",
		},
		{
			// SubClusterIdProto 1: string "SC-1" -> 0a 04 'S' 'C' '-' '1'.
			name: "SubClusterInfoProto id and state enum",
			msg: &yarnpb.SubClusterInfoProto{
				SubClusterId: &yarnpb.SubClusterIdProto{Id: proto.String("SC-1")},
				State:        yarnpb.SubClusterStateProto_SC_RUNNING.Enum(),
			},
			// 1: (len 6) {0a 04 "SC-1"}; 7: enum SC_RUNNING=2 -> 38 02.
			want: "0a06" + "0a04" + "53432d31" + "3802",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proto.MarshalOptions{Deterministic: true}.Marshal(tc.msg)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			want, err := hex.DecodeString(tc.want)
			if err != nil {
				t.Fatalf("bad golden hex: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding = %x, want %x", got, want)
			}
			back := tc.msg.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(want, back); err != nil {
				t.Fatalf("unmarshal golden: %v", err)
			}
			if !proto.Equal(back, tc.msg) {
				t.Fatalf("golden decodes to %v, want %v", back, tc.msg)
			}
		})
	}
}

// Proto2 required fields are enforced on both marshal and unmarshal; Java
// peers do the same, so our schema must carry exactly Hadoop's markers.
func TestRequiredFieldsEnforced(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		data string
	}{
		// ResourceInformationProto.key (1) is required: an empty message lacks it.
		{name: "ResourceInformationProto without key", msg: &yarnpb.ResourceInformationProto{}, data: "1001"},
		// ApplicationTimeoutProto.application_timeout_type (1) is required.
		{name: "ApplicationTimeoutProto without type", msg: &yarnpb.ApplicationTimeoutProto{}, data: "1801"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.data)
			if err := proto.Unmarshal(b, tc.msg); err == nil {
				t.Fatalf("unmarshal accepted a message missing a required field")
			}
			if _, err := proto.Marshal(tc.msg.ProtoReflect().New().Interface()); err == nil {
				t.Fatalf("marshal accepted a message missing a required field")
			}
		})
	}
}

// Proto2 defaults are part of the contract: an absent field reads as Hadoop's default.
func TestDefaults(t *testing.T) {
	ctx := &yarnpb.ApplicationSubmissionContextProto{}
	if got := ctx.GetQueue(); got != "default" {
		t.Errorf("queue default = %q, want default", got)
	}
	if got := ctx.GetApplicationType(); got != "YARN" {
		t.Errorf("applicationType default = %q, want YARN", got)
	}
	if got := ctx.GetAttemptFailuresValidityInterval(); got != -1 {
		t.Errorf("attempt_failures_validity_interval default = %d, want -1", got)
	}
	if got := (&yarnpb.AMRMTokenIdentifierProto{}).GetKeyId(); got != -1 {
		t.Errorf("AMRM keyId default = %d, want -1", got)
	}
}

func FuzzUnmarshalSubmitApplicationRequest(f *testing.F) {
	seed, err := proto.Marshal(&yarnpb.SubmitApplicationRequestProto{
		ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId:   &yarnpb.ApplicationIdProto{Id: proto.Int32(1), ClusterTimestamp: proto.Int64(1 << 40)},
			ApplicationName: proto.String("wordcount"),
			Queue:           proto.String("root.a"),
			Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(2048), VirtualCores: proto.Int32(2)},
			ApplicationTags: []string{"t1"},
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m yarnpb.SubmitApplicationRequestProto
		if err := proto.Unmarshal(data, &m); err != nil {
			return
		}
		out, err := proto.Marshal(&m)
		if err != nil {
			t.Fatalf("re-marshal of an accepted message failed: %v", err)
		}
		var back yarnpb.SubmitApplicationRequestProto
		if err := proto.Unmarshal(out, &back); err != nil {
			t.Fatalf("unmarshal of our own encoding failed: %v", err)
		}
		if !proto.Equal(&m, &back) {
			// NaN floats never compare equal; fall back to the bytes.
			again, _ := proto.Marshal(&back)
			if !bytes.Equal(out, again) {
				t.Fatalf("round trip changed the message:\n%v\n%v", &m, &back)
			}
		}
	})
}
