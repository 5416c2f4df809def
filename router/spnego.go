package router

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
	"strconv"
	"strings"
	"time"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
)

// SPNEGOConfig turns on Kerberos SPNEGO authentication of the REST API
// (Hadoop's AuthenticationFilter with the kerberos handler): a request
// without "Authorization: Negotiate ..." or a valid hadoop.auth cookie gets
// 401 with "WWW-Authenticate: Negotiate", and ?user.name= is ignored.
// Without a keytab the REST API keeps Hadoop's pseudo authentication
// (?user.name=, default dr.who). /healthz, /readyz and /prom stay open.
type SPNEGOConfig struct {
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
	// cookie. The signing secret is random per process, so a restart or
	// another router asks for a new negotiation.
	CookieValidity Duration `json:"cookie_validity"`
}

func (c SPNEGOConfig) validate() error {
	if c.Keytab == "" {
		if c.Principal != "" {
			return errors.New("spnego.principal: set without spnego.keytab")
		}
		return nil
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

func (c SPNEGOConfig) realm() string {
	if c.Realm != "" {
		return c.Realm
	}
	if _, r, ok := strings.Cut(c.Principal, "@"); ok {
		return r
	}
	return ""
}

// authCookie is Hadoop's hadoop.auth cookie name.
const authCookie = "hadoop.auth"

// spnegoAuth authenticates REST requests.
type spnegoAuth struct {
	kt       *keytab.Keytab
	settings []func(*service.Settings)
	names    *authtolocal.Mapper
	secret   []byte
	validity time.Duration
	log      *slog.Logger
	now      func() time.Time
}

func newSPNEGOAuth(c SPNEGOConfig, logger *slog.Logger) (*spnegoAuth, error) {
	kt, err := keytab.Load(c.Keytab)
	if err != nil {
		return nil, fmt.Errorf("spnego keytab: %w", err)
	}
	names, err := authtolocal.Parse(c.AuthToLocal, c.realm())
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	a := &spnegoAuth{kt: kt, names: names, secret: secret, validity: c.CookieValidity.D(), log: logger, now: time.Now}
	// MIT and Heimdal tickets carry no Microsoft PAC.
	a.settings = []func(*service.Settings){service.DecodePAC(false),
		service.Logger(log.New(&slogWriter{logger}, "", 0))}
	if p := c.Principal; p != "" && p != "*" {
		spn, _, _ := strings.Cut(p, "@")
		a.settings = append(a.settings, service.KeytabPrincipal(spn))
	}
	return a, nil
}

// wrap authenticates a request, then calls next with the caller's short
// user name.
func (a *spnegoAuth) wrap(next func(w http.ResponseWriter, req *http.Request, user string)) http.Handler {
	negotiated := spnego.SPNEGOKRB5Authenticate(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
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
			http.SetCookie(w, &http.Cookie{Name: authCookie, Value: a.sign(user, principal), Path: "/", HttpOnly: true})
		}
		next(w, req, user)
	}), a.kt, a.settings...)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if c, err := req.Cookie(authCookie); err == nil {
			if user, ok := a.verify(c.Value); ok {
				next(w, req, user)
				return
			}
		}
		negotiated.ServeHTTP(w, req)
	})
}

// sign builds the cookie value "u=<user>&p=<principal>&t=kerberos&e=<expiry
// ms>&s=<HMAC-SHA256>" (Hadoop's AuthToken fields; only this router reads
// the signature).
func (a *spnegoAuth) sign(user, principal string) string {
	v := url.Values{}
	v.Set("u", user)
	v.Set("p", principal)
	v.Set("t", "kerberos")
	v.Set("e", strconv.FormatInt(a.now().Add(a.validity).UnixMilli(), 10))
	body := v.Encode()
	return body + "&s=" + a.mac(body)
}

func (a *spnegoAuth) mac(body string) string {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify checks a cookie's signature and expiry and returns its user.
func (a *spnegoAuth) verify(value string) (string, bool) {
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
