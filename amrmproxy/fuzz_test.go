package amrmproxy

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

func FuzzParseAMRMTokenIdentifier(f *testing.F) {
	good, _ := proto.Marshal(&yarnpb.AMRMTokenIdentifierProto{AppAttemptId: &yarnpb.ApplicationAttemptIdProto{
		ApplicationId: &yarnpb.ApplicationIdProto{Id: proto.Int32(7), ClusterTimestamp: proto.Int64(1700000000000)}, AttemptId: proto.Int32(1)}, KeyId: proto.Int32(3)})
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, key, err := ParseAMRMTokenIdentifier(b)
		if err != nil {
			return
		}
		if id.App <= 0 || id.Attempt <= 0 {
			t.Fatalf("accepted %v", id)
		}
		// decode(encode(x)) == x
		again, _ := proto.Marshal(&yarnpb.AMRMTokenIdentifierProto{AppAttemptId: &yarnpb.ApplicationAttemptIdProto{
			ApplicationId: id.ApplicationIDProto(), AttemptId: proto.Int32(id.Attempt)}, KeyId: proto.Int32(key)})
		id2, key2, err := ParseAMRMTokenIdentifier(again)
		if err != nil || id2 != id || key2 != key {
			t.Fatalf("round trip: %v %d %v -> %v %d", id, key, err, id2, key2)
		}
		if p, err := parseAttemptID(id.String()); err != nil || p != id {
			t.Fatalf("attempt id string round trip: %v -> %v %v", id, p, err)
		}
	})
}

func FuzzParseContainerKey(f *testing.F) {
	f.Add("1700000000000_7_1_1099511627777")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseContainerKey(s)
		if err != nil {
			return
		}
		if k2, err := parseContainerKey(k.String()); err != nil || k2 != k {
			t.Fatalf("round trip %q: %v -> %v %v", s, k, k2, err)
		}
	})
}

func TestMergeRequestLaterAskWins(t *testing.T) {
	a := &yarnpb.AllocateRequestProto{Ask: []*yarnpb.ResourceRequestProto{ask("*", 3, 1024, 0)}, Release: []*yarnpb.ContainerIdProto{{Id: proto.Int64(1)}}}
	b := &yarnpb.AllocateRequestProto{Ask: []*yarnpb.ResourceRequestProto{ask("*", 1, 1024, 0), ask("*", 2, 2048, 0)}, Release: []*yarnpb.ContainerIdProto{{Id: proto.Int64(2)}},
		BlacklistRequest: &yarnpb.ResourceBlacklistRequestProto{BlacklistAdditions: []string{"h1"}}, Progress: proto.Float32(0.5)}
	m := mergeRequest(a, b)
	if len(m.Ask) != 2 || m.Ask[0].GetNumContainers() != 1 || m.Ask[1].GetCapability().GetMemory() != 2048 {
		t.Fatalf("asks %v", m.Ask)
	}
	if len(m.Release) != 2 || len(m.GetBlacklistRequest().GetBlacklistAdditions()) != 1 || m.GetProgress() != 0.5 {
		t.Fatalf("merged %v", m)
	}
}

func FuzzExpectedResponseID(f *testing.F) {
	f.Add("Invalid responseId in AllocateRequest from application attempt: appattempt_1_0001_000001, expect responseId to be 7, but get 3")
	f.Add("expect responseId to be -99999999999999999999")
	f.Fuzz(func(t *testing.T, msg string) {
		n, ok := expectedResponseID(hadoopipc.Errorf(hadoopipc.ClassInvalidApplicationMasterRequest, "%s", msg))
		if ok {
			m := expectRe.FindStringSubmatch(msg)
			v, err := strconv.ParseInt(m[1], 10, 32)
			if err != nil || int32(v) != n || !strings.Contains(msg, "expect responseId to be ") {
				t.Fatalf("parsed %d from %q", n, msg)
			}
		}
		if _, ok := expectedResponseID(hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s", msg)); ok {
			t.Fatal("parsed a responseId from another exception class")
		}
	})
}

func FuzzParseAttemptID(f *testing.F) {
	f.Add("appattempt_1700000000000_0007_000001")
	f.Add("appattempt_1_2")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := parseAttemptID(s)
		if err != nil {
			return
		}
		if again, err := parseAttemptID(id.String()); err != nil || again != id {
			t.Fatalf("%q -> %v -> %v %v", s, id, again, err)
		}
	})
}
