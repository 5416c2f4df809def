package ipctest

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

const whoami = "org.yarnfed.ipctest.WhoAmIPB"

func whoAmIProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{Name: whoami, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("whoami",
			func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} },
			func(ctx context.Context, _ *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				u, _ := hadoopipc.UserFromContext(ctx)
				return &commonpb.GetDelegationTokenResponseProto{Token: &commonpb.TokenProto{
					Identifier: append([]byte{}, u.TokenID...), Password: []byte{}, Kind: proto.String(u.AuthMethod), Service: proto.String(u.Name)}}, nil
			}),
	}}
}

func call(t *testing.T, c *hadoopipc.Client) (*commonpb.TokenProto, error) {
	t.Helper()
	resp := &commonpb.GetDelegationTokenResponseProto{}
	err := c.Call(context.Background(), "whoami", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, resp)
	return resp.GetToken(), err
}

func TestStartAndClients(t *testing.T) {
	secrets := &Secrets{}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.Secrets = secrets
	srv := Start(t, cfg, whoAmIProtocol())

	got, err := call(t, Client(t, srv.Addr, whoami, "alice"))
	if err != nil || got.GetService() != "alice" || got.GetKind() != "SIMPLE" {
		t.Fatalf("SIMPLE: %v %v", got, err)
	}

	tok := secrets.Add([]byte("am-1"), []byte("secret"), "appattempt_1", "YARN_AM_RM_TOKEN")
	got, err = call(t, ClientWith(t, hadoopipc.ClientConfig{Addresses: []string{srv.Addr}, Protocol: whoami, Token: tok}))
	if err != nil || got.GetService() != "appattempt_1" || got.GetKind() != "TOKEN" || string(got.GetIdentifier()) != "am-1" {
		t.Fatalf("TOKEN: %v %v", got, err)
	}

	secrets.Remove([]byte("am-1"))
	_, err = call(t, ClientWith(t, hadoopipc.ClientConfig{Addresses: []string{srv.Addr}, Protocol: whoami, Token: tok}))
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || !re.Fatal || re.Class != hadoopipc.ClassInvalidToken {
		t.Fatalf("revoked token: %v", err)
	}
}
