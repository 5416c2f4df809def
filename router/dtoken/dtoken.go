// Package dtoken is the router's delegation-token secret manager (Hadoop's
// RouterDelegationTokenSecretManager): it mints, verifies, renews and
// cancels RM_DELEGATION_TOKENs whose master keys and rows live in the
// state store, so every router replica honours every replica's tokens. It
// also implements hadoopipc.SecretManager for SASL TOKEN logins, and
// renders tokens in Hadoop's URL-safe text form (codec.go) for REST.
// Who may ask for a token is the caller's business (the router's IPC and
// REST handlers); this package checks only renewer and owner rules.
package dtoken

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

// A token from one RM is worthless at another, so the router issues its
// own: identifier = YARNDelegationTokenIdentifierProto bytes, password =
// HMAC-SHA1(master key, identifier), master keys and tokens kept in the
// state store so every router can verify and renew every token. Clients
// then log in to any router with SASL TOKEN; calls to the RMs go as the
// token's owner.

// Kind is the kind Hadoop's RM gives its delegation tokens.
const Kind = "RM_DELEGATION_TOKEN"

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

// Store keeps delegation-token state (the router's state store client
// implements it; without one the router's token calls answer
// UnsupportedOperationException). Not-found errors wrap ErrNotFound.
type Store interface {
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

// ErrNotFound: the store has no such token or master key.
var ErrNotFound = errors.New("delegation token not found")

// ErrNoRenewer: a token was asked for without a renewer.
var ErrNoRenewer = errors.New("renewer is required")

// Manager issues and checks the router's delegation tokens.
type Manager struct {
	store   Store
	service string // host:port clients put in Token.service

	mu      sync.Mutex
	keyID   int32
	key     []byte
	keyExp  time.Time
	seq     int32
	seqLeft int
	keys    map[int32][]byte // verified keys by id (immutable once stored)
}

// New returns a Manager keeping its state in ts; service is the host:port
// clients put in Token.service (the router's client address).
func New(ts Store, service string) *Manager {
	return &Manager{store: ts, service: service, keys: map[int32][]byte{}}
}

func hmacSHA1(key, msg []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// current returns this router's signing key, creating or rolling it.
func (t *Manager) current(ctx context.Context) (int32, []byte, error) {
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

func (t *Manager) keyByID(ctx context.Context, id int32) ([]byte, error) {
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

func (t *Manager) nextSeq(ctx context.Context) (int32, error) {
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

// Verify parses a presented token and checks its password and lifetime.
func (t *Manager) Verify(ctx context.Context, identifier, password []byte) (*yarnpb.YARNDelegationTokenIdentifierProto, StoredToken, error) {
	var id yarnpb.YARNDelegationTokenIdentifierProto
	if err := proto.Unmarshal(identifier, &id); err != nil {
		return nil, StoredToken{}, invalidToken("malformed token identifier: %v", err)
	}
	key, err := t.keyByID(ctx, id.GetMasterKeyId())
	if errors.Is(err, ErrNotFound) {
		return nil, StoredToken{}, invalidToken("token %d: unknown master key %d", id.GetSequenceNumber(), id.GetMasterKeyId())
	} else if err != nil {
		return nil, StoredToken{}, err
	}
	want := hmacSHA1(key, identifier)
	if password != nil && !hmac.Equal(want, password) {
		return nil, StoredToken{}, invalidToken("token %d: wrong password", id.GetSequenceNumber())
	}
	st, err := t.store.GetToken(ctx, identifier)
	if errors.Is(err, ErrNotFound) {
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
func (t *Manager) RetrievePassword(identifier []byte) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, st, err := t.Verify(ctx, identifier, nil)
	if err != nil {
		return nil, "", err
	}
	return st.Password, id.GetOwner(), nil
}

// shortName is a principal's first component ("alice/host@R" -> "alice"),
// which renewer and owner rules compare.
func shortName(user string) string {
	if i := strings.IndexAny(user, "/@"); i >= 0 {
		return user[:i]
	}
	return user
}

// Issue mints and stores a token owned by owner (realUser: who acts for
// it, or empty), renewable by renewer's short name. It returns the token,
// its identifier and when it expires unless renewed.
func (t *Manager) Issue(ctx context.Context, owner, realUser, renewer string) (*commonpb.TokenProto, *yarnpb.YARNDelegationTokenIdentifierProto, time.Time, error) {
	if renewer == "" {
		return nil, nil, time.Time{}, ErrNoRenewer
	}
	keyID, key, err := t.current(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	seq, err := t.nextSeq(ctx)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	now := time.Now()
	ident := &yarnpb.YARNDelegationTokenIdentifierProto{
		Owner: proto.String(owner), Renewer: proto.String(shortName(renewer)), RealUser: proto.String(realUser),
		IssueDate: proto.Int64(now.UnixMilli()), MaxDate: proto.Int64(now.Add(tokenMaxLifetime).UnixMilli()),
		SequenceNumber: proto.Int32(seq), MasterKeyId: proto.Int32(keyID),
	}
	idb, err := proto.Marshal(ident)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	pw := hmacSHA1(key, idb)
	renewDate := now.Add(tokenRenewInterval)
	if err := t.store.StoreToken(ctx, StoredToken{Identifier: idb, Password: pw, RenewDate: renewDate}); err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("store delegation token: %w", err)
	}
	return &commonpb.TokenProto{
		Identifier: idb, Password: pw, Kind: proto.String(Kind), Service: proto.String(t.service),
	}, ident, renewDate, nil
}

// Renew extends tok by the renew interval (not past its max date) for
// caller, who must be its renewer; it returns the new expiry in ms.
func (t *Manager) Renew(ctx context.Context, tok *commonpb.TokenProto, caller string) (int64, error) {
	id, st, err := t.Verify(ctx, tok.GetIdentifier(), tok.GetPassword())
	if err != nil {
		return 0, err
	}
	if shortName(caller) != id.GetRenewer() {
		return 0, hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%s tries to renew a token (sequenceNumber=%d) with non-matching renewer %s",
			caller, id.GetSequenceNumber(), id.GetRenewer())
	}
	next := min(time.Now().Add(tokenRenewInterval).UnixMilli(), id.GetMaxDate())
	st.RenewDate = time.UnixMilli(next)
	if err := t.store.UpdateToken(ctx, st); err != nil {
		return 0, fmt.Errorf("renew delegation token: %w", err)
	}
	return next, nil
}

// Cancel removes tok for caller, who must be its owner or renewer.
func (t *Manager) Cancel(ctx context.Context, tok *commonpb.TokenProto, caller string) error {
	id, _, err := t.Verify(ctx, tok.GetIdentifier(), tok.GetPassword())
	if err != nil {
		return err
	}
	if n := shortName(caller); n != shortName(id.GetOwner()) && n != id.GetRenewer() {
		return hadoopipc.Errorf(hadoopipc.ClassAccessControl, "%s is not authorized to cancel the token (sequenceNumber=%d)", caller, id.GetSequenceNumber())
	}
	if err := t.store.RemoveToken(ctx, tok.GetIdentifier()); err != nil {
		return fmt.Errorf("cancel delegation token: %w", err)
	}
	return nil
}
