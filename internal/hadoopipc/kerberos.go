package hadoopipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/authtolocal"
	"github.com/yarnfed/yarnfed/internal/hadoopipc/krb5sasl"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// This file binds SASL AuthMethod KERBEROS (mechanism GSSAPI) to krb5sasl.

const (
	// AuthMethodKerberos is User.AuthMethod after a Kerberos login.
	AuthMethodKerberos = "KERBEROS"
	// AuthMethodToken and AuthMethodSimple name the other two.
	AuthMethodToken  = authMethodToken
	AuthMethodSimple = authMethodSimple

	mechGSSAPI = "GSSAPI"
)

// KerberosServerConfig enables SASL KERBEROS logins on a Server.
type KerberosServerConfig struct {
	// Principal is the server's own service principal, two components and
	// a realm, e.g. "rm/rm1.example.com@EXAMPLE.COM". NEGOTIATE advertises
	// its first component as the SASL protocol and its second as the server
	// id, which Hadoop clients check against the principal they are
	// configured with (yarn.resourcemanager.principal, _HOST expanded).
	Principal string
	// Keytab holds Principal's keys.
	Keytab *keytab.Keytab
	// AuthToLocal maps client principals to user names
	// (hadoop.security.auth_to_local); nil means DEFAULT for Principal's
	// realm. A principal it cannot map is refused.
	AuthToLocal *authtolocal.Mapper
	// MaxClockSkew between client and server; default 5 minutes.
	MaxClockSkew time.Duration
}

// minKerberosPreAuthFrame is the pre-authentication packet limit a server
// with Kerberos needs: an AP-REQ carrying an Active Directory PAC can reach
// ~12 KiB, plus the RpcSaslProto around it.
const minKerberosPreAuthFrame = krb5sasl.MaxContextToken + 1024

// Check reports what would make Validate refuse this configuration.
func (k *KerberosServerConfig) Check() error { return k.validate() }

func (k *KerberosServerConfig) validate() error {
	if k.Keytab == nil {
		return errors.New("hadoopipc: Kerberos.Keytab is required")
	}
	_, err := k.mapper() // also checks Principal's shape
	return err
}

func (k *KerberosServerConfig) mapper() (*authtolocal.Mapper, error) {
	if k.AuthToLocal != nil {
		return k.AuthToLocal, nil
	}
	_, _, realm, err := splitServicePrincipal(k.Principal)
	if err != nil {
		return nil, err
	}
	return authtolocal.Parse("DEFAULT", realm)
}

// splitServicePrincipal splits "svc/host@REALM".
func splitServicePrincipal(p string) (svc, host, realm string, err error) {
	at := strings.LastIndexByte(p, '@')
	if at <= 0 || at == len(p)-1 {
		return "", "", "", fmt.Errorf("hadoopipc: Kerberos principal %q needs a realm (service/host@REALM)", p)
	}
	parts := strings.Split(p[:at], "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", "", fmt.Errorf("hadoopipc: Kerberos principal %q must be service/host@REALM (Hadoop clients check the host part)", p)
	}
	return parts[0], parts[1], p[at+1:], nil
}

func (s *Server) kerberosAuth() *commonpb.RpcSaslProto_SaslAuth {
	svc, host, _, _ := splitServicePrincipal(s.cfg.Kerberos.Principal)
	return &commonpb.RpcSaslProto_SaslAuth{
		Method: proto.String(AuthMethodKerberos), Mechanism: proto.String(mechGSSAPI),
		Protocol: proto.String(svc), ServerId: proto.String(host),
	}
}

func toKrbQOPs(qops []string) []krb5sasl.QOP {
	out := make([]krb5sasl.QOP, len(qops))
	for i, q := range qops {
		out[i] = krb5sasl.QOP(q)
	}
	return out
}

// kerberosStep runs one GSSAPI step (INITIATE carries the AP-REQ, each
// RESPONSE the next token). Replies are CHALLENGE until the exchange is
// done, then SUCCESS without a token, as Hadoop's server sends them.
func (c *serverConn) kerberosStep(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, *RemoteError) {
	if msg.Token == nil {
		return nil, fatal(fatalUnauthorized, ClassSaslException, "client did not send a token")
	}
	k := c.srv.cfg.Kerberos
	if c.krb == nil {
		m, err := krb5sasl.NewServer(krb5sasl.ServerConfig{
			Keytab: k.Keytab, Principal: k.Principal, QOPs: toKrbQOPs(c.srv.cfg.QOPs), MaxClockSkew: k.MaxClockSkew,
		})
		if err != nil {
			return nil, fatal(fatalUnauthorized, ClassSaslException, "%v", err)
		}
		c.krb = m
	}
	out, done, err := c.krb.Step(msg.GetToken())
	if err != nil {
		c.krb = nil
		return nil, fatal(fatalUnauthorized, ClassSaslException, "GSS initiate failed: %v", err)
	}
	if !done {
		return &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_CHALLENGE.Enum(), Token: out}, nil
	}
	principal := c.krb.ClientPrincipal()
	short, err := c.srv.krbMapper.ShortName(principal)
	if err != nil {
		c.krb = nil
		return nil, fatal(fatalUnauthorized, ClassAccessControl, "%v", err)
	}
	c.saslUser = &User{Name: short, AuthMethod: AuthMethodKerberos, Principal: principal}
	c.saslDone = true
	c.saslReply(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})
	if l := c.krb.SecurityLayer(); l != nil {
		c.w.mu.Lock()
		c.layer = l
		c.w.mu.Unlock()
	}
	c.krb = nil
	return nil, nil
}

// kerberosContextUser applies the connection context to a Kerberos login,
// as Hadoop's Server.processConnectionContext does: an effectiveUser other
// than the authenticated principal makes the connection a proxy user
// (doAs): User.Name is the effective user, RealUser the authenticated short
// name. Whether the real user may impersonate is for ServerConfig.Authorize
// (hadoop.proxyuser.*). Hadoop's client sends the full principal as
// effectiveUser when not impersonating; the short name is accepted as the
// same identity too (it claims nothing more).
func kerberosContextUser(login User, effective string) User {
	if effective == "" || effective == login.Principal || effective == login.Name {
		return login
	}
	return User{Name: effective, RealUser: login.Name, AuthMethod: AuthMethodKerberos, Principal: login.Principal}
}

// KerberosClientConfig makes a Client log in with SASL KERBEROS.
type KerberosClientConfig struct {
	// Login is a gokrb5 client logged in as our principal (from a keytab:
	// gokrb5 renews the TGT itself). It may be shared by many Clients; it
	// caches service tickets.
	Login *krbclient.Client
	// ServerPrincipal is the principal the server must have, as Hadoop's
	// yarn.resourcemanager.principal: "rm/_HOST@REALM" or
	// "rm/rm1.example.com@REALM"; _HOST becomes the lower-cased host of the
	// address being dialled. A server advertising another principal is
	// refused before any ticket is requested (Hadoop: "Server has invalid
	// Kerberos principal"). The realm may be left out.
	ServerPrincipal string
}

func (k *KerberosClientConfig) validate() error {
	if k.Login == nil || k.Login.Credentials == nil {
		return errors.New("hadoopipc: Kerberos.Login must be a gokrb5 client")
	}
	if k.ServerPrincipal == "" {
		return errors.New("hadoopipc: Kerberos.ServerPrincipal is required (Hadoop refuses to guess the server's principal too)")
	}
	return nil
}

// principal is the client's own "name@REALM".
func (k *KerberosClientConfig) principal() string {
	return k.Login.Credentials.CName().PrincipalNameString() + "@" + k.Login.Credentials.Domain()
}

// expectedServer expands _HOST for addr and drops the realm.
func (k *KerberosClientConfig) expectedServer(addr string) string {
	p := k.ServerPrincipal
	if at := strings.LastIndexByte(p, '@'); at >= 0 {
		p = p[:at]
	}
	if strings.Contains(p, "_HOST") {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if ip := net.ParseIP(host); ip != nil {
			host = canonicalHost(ip)
		}
		p = strings.ReplaceAll(p, "_HOST", strings.ToLower(host))
	}
	return p
}

// lookupAddr is net.DefaultResolver.LookupAddr; tests replace it.
var lookupAddr = net.DefaultResolver.LookupAddr

// canonicalHost names an IP address as Java's getCanonicalHostName does for
// Hadoop's _HOST: the reverse lookup's name, else the address itself. A
// loopback address is "localhost" without asking (what a usual /etc/hosts
// says, and tests run there).
func canonicalHost(ip net.IP) string {
	if ip.IsLoopback() {
		return "localhost"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	names, err := lookupAddr(ctx, ip.String())
	if err != nil || len(names) == 0 {
		return ip.String()
	}
	return strings.TrimSuffix(names[0], ".")
}

func authNames(auths []*commonpb.RpcSaslProto_SaslAuth) []string {
	out := make([]string, len(auths))
	for i, a := range auths {
		out[i] = a.GetMethod() + "/" + a.GetMechanism()
	}
	return out
}

// startKerberos checks the advertised principal and prepares the GSSAPI
// initiator.
func (c *clientConn) startKerberos(a *commonpb.RpcSaslProto_SaslAuth) (*krb5sasl.Client, error) {
	advertised := a.GetProtocol() + "/" + a.GetServerId()
	if want := c.cfg.krb.expectedServer(c.key.addr); advertised != want {
		return nil, fmt.Errorf("%w: server has invalid Kerberos principal: %s, expecting: %s", ErrAuth, advertised, want)
	}
	qops := c.cfg.qops
	if len(qops) == 0 {
		qops = defaultClientQOPs
	}
	m, err := krb5sasl.NewClient(krb5sasl.ClientConfig{Kerberos: c.cfg.krb.Login, Service: advertised, QOPs: toKrbQOPs(qops)})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return m, nil
}
