package hadoopipc_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// An AMRMProxy-like server: AMs log in with the RM's AMRMToken, the login is
// relayed to the home RM's scheduler address, and allocate is served by
// calling the RM over the caller's relayed login.
func ExampleNewDialingRelay() {
	homeRM := func(ctx context.Context) (string, error) {
		return "rm1.example.com:8030", nil // e.g. the home sub-cluster's amRMServiceAddress now
	}
	cfg := hadoopipc.DefaultServerConfig()
	cfg.AllowSimple = false // real AMs always log in with their token
	cfg.TokenRelay = hadoopipc.NewDialingRelay(homeRM, hadoopipc.RelayConfig{Protocol: hadoopipc.ProtocolApplicationMaster})
	cfg.RelayUser = func(identifier []byte) (string, error) {
		id := &yarnpb.AMRMTokenIdentifierProto{}
		if err := proto.Unmarshal(identifier, id); err != nil || id.AppAttemptId == nil {
			return "", fmt.Errorf("not an AMRMToken identifier")
		}
		a := id.GetAppAttemptId()
		return fmt.Sprintf("appattempt_%d_%04d_%06d", a.GetApplicationId().GetClusterTimestamp(), a.GetApplicationId().GetId(), a.GetAttemptId()), nil
	}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	srv := hadoopipc.NewServer(cfg)
	srv.Register(hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationMaster, Version: 1, Methods: []hadoopipc.Method{
		hadoopipc.NewMethod("allocate", func() *yarnpb.AllocateRequestProto { return &yarnpb.AllocateRequestProto{} },
			func(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
				login, ok := hadoopipc.RelayedLoginFrom(ctx)
				if !ok {
					return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "not a relayed login")
				}
				user, _ := hadoopipc.UserFromContext(ctx) // user.Name: the attempt; user.TokenID: the identifier
				_ = user
				resp := &yarnpb.AllocateResponseProto{}
				err := login.Call(ctx, "allocate", req, resp) // as the AM, on the home RM
				return resp, err
			}),
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	srv.Close()
}
