package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/client"
)

// newRouterCmd is `yarnfed router`: the YARN Federation Router.
func newRouterCmd() *cobra.Command {
	cfg := routerRoleDefaults()
	var loader *config.Loader[routerRole]
	cmd := &cobra.Command{
		Use:   "router",
		Short: "Run the YARN Federation Router (ApplicationClientProtocol on 8050, RM REST API on 8089, admin on 8052)",
		Long: `The router serves unmodified YARN clients: point yarn.resourcemanager.address at its client
RPC address (Hadoop's yarn.router.clientrm.address, default 8050) and the RM web address at its REST
address (yarn.router.webapp.address, default 8089). It keeps no state: sub-clusters, application
homes and queue policies live in the state store, so any number of routers can run side by side.
The admin port (yarn.router.rmadmin.address, default 8052) serves 'yarn routeradmin' and 'yarn
rmadmin' (fanned out to the sub-clusters' RMs); only users in --admin-acl may change anything.

Configuration: defaults, then --config (JSON; unknown keys are errors), then flags.
Endpoints on the REST port: /ws/v1/cluster/..., /healthz, /readyz, /prom (Prometheus).`,
		Example: `  yarnfed router --store 10.0.0.1:9090,10.0.0.2:9090,10.0.0.3:9090 \
      --store-tls-cert pki/router-1/cert.crt --store-tls-key pki/router-1/cert.key --store-tls-ca pki/router-1/ca.crt
  yarnfed router --config router.json --partial-results --store-tls-cert ...   # as above`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStoreRole(loader, func(s roleStart[routerRole], sc *client.Client) error {
				role, log, reg := s.role, s.log, s.reg
				cfg := role.Config
				cfg.Store = router.NewClientStore(sc)
				cfg.Logger, cfg.Registerer, cfg.Gatherer = log, reg, reg
				r, err := router.New(cfg)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "router: clientrm %s, web %v, admin %v, store %s\n", r.ClientRMAddr(), r.WebAddr(), r.AdminAddr(), role.addrs())
				return r.Run(cmd.Context())
			})
		},
	}
	f := cmd.Flags()
	loader = config.NewLoader(f, &cfg, routerRoleDefaults)
	cfg.storeConn.bindFlags(f)
	cfg.roleLog.bindFlags(f)
	f.StringVar(&cfg.ClientRMAddress, "clientrm-address", cfg.ClientRMAddress, "ApplicationClientProtocol listen address (yarn.router.clientrm.address)")
	f.StringVar(&cfg.WebAddress, "web-address", cfg.WebAddress, "REST listen address (yarn.router.webapp.address); empty disables")
	f.StringVar(&cfg.AdminAddress, "admin-address", cfg.AdminAddress, "ResourceManagerAdministrationProtocol listen address (yarn.router.rmadmin.address); empty disables")
	f.StringVar(&cfg.AdminACL, "admin-acl", cfg.AdminACL, `who may use the admin port, as yarn.admin.acl: "user1,user2 group1,group2" or "*" (default: the user the router runs as)`)
	f.IntVar(&cfg.SubmitRetries, "submit-retries", cfg.SubmitRetries, "sub-clusters tried per submission (yarn.router.submit.retry)")
	f.BoolVar(&cfg.PartialResults, "partial-results", cfg.PartialResults, "list calls skip failing sub-clusters (yarn.router.clientrm.partial-results.enabled)")
	f.Var(&cfg.FailoverWait, "failover-wait", "how long a call waits for a routable sub-cluster before failing")
	f.Var(&cfg.CallTimeout, "call-timeout", "timeout of one call to one RM")
	f.Var(&cfg.MembershipRefresh, "membership-refresh", "membership poll period (a store watch refreshes sooner)")
	f.Var(&cfg.SubClusterHeartbeatExpiry, "subcluster-heartbeat-expiry", "a sub-cluster whose last heartbeat is older takes no new work (0 disables)")
	f.Var(&cfg.Web.ReadHeaderTimeout, "web-read-header-timeout", "REST: time to read a request's headers")
	f.Var(&cfg.Web.ReadTimeout, "web-read-timeout", "REST: time to read a whole request, body included")
	f.Var(&cfg.Web.WriteTimeout, "web-write-timeout", "REST: time from a request's headers to the end of its response")
	f.Var(&cfg.Web.IdleTimeout, "web-idle-timeout", "REST: keep-alive connections idle this long are closed")
	f.IntVar(&cfg.Web.MaxHeaderBytes, "web-max-header-bytes", cfg.Web.MaxHeaderBytes, "REST: largest request headers accepted")
	f.IntVar(&cfg.Web.MaxConns, "web-max-conns", cfg.Web.MaxConns, "REST: open connections; more wait in the listen backlog")
	f.IntVar(&cfg.Web.MaxConnsPerAddr, "web-max-conns-per-addr", cfg.Web.MaxConnsPerAddr, "REST: open connections from one IP address; more are closed")
	f.IntVar(&cfg.IPC.MaxConns, "ipc-max-conns", cfg.IPC.MaxConns, "IPC: open connections per port")
	f.IntVar(&cfg.IPC.MaxConnsPerAddr, "ipc-max-conns-per-addr", cfg.IPC.MaxConnsPerAddr, "IPC: open connections from one IP address (raise behind a large NAT)")
	f.Var(&cfg.IPC.HandshakeTimeout, "ipc-handshake-timeout", "IPC: time for preamble, SASL and connection context")
	f.Var(&cfg.IPC.IdleTimeout, "ipc-idle-timeout", "IPC: connections with no call in flight are closed after this")
	f.Int64Var(&cfg.IPC.PreAuthBufferBytes, "ipc-preauth-buffer-bytes", cfg.IPC.PreAuthBufferBytes, "IPC: bytes buffered across connections still in their handshake")
	f.IntVar(&cfg.MaxRMClients, "max-rm-clients", cfg.MaxRMClients, "per-user RM clients kept (least recently used closed beyond it)")
	f.BoolVar(&cfg.Authz.ACLEnable, "acl-enable", cfg.Authz.ACLEnable, "check application ACLs (yarn.acl.enable); admins are --admin-acl")
	f.StringVar(&cfg.Authz.StaticGroupMapping, "static-group-mapping", cfg.Authz.StaticGroupMapping, `groups of named users, as hadoop.user.group.static.mapping.overrides ("u1=g1,g2;u2=;"); others: the host's groups`)
	f.StringVar(&cfg.SPNEGO.Keytab, "spnego-keytab", cfg.SPNEGO.Keytab, "keytab with the HTTP service key: REST requires Kerberos SPNEGO (hadoop.http.authentication.kerberos.keytab); empty: ?user.name=")
	f.StringVar(&cfg.SPNEGO.Principal, "spnego-principal", cfg.SPNEGO.Principal, `HTTP principal to accept, e.g. HTTP/router.example.com@REALM ("*" or empty: any key in the keytab)`)
	f.StringVar(&cfg.SPNEGO.SignatureSecretFile, "spnego-signature-secret-file", cfg.SPNEGO.SignatureSecretFile, "file whose bytes (at least 32) sign the hadoop.auth cookie; give router replicas behind one address the same file (hadoop.http.authentication.signature.secret.file); empty: a random secret per process")
	f.StringVar(&cfg.Kerberos.Principal, "kerberos-principal", cfg.Kerberos.Principal, `the router's Kerberos principal, e.g. "rm/_HOST@EXAMPLE.COM" (yarn.router.kerberos.principal); set: SASL KERBEROS on, SIMPLE off`)
	f.StringVar(&cfg.Kerberos.Keytab, "kerberos-keytab", cfg.Kerberos.Keytab, "keytab file of --kerberos-principal (yarn.router.keytab.file)")
	f.StringVar(&cfg.Kerberos.Krb5Conf, "krb5-conf", cfg.Kerberos.Krb5Conf, "krb5.conf for the router's own logins (default $KRB5_CONFIG, else /etc/krb5.conf)")
	f.StringVar(&cfg.Kerberos.RMPrincipal, "rm-principal", cfg.Kerberos.RMPrincipal, `the RMs' principal, e.g. "rm/_HOST@EXAMPLE.COM" (yarn.resourcemanager.principal); set: reach RMs with Kerberos as the router acting for the caller`)
	f.StringVar(&cfg.Kerberos.LoginPrincipal, "kerberos-login-principal", cfg.Kerberos.LoginPrincipal, `who the router is towards the RMs (its keys in --kerberos-keytab), e.g. "router/_HOST@EXAMPLE.COM"; default --kerberos-principal`)
	f.StringVar(&cfg.Kerberos.AuthToLocal, "auth-to-local", cfg.Kerberos.AuthToLocal, "principal to user name rules (hadoop.security.auth_to_local; default DEFAULT)")
	f.BoolVar(&cfg.Kerberos.AllowSimple, "kerberos-allow-simple", cfg.Kerberos.AllowSimple, "also accept SIMPLE logins while Kerberos is on (migration only)")
	loader.DocumentKeys()
	return cmd
}

// routerRole is `yarnfed router`'s configuration: router.Config's keys at
// the top level of the file, plus the store connection and log level.
type routerRole struct {
	router.Config
	storeConn
	roleLog
}

// routerRoleDefaults are router.DefaultConfig plus what only the
// standalone role turns on: the admin port on Hadoop's 8052.
func routerRoleDefaults() routerRole {
	cfg := router.DefaultConfig()
	cfg.Version = version // the web UI's About page
	cfg.AdminAddress = router.DefaultAdminAddress
	return routerRole{Config: cfg, storeConn: defaultStoreConn(), roleLog: defaultRoleLog()}
}

// Validate checks the role's own settings; router.New validates the rest
// once the store is wired in.
func (r *routerRole) Validate() error {
	return errors.Join(r.roleLog.validate(), r.storeConn.validate())
}
