package spnego_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/webtest"
	"github.com/yarnfed/yarnfed/router/spnego"
)

// serviceKeytab writes a keytab holding one HTTP service key (no KDC is
// needed: these tests never negotiate, they carry cookies).
func serviceKeytab(t *testing.T) string {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry("HTTP/localhost", "EXAMPLE.COM", "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "http.keytab")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func secretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// replica is one router's SPNEGO front: its handler answers 200 with the
// authenticated user's name.
type replica struct {
	auth *spnego.Auth
	srv  *httptest.Server
}

func newReplica(t *testing.T, c spnego.Config) replica {
	t.Helper()
	a, err := spnego.New(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Wrap(func(w http.ResponseWriter, _ *http.Request, user string) {
		io.WriteString(w, user)
	}))
	t.Cleanup(srv.Close)
	return replica{auth: a, srv: srv}
}

// get sends a request carrying cookie and returns the status and body.
func get(t *testing.T, url, cookie string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: spnego.CookieName, Value: cookie})
	return webtest.Do(t, req)
}

// TestSharedSecretFileCookieAcrossReplicas: two routers configured with the
// same spnego.signature_secret_file accept each other's hadoop.auth cookie
// (a client behind one Service lands on either); a router with another
// secret, or a random one, refuses it and asks for a negotiation.
func TestSharedSecretFileCookieAcrossReplicas(t *testing.T) {
	kt := serviceKeytab(t)
	shared := secretFile(t, strings.Repeat("s", 40))
	base := spnego.Config{Keytab: kt, Principal: "HTTP/localhost@EXAMPLE.COM", CookieValidity: config.Duration(time.Hour)}

	withFile := func(f string) spnego.Config { c := base; c.SignatureSecretFile = f; return c }
	a := newReplica(t, withFile(shared))
	b := newReplica(t, withFile(shared))
	other := newReplica(t, withFile(secretFile(t, strings.Repeat("o", 40))))
	random := newReplica(t, base)

	cookie := spnego.SignForTest(a.auth, "alice", "alice@EXAMPLE.COM")
	for name, r := range map[string]replica{"the replica that set it": a, "a replica with the same file": b} {
		if code, body := get(t, r.srv.URL, cookie); code != http.StatusOK || body != "alice" {
			t.Errorf("%s: %d %q, want 200 alice", name, code, body)
		}
	}
	for name, r := range map[string]replica{"a replica with another file": other, "a replica with a random secret": random} {
		code, _ := get(t, r.srv.URL, cookie)
		if code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401 (negotiate again)", name, code)
		}
	}
	// And the other way round: b's cookie is good at a.
	if code, body := get(t, a.srv.URL, spnego.SignForTest(b.auth, "bob", "bob@EXAMPLE.COM")); code != http.StatusOK || body != "bob" {
		t.Errorf("b's cookie at a: %d %q, want 200 bob", code, body)
	}
}

// TestSecretFileRefused: a secret file that cannot be read, is empty or is
// shorter than MinSecretBytes fails the start (New) and Validate with
// ErrSecret and the file named, instead of signing with a weak or no key.
func TestSecretFileRefused(t *testing.T) {
	kt := serviceKeytab(t)
	cases := map[string]string{
		"missing": filepath.Join(t.TempDir(), "nope"),
		"empty":   secretFile(t, ""),
		"short":   secretFile(t, strings.Repeat("x", spnego.MinSecretBytes-1)),
		"a dir":   t.TempDir(),
	}
	for name, file := range cases {
		c := spnego.Config{Keytab: kt, SignatureSecretFile: file}
		if _, err := spnego.New(c, slog.New(slog.DiscardHandler)); !errors.Is(err, spnego.ErrSecret) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: New: %v, want ErrSecret naming %s", name, err, file)
		}
		if err := c.Validate(); !errors.Is(err, spnego.ErrSecret) {
			t.Errorf("%s: Validate: %v, want ErrSecret", name, err)
		}
	}
	c := spnego.Config{Keytab: kt, SignatureSecretFile: secretFile(t, strings.Repeat("x", spnego.MinSecretBytes))}
	if _, err := spnego.New(c, slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("%d bytes: %v", spnego.MinSecretBytes, err)
	}
	if err := (spnego.Config{SignatureSecretFile: c.SignatureSecretFile}).Validate(); err == nil {
		t.Error("a secret file without a keytab validated")
	}
}
