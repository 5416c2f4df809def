package hadoopipc

import "context"

// User is the authenticated identity of a connection, in every handler's
// context.
type User struct {
	// Name is the effective user. SIMPLE: the connection context's
	// effectiveUser, or its realUser when it names no effective user.
	// TOKEN: the user the token stands for. KERBEROS: the principal's
	// short name (auth_to_local), or the effective user of a doAs, with
	// RealUser the principal's short name.
	Name       string
	RealUser   string
	AuthMethod string // "SIMPLE", "TOKEN" or "KERBEROS"
	// Principal is the authenticated Kerberos principal (name@REALM) of a
	// KERBEROS login: the real user's when RealUser is set (doAs).
	Principal string
	TokenID   []byte // the token identifier bytes when AuthMethod == "TOKEN"
}

type userKey struct{}

// UserFromContext returns the caller's identity inside a handler.
func UserFromContext(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	if !ok || u == nil {
		return User{}, false
	}
	return *u, true
}

// UserName is the caller's user name inside a handler, "" when ctx carries
// no caller.
func UserName(ctx context.Context) string {
	if u, ok := ctx.Value(userKey{}).(*User); ok && u != nil {
		return u.Name
	}
	return ""
}

// ContextWithUser returns ctx carrying u; for tests of handlers and for
// in-process callers that bypass the wire.
func ContextWithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, &u)
}
