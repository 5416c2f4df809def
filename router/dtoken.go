package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/dtoken"
)

// The delegation-token calls of ApplicationClientProtocol. The secret
// manager is router/dtoken; here is who may ask (Kerberos-authenticated
// callers only, kerberos.go) and the IPC shapes.

func (r *Router) getDelegationToken(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
	if r.tokens == nil {
		return nil, fmt.Errorf("getDelegationToken: %w: the state store keeps no delegation tokens", ErrUnsupported)
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	if !r.delegationTokenAllowed(u) {
		// What Hadoop's RM and Router answer: an IOException wrapped into
		// a YarnException (RPCUtil.getRemoteException).
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "java.io.IOException: Delegation Token can be issued only with kerberos authentication")
	}
	tok, _, _, err := r.issueToken(ctx, u, req.GetRenewer())
	if err != nil {
		return nil, err
	}
	return &commonpb.GetDelegationTokenResponseProto{Token: tok}, nil
}

// issueToken mints and stores a token owned by u; IPC and REST
// (router/rest dtoken.go) both issue through it, so their tokens are the same.
// It returns the token, its identifier and when it expires unless renewed.
func (r *Router) issueToken(ctx context.Context, u hadoopipc.User, renewer string) (*commonpb.TokenProto, *yarnpb.YARNDelegationTokenIdentifierProto, time.Time, error) {
	tok, id, exp, err := r.tokens.Issue(ctx, u.Name, u.RealUser, renewer)
	if errors.Is(err, dtoken.ErrNoRenewer) {
		return nil, nil, time.Time{}, fmt.Errorf("%w: getDelegationToken: %w", ErrBadRequest, err)
	}
	return tok, id, exp, err
}

func (r *Router) renewDelegationToken(ctx context.Context, req *commonpb.RenewDelegationTokenRequestProto) (*commonpb.RenewDelegationTokenResponseProto, error) {
	if r.tokens == nil {
		return nil, fmt.Errorf("renewDelegationToken: %w: the state store keeps no delegation tokens", ErrUnsupported)
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	next, err := r.tokens.Renew(ctx, req.GetToken(), u.Name)
	if err != nil {
		return nil, err
	}
	return &commonpb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(uint64(next))}, nil
}

func (r *Router) cancelDelegationToken(ctx context.Context, req *commonpb.CancelDelegationTokenRequestProto) (*commonpb.CancelDelegationTokenResponseProto, error) {
	if r.tokens == nil {
		return nil, fmt.Errorf("cancelDelegationToken: %w: the state store keeps no delegation tokens", ErrUnsupported)
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	if err := r.tokens.Cancel(ctx, req.GetToken(), u.Name); err != nil {
		return nil, err
	}
	return &commonpb.CancelDelegationTokenResponseProto{}, nil
}
