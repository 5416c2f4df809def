// Package spnego authenticates the router's web port with Kerberos SPNEGO
// (Hadoop's AuthenticationFilter with the kerberos handler) and keeps the
// caller authenticated with a signed hadoop.auth cookie. It knows nothing
// of routing: the router hands it the handler to call with the caller's
// short user name.
package spnego

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	krbspnego "github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
)

// Config turns on Kerberos SPNEGO authentication of the REST API
// (Hadoop's AuthenticationFilter with the kerberos handler): a request
// without "Authorization: Negotiate ..." or a valid hadoop.auth cookie gets
// 401 with "WWW-Authenticate: Negotiate", and ?user.name= is ignored.
// Without a keytab the REST API keeps Hadoop's pseudo authentication
// (?user.name=, default dr.who). /healthz, /readyz and /prom stay open.
type Config struct {
	// Keytab holds the HTTP service key
	// (hadoop.http.authentication.kerberos.keytab). Empty: SPNEGO off.
	Keytab string `json:"keytab"`
	// Principal is the key to use, e.g. "HTTP/router.example.com@REALM"
	// (hadoop.http.authentication.kerberos.principal). Empty or "*":
	// whichever key in the keytab the client's ticket names.
	Principal string `json:"principal"`
	// Realm is the realm the DEFAULT auth_to_local rule strips (krb5.conf's
	// default_realm); empty: the realm of Principal.
	Realm string `json:"realm"`
	// AuthToLocal maps client principals to user names
	// (hadoop.security.auth_to_local; empty: DEFAULT).
	AuthToLocal string `json:"auth_to_local"`
	// CookieValidity is how long the signed hadoop.auth cookie set after a
	// successful negotiation spares the client another one
	// (hadoop.http.authentication.token.validity, 10h). 0 disables the
	// cookie.
	CookieValidity config.Duration `json:"cookie_validity"`
	// SignatureSecretFile holds the secret the cookie is signed with
	// (hadoop.http.authentication.signature.secret.file), read once at
	// start, at least MinSecretBytes. Router replicas behind one address
	// share it, so a cookie one replica set is accepted by the others.
	// Empty: a random secret per process, so a restart or another replica
	// asks for a new negotiation.
	SignatureSecretFile string `json:"signature_secret_file"`
}

// MinSecretBytes is the shortest cookie signing secret accepted from
// SignatureSecretFile: HMAC-SHA256's block is 64 bytes and its output 32;
// a shorter secret is weaker than the random one it replaces.
const MinSecretBytes = 32

// ErrSecret: the cookie signing secret file cannot be used.
var ErrSecret = errors.New("spnego cookie signature secret")

// Validate checks the configuration; with no keytab SPNEGO is off and
// nothing else may be set.
func (c Config) Validate() error {
	if c.Keytab == "" {
		if c.Principal != "" {
			return errors.New("spnego.principal: set without spnego.keytab")
		}
		if c.SignatureSecretFile != "" {
			return errors.New("spnego.signature_secret_file: set without spnego.keytab")
		}
		return nil
	}
	if _, err := c.secret(); err != nil {
		return err
	}
	if _, err := keytab.Load(c.Keytab); err != nil {
		return fmt.Errorf("spnego.keytab: %w", err)
	}
	if _, err := authtolocal.Parse(c.AuthToLocal, c.realm()); err != nil {
		return fmt.Errorf("spnego.auth_to_local: %w", err)
	}
	if c.CookieValidity < 0 {
		return fmt.Errorf("spnego.cookie_validity: %v, must be >= 0", c.CookieValidity.D())
	}
	return nil
}

// secret reads SignatureSecretFile, or makes a random secret without one.
func (c Config) secret() ([]byte, error) {
	if c.SignatureSecretFile == "" {
		secret := make([]byte, MinSecretBytes)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
		return secret, nil
	}
	// The file's bytes are the secret, as Hadoop's FileSignerSecretProvider
	// reads them (a trailing newline included).
	secret, err := os.ReadFile(c.SignatureSecretFile)
	switch {
	case err != nil:
		return nil, fmt.Errorf("spnego.signature_secret_file: %w: %w", ErrSecret, err)
	case len(secret) == 0:
		return nil, fmt.Errorf("spnego.signature_secret_file: %w: %s is empty", ErrSecret, c.SignatureSecretFile)
	case len(secret) < MinSecretBytes:
		return nil, fmt.Errorf("spnego.signature_secret_file: %w: %s holds %d bytes, need at least %d",
			ErrSecret, c.SignatureSecretFile, len(secret), MinSecretBytes)
	}
	return secret, nil
}

func (c Config) realm() string {
	if c.Realm != "" {
		return c.Realm
	}
	if _, r, ok := strings.Cut(c.Principal, "@"); ok {
		return r
	}
	return ""
}

// CookieName is Hadoop's hadoop.auth cookie name.
const CookieName = "hadoop.auth"

// Auth authenticates web requests.
type Auth struct {
	kt       *keytab.Keytab
	settings []func(*service.Settings)
	names    *authtolocal.Mapper
	secret   []byte
	validity time.Duration
	log      *slog.Logger
	now      func() time.Time
}

// New loads the keytab and the cookie secret of c.
func New(c Config, logger *slog.Logger) (*Auth, error) {
	kt, err := keytab.Load(c.Keytab)
	if err != nil {
		return nil, fmt.Errorf("spnego keytab: %w", err)
	}
	names, err := authtolocal.Parse(c.AuthToLocal, c.realm())
	if err != nil {
		return nil, err
	}
	secret, err := c.secret()
	if err != nil {
		return nil, err
	}
	a := &Auth{kt: kt, names: names, secret: secret, validity: c.CookieValidity.D(), log: logger, now: time.Now}
	// MIT and Heimdal tickets carry no Microsoft PAC.
	a.settings = []func(*service.Settings){service.DecodePAC(false),
		service.Logger(log.New(&slogWriter{logger}, "", 0))}
	if p := c.Principal; p != "" && p != "*" {
		spn, _, _ := strings.Cut(p, "@")
		a.settings = append(a.settings, service.KeytabPrincipal(spn))
	}
	return a, nil
}

// Wrap authenticates a request, then calls next with the caller's short
// user name.
func (a *Auth) Wrap(next func(w http.ResponseWriter, req *http.Request, user string)) http.Handler {
	negotiated := krbspnego.SPNEGOKRB5Authenticate(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := goidentity.FromHTTPRequestContext(req)
		if id == nil {
			http.Error(w, "no identity after SPNEGO", http.StatusUnauthorized)
			return
		}
		principal := id.UserName() + "@" + id.Domain()
		user, err := a.names.ShortName(principal)
		if err != nil {
			// Hadoop answers 403 for a principal auth_to_local cannot map.
			a.log.Info("REST principal has no local name", "principal", principal, "err", err)
			http.Error(w, fmt.Sprintf("no auth_to_local rule maps %s", principal), http.StatusForbidden)
			return
		}
		if a.validity > 0 {
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: a.sign(user, principal), Path: "/", HttpOnly: true})
		}
		next(w, req, user)
	}), a.kt, a.settings...)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if c, err := req.Cookie(CookieName); err == nil {
			if user, ok := a.verify(c.Value); ok {
				next(w, req, user)
				return
			}
		}
		negotiated.ServeHTTP(w, req)
	})
}

// sign builds the cookie value "u=<user>&p=<principal>&t=kerberos&e=<expiry
// ms>&s=<HMAC-SHA256>" (Hadoop's AuthToken fields; only routers sharing
// the secret read the signature).
func (a *Auth) sign(user, principal string) string {
	v := url.Values{}
	v.Set("u", user)
	v.Set("p", principal)
	v.Set("t", "kerberos")
	v.Set("e", strconv.FormatInt(a.now().Add(a.validity).UnixMilli(), 10))
	body := v.Encode()
	return body + "&s=" + a.mac(body)
}

func (a *Auth) mac(body string) string {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a cookie's signature and expiry and returns its user.
func (a *Auth) verify(value string) (string, bool) {
	value = strings.Trim(value, `"`)
	body, sig, ok := strings.Cut(value, "&s=")
	if !ok || !hmac.Equal([]byte(sig), []byte(a.mac(body))) {
		return "", false
	}
	v, err := url.ParseQuery(body)
	if err != nil {
		return "", false
	}
	exp, err := strconv.ParseInt(v.Get("e"), 10, 64)
	if err != nil || a.now().UnixMilli() >= exp || v.Get("u") == "" {
		return "", false
	}
	return v.Get("u"), true
}

// slogWriter carries gokrb5's log.Logger lines to slog at debug level.
type slogWriter struct{ l *slog.Logger }

func (s *slogWriter) Write(p []byte) (int, error) {
	s.l.Debug(strings.TrimSpace(string(p)), "component", "spnego")
	return len(p), nil
}
