package amrmproxy

import (
	"fmt"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
)

// simpleProxyUser is who the proxy says it is to insecure RMs when it calls
// for no application (node lists, application reports).
const simpleProxyUser = "yarnfed"

// login logs in from cfg.Kerberos when it is set, so a bad keytab, principal
// or krb5.conf stops Open instead of failing every later UAM launch.
func (p *Proxy) login() error {
	if !p.cfg.Kerberos.Enabled() {
		return nil
	}
	cl, err := p.cfg.Kerberos.Login(p.log)
	if err != nil {
		return fmt.Errorf("amrmproxy: %w", err)
	}
	p.krb = &hadoopipc.KerberosClientConfig{Login: cl, ServerPrincipal: p.cfg.Kerberos.RMPrincipal}
	p.log.Info("Kerberos login for the RMs", "principal", p.cfg.Kerberos.Principal, "rm_principal", p.cfg.Kerberos.RMPrincipal)
	return nil
}

// clientRM dials ApplicationClientProtocol at addrs for user. Without
// Kerberos it is SIMPLE as user (the proxy's own name when user is empty).
// With Kerberos it logs in as the proxy's principal and acts for user
// (doAs, as Hadoop's UnmanagedApplicationManager does with a proxy-user UGI
// over the NodeManager's login), or as itself when user is empty.
func (p *Proxy) clientRM(addrs []string, user string) (*hadoopipc.Client, error) {
	cc := hadoopipc.ClientConfig{Addresses: addrs, Protocol: hadoopipc.ProtocolApplicationClient,
		User: user, DialTimeout: p.cfg.DialTimeout.D(), Logger: p.log}
	if p.krb != nil {
		cc.Kerberos = p.krb
	} else if cc.User == "" {
		cc.User = simpleProxyUser
	}
	return hadoopipc.NewClient(cc)
}
