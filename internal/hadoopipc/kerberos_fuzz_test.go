package hadoopipc

import (
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// fuzzKeytab holds rm/localhost@FUZZ.TEST's key, made here without a KDC.
func fuzzKeytab(tb testing.TB) *keytab.Keytab {
	kt := keytab.New()
	if err := kt.AddEntry("rm/localhost", "FUZZ.TEST", "fuzz-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		tb.Fatal(err)
	}
	return kt
}

// fuzzAPReq forges a well-formed AP-REQ for rm/localhost from the service's
// own key (gokrb5's NewTicket), so fuzzing starts from a token that
// verifies and mutates past the parser into the exchange.
func fuzzAPReq(tb testing.TB, kt *keytab.Keytab) []byte {
	now := time.Now().UTC()
	cname := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, "alice")
	sname := types.NewPrincipalName(nametype.KRB_NT_SRV_HST, "rm/localhost")
	tkt, key, err := messages.NewTicket(cname, "FUZZ.TEST", sname, "FUZZ.TEST", asn1.BitString{Bytes: make([]byte, 4), BitLength: 32},
		kt, etypeID.AES256_CTS_HMAC_SHA1_96, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		tb.Fatal(err)
	}
	auth, err := types.NewAuthenticator("FUZZ.TEST", cname)
	if err != nil {
		tb.Fatal(err)
	}
	auth.Cksum = types.Checksum{CksumType: 0x8003, Checksum: append([]byte{16}, make([]byte, 23)...)}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		tb.Fatal(err)
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	oid := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}
	inner := append(append(oid, 0x01, 0x00), b...)
	n := len(inner)
	hdr := []byte{0x60, 0x82, byte(n >> 8), byte(n)}
	return append(hdr, inner...)
}

// FuzzKerberosSASL: the server's KERBEROS path (NEGOTIATE, INITIATE with an
// AP-REQ, RESPONSEs, WRAP) fed arbitrary RpcSaslProto bytes never panics and
// ends only in FATAL replies of the SASL classes.
func FuzzKerberosSASL(f *testing.F) {
	kt := fuzzKeytab(f)
	cfg := tokenConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = &KerberosServerConfig{Principal: "rm/localhost@FUZZ.TEST", Keytab: kt}
	srv := NewServer(cfg)
	if err := srv.Register(echoProtocol(nil)); err != nil {
		f.Fatal(err)
	}
	auth := srv.kerberosAuth()
	neg := mustPacket(saslMsg(commonpb.RpcSaslProto_NEGOTIATE))
	ini := mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*commonpb.RpcSaslProto_SaslAuth{auth}, Token: fuzzAPReq(f, kt)})
	resp := mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_RESPONSE.Enum(), Token: []byte{}})
	wrap := mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_RESPONSE.Enum(),
		Token: append([]byte{5, 4, 0, 0xff, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 16)...)})
	f.Add(joinPacketsLong(neg, ini, resp, wrap))
	f.Add(joinPacketsLong(ini))
	f.Add(joinPacketsLong(mustPacket(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*commonpb.RpcSaslProto_SaslAuth{auth}, Token: []byte{0x60, 0x00}})))
	f.Fuzz(func(t *testing.T, in []byte) {
		c := newServerConn(srv, &nopConn{})
		c.authProtocol = authProtocolSASL
		boundedAlloc(t, len(in), func() {
			feedSASL(t, c, splitPacketsLong(in), ClassSaslException, ClassAccessControl, ClassInvalidToken, ClassRpcServerException)
		})
	})
}

// joinPacketsLong / splitPacketsLong: like joinPackets with two length
// bytes (an AP-REQ is longer than 255 bytes).
func joinPacketsLong(pkts ...[]byte) []byte {
	var out []byte
	for _, p := range pkts {
		out = append(out, byte(len(p)>>8), byte(len(p)))
		out = append(out, p...)
	}
	return out
}

func splitPacketsLong(in []byte) [][]byte {
	var out [][]byte
	for len(in) >= 2 {
		n := min(int(in[0])<<8|int(in[1]), len(in)-2)
		out = append(out, in[2:2+n])
		in = in[2+n:]
	}
	return out
}

// TestKerberosSASLSeedReachesAPRep keeps the fuzz seed honest: the forged
// AP-REQ verifies and the server answers with its AP-REP (CHALLENGE).
func TestKerberosSASLSeedReachesAPRep(t *testing.T) {
	kt := fuzzKeytab(t)
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = &KerberosServerConfig{Principal: "rm/localhost@FUZZ.TEST", Keytab: kt}
	srv := NewServer(cfg)
	c := newServerConn(srv, &nopConn{})
	c.authProtocol = authProtocolSASL
	reply, re := c.saslStep(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*commonpb.RpcSaslProto_SaslAuth{srv.kerberosAuth()}, Token: fuzzAPReq(t, kt)})
	if re != nil || reply.GetState() != commonpb.RpcSaslProto_CHALLENGE || len(reply.GetToken()) == 0 {
		t.Fatalf("reply %v, err %v", reply, re)
	}
}

// TestKerberosPreAuthPacketBound: with Kerberos on, a 20 KiB INITIATE (an
// AP-REQ with a large PAC) is read and judged as Kerberos (SaslException),
// while a packet past 65 KiB is FATAL on its length prefix.
func TestKerberosPreAuthPacketBound(t *testing.T) {
	cfg := DefaultServerConfig()
	cfg.AllowSimple = false
	cfg.Kerberos = &KerberosServerConfig{Principal: "rm/localhost@FUZZ.TEST", Keytab: fuzzKeytab(t)}
	ts := startServer(t, cfg, echoProtocol(nil))

	r := dialRaw(t, ts.addr)
	r.preamble(authProtocolSASL)
	big := append([]byte{0x60, 0x83, 0x00, 0x50, 0x00}, make([]byte, 20<<10)...)
	r.packet(reqHeader(callIDSASL), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
		Auths: []*commonpb.RpcSaslProto_SaslAuth{ts.srv.kerberosAuth()}, Token: big})
	h, _ := r.reply()
	if h.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || h.GetExceptionClassName() != ClassSaslException {
		t.Fatalf("20 KiB INITIATE: %v", h)
	}

	r2 := dialRaw(t, ts.addr)
	r2.preamble(authProtocolSASL)
	partialFrame(r2, minKerberosPreAuthFrame+1, 0)
	h2, _ := r2.reply()
	if h2.GetStatus() != commonpb.RpcResponseHeaderProto_FATAL || !strings.Contains(h2.GetErrorMsg(), "limit") {
		t.Fatalf("packet of %d bytes before the context: %v", minKerberosPreAuthFrame+1, h2)
	}
}
