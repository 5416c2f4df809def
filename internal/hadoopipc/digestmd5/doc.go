// Package digestmd5 implements the SASL DIGEST-MD5 mechanism (RFC 2831) as
// Hadoop's Java SASL stack (the JDK's com.sun.security.sasl.digest) speaks
// it for Hadoop TOKEN authentication: server and client sides, qop auth,
// auth-int and auth-conf. It does no I/O: it only makes and checks SASL
// token bytes, which the caller (internal/hadoopipc) carries in
// RpcSaslProto messages.
//
// Server side (one Server per connection attempt):
//
//	srv := digestmd5.NewServer(digestmd5.ServerConfig{
//		ServerName: digestmd5.HadoopServerName, // "default"; realm defaults to it
//		Protocol:   digestmd5.HadoopProtocol,   // ""
//		QOPs:       []digestmd5.QOP{digestmd5.QOPAuth},
//		LookupPassword: func(user string) ([]byte, error) {
//			id, err := digestmd5.DecodeHadoopUsername(user) // token identifier bytes
//			if err != nil { return nil, err }
//			pw, err := secretManager.RetrievePassword(id)
//			if err != nil { return nil, err } // e.g. expired token
//			return digestmd5.HadoopPassword(pw), nil
//		},
//	})
//	challenge, err := srv.Challenge()          // NEGOTIATE reply: auths[TOKEN].challenge
//	rspauth, err := srv.Respond(initiateToken) // INITIATE token -> SUCCESS token
//	// err wraps ErrAuthFailed, ErrMalformed, ... -> FATAL_UNAUTHORIZED
//	user := srv.Username()                     // base64 token identifier
//	layer := srv.SecurityLayer()               // nil for qop auth
//
// Client side:
//
//	cli := digestmd5.NewClient(digestmd5.ClientConfig{
//		Username:   digestmd5.HadoopUsername(token.Identifier),
//		Password:   digestmd5.HadoopPassword(token.Password),
//		Protocol:   auth.GetProtocol(),  // from the NEGOTIATE reply
//		ServerName: auth.GetServerId(),
//	})
//	resp, err := cli.Respond(auth.GetChallenge()) // send as INITIATE
//	err = cli.Verify(successToken)                // checks the server's rspauth
//	layer := cli.SecurityLayer()                  // nil for qop auth
//
// With auth-int or auth-conf, every later RPC packet goes through
// layer.Wrap before sending (as the token of a WRAP message) and
// layer.Unwrap after receiving; see SecurityLayer.
//
// Wire shape (what the JDK sends, and what this package sends):
//
//	challenge: realm="default",nonce="...",qop="auth",charset=utf-8,algorithm=md5-sess
//	response:  charset=utf-8,username="...",realm="default",nonce="...",nc=00000001,
//	           cnonce="...",digest-uri="/default",maxbuf=65536,response=<32 hex>,qop=auth
//	final:     rspauth=<32 hex>
//
// Errors wrap one of the sentinels in errors.go. Inputs are size-checked
// (challenge 2048, response 4096 bytes) before parsing. Only initial
// authentication is implemented (nonce-count 00000001), as in the JDK.
package digestmd5
