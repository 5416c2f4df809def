// Package hadoopipc speaks Hadoop IPC (RPC version 9, protobuf engine) as
// server and client, wire-compatible with Apache Hadoop 3.4: the "hrpc"
// preamble, length-prefixed packets of varint-delimited protobuf messages,
// SASL negotiation with SIMPLE, TOKEN (DIGEST-MD5, qop auth, auth-int and
// auth-conf via the digestmd5 subpackage) and KERBEROS (GSSAPI via krb5sasl,
// same qops), the connection context, pings,
// and Hadoop's FATAL/ERROR replies with Java exception class names.
//
// Server: register Protocols of typed Methods (NewMethod), then Serve.
// Calls on one connection run concurrently and reply in any order; handler
// errors become ERROR replies (return a *RemoteError, e.g. from Errorf, to
// choose the Java class). The caller's identity is in the context
// (UserFromContext). Middleware: metrics -> logging -> auth -> extra
// interceptors -> recovery.
//
//	srv := hadoopipc.NewServer(hadoopipc.DefaultServerConfig())
//	srv.Register(hadoopipc.Protocol{Name: hadoopipc.ProtocolApplicationClient, Version: 1,
//		Methods: []hadoopipc.Method{hadoopipc.NewMethod("getClusterMetrics", newReq, handler)}})
//	go srv.Serve(ln)
//	defer srv.Shutdown(ctx)
//
// Client: one Client per protocol and credentials, multiplexing calls over
// pooled connections, failing over across Addresses (RM HA).
//
//	c, _ := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: addrs,
//		Protocol: hadoopipc.ProtocolApplicationClient, User: "alice"})
//	err := c.Call(ctx, "getClusterMetrics", req, resp)
//	var re *hadoopipc.RemoteError
//	if errors.As(err, &re) && re.Class == hadoopipc.ClassApplicationNotFound { ... }
//
// Token relay: a server without the token secrets can still take TOKEN
// logins by relaying the DIGEST-MD5 exchange to the server that has them
// (ServerConfig.TokenRelay, NewDialingRelay); handlers then call that
// upstream as the caller (RelayedLoginFrom). DialRelay is the upstream half
// on its own.
//
//	cfg.TokenRelay = hadoopipc.NewDialingRelay(homeRMSchedulerAddr,
//		hadoopipc.RelayConfig{Protocol: hadoopipc.ProtocolApplicationMaster})
//	// in a handler:
//	login, _ := hadoopipc.RelayedLoginFrom(ctx)
//	err := login.Call(ctx, "allocate", req, resp)
//
// Kerberos: the server takes SASL KERBEROS with its service principal's
// keytab; User.AuthMethod is then "KERBEROS", User.Principal the client's
// principal, User.Name its auth_to_local short name, or, when the client
// acts for someone else (doAs), the effective user with RealUser = the
// short name (authorize that in ServerConfig.Authorize). The client logs in
// with a gokrb5 client and acts for ClientConfig.User when set.
//
//	kt, _ := keytab.Load("/etc/security/rm.keytab")
//	cfg.Kerberos = &hadoopipc.KerberosServerConfig{Principal: "rm/host1.example.com@EXAMPLE.COM", Keytab: kt}
//	cfg.AllowSimple = false
//	// client side:
//	login := client.NewWithKeytab("router/host2.example.com", "EXAMPLE.COM", kt2, krb5conf)
//	c, _ := hadoopipc.NewClient(hadoopipc.ClientConfig{Addresses: addrs, Protocol: p, User: "alice",
//		Kerberos: &hadoopipc.KerberosClientConfig{Login: login, ServerPrincipal: "rm/_HOST@EXAMPLE.COM"}})
//
// DESIGN.md explains the choices.
package hadoopipc
