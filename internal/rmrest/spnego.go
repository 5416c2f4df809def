package rmrest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// ErrKerberosRequired is wrapped by the error of a call refused with a
// Negotiate challenge when the client has no Kerberos login.
var ErrKerberosRequired = errors.New("rmrest: the RM requires Kerberos (SPNEGO) and no Kerberos login is configured")

// ErrSPNEGORefused is wrapped by the error of a call whose SPNEGO token the
// RM refused (401 after we negotiated).
var ErrSPNEGORefused = errors.New("rmrest: the RM refused our SPNEGO (Kerberos) authentication")

// HadoopAuthCookie is the cookie Hadoop's AuthenticationFilter sets after a
// successful authentication; sending it back spares a ticket exchange.
const HadoopAuthCookie = "hadoop.auth"

// SPNEGO authenticates RM REST calls with Kerberos, as Hadoop's
// KerberosAuthenticator does: a call answered "401 WWW-Authenticate:
// Negotiate" is sent again with "Authorization: Negotiate <token>" (a
// service ticket for the RM's HTTP principal), and the hadoop.auth cookie
// the RM then sets is sent on later calls, so only the first call to an RM,
// and the first after the cookie expires, pays for a token. One SPNEGO is
// shared by every Client of one identity (it holds that identity's cookies);
// it is safe for concurrent use.
//
// A redirect to another host:port is followed without credentials (Go's
// http.Client drops Authorization and Cookie there), so its challenge comes
// back as an error; the agent and the GPG call each RM directly (a standby
// serves /info itself, and /apps is read from the RM that said ACTIVE).
//
// gokrb5's spnego.Client is not used as is: it derives the principal from a
// DNS CNAME lookup rather than the host as configured (Hadoop's rule),
// keeps unsynchronized redirect state, and answers a refused token by
// negotiating again, without end.
type SPNEGO struct {
	login     *krbclient.Client
	principal string
	jar       *cookiejar.Jar
	// negotiates holds the hosts ("host:port") that asked for Negotiate:
	// without a cookie, a call to them sends a token at once instead of
	// waiting for the 401.
	negotiates sync.Map
}

// NewSPNEGO returns an SPNEGO for a logged-in gokrb5 client (a keytab login
// renews itself). principal is the RMs' HTTP principal, "HTTP/_HOST" with
// an optional realm, _HOST being the lower-cased host of the RM's address;
// empty means "HTTP/_HOST".
func NewSPNEGO(login *krbclient.Client, principal string) *SPNEGO {
	if principal == "" {
		principal = "HTTP/_HOST"
	}
	jar, _ := cookiejar.New(nil) // New never fails without options
	return &SPNEGO{login: login, principal: principal, jar: jar}
}

// spn is the service principal for an RM URL, without its realm (gokrb5
// finds the realm from krb5.conf's domain_realm, else uses ours).
func (s *SPNEGO) spn(u *url.URL) string {
	p := s.principal
	if at := strings.LastIndexByte(p, '@'); at >= 0 {
		p = p[:at]
	}
	return strings.ReplaceAll(p, "_HOST", strings.ToLower(u.Hostname()))
}

// prepare adds the cookies held for req's URL, or a token when the RM is
// known to want one and no cookie is held. It reports whether a token was
// added.
func (s *SPNEGO) prepare(req *http.Request) (bool, error) {
	cookies := s.jar.Cookies(req.URL)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	if len(cookies) > 0 {
		return false, nil
	}
	if _, ok := s.negotiates.Load(req.URL.Host); !ok {
		return false, nil
	}
	return true, s.setToken(req)
}

func (s *SPNEGO) setToken(req *http.Request) error {
	spn := s.spn(req.URL)
	if err := spnego.SetSPNEGOHeader(s.login, req, spn); err != nil {
		return fmt.Errorf("rmrest: SPNEGO token for %s: %w", spn, err)
	}
	return nil
}

// observe keeps the cookies resp sets and reports whether resp is a
// Negotiate challenge (401 whose WWW-Authenticate offers Negotiate). Both
// are recorded for the URL that answered (after redirects, resp.Request).
func (s *SPNEGO) observe(req *http.Request, resp *http.Response) bool {
	u := req.URL
	if resp.Request != nil && resp.Request.URL != nil {
		u = resp.Request.URL
	}
	if cs := resp.Cookies(); len(cs) > 0 {
		s.jar.SetCookies(u, cs)
	}
	if !negotiateChallenge(resp) {
		return false
	}
	s.negotiates.Store(u.Host, true)
	return true
}

// negotiateChallenge reports a 401 offering the Negotiate scheme.
func negotiateChallenge(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized {
		return false
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		scheme, _, _ := strings.Cut(strings.TrimSpace(v), " ")
		if strings.EqualFold(scheme, "Negotiate") {
			return true
		}
	}
	return false
}
