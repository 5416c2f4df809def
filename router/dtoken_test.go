package router_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/router/routertest"
)

func TestDelegationTokenLifecycle(t *testing.T) {
	f := routertest.NewFed(t, 1, nil)
	as := func(user string, tok *commonpb.TokenProto) *hadoopipc.Client {
		c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: []string{f.Router.ClientRMAddr().String()},
			Protocol: hadoopipc.ProtocolApplicationClient, User: user, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	got := &commonpb.GetDelegationTokenResponseProto{}
	if err := f.Client.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("bob")}, got); err != nil {
		t.Fatal(err)
	}
	tok := got.GetToken()
	if tok.GetKind() != dtoken.Kind || tok.GetService() != f.Router.ClientRMAddr().String() {
		t.Fatalf("token kind %q service %q", tok.GetKind(), tok.GetService())
	}
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(tok.GetIdentifier(), &id); err != nil || id.GetOwner() != "alice" || id.GetRenewer() != "bob" {
		t.Fatalf("identifier %v: %v", &id, err)
	}

	// Log in with the token: calls work, and a token login cannot mint more.
	tc := as("", tok)
	if err := tc.Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatalf("call with token login: %v", err)
	}
	err := tc.Call(routertest.Ctx(t), "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, &commonpb.GetDelegationTokenResponseProto{})
	if routertest.RemoteClass(err) != hadoopipc.ClassYarnException {
		t.Fatalf("token-authenticated getDelegationToken: %v", err)
	}

	// Only the renewer renews.
	renew := &commonpb.RenewDelegationTokenRequestProto{Token: tok}
	if err := f.Client.Call(routertest.Ctx(t), "renewDelegationToken", renew, &commonpb.RenewDelegationTokenResponseProto{}); routertest.RemoteClass(err) != hadoopipc.ClassAccessControl {
		t.Fatalf("renew by the owner: %v", err)
	}
	bob := as("bob", nil)
	rr := &commonpb.RenewDelegationTokenResponseProto{}
	if err := bob.Call(routertest.Ctx(t), "renewDelegationToken", renew, rr); err != nil || rr.GetNewExpiryTime() <= uint64(time.Now().UnixMilli()) {
		t.Fatalf("renew by the renewer: %v, expiry %d", err, rr.GetNewExpiryTime())
	}

	// A forged password is refused.
	forged := proto.Clone(tok).(*commonpb.TokenProto)
	forged.Password = []byte("not-the-password-not-the-passwor")
	if err := bob.Call(routertest.Ctx(t), "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: forged}, &commonpb.RenewDelegationTokenResponseProto{}); routertest.RemoteClass(err) != hadoopipc.ClassInvalidToken {
		t.Fatalf("forged token: %v", err)
	}

	// Cancelled tokens no longer log in.
	if err := bob.Call(routertest.Ctx(t), "cancelDelegationToken", &commonpb.CancelDelegationTokenRequestProto{Token: tok}, &commonpb.CancelDelegationTokenResponseProto{}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	err = as("", tok).Call(routertest.Ctx(t), "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{})
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) && !errors.Is(err, hadoopipc.ErrAuth) {
		t.Fatalf("login with a cancelled token: %v", err)
	}
	if err == nil {
		t.Fatal("cancelled token still logs in")
	}
}
