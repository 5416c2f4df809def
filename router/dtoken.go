package router

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Delegation tokens. A token from one RM is worthless at another, so the
// router issues its own RM_DELEGATION_TOKENs (as Hadoop's
// RouterDelegationTokenSecretManager does): identifier =
// YARNDelegationTokenIdentifierProto bytes, password = HMAC-SHA1(master key,
// identifier), master keys and tokens kept in the state store so every
// router can verify and renew every token. Clients then log in to any
// router with SASL TOKEN; calls to the RMs go as the token's owner.

// TokenKind is the kind Hadoop's RM gives its delegation tokens.
const TokenKind = "RM_DELEGATION_TOKEN"

// Hadoop's yarn.resourcemanager.delegation.* defaults.
const (
	tokenRenewInterval = 24 * time.Hour
	tokenMaxLifetime   = 7 * 24 * time.Hour
	masterKeyLifetime  = 24 * time.Hour
)

// StoredToken is a delegation token row.
type StoredToken struct {
	Identifier []byte
	Password   []byte
	RenewDate  time.Time
}

// TokenStore is optionally implemented by a StateStore to keep
// delegation-token state; without it the token calls answer
// UnsupportedOperationException. Not-found errors wrap ErrNoHome's sibling
// ErrTokenNotFound.
type TokenStore interface {
	StoreMasterKey(ctx context.Context, id int32, key []byte, expiry time.Time) error
	GetMasterKey(ctx context.Context, id int32) ([]byte, error)
	StoreToken(ctx context.Context, t StoredToken) error
	UpdateToken(ctx context.Context, t StoredToken) error
	RemoveToken(ctx context.Context, identifier []byte) error
	GetToken(ctx context.Context, identifier []byte) (StoredToken, error)
	// ReserveMasterKeyID and ReserveTokenSequence hand out unique numbers
	// across routers.
	ReserveMasterKeyID(ctx context.Context) (int32, error)
	ReserveTokenSequence(ctx context.Context, n int) (first int32, err error)
}

// ErrTokenNotFound: the store has no such token or master key.
var ErrTokenNotFound = errors.New("delegation token not found")

type tokens struct {
	store   TokenStore
	service string // host:port clients put in Token.service

	mu      sync.Mutex
	keyID   int32
	key     []byte
	keyExp  time.Time
	seq     int32
	seqLeft int
	keys    map[int32][]byte // verified keys by id (immutable once stored)
}

func newTokens(ts TokenStore, service string) *tokens {
	return &tokens{store: ts, service: service, keys: map[int32][]byte{}}
}

func hmacSHA1(key, msg []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// current returns this router's signing key, creating or rolling it.
func (t *tokens) current(ctx context.Context) (int32, []byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.key != nil && time.Now().Before(t.keyExp) {
		return t.keyID, t.key, nil
	}
	id, err := t.store.ReserveMasterKeyID(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("reserve master key id: %w", err)
	}
	key := make([]byte, 64) // Java's HmacSHA1 KeyGenerator default size
	if _, err := rand.Read(key); err != nil {
		return 0, nil, err
	}
	exp := time.Now().Add(masterKeyLifetime)
	// Stored keys must outlive every token they signed.
	if err := t.store.StoreMasterKey(ctx, id, key, exp.Add(tokenMaxLifetime)); err != nil {
		return 0, nil, fmt.Errorf("store master key: %w", err)
	}
	t.keyID, t.key, t.keyExp = id, key, exp
	t.keys[id] = key
	return id, key, nil
}

func (t *tokens) keyByID(ctx context.Context, id int32) ([]byte, error) {
	t.mu.Lock()
	k, ok := t.keys[id]
	t.mu.Unlock()
	if ok {
		return k, nil
	}
	k, err := t.store.GetMasterKey(ctx, id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.keys[id] = k
	t.mu.Unlock()
	return k, nil
}

func (t *tokens) nextSeq(ctx context.Context) (int32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seqLeft == 0 {
		first, err := t.store.ReserveTokenSequence(ctx, 100)
		if err != nil {
			return 0, fmt.Errorf("reserve token sequence numbers: %w", err)
		}
		t.seq, t.seqLeft = first, 100
	}
	s := t.seq
	t.seq++
	t.seqLeft--
	return s, nil
}

func invalidToken(format string, a ...any) error {
	return hadoopipc.Errorf(hadoopipc.ClassInvalidToken, format, a...)
}

// verify parses a presented token and checks its password and lifetime.
func (t *tokens) verify(ctx context.Context, identifier, password []byte) (*yarnpb.YARNDelegationTokenIdentifierProto, StoredToken, error) {
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &id); err != nil {
		return nil, StoredToken{}, invalidToken("malformed token identifier: %v", err)
	}
	key, err := t.keyByID(ctx, id.GetMasterKeyId())
	if errors.Is(err, ErrTokenNotFound) {
		return nil, StoredToken{}, invalidToken("token %d: unknown master key %d", id.GetSequenceNumber(), id.GetMasterKeyId())
	} else if err != nil {
		return nil, StoredToken{}, err
	}
	want := hmacSHA1(key, identifier)
	if password != nil && !hmac.Equal(want, password) {
		return nil, StoredToken{}, invalidToken("token %d: wrong password", id.GetSequenceNumber())
	}
	st, err := t.store.GetToken(ctx, identifier)
	if errors.Is(err, ErrTokenNotFound) {
		return nil, StoredToken{}, invalidToken("token (owner=%s, sequenceNumber=%d) can't be found in cache", id.GetOwner(), id.GetSequenceNumber())
	} else if err != nil {
		return nil, StoredToken{}, err
	}
	if time.Now().After(st.RenewDate) {
		return nil, StoredToken{}, invalidToken("token (owner=%s, sequenceNumber=%d) is expired", id.GetOwner(), id.GetSequenceNumber())
	}
	st.Password = want
	return &id, st, nil
}

// RetrievePassword implements hadoopipc.SecretManager: SASL TOKEN logins
// to the router.
func (t *tokens) RetrievePassword(identifier []byte) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, st, err := t.verify(ctx, identifier, nil)
	if err != nil {
		return nil, "", err
	}
	return st.Password, id.GetOwner(), nil
}

func shortName(user string) string {
	if i := strings.IndexAny(user, "/@"); i >= 0 {
		return user[:i]
	}
	return user
}

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
// (rest_dtoken.go) both issue through it, so their tokens are the same.
// It returns the token, its identifier and when it expires unless renewed.
func (r *Router) issueToken(ctx context.Context, u hadoopipc.User, renewer string) (*commonpb.TokenProto, *yarnpb.YARNDelegationTokenIdentifierProto, time.Time, error) {
	if renewer == "" {
		return nil, nil, time.Time{}, fmt.Errorf("%w: getDelegationToken: renewer is required", ErrBadRequest)
	}
	keyID, key, err := r.tokens.current(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	seq, err := r.tokens.nextSeq(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	now := time.Now()
	ident := &yarnpb.YARNDelegationTokenIdentifierProto{
		Owner: proto.String(u.Name), Renewer: proto.String(shortName(renewer)), RealUser: proto.String(u.RealUser),
		IssueDate: proto.Int64(now.UnixMilli()), MaxDate: proto.Int64(now.Add(tokenMaxLifetime).UnixMilli()),
		SequenceNumber: proto.Int32(seq), MasterKeyId: proto.Int32(keyID),
	}
	idb, err := proto.Marshal(ident)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	pw := hmacSHA1(key, idb)
	renewDate := now.Add(tokenRenewInterval)
	if err := r.tokens.store.StoreToken(ctx, StoredToken{Identifier: idb, Password: pw, RenewDate: renewDate}); err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("store delegation token: %w", err)
	}
	return &commonpb.TokenProto{
		Identifier: idb, Password: pw, Kind: proto.String(TokenKind), Service: proto.String(r.tokens.service),
	}, ident, renewDate, nil
}

func (r *Router) renewDelegationToken(ctx context.Context, req *commonpb.RenewDelegationTokenRequestProto) (*commonpb.RenewDelegationTokenResponseProto, error) {
	if r.tokens == nil {
		return nil, fmt.Errorf("renewDelegationToken: %w: the state store keeps no delegation tokens", ErrUnsupported)
	}
	tok := req.GetToken()
	id, st, err := r.tokens.verify(ctx, tok.GetIdentifier(), tok.GetPassword())
	if err != nil {
		return nil, err
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	if shortName(u.Name) != id.GetRenewer() {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%s tries to renew a token (sequenceNumber=%d) with non-matching renewer %s",
			u.Name, id.GetSequenceNumber(), id.GetRenewer())
	}
	next := min(time.Now().Add(tokenRenewInterval).UnixMilli(), id.GetMaxDate())
	st.RenewDate = time.UnixMilli(next)
	if err := r.tokens.store.UpdateToken(ctx, st); err != nil {
		return nil, fmt.Errorf("renew delegation token: %w", err)
	}
	return &commonpb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(uint64(next))}, nil
}

func (r *Router) cancelDelegationToken(ctx context.Context, req *commonpb.CancelDelegationTokenRequestProto) (*commonpb.CancelDelegationTokenResponseProto, error) {
	if r.tokens == nil {
		return nil, fmt.Errorf("cancelDelegationToken: %w: the state store keeps no delegation tokens", ErrUnsupported)
	}
	tok := req.GetToken()
	id, _, err := r.tokens.verify(ctx, tok.GetIdentifier(), tok.GetPassword())
	if err != nil {
		return nil, err
	}
	u, _ := hadoopipc.UserFromContext(ctx)
	if n := shortName(u.Name); n != shortName(id.GetOwner()) && n != id.GetRenewer() {
		return nil, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%s is not authorized to cancel the token (sequenceNumber=%d)", u.Name, id.GetSequenceNumber())
	}
	if err := r.tokens.store.RemoveToken(ctx, tok.GetIdentifier()); err != nil {
		return nil, fmt.Errorf("cancel delegation token: %w", err)
	}
	return &commonpb.CancelDelegationTokenResponseProto{}, nil
}
