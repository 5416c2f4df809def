package dtoken_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/router/dtoken"
)

// fakeStore is a fake dtoken.Store in memory, shared by the "routers" of a
// test as the state store is.
type fakeStore struct {
	mu     sync.Mutex
	keys   map[int32][]byte
	tokens map[string]dtoken.StoredToken
	keyID  int32
	seq    int32
}

func newFakeStore() *fakeStore {
	return &fakeStore{keys: map[int32][]byte{}, tokens: map[string]dtoken.StoredToken{}}
}

func (s *fakeStore) StoreMasterKey(_ context.Context, id int32, key []byte, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[id] = key
	return nil
}

func (s *fakeStore) GetMasterKey(_ context.Context, id int32) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[id]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("fake: key %d: %w", id, dtoken.ErrNotFound)
}

func (s *fakeStore) StoreToken(_ context.Context, t dtoken.StoredToken) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[string(t.Identifier)] = t
	return nil
}

func (s *fakeStore) UpdateToken(ctx context.Context, t dtoken.StoredToken) error {
	if _, err := s.GetToken(ctx, t.Identifier); err != nil {
		return err
	}
	return s.StoreToken(ctx, t)
}

func (s *fakeStore) RemoveToken(ctx context.Context, id []byte) error {
	if _, err := s.GetToken(ctx, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, string(id))
	return nil
}

func (s *fakeStore) GetToken(_ context.Context, id []byte) (dtoken.StoredToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[string(id)]; ok {
		return t, nil
	}
	return dtoken.StoredToken{}, fmt.Errorf("fake: token: %w", dtoken.ErrNotFound)
}

func (s *fakeStore) ReserveMasterKeyID(context.Context) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keyID++
	return s.keyID, nil
}

func (s *fakeStore) ReserveTokenSequence(_ context.Context, n int) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.seq + 1
	s.seq += int32(n)
	return first, nil
}

func class(err error) string {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

// TestManagerAcrossReplicas: a token one Manager issues is verified,
// renewed and cancelled by another on the same store (router replicas);
// only the renewer renews, owner or renewer cancels, a wrong password or a
// cancelled token is InvalidToken, and no renewer is ErrNoRenewer.
func TestManagerAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	st := newFakeStore()
	a, b := dtoken.New(st, "router:8050"), dtoken.New(st, "router:8050")

	if _, _, _, err := a.Issue(ctx, "alice", "", ""); !errors.Is(err, dtoken.ErrNoRenewer) {
		t.Fatalf("no renewer: %v", err)
	}
	tok, id, exp, err := a.Issue(ctx, "alice", "", "bob/host@EXAMPLE.COM")
	if err != nil {
		t.Fatal(err)
	}
	if tok.GetKind() != dtoken.Kind || tok.GetService() != "router:8050" || id.GetOwner() != "alice" || id.GetRenewer() != "bob" || !exp.After(time.Now()) {
		t.Fatalf("token %v, identifier %v, expiry %v", tok, id, exp)
	}
	pw, owner, err := b.RetrievePassword(tok.GetIdentifier())
	if err != nil || owner != "alice" || string(pw) != string(tok.GetPassword()) {
		t.Fatalf("the other replica's SASL lookup: %q %q %v", pw, owner, err)
	}
	if _, err := b.Renew(ctx, tok, "alice"); class(err) != hadoopipc.ClassAccessControl {
		t.Errorf("renew by the owner (not the renewer): %v, want AccessControlException", err)
	}
	if next, err := b.Renew(ctx, tok, "bob"); err != nil || next <= time.Now().UnixMilli() {
		t.Errorf("renew by bob at the other replica: %d %v", next, err)
	}
	tampered := proto.Clone(tok).(*commonpb.TokenProto)
	tampered.Password = append([]byte(nil), tok.GetPassword()...)
	tampered.Password[0] ^= 1
	if _, err := b.Renew(ctx, tampered, "bob"); class(err) != hadoopipc.ClassInvalidToken {
		t.Errorf("renew with a wrong password: %v, want InvalidToken", err)
	}
	if err := b.Cancel(ctx, tok, "mallory"); class(err) != hadoopipc.ClassAccessControl {
		t.Errorf("cancel by a stranger: %v, want AccessControlException", err)
	}
	if err := b.Cancel(ctx, tok, "alice@EXAMPLE.COM"); err != nil {
		t.Fatalf("cancel by the owner: %v", err)
	}
	if _, _, err := a.RetrievePassword(tok.GetIdentifier()); class(err) != hadoopipc.ClassInvalidToken {
		t.Errorf("a cancelled token logs in: %v", err)
	}
	// Each replica reserves its own key and sequence numbers.
	tok2, id2, _, err := b.Issue(ctx, "carol", "", "carol")
	if err != nil {
		t.Fatal(err)
	}
	if id2.GetMasterKeyId() == id.GetMasterKeyId() || id2.GetSequenceNumber() == id.GetSequenceNumber() {
		t.Errorf("replicas share key %d or sequence %d", id2.GetMasterKeyId(), id2.GetSequenceNumber())
	}
	if _, _, err := a.RetrievePassword(tok2.GetIdentifier()); err != nil {
		t.Errorf("a verifies b's key from the store: %v", err)
	}
}
