package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
	"github.com/yarnfed/yarnfed/internal/krblogin"
)

// KerberosConfig turns on Kerberos security (Hadoop's
// hadoop.security.authentication=kerberos) when Principal is set: the
// client and admin ports take SASL KERBEROS (and router delegation tokens
// on the client port) and refuse SIMPLE; delegation tokens are issued only
// to Kerberos-authenticated callers. With RMPrincipal set too, the router
// reaches the RMs with Kerberos as itself, acting for each caller as a proxy
// user (the RMs need hadoop.proxyuser.<router short name>.hosts/users).
type KerberosConfig struct {
	// Principal is the router's service principal
	// (yarn.router.kerberos.principal), e.g. "router/_HOST@EXAMPLE.COM";
	// _HOST becomes this host's lower-cased name. Clients must be configured
	// with the same principal as the RM principal they expect
	// (yarn.resourcemanager.principal), so in practice it shares the RMs'
	// service name: "rm/_HOST@REALM".
	Principal string `json:"principal"`
	// Keytab is the keytab file holding Principal's keys
	// (yarn.router.keytab.file).
	Keytab string `json:"keytab"`
	// Krb5Conf is the krb5.conf used to reach the KDC for the router's own
	// logins (RMPrincipal); default $KRB5_CONFIG, else /etc/krb5.conf.
	Krb5Conf string `json:"krb5_conf"`
	// LoginPrincipal is who the router is towards the RMs (the real user of
	// its doAs calls), e.g. "router/_HOST@EXAMPLE.COM", so the RMs'
	// hadoop.proxyuser.router.* trusts the router and not every "rm"
	// principal. Its keys must be in Keytab too. Default: Principal.
	LoginPrincipal string `json:"login_principal"`
	// RMPrincipal is the sub-cluster RMs' principal
	// (yarn.resourcemanager.principal), e.g. "rm/_HOST@EXAMPLE.COM". Empty:
	// the router reaches the RMs with SIMPLE as the caller (insecure RMs).
	RMPrincipal string `json:"rm_principal"`
	// AuthToLocal maps client principals to user names
	// (hadoop.security.auth_to_local); empty means DEFAULT.
	AuthToLocal string `json:"auth_to_local"`
	// AllowSimple keeps SIMPLE logins open next to Kerberos (a migration
	// aid; Hadoop's secure servers refuse SIMPLE). Refused with RMPrincipal:
	// the router would vouch for names nobody proved.
	AllowSimple bool `json:"allow_simple"`
}

// Enabled reports whether Kerberos is on.
func (k KerberosConfig) Enabled() bool { return k.Principal != "" }

// hostPrincipal expands _HOST with this host's name, as Hadoop's
// SecurityUtil.getServerPrincipal does for a server's own principal.
func hostPrincipal(p string) (string, error) {
	if !strings.Contains(p, "_HOST") {
		return p, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("expanding _HOST: %w", err)
	}
	return strings.ReplaceAll(p, "_HOST", strings.ToLower(h)), nil
}

func (k KerberosConfig) validate() []error {
	if !k.Enabled() {
		if k.Keytab != "" || k.RMPrincipal != "" || k.LoginPrincipal != "" {
			return []error{errors.New("kerberos: keytab, login_principal and rm_principal need kerberos.principal")}
		}
		return nil
	}
	var errs []error
	if k.Keytab == "" {
		errs = append(errs, errors.New("kerberos.keytab: required with kerberos.principal"))
	}
	if !strings.Contains(k.Principal, "@") {
		errs = append(errs, fmt.Errorf("kerberos.principal %q: needs its realm (service/host@REALM)", k.Principal))
	}
	if k.AllowSimple && k.RMPrincipal != "" {
		// The router would vouch, with its own Kerberos identity, for
		// whatever name an unauthenticated SIMPLE caller claims.
		errs = append(errs, errors.New("kerberos.allow_simple and kerberos.rm_principal together would let SIMPLE callers act as anyone on the secure RMs"))
	}
	if _, err := authtolocal.Parse(k.AuthToLocal, "R"); err != nil {
		errs = append(errs, fmt.Errorf("kerberos.auth_to_local: %w", err))
	}
	return errs
}

// kerberosSetup is what New builds from a KerberosConfig.
type kerberosSetup struct {
	server *hadoopipc.KerberosServerConfig
	login  *krbclient.Client // nil unless RMPrincipal is set
}

func (k KerberosConfig) setup(log *slog.Logger) (*kerberosSetup, error) {
	principal, err := hostPrincipal(k.Principal)
	if err != nil {
		return nil, err
	}
	kt, err := keytab.Load(k.Keytab)
	if err != nil {
		return nil, fmt.Errorf("kerberos.keytab %s: %w", k.Keytab, err)
	}
	realm := principal[strings.LastIndexByte(principal, '@')+1:]
	m, err := authtolocal.Parse(k.AuthToLocal, realm)
	if err != nil {
		return nil, fmt.Errorf("kerberos.auth_to_local: %w", err)
	}
	s := &kerberosSetup{server: &hadoopipc.KerberosServerConfig{Principal: principal, Keytab: kt, AuthToLocal: m}}
	if err := s.server.Check(); err != nil {
		return nil, err
	}
	if k.RMPrincipal == "" {
		return s, nil
	}
	kc, err := krblogin.LoadKrb5Conf(k.Krb5Conf)
	if err != nil {
		return nil, err
	}
	loginAs := principal
	if k.LoginPrincipal != "" {
		if loginAs, err = hostPrincipal(k.LoginPrincipal); err != nil {
			return nil, err
		}
	}
	at := strings.LastIndexByte(loginAs, '@')
	if at < 0 {
		loginAs += "@" + realm
		at = strings.LastIndexByte(loginAs, '@')
	}
	name, loginRealm := loginAs[:at], loginAs[at+1:]
	s.login = krbclient.NewWithKeytab(name, loginRealm, kt, kc, krbclient.DisablePAFXFAST(true), krbclient.Logger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
	if err := s.login.Login(); err != nil {
		return nil, fmt.Errorf("kerberos: router login as %s: %w", loginAs, err)
	}
	return s, nil
}

// HadoopKerberosDialer is the production dialer (hadoopDialer) for Kerberized RMs: every client logs
// in as the router (login) and acts for the calling user (doAs), as
// Hadoop's Router does with UserGroupInformation.createProxyUser. An empty
// user (in-process callers) acts as the router itself.
func HadoopKerberosDialer(protocol string, addrOf func(SubClusterInfo) string, login *krbclient.Client, rmPrincipal string, dialTimeout time.Duration, log *slog.Logger) DialFunc {
	return func(_ context.Context, sc SubClusterInfo, user string) (RMClient, error) {
		return newHadoopClient(protocol, addrOf(sc), sc, user, dialTimeout, log,
			&hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: rmPrincipal})
	}
}

// ClassAuthorization is what Hadoop answers a refused proxy user.
const ClassAuthorization = "org.apache.hadoop.security.authorize.AuthorizationException"

// authorizeProxy is the IPC ports' Authorize with Kerberos on: callers
// acting for others pass only Config.AuthorizeProxyUser.
func (r *Router) authorizeProxy(ctx context.Context, info *hadoopipc.CallInfo) error {
	u := info.User
	if u.RealUser == "" {
		return nil
	}
	if r.cfg.AuthorizeProxyUser != nil {
		return r.cfg.AuthorizeProxyUser(ctx, info)
	}
	// No hook: the connection passed the authz.proxy_users rules at its
	// handshake (authorizeConnection), which refuse every doAs without a
	// rule.
	return nil
}

// delegationTokenAllowed is Hadoop's isAllowedDelegationTokenOp: with
// Kerberos on, only a Kerberos-authenticated connection (a proxy user's real
// user counts) may get a token; without, anyone but a token holder (a
// token must not mint tokens).
func (r *Router) delegationTokenAllowed(u hadoopipc.User) bool {
	if r.cfg.Kerberos.Enabled() {
		return u.AuthMethod == hadoopipc.AuthMethodKerberos
	}
	return u.AuthMethod != hadoopipc.AuthMethodToken
}
