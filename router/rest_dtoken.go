package router

import (
	"context"
	"net/http"
)

// Delegation tokens over REST. An RM (and Hadoop's Router) hands out,
// renews and cancels delegation tokens over REST only on a
// Kerberos-authenticated (SPNEGO) channel, and answers 403 with a plain-text
// reason otherwise. The router's web port authenticates nobody (user.name
// is a claim, not a login), so issuing a token there would give any caller
// a credential for any user: it refuses exactly as an RM without Kerberos
// does. Router tokens are issued over IPC (dtoken.go), whose SASL login is
// real; REST token calls become possible once the web port speaks SPNEGO.

const dtokenRefusal = "Delegation token operations can only be carried out on a Kerberos authenticated channel. Expected auth type is kerberos, got type simple"

func (r *Router) restDelegationToken(context.Context, *http.Request) (restReply, error) {
	return restReply{raw: &relayed{status: http.StatusForbidden, ctype: "text/plain; charset=utf-8", body: []byte(dtokenRefusal)}}, nil
}
