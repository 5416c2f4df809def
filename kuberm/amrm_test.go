package kuberm

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmdefaults"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func amClient(t *testing.T, rm *RM, tok *commonpb.TokenProto, user string) *hadoopipc.Client {
	t.Helper()
	cl, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{rm.Addrs().Scheduler},
		Protocol: hadoopipc.ProtocolApplicationMaster, Token: tok, User: user, FailoverAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// TestAMRegisterAndFinish: an AM logs in to the scheduler port with the
// AMRMToken kuberm issued for its attempt (DIGEST-MD5 over real IPC),
// registers once, and its unregister decides the final status; tokens of
// other attempts, forged tokens and SIMPLE logins are refused.
func TestAMRegisterAndFinish(t *testing.T) {
	e := newEnv(t)
	kl := e.fakeKubelet()
	ctx := context.Background()
	cfg := testConfig(e)
	rm, cl := startRM(t, cfg)
	e.node("plain-1", nil, "8", "32Gi")

	id := newApp(t, cl)
	if err := submit(t, cl, submissionFor(id, 1024, 1)); err != nil {
		t.Fatal(err)
	}
	at := yarnid.AttemptID{App: id, Attempt: 1}
	kl.bind(rm.amPodName(id, 1), "plain-1")
	kl.run(rm.amPodName(id, 1))

	am := amClient(t, rm, rm.AMRMToken(at), "")
	regReq := &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("am-host"), RpcPort: proto.Int32(4242), TrackingUrl: proto.String("http://am-host:8080/")}
	reg := &yarnpb.RegisterApplicationMasterResponseProto{}
	if err := am.Call(ctx, "registerApplicationMaster", regReq, reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	if reg.GetMaximumCapability().GetMemory() != cfg.MaxAllocationMB || reg.GetQueue() != "default" {
		t.Errorf("register response %v", reg)
	}
	// AMRMClient re-initializes its resource types from the answer; an RM
	// always sends them (an empty list broke the distributed shell AM).
	if rt := reg.GetResourceTypes(); len(rt) != 2 || rt[0].GetName() != "memory-mb" || rt[1].GetName() != "vcores" {
		t.Errorf("register answer's resource types %v, want memory-mb and vcores", rt)
	}
	// What a stock YarnClient and the distributed shell client ask at start.
	types := &yarnpb.GetAllResourceTypeInfoResponseProto{}
	if err := cl.Call(ctx, "getResourceTypeInfo", &yarnpb.GetAllResourceTypeInfoRequestProto{}, types); err != nil || len(types.GetResourceTypeInfo()) != 2 {
		t.Errorf("getResourceTypeInfo: %v %v", types, err)
	}
	if err := cl.Call(ctx, "getResourceProfiles", &yarnpb.GetAllResourceProfilesRequestProto{}, &yarnpb.GetAllResourceProfilesResponseProto{}); remoteClass(err) != rmdefaults.ClassFeatureNotEnabled {
		t.Errorf("getResourceProfiles: %v, want YARNFeatureNotEnabledException as an RM with profiles off", err)
	}
	rep := report(t, cl, id)
	if rep.GetHost() != "am-host" || rep.GetRpcPort() != 4242 || rep.GetOriginalTrackingUrl() != "http://am-host:8080/" {
		t.Errorf("report after register: host %q port %d tracking %q", rep.GetHost(), rep.GetRpcPort(), rep.GetOriginalTrackingUrl())
	}
	if err := am.Call(ctx, "registerApplicationMaster", regReq, &yarnpb.RegisterApplicationMasterResponseProto{}); remoteClass(err) != hadoopipc.ClassInvalidApplicationMasterRequest {
		t.Errorf("second register: %v, want InvalidApplicationMasterRequestException", err)
	}
	if err := am.Call(ctx, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0)}, &yarnpb.AllocateResponseProto{}); err != nil {
		t.Errorf("allocate after register: %v", err)
	}

	// Refused logins: a token for an attempt that does not exist, a token
	// signed with another key, and SIMPLE.
	other := amClient(t, rm, rm.AMRMToken(yarnid.AttemptID{App: id, Attempt: 2}), "")
	if err := other.Call(ctx, "registerApplicationMaster", regReq, &yarnpb.RegisterApplicationMasterResponseProto{}); !loginRefused(err) {
		t.Errorf("a token of an attempt that does not exist: %v, want the login refused (FATAL_UNAUTHORIZED)", err)
	}
	forged := rm.AMRMToken(at)
	forged.Password = append([]byte(nil), forged.Password...)
	forged.Password[0] ^= 1
	if err := amClient(t, rm, forged, "").Call(ctx, "registerApplicationMaster", regReq, &yarnpb.RegisterApplicationMasterResponseProto{}); !loginRefused(err) {
		t.Errorf("a forged token: %v, want the login refused (FATAL_UNAUTHORIZED)", err)
	}
	if err := amClient(t, rm, nil, "mallory").Call(ctx, "registerApplicationMaster", regReq, &yarnpb.RegisterApplicationMasterResponseProto{}); !loginRefused(err) {
		t.Errorf("SIMPLE login on the scheduler port: %v, want FATAL_UNAUTHORIZED", err)
	}

	// The AM's verdict is the final status; the application is FINISHED.
	fin := &yarnpb.FinishApplicationMasterResponseProto{}
	if err := am.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_FAILED.Enum(), Diagnostics: proto.String("2 of 4 tasks failed")}, fin); err != nil || !fin.GetIsUnregistered() {
		t.Fatalf("finish: %v, %v", fin, err)
	}
	rep = report(t, cl, id)
	wantState(t, rep, yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_FAILED)
	if rep.GetDiagnostics() != "2 of 4 tasks failed" {
		t.Errorf("diagnostics %q", rep.GetDiagnostics())
	}
	// The pod exiting 0 afterwards changes nothing: the first final state wins.
	kl.exit(rm.amPodName(id, 1), 0, "Completed")
	wantState(t, report(t, cl, id), yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.FinalApplicationStatusProto_APP_FAILED)

	// Unregister before register: ApplicationMasterNotRegisteredException.
	id2 := newApp(t, cl)
	if err := submit(t, cl, submissionFor(id2, 1024, 1)); err != nil {
		t.Fatal(err)
	}
	am2 := amClient(t, rm, rm.AMRMToken(yarnid.AttemptID{App: id2, Attempt: 1}), "")
	err := am2.Call(ctx, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, &yarnpb.FinishApplicationMasterResponseProto{})
	if remoteClass(err) != hadoopipc.ClassApplicationMasterNotRegistered {
		t.Errorf("finish before register: %v", err)
	}

	// A restarted kuberm keeps the master key: the same token still logs in.
	rm.Close()
	rm2, _ := startRM(t, cfg)
	if string(rm2.AMRMToken(at).Password) != string(rm.AMRMToken(at).Password) {
		t.Error("the AMRMToken master key changed across a restart")
	}
}

// loginRefused: the server ended the SASL handshake (FATAL_UNAUTHORIZED),
// not a call refused after login.
func loginRefused(err error) bool {
	var re *hadoopipc.RemoteError
	return errors.As(err, &re) && re.Code == commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED
}
