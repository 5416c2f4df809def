package routertest

import (
	"testing"

	krbclient "github.com/jcmturner/gokrb5/v8/client"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/krbtest"
	"github.com/yarnfed/yarnfed/router"
)

// KrbEnv is a test KDC with the router's service principal
// router/localhost and a keytab login per user.
type KrbEnv struct {
	KDC         *krbtest.KDC
	RouterKT    string
	LoginKeytab func(name string) *krbclient.Client
}

// NewKrbEnv starts the KDC.
func NewKrbEnv(t *testing.T) *KrbEnv {
	kdc := krbtest.Start(t, krbtest.Options{})
	e := &KrbEnv{KDC: kdc, RouterKT: kdc.AddService(t, "router/localhost")}
	cfg := kdc.Config(t)
	e.LoginKeytab = func(name string) *krbclient.Client {
		cl := krbclient.NewWithKeytab(name, kdc.Realm, kdc.Keytab(t, kdc.AddUser(t, name)), cfg, krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Destroy)
		return cl
	}
	return e
}

// RouterConfig gives a router the Kerberos login of router/localhost.
func (e *KrbEnv) RouterConfig(c *router.Config) {
	c.Kerberos = router.KerberosConfig{
		Principal: "router/localhost@" + e.KDC.Realm,
		Keytab:    e.RouterKT,
		Krb5Conf:  e.KDC.ConfPath,
	}
}

// KrbRouterClient is user's client of r, logged in with Kerberos as login.
func KrbRouterClient(t *testing.T, r *router.Router, login *krbclient.Client, user string) *hadoopipc.Client {
	c, err := hadoopipc.NewClient(hadoopipc.ClientConfig{
		Addresses: []string{r.ClientRMAddr().String()}, Protocol: hadoopipc.ProtocolApplicationClient, User: user,
		Kerberos: &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "router/_HOST"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
