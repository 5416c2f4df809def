// Package spnegotest puts a Kerberized Hadoop web endpoint in front of an
// http.Handler, for tests: what Hadoop's AuthenticationFilter with the
// kerberos handler does on an RM's web port. A request without credentials
// is answered 401 "WWW-Authenticate: Negotiate"; an "Authorization:
// Negotiate" token is verified with gokrb5's SPNEGO service side against
// the endpoint's keytab (a ticket from a real KDC, e.g. internal/krbtest)
// and answered with a signed hadoop.auth cookie, which later requests may
// present instead of a token. It counts what it saw, so tests can tell a
// ticket exchange from a cookie.
package spnegotest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// Endpoint is the Kerberized wrapper; it is an http.Handler.
type Endpoint struct {
	// Challenges counts 401 Negotiate answers to requests without
	// credentials; Tokens counts accepted SPNEGO tokens; Refused counts
	// tokens that failed verification; CookieHits counts requests
	// authenticated by a valid hadoop.auth cookie.
	Challenges, Tokens, Refused, CookieHits atomic.Int64
	// NoCookies stops the endpoint from issuing hadoop.auth cookies (set
	// before serving), so every request needs a token.
	NoCookies bool

	inner  http.Handler
	spnego http.Handler
	ttl    time.Duration

	mu     sync.Mutex
	secret []byte
}

type principalKey struct{}

// Principal is the authenticated client principal ("name@REALM") of a
// request the Endpoint passed on.
func Principal(r *http.Request) string {
	p, _ := r.Context().Value(principalKey{}).(string)
	return p
}

// New wraps inner; principal is the endpoint's own SPNEGO principal
// ("HTTP/localhost"), whose keys kt holds. Cookies are valid for an hour.
func New(inner http.Handler, kt *keytab.Keytab, principal string) *Endpoint {
	e := &Endpoint{inner: inner, ttl: time.Hour}
	e.rotate()
	accepted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := goidentity.FromHTTPRequestContext(r)
		p := id.UserName() + "@" + id.Domain()
		e.Tokens.Add(1)
		if !e.NoCookies {
			http.SetCookie(w, e.cookie(p))
		}
		e.inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
	e.spnego = spnego.SPNEGOKRB5Authenticate(accepted, kt,
		service.KeytabPrincipal(principal), service.DecodePAC(false),
		service.Logger(log.New(discard{}, "", 0)))
	return e
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// ExpireCookies invalidates every cookie issued so far (the server-side
// expiry of hadoop.auth), so the next request must negotiate again.
func (e *Endpoint) ExpireCookies() { e.rotate() }

func (e *Endpoint) rotate() {
	s := make([]byte, 32)
	_, _ = rand.Read(s)
	e.mu.Lock()
	e.secret = s
	e.mu.Unlock()
}

func (e *Endpoint) sign(v string) string {
	e.mu.Lock()
	m := hmac.New(sha256.New, e.secret)
	e.mu.Unlock()
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookie is shaped as Hadoop's: a quoted "u=..&p=..&t=kerberos&e=..&s=.."
// value, Path=/, HttpOnly.
func (e *Endpoint) cookie(principal string) *http.Cookie {
	short, _, _ := strings.Cut(principal, "@")
	short, _, _ = strings.Cut(short, "/")
	v := fmt.Sprintf("u=%s&p=%s&t=kerberos&e=%d", short, principal, time.Now().Add(e.ttl).UnixMilli())
	return &http.Cookie{Name: "hadoop.auth", Value: v + "&s=" + e.sign(v), Quoted: true, Path: "/", HttpOnly: true}
}

// fromCookie returns the principal of a valid hadoop.auth cookie.
func (e *Endpoint) fromCookie(r *http.Request) (string, bool) {
	c, err := r.Cookie("hadoop.auth")
	if err != nil {
		return "", false
	}
	v, sig, ok := strings.Cut(c.Value, "&s=")
	if !ok || !hmac.Equal([]byte(sig), []byte(e.sign(v))) {
		return "", false
	}
	f, err := url.ParseQuery(v)
	if err != nil {
		return "", false
	}
	exp, err := strconv.ParseInt(f.Get("e"), 10, 64)
	if err != nil || time.Now().UnixMilli() > exp {
		return "", false
	}
	return f.Get("p"), true
}

// ServeHTTP implements http.Handler.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := e.fromCookie(r); ok {
		e.CookieHits.Add(1)
		e.inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Negotiate ") {
		e.Challenges.Add(1)
		w.Header().Set("WWW-Authenticate", "Negotiate")
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	e.spnego.ServeHTTP(rec, r)
	if rec.status == http.StatusUnauthorized {
		e.Refused.Add(1)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Serve runs e on a loopback port until the test ends and returns its
// address as "localhost:port", so a client's SPN is HTTP/localhost.
func (e *Endpoint) Serve(t testing.TB) string {
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return "localhost:" + u.Port()
}

// Proxy forwards to an unsecured web address (host:port), e.g. a simrm's,
// so it can be put behind an Endpoint.
func Proxy(addr string) http.Handler {
	return httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
}
