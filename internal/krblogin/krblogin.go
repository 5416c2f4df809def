// Package krblogin is how a yarnfed role that calls secure RMs as itself
// (the sub-cluster agent, the GPG) logs in to Kerberos: one small config
// section, the same keys and flags in every role, and a gokrb5 client from
// the keytab that renews its own tickets. What the login is used for
// (SPNEGO on the RM REST API, SASL KERBEROS on RM IPC) is the caller's
// business: rmrest.Client.Kerberos and hadoopipc.KerberosClientConfig take
// the *client.Client Login returns.
package krblogin

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/spf13/pflag"
)

// Config is a role's Kerberos identity towards the RMs (file section
// "kerberos"). Off while Principal is empty.
type Config struct {
	// Principal is who the role logs in as, e.g.
	// "yarnfed/_HOST@EXAMPLE.COM"; _HOST becomes this host's lower-cased
	// name (Hadoop's SecurityUtil.getServerPrincipal). The RMs see its
	// short name (auth_to_local), which needs read access to their REST API
	// and, for the GPG's node-resource push, a place in yarn.admin.acl.
	Principal string `json:"principal"`
	// Keytab holds Principal's keys.
	Keytab string `json:"keytab"`
	// Krb5Conf is where the KDCs are; default $KRB5_CONFIG, else
	// /etc/krb5.conf.
	Krb5Conf string `json:"krb5_conf"`
	// RMPrincipal is the RMs' own principal for Hadoop IPC
	// (yarn.resourcemanager.principal), e.g. "rm/_HOST@EXAMPLE.COM"; _HOST
	// becomes the host being dialled. Only roles that call RMs over IPC
	// take it.
	RMPrincipal string `json:"rm_principal"`
	// RMHTTPPrincipal is the principal of the RMs' web endpoints for SPNEGO
	// (yarn.resourcemanager.webapp.spnego-principal), "HTTP/_HOST@REALM" by
	// default, _HOST being the host of the RM web address as configured
	// (lower-cased, not resolved, as Hadoop's KerberosAuthenticator does).
	RMHTTPPrincipal string `json:"rm_http_principal"`
}

// Enabled reports whether a Kerberos login is configured.
func (c Config) Enabled() bool { return c.Principal != "" }

// BindFlags binds the login flags, named as the router's: --kerberos-principal,
// --kerberos-keytab, --krb5-conf, --rm-http-principal and, with ipc, --rm-principal.
// The file keys follow from the fields (internal/config).
func (c *Config) BindFlags(f *pflag.FlagSet, role string, ipc bool) {
	f.StringVar(&c.Principal, "kerberos-principal", c.Principal,
		fmt.Sprintf(`the %s's Kerberos principal towards secure RMs, e.g. "yarnfed/_HOST@EXAMPLE.COM" (empty: no Kerberos)`, role))
	f.StringVar(&c.Keytab, "kerberos-keytab", c.Keytab, "keytab file of --kerberos-principal")
	f.StringVar(&c.Krb5Conf, "krb5-conf", c.Krb5Conf, "krb5.conf naming the KDCs (default $KRB5_CONFIG, else /etc/krb5.conf)")
	f.StringVar(&c.RMHTTPPrincipal, "rm-http-principal", c.RMHTTPPrincipal,
		`SPNEGO principal of the RMs' REST API (yarn.resourcemanager.webapp.spnego-principal); default "HTTP/<RM web host>"`)
	if ipc {
		f.StringVar(&c.RMPrincipal, "rm-principal", c.RMPrincipal,
			`the RMs' principal for Hadoop IPC (yarn.resourcemanager.principal), e.g. "rm/_HOST@EXAMPLE.COM"`)
	}
}

// Validate reports every problem at once; ipc says whether the role calls
// RMs over Hadoop IPC (and so may take, and with Kerberos needs, an RM
// principal).
func (c Config) Validate(ipc bool) error {
	var errs []error
	if !c.Enabled() {
		if c.Keytab != "" || c.RMPrincipal != "" || c.RMHTTPPrincipal != "" {
			errs = append(errs, errors.New("kerberos: keytab, rm_principal and rm_http_principal need kerberos.principal"))
		}
		return errors.Join(errs...)
	}
	if c.Keytab == "" {
		errs = append(errs, errors.New("kerberos.keytab: required with kerberos.principal"))
	}
	if _, _, err := split(c.Principal); err != nil {
		errs = append(errs, fmt.Errorf("kerberos.principal: %w", err))
	}
	if !ipc && c.RMPrincipal != "" {
		errs = append(errs, errors.New("kerberos.rm_principal: this role calls no RM over Hadoop IPC (only the REST API, with rm_http_principal)"))
	}
	if p := c.RMHTTPPrincipal; p != "" && !strings.HasPrefix(p, "HTTP/") {
		errs = append(errs, fmt.Errorf("kerberos.rm_http_principal %q: SPNEGO principals are HTTP/host[@REALM]", p))
	}
	return errors.Join(errs...)
}

// split splits "name@REALM" after expanding _HOST.
func split(p string) (name, realm string, err error) {
	at := strings.LastIndexByte(p, '@')
	if at <= 0 || at == len(p)-1 {
		return "", "", fmt.Errorf("%q needs its realm (name@REALM)", p)
	}
	return p[:at], p[at+1:], nil
}

// ExpandHost replaces _HOST in p with host, lower-cased.
func ExpandHost(p, host string) string {
	return strings.ReplaceAll(p, "_HOST", strings.ToLower(host))
}

// hostname is os.Hostname; tests replace it.
var hostname = os.Hostname

// Login logs in from the keytab and returns the client (it renews its TGT
// from the keytab by itself; Destroy it when done). Only for an Enabled
// config.
func (c Config) Login(log *slog.Logger) (*krbclient.Client, error) {
	if !c.Enabled() {
		return nil, errors.New("krblogin: no kerberos.principal configured")
	}
	p := c.Principal
	if strings.Contains(p, "_HOST") {
		h, err := hostname()
		if err != nil {
			return nil, fmt.Errorf("kerberos.principal: expanding _HOST: %w", err)
		}
		p = ExpandHost(p, h)
	}
	name, realm, err := split(p)
	if err != nil {
		return nil, fmt.Errorf("kerberos.principal: %w", err)
	}
	kt, err := keytab.Load(c.Keytab)
	if err != nil {
		return nil, fmt.Errorf("kerberos.keytab %s: %w", c.Keytab, err)
	}
	kc, err := LoadKrb5Conf(c.Krb5Conf)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// FAST off: MIT KDCs without armor keys refuse it, and Hadoop's JDK
	// clients do not use it either.
	cl := krbclient.NewWithKeytab(name, realm, kt, kc, krbclient.DisablePAFXFAST(true),
		krbclient.Logger(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
	if err := cl.Login(); err != nil {
		return nil, fmt.Errorf("kerberos: login as %s: %w", p, err)
	}
	return cl, nil
}

// LoadKrb5Conf reads the krb5.conf at path; an empty path means
// $KRB5_CONFIG, else /etc/krb5.conf. Its error names the config key
// (kerberos.krb5_conf) and the file.
func LoadKrb5Conf(path string) (*krbconfig.Config, error) {
	if path == "" {
		if path = os.Getenv("KRB5_CONFIG"); path == "" {
			path = "/etc/krb5.conf"
		}
	}
	kc, err := krbconfig.Load(path)
	if err != nil {
		return nil, fmt.Errorf("kerberos.krb5_conf %s: %w", path, err)
	}
	return kc, nil
}
