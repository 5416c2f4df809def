package rest

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/dtoken"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// Delegation tokens over REST, as RMWebServices serves them: only a
// request authenticated with Kerberos (SPNEGO, or the hadoop.auth cookie a
// negotiation set) may get, renew or cancel one; any other caller gets 403
// with a plain-text reason. Without spnego.keytab the web port
// authenticates nobody (user.name is a claim, not a login), so every
// caller is refused exactly as an RM without Kerberos refuses. The router
// takes no delegation token as a REST login, so no request here was
// authenticated by one (RMWebServices refuses those too).
//
// Tokens are issued, renewed and cancelled by the IPC code (the root's dtoken.go, router/dtoken), through Core:
// a token got here works over IPC and the other way round.

const (
	dtokenRefusal = "Delegation token operations can only be carried out on a Kerberos authenticated channel. Expected auth type is kerberos, got type simple"
	// DelegationTokenHeader carries the encoded token of a renew or cancel.
	DelegationTokenHeader = "Hadoop-YARN-RM-Delegation-Token"
)

// DelegationToken is RMWebServices' dao.DelegationToken: the body of a
// token request and of its answers (JSON unwrapped, XML root
// delegation-token). A renewal answers with the expiration time alone.
type DelegationToken struct {
	XMLName        xml.Name `json:"-" xml:"delegation-token"`
	Token          string   `json:"token,omitempty" xml:"token,omitempty"`
	Renewer        string   `json:"renewer,omitempty" xml:"renewer,omitempty"`
	Owner          string   `json:"owner,omitempty" xml:"owner,omitempty"`
	Kind           string   `json:"kind,omitempty" xml:"kind,omitempty"`
	ExpirationTime *int64   `json:"expiration-time,omitempty" xml:"expiration-time,omitempty"`
	MaxValidity    *int64   `json:"max-validity,omitempty" xml:"max-validity,omitempty"`
}

// forbidden is the RM's plain-text 403 of its token calls.
func forbidden(msg string) restReply {
	return restReply{raw: &relayed{status: http.StatusForbidden, ctype: "text/plain; charset=utf-8", body: []byte(msg)}}
}

// kerberosCaller returns the caller if Kerberos authenticated the request.
func kerberosCaller(ctx context.Context) (hadoopipc.User, bool) {
	u, ok := hadoopipc.UserFromContext(ctx)
	return u, ok && u.AuthMethod == hadoopipc.AuthMethodKerberos
}

func (r *API) restPostDelegationToken(ctx context.Context, req *http.Request) (restReply, error) {
	u, ok := kerberosCaller(ctx)
	if !ok {
		return forbidden(dtokenRefusal), nil
	}
	if !r.core.IssuesTokens() {
		return restReply{}, errors.New("the state store keeps no delegation tokens")
	}
	body, err := restwire.ReadBody(req)
	if err != nil {
		return restReply{}, err
	}
	var in DelegationToken
	if err := restwire.DecodeBody(req.Header.Get("Content-Type"), body, &in); err != nil {
		return restReply{}, err
	}
	tok, id, renewDate, err := r.core.IssueToken(ctx, u, in.Renewer)
	if err != nil {
		return restReply{}, err
	}
	exp, maxDate := renewDate.UnixMilli(), id.GetMaxDate()
	out := DelegationToken{Token: dtoken.EncodeURL(tok), Renewer: in.Renewer, Owner: id.GetOwner(), Kind: tok.GetKind(),
		ExpirationTime: &exp, MaxValidity: &maxDate}
	return reply(http.StatusOK, out, out), nil
}

func (r *API) restRenewDelegationToken(ctx context.Context, req *http.Request) (restReply, error) {
	if _, ok := kerberosCaller(ctx); !ok {
		return forbidden(dtokenRefusal), nil
	}
	tok, err := headerToken(req)
	if err != nil {
		return restReply{}, err
	}
	resp, err := r.core.RenewDelegationToken(ctx, &commonpb.RenewDelegationTokenRequestProto{Token: tok})
	if err != nil {
		return tokenCallFailure(err)
	}
	exp := int64(resp.GetNewExpiryTime())
	out := DelegationToken{ExpirationTime: &exp}
	return reply(http.StatusOK, out, out), nil
}

func (r *API) restCancelDelegationToken(ctx context.Context, req *http.Request) (restReply, error) {
	if _, ok := kerberosCaller(ctx); !ok {
		return forbidden(dtokenRefusal), nil
	}
	tok, err := headerToken(req)
	if err != nil {
		return restReply{}, err
	}
	if _, err := r.core.CancelDelegationToken(ctx, &commonpb.CancelDelegationTokenRequestProto{Token: tok}); err != nil {
		return tokenCallFailure(err)
	}
	// The RM answers 200 with no body.
	return restReply{raw: &relayed{status: http.StatusOK}}, nil
}

// headerToken reads the token of a renew or cancel, with the RM's 400s.
func headerToken(req *http.Request) (*commonpb.TokenProto, error) {
	enc := req.Header.Get(DelegationTokenHeader)
	if enc == "" {
		return nil, restwire.BadRequest("Header '%s' containing encoded token not found", DelegationTokenHeader)
	}
	tok, err := dtoken.DecodeURL(enc)
	if err != nil {
		return nil, restwire.BadRequest("Could not decode encoded token: %v", err)
	}
	return tok, nil
}

// tokenCallFailure maps renew and cancel errors as RMWebServices does: an
// invalid, unknown or expired token is a 400 BadRequestException, a caller
// who is not the renewer (or owner) a plain-text 403.
func tokenCallFailure(err error) (restReply, error) {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		switch re.Class {
		case hadoopipc.ClassInvalidToken:
			return restReply{}, &restwire.Error{Status: http.StatusBadRequest, Class: rmrest.ClassBadRequest, Err: errors.New(re.Message)}
		case hadoopipc.ClassAccessControl:
			return forbidden(re.Message), nil
		}
	}
	return restReply{}, err
}
