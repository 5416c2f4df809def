package router

import (
	"errors"
	"testing"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// TestRefusedLoginIsNotRMDown: a Kerberized RM that refuses the router's
// doAs for one caller answers FATAL_UNAUTHORIZED at the connection; that
// caller must not be able to open the sub-cluster's breaker, and the call
// is known not to have run.
func TestRefusedLoginIsNotRMDown(t *testing.T) {
	refused := &hadoopipc.RemoteError{Class: "org.apache.hadoop.security.authorize.AuthorizationException",
		Message: "User: router@R is not allowed to impersonate mallory", Code: commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, Fatal: true}
	if rmDown(refused) || !answered(refused) || !definitive(refused) {
		t.Fatalf("refused login: rmDown=%v answered=%v definitive=%v", rmDown(refused), answered(refused), definitive(refused))
	}
	wrapped := &SubClusterError{SubCluster: "SC-1", Err: refused}
	if rmDown(wrapped) {
		t.Fatal("a wrapped refused login counts as RM down")
	}
	other := &hadoopipc.RemoteError{Class: hadoopipc.ClassRpcServerException, Code: commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, Fatal: true}
	if !rmDown(other) {
		t.Fatal("another FATAL no longer counts as RM down")
	}
	if rmDown(errors.New("x")) != true {
		t.Fatal("a transport error no longer counts")
	}
}

func TestKerberosConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    KerberosConfig
		ok   bool
	}{
		{"off", KerberosConfig{}, true},
		{"on", KerberosConfig{Principal: "rm/_HOST@R", Keytab: "/k"}, true},
		{"to secure RMs", KerberosConfig{Principal: "rm/_HOST@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R"}, true},
		{"no keytab", KerberosConfig{Principal: "rm/_HOST@R"}, false},
		{"no realm", KerberosConfig{Principal: "rm/_HOST", Keytab: "/k"}, false},
		{"keytab without principal", KerberosConfig{Keytab: "/k"}, false},
		{"SIMPLE callers vouched for at secure RMs", KerberosConfig{Principal: "rm/_HOST@R", Keytab: "/k", RMPrincipal: "rm/_HOST@R", AllowSimple: true}, false},
		{"bad rules", KerberosConfig{Principal: "rm/_HOST@R", Keytab: "/k", AuthToLocal: "RULE:[1"}, false},
	} {
		if errs := tc.k.validate(); (len(errs) == 0) != tc.ok {
			t.Errorf("%s: %v", tc.name, errs)
		}
	}
}
