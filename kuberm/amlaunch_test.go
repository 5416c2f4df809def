package kuberm

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopcreds"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// The AM's launch context carries the client's tokens plus the attempt's
// AMRMToken, as AMLauncher.setupTokens prepares it; tokens that do not
// decode are refused at submit.
func TestAMLaunchContextAddsAMRMToken(t *testing.T) {
	r := unitRM(t)
	r.masterKey = make([]byte, masterKeyBytes)
	id := yarnid.AppID{ClusterTimestamp: 9, ID: 1}
	at := yarnid.AttemptID{App: id, Attempt: 2}
	sc := submissionFor(id, 1024, 1)
	client := &hadoopcreds.Credentials{}
	hdfs := &commonpb.TokenProto{Identifier: []byte("i"), Password: []byte("p"), Kind: proto.String("HDFS_DELEGATION_TOKEN"), Service: proto.String("nn:8020")}
	client.AddToken("nn:8020", hdfs)
	sc.AmContainerSpec = &yarnpb.ContainerLaunchContextProto{Command: []string{"run"}, Tokens: client.Encode()}

	clc, err := r.amLaunchContext(sc, at)
	if err != nil {
		t.Fatal(err)
	}
	got, err := hadoopcreds.Decode(clc.GetTokens())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tokens) != 2 || !proto.Equal(got.Tokens[0].Token, hdfs) {
		t.Fatalf("tokens %+v: want the client's token kept and the AMRMToken added", got.Tokens)
	}
	amrm := got.Tokens[1].Token
	tat, pw, err := r.checkToken(amrm.GetIdentifier())
	if err != nil || tat != at || !proto.Equal(&commonpb.TokenProto{Password: pw}, &commonpb.TokenProto{Password: amrm.GetPassword()}) || amrm.GetKind() != KindAMRMToken {
		t.Errorf("AMRMToken for %v (%v), kind %s: want a valid token of %v", tat, err, amrm.GetKind(), at)
	}
	if len(sc.GetAmContainerSpec().GetTokens()) == len(clc.GetTokens()) {
		t.Error("the stored submission was changed in place")
	}

	sc.AmContainerSpec.Tokens = []byte("HDTS\x07")
	if _, err := r.checkSubmission(sc, "bob", false); !errors.Is(err, ErrInvalidSubmission) {
		t.Errorf("undecodable tokens at submit: %v, want ErrInvalidSubmission", err)
	}
	if _, err := r.amLaunchContext(sc, at); !errors.Is(err, ErrBadRecord) {
		t.Errorf("undecodable stored tokens: %v, want ErrBadRecord", err)
	}
}
