package amrmproxy

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Identity tells which application attempt an AM call acts as. It must
// only ever name an attempt the caller proved it holds the AMRMToken of
// (see DESIGN.md): the proxy authorises everything by it.
type Identity func(ctx context.Context) (AttemptID, error)

// TokenIdentity reads the attempt from the token identifier of the
// connection's SASL TOKEN login (hadoopipc puts it in the User). The IPC
// server has already verified the login, by its SecretManager or by the
// home RM's SUCCESS when the login is relayed.
func TokenIdentity(ctx context.Context) (AttemptID, error) {
	u, ok := hadoopipc.UserFromContext(ctx)
	if !ok || u.AuthMethod != "TOKEN" || len(u.TokenID) == 0 {
		return AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "SIMPLE authentication is not enabled.  Available:[TOKEN]")
	}
	id, _, err := ParseAMRMTokenIdentifier(u.TokenID)
	if err != nil {
		return AttemptID{}, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%v", err)
	}
	return id, nil
}

// HomeConnector gives the connection to the home RM to use for one call of
// an AM. ctx is the AM call's context: a relaying implementation takes the
// upstream connection the AM's relayed login opened from it; the token
// implementation dials with the AM's own AMRMToken.
type HomeConnector interface {
	HomeRM(ctx context.Context, attempt AttemptID, home SubCluster) (AMRM, error)
	// Forget drops what is held for attempt (after finish).
	Forget(attempt AttemptID)
}

// PasswordSource returns the password of a token identifier the proxy may
// use (only the token connector needs it; a relay never sees passwords).
type PasswordSource func(identifier []byte) ([]byte, error)

// TokenHomeConnector dials the home RM's scheduler address with the
// attempt's AMRMToken (identifier from the AM's login, password from
// Passwords). It is the fallback connector and the one tests use.
type TokenHomeConnector struct {
	Passwords   PasswordSource
	DialTimeout time.Duration
	Logger      *slog.Logger

	mu sync.Mutex
	m  map[homeKey]*hadoopipc.Client
}

type homeKey struct {
	attempt AttemptID
	addr    string
	ident   string
}

func (t *TokenHomeConnector) HomeRM(ctx context.Context, attempt AttemptID, home SubCluster) (AMRM, error) {
	u, _ := hadoopipc.UserFromContext(ctx)
	if len(u.TokenID) == 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "no AMRMToken login on this connection")
	}
	k := homeKey{attempt, home.AMRMServiceAddress, string(u.TokenID)}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[k]; ok {
		return CallerAMRM{C: c}, nil
	}
	if t.Passwords == nil {
		return nil, fmt.Errorf("token home connector: no password source")
	}
	pw, err := t.Passwords(u.TokenID)
	if err != nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%v", err)
	}
	addrs := hostport.SplitList(home.AMRMServiceAddress)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: home %s has no AMRM address", ErrSubClusterUnavailable, home.ID)
	}
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: addrs, Protocol: hadoopipc.ProtocolApplicationMaster,
		Token:       &commonpb.TokenProto{Identifier: u.TokenID, Password: pw, Kind: proto.String("YARN_AM_RM_TOKEN"), Service: proto.String("")},
		DialTimeout: t.DialTimeout, Logger: t.Logger,
	})
	if err != nil {
		return nil, err
	}
	if t.m == nil {
		t.m = map[homeKey]*hadoopipc.Client{}
	}
	// A new token (roll-over) or address (failover) replaces the old client.
	for old, c := range t.m {
		if old.attempt == attempt {
			_ = c.Close()
			delete(t.m, old)
		}
	}
	t.m[k] = c
	return CallerAMRM{C: c}, nil
}

func (t *TokenHomeConnector) Forget(attempt AttemptID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.m {
		if k.attempt == attempt {
			_ = c.Close()
			delete(t.m, k)
		}
	}
}

// Close closes every client.
func (t *TokenHomeConnector) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.m {
		_ = c.Close()
		delete(t.m, k)
	}
}
